"""Point configurations: min-max distance ratio, Heilbronn in a triangle and in the hull (exact)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np

from .core import (
    Invalid,
    Outcome,
    as_float,
    dihedral,
    distinct_rows,
    group_rms,
    hostile_variants,
    only_keys,
    orthogonal_rms,
    real_matrix,
    size,
    spacing,
    unit_distance,
    violations,
)

SQRT3_OVER_4 = math.sqrt(3) / 4
Point = tuple[Fraction, ...]


def min_max_distance_ratio(data: dict[str, Any], n: int, dim: int = 2) -> float:
    """Check n distinct points; score (d_max / d_min)² (minimise), computed exactly, rounded once.

    Args:
        data: The submission: {"points": [[coordinate, ...], ...]}.
        n: The number of points.
        dim: The dimension.

    Returns:
        The squared ratio of the largest to the smallest distance.

    Raises:
        Invalid: The submission breaks a rule.
    """
    only_keys(data, ("points",))
    p = real_matrix(data, "points", n, dim)
    distinct_rows(p, "points")
    q = [tuple(Fraction(v) for v in row) for row in p.tolist()]
    d2 = [sum((a - b) ** 2 for a, b in zip(u, v, strict=True)) for u, v in combinations(q, 2)]
    if min(d2) == 0:
        raise Invalid("points: two points coincide (the minimum distance is 0)")
    return as_float(max(d2) / min(d2), "points: the squared distance ratio")


def _double_area(a: Point, b: Point, c: Point) -> Fraction:
    return abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


def _minus_sqrt3(a: Fraction, b: Fraction) -> tuple[int, float]:
    """The sign of a − √3·b, decided exactly, and its value to float64's relative precision.

    With a and b of one sign, a − √3·b = (a² − 3b²) / (a + √3·b): the numerator is exact, so no
    cancellation loses the value; with opposite signs the two terms add and nothing cancels.

    Args:
        a: A rational.
        b: Another rational.

    Returns:
        (-1, 0 or 1, the value as a float).
    """
    if a >= 0 >= b or a <= 0 <= b:
        sign = 0 if a == b == 0 else 1 if a >= 0 >= b else -1
        return sign, float(a) - math.sqrt(3) * float(b)
    numerator = a * a - 3 * b * b
    sign = (numerator > 0) - (numerator < 0)
    signed = sign if a > 0 else -sign
    try:
        return signed, float(numerator) / (float(a) + math.sqrt(3) * float(b))
    except OverflowError:  # coordinates near float64's limit: the excess is beyond its range
        return signed, math.copysign(math.inf, signed)


def heilbronn_triangle(data: dict[str, Any], n: int) -> float:
    """Check n points in the triangle (0,0), (1,0), (1/2, √3/2); score min area / (√3/4).

    The score, the smallest triangle's area over the triangle's, is maximised. Containment is
    decided exactly (rationals; √3 only through squares); a point outside is reported with its
    distance from each side's line it lies beyond (to 3 significant digits).

    Args:
        data: The submission: {"points": [[x, y], ...]}.
        n: The number of points.

    Returns:
        The smallest area of a triangle of three points, over √3/4.

    Raises:
        Invalid: The submission breaks a rule (every point outside listed).
    """
    only_keys(data, ("points",))
    p = real_matrix(data, "points", n, 2)
    distinct_rows(p, "points")
    q = [(Fraction(x), Fraction(y)) for x, y in p.tolist()]
    outside = []
    for i, (x, y) in enumerate(q):
        # y ≥ 0, y ≤ √3·x and y ≤ √3·(1 − x), decided exactly; the distance from the line
        # y = √3·c is (y − √3·c) / 2.
        broken = []
        if y < 0:
            broken.append(f"below the base by {size(-y)}")
        for side, c in (("left of the side y = √3·x", x), ("right of the side y = √3·(1 − x)",
                                                          1 - x)):
            sign, excess = _minus_sqrt3(y, c)
            if sign > 0:
                broken.append(f"{side} by {size(excess / 2)}")
        if broken:
            outside.append(f"points[{i}] lies outside the triangle ({', '.join(broken)})")
    violations("containment", outside)
    smallest = min(_double_area(a, b, c) for a, b, c in combinations(q, 3)) / 2
    return as_float(smallest, "points: the smallest triangle area") / SQRT3_OVER_4


def _hull(points: list[tuple[Fraction, Fraction]]) -> list[tuple[Fraction, Fraction]]:
    pts = sorted(set(points))

    def cross(o: tuple[Fraction, Fraction], a: tuple[Fraction, Fraction],
              b: tuple[Fraction, Fraction]) -> Fraction:
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower: list[tuple[Fraction, Fraction]] = []
    upper: list[tuple[Fraction, Fraction]] = []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def heilbronn_convex(data: dict[str, Any], n: int) -> float:
    """Check n points; score min triangle area / area of their convex hull (maximise).

    Exact rationals.

    Args:
        data: The submission: {"points": [[x, y], ...]}.
        n: The number of points.

    Returns:
        The smallest area of a triangle of three points over the area of their hull.

    Raises:
        Invalid: The submission breaks a rule, or the hull is degenerate.
    """
    only_keys(data, ("points",))
    p = real_matrix(data, "points", n, 2)
    distinct_rows(p, "points")
    q = [(Fraction(x), Fraction(y)) for x, y in p.tolist()]
    hull = _hull(q)
    hull_area2 = abs(sum(a[0] * b[1] - b[0] * a[1]
                         for a, b in zip(hull, hull[1:] + hull[:1], strict=True)))
    if hull_area2 == 0:
        raise Invalid("points: the convex hull is degenerate (zero area)")
    smallest2 = min(_double_area(a, b, c) for a, b, c in combinations(q, 3))
    return as_float(smallest2 / hull_area2, "points: the smallest triangle area over the hull area")


# ---------------------------------------------------------------------------- outcome descriptors

POINTS_SCALE = (
    "points: the points matched one to one (optimal assignment) under the symmetries the score "
    "ignores: the equilateral triangle's 6 rotations and reflections about its centroid "
    "(Heilbronn in a triangle); any similarity (min-max distance ratio: centred at the centroid "
    "and scaled to unit root-mean-square radius, then any rotation or reflection); any affine map "
    "(Heilbronn for convex regions: centred and whitened to unit covariance, then any rotation or "
    "reflection); the distance is 100 × the root-mean-square displacement of matched points over "
    "the mean nearest-neighbour distance (the mean of both sets), capped at 100: 1 is a hundredth "
    "of a neighbour spacing, 100 a whole spacing or more"
)
TRIANGLE_CENTROID = np.array([0.5, math.sqrt(3) / 6])


def _points(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    only_keys(data, ("points",))
    return real_matrix(data, "points", params.get("n"), params.get("dim", 2))


def _similarity_normalised(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    p = _points(data, params)
    p = p - p.mean(axis=0)
    radius = math.sqrt(float((p * p).sum(axis=1).mean()))
    if not radius > 0:
        raise Invalid("points: all points coincide; no shape to compare")
    return p / radius


def _affine_normalised(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    p = _points(data, params)
    p = p - p.mean(axis=0)
    values, vectors = np.linalg.eigh(p.T @ p / len(p))
    if not values.min() > 1e-12 * max(values.max(), 1e-300):
        raise Invalid("points: the points are collinear; no affine shape to compare")
    return p @ vectors / np.sqrt(values)


def _unit(a: np.ndarray, b: np.ndarray) -> float:
    return (spacing(a) + spacing(b)) / 2


def _in_triangle(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return 100.0
    return unit_distance(group_rms(a, b, dihedral(3, math.pi / 2), TRIANGLE_CENTROID), _unit(a, b))


def _up_to_rotation(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return 100.0
    if a.shape[1] != 2:
        raise Invalid("points: outcome distances are defined for points in the plane only")
    return unit_distance(orthogonal_rms(a, b), _unit(a, b))


OUTCOMES = {
    "min_max_distance_ratio": Outcome(_similarity_normalised, _up_to_rotation, POINTS_SCALE),
    "heilbronn_triangle": Outcome(_points, _in_triangle, POINTS_SCALE),
    "heilbronn_convex": Outcome(_affine_normalised, _up_to_rotation, POINTS_SCALE),
}


# ------------------------------------------------------------------------------- hostile inputs

CHECKS = ("min_max_distance_ratio", "heilbronn_triangle", "heilbronn_convex")


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    dim = int(params.get("dim", 2))
    rows = [[0.1 * (i % 7) + 0.01 * i] + [0.05 * i] * (dim - 1) for i in range(int(params["n"]))]
    return {**hostile_variants("points", rows),
            "a row of one number": json.dumps({"points": [[0.5]] * int(params["n"])})}


HOSTILE = {name: _hostile for name in CHECKS}
