"""Circle packings: n disjoint disks in the unit square or a bounded-perimeter rectangle (exact)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from .core import (
    Outcome,
    all_violations,
    dihedral,
    distinct_rows,
    group_rms,
    hostile_variants,
    only_keys,
    real_matrix,
    size,
    spacing,
    unit_distance,
)


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


# ---------------------------------------------------------------------------- outcome descriptors

CIRCLES_SCALE = (
    "circles: the rows [x, y, r] matched one to one (optimal assignment) under the container's "
    "symmetries (the unit square: its 8 rotations and reflections about its centre; the free "
    "rectangle: any translation, taken out by centring the disks' bounding box, and the 8 "
    "rotations and reflections about that centre, which keep width + height); the distance is "
    "100 × the root-mean-square displacement of matched rows (centre and radius) over the mean "
    "nearest-neighbour distance of the centres (the mean of both packings), capped at 100: 1 is a "
    "hundredth of a neighbour spacing, 100 a whole spacing or more"
)


def _describe_in_square(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    only_keys(data, ("circles",))
    return real_matrix(data, "circles", params.get("n"), 3)


def _describe_in_rectangle(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    c = _describe_in_square(data, params).copy()
    low = (c[:, :2] - c[:, 2:]).min(axis=0)
    high = (c[:, :2] + c[:, 2:]).max(axis=0)
    c[:, :2] -= (low + high) / 2
    return c


def _distance(centre: np.ndarray) -> Any:
    def distance(a: np.ndarray, b: np.ndarray) -> float:
        if a.shape != b.shape:
            return 100.0
        unit = (spacing(a[:, :2]) + spacing(b[:, :2])) / 2
        return unit_distance(group_rms(a, b, dihedral(4), centre), unit)

    return distance


OUTCOMES = {
    "circles_in_square": Outcome(_describe_in_square, _distance(np.array([0.5, 0.5])),
                                 CIRCLES_SCALE),
    "circles_in_rectangle": Outcome(_describe_in_rectangle, _distance(np.zeros(2)),
                                    CIRCLES_SCALE),
}


# ------------------------------------------------------------------------------- hostile inputs

CHECKS = ("circles_in_square", "circles_in_rectangle")


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    rows = [[0.5, 0.5, 0.01]] * int(params["n"])
    return {**hostile_variants("circles", rows),
            "a row of two numbers": json.dumps({"circles": [[0.5, 0.5]] * int(params["n"])})}


HOSTILE = {name: _hostile for name in CHECKS}
