"""Circle packings: n disjoint disks in the unit square or a bounded-perimeter rectangle (exact)."""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from .core import all_violations, distinct_rows, only_keys, real_matrix, size


def circles_in_square(data: dict[str, Any], n: int) -> float:
    """Check n disjoint disks inside the unit square; score Σr (maximise). Exact rational checks.

    Args:
        data: The submission: {"circles": [[x, y, r], ...]}.
        n: The number of disks.

    Returns:
        The sum of the radii.

    Raises:
        Invalid: The submission breaks a rule (every violation listed).
    """
    only_keys(data, ("circles",))
    c = real_matrix(data, "circles", n, 3)
    _check_circles(c, box=(Fraction(1), Fraction(1)))
    return math.fsum(c[:, 2])


def circles_in_rectangle(data: dict[str, Any], n: int, half_perimeter: float = 2.0) -> float:
    """Check n disjoint disks whose bounding box has width + height ≤ half_perimeter; score Σr.

    The score is maximised. Exact rational checks.

    Args:
        data: The submission: {"circles": [[x, y, r], ...]}.
        n: The number of disks.
        half_perimeter: The bound on the bounding box's width + height.

    Returns:
        The sum of the radii.

    Raises:
        Invalid: The submission breaks a rule (every violation listed).
    """
    only_keys(data, ("circles",))
    c = real_matrix(data, "circles", n, 3)
    _check_circles(c, box=None, half_perimeter=Fraction(half_perimeter))
    return math.fsum(c[:, 2])


def _check_circles(c: np.ndarray, box: tuple[Fraction, Fraction] | None,
                   half_perimeter: Fraction | None = None) -> None:
    """Every violated constraint with its size: negative radii, walls, bounding box, overlaps."""
    distinct_rows(c[:, :2], "circles")
    q = [(Fraction(x), Fraction(y), Fraction(r)) for x, y, r in c.tolist()]
    negative = [f"circles[{i}] has radius {size(r)} < 0" for i, (_, _, r) in enumerate(q) if r < 0]
    outside = []
    if box is not None:
        width, height = box
        for i, (x, y, r) in enumerate(q):
            walls = {"left": r - x, "right": x + r - width, "bottom": r - y, "top": y + r - height}
            for wall, excess in walls.items():
                if excess > 0:
                    outside.append(f"circles[{i}] crosses the {wall} wall by {size(excess)}")
    bounding = []
    if half_perimeter is not None and q:
        w = max(x + r for x, _, r in q) - min(x - r for x, _, r in q)
        h = max(y + r for _, y, r in q) - min(y - r for _, y, r in q)
        if w + h > half_perimeter:
            bounding.append(f"width + height = {size(w + h)} exceeds {float(half_perimeter)!r} by "
                            f"{size(w + h - half_perimeter)}")
    overlaps = []
    for (i, (xi, yi, ri)), (j, (xj, yj, rj)) in combinations(enumerate(q), 2):
        shortfall = (ri + rj) ** 2 - ((xi - xj) ** 2 + (yi - yj) ** 2)
        if shortfall > 0:
            overlaps.append(f"circles[{i}] and circles[{j}] overlap by {size(shortfall)} "
                            "in squared distance")
    all_violations({"radius": negative, "containment": outside, "bounding box": bounding,
                    "disjointness": overlaps})
