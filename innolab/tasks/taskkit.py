"""Strict submission checks and objectives of innolab's built-in tasks (standalone: numpy only, enters sandboxes).

Every task's visible validator is `taskkit.main(problem, params)`; the hidden evaluator runs the same pristine
module out of process (never the sandbox's copy). Rules that hold for every problem:

* the submission is a JSON object no larger than the task's byte limit; NaN, Infinity and unknown top-level keys
  are rejected (a reported score is never read: the objective is recomputed from the construction);
* numbers must be JSON numbers (not strings, not booleans); integer fields must be integers;
* constraints are checked with zero tolerance: exactly in rational arithmetic where that is cheap (circles,
  points, triangles: a float64 value is a dyadic rational, so `fractions.Fraction` decides without rounding),
  exactly in integers (kissing vectors, schedules), or in float64 (step-function objectives).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from fractions import Fraction
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MAX_BYTES = 5_000_000
MAX_LISTED_VIOLATIONS = 5


class Invalid(ValueError):
    """The submission breaks a rule; the message names the field and the rule."""


# --------------------------------------------------------------------------------------------- strict parsing


def _reject_constant(name: str) -> None:
    raise Invalid(f"JSON constant {name} is not allowed: every number must be finite")


def load_submission(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Read a submission file: size-capped, strict JSON (no NaN/Infinity), a top-level object."""
    path = Path(path)
    if path.is_symlink():
        raise Invalid(f"submission {path.name} is a symbolic link; submit a regular file")
    if not path.is_file():
        raise Invalid(f"submission {path.name} does not exist or is not a regular file")
    size = path.stat().st_size
    if size > max_bytes:
        raise Invalid(f"submission is {size} bytes; the limit is {max_bytes} bytes")
    with path.open("rb") as handle:
        raw = handle.read(max_bytes + 1)
    if len(raw) > max_bytes:
        raise Invalid(f"submission exceeds the limit of {max_bytes} bytes")
    return parse_submission(raw)


def parse_submission(raw: bytes | str) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        data = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise Invalid("submission is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise Invalid(f"submission is not valid JSON: {error.msg} at line {error.lineno}") from None
    if not isinstance(data, dict):
        raise Invalid(f"submission must be a JSON object, got {type(data).__name__}")
    return data


def _only_keys(data: dict[str, Any], allowed: tuple[str, ...]) -> None:
    extra = sorted(set(data) - set(allowed))
    if extra:
        raise Invalid(
            f"unknown field(s) {extra}: a submission holds only {list(allowed)}; scores are recomputed, never read"
        )
    missing = [k for k in allowed if k not in data]
    if missing:
        raise Invalid(f"missing field(s) {missing}")


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _matrix(value: Any, key: str, rows: int | None, cols: int, check_item: Any, kind: str) -> list[list[Any]]:
    """The shape checks shared by every matrix field; `check_item(item, where)` checks one entry."""
    if not isinstance(value, list):
        raise Invalid(f"{key} must be a list of rows, got {type(value).__name__}")
    if rows is not None and len(value) != rows:
        raise Invalid(f"{key} must have exactly {rows} rows, got {len(value)}")
    for i, row in enumerate(value):
        if not isinstance(row, list) or len(row) != cols:
            raise Invalid(f"{key}[{i}] must be a list of {cols} {kind}")
        for j, item in enumerate(row):
            check_item(item, f"{key}[{i}][{j}]")
    return value


def _finite_number(item: Any, where: str) -> None:
    if not _is_real(item):
        raise Invalid(f"{where} must be a number, got {type(item).__name__}")
    if not math.isfinite(float(item)):
        raise Invalid(f"{where} must be finite")


def real_matrix(data: dict[str, Any], key: str, rows: int | None, cols: int) -> np.ndarray:
    """A list of `rows` lists of `cols` finite JSON numbers, as float64."""
    value = _matrix(data[key], key, rows, cols, _finite_number, "numbers")
    return np.array(value, dtype=np.float64).reshape(len(value), cols)


def real_vector(data: dict[str, Any], key: str, min_len: int, max_len: int, max_abs: float = 1e100) -> np.ndarray:
    value = data[key]
    if not isinstance(value, list):
        raise Invalid(f"{key} must be a list of numbers, got {type(value).__name__}")
    if not min_len <= len(value) <= max_len:
        raise Invalid(f"{key} must have between {min_len} and {max_len} values, got {len(value)}")
    for i, item in enumerate(value):
        if not _is_real(item):
            raise Invalid(f"{key}[{i}] must be a number, got {type(item).__name__}")
        if not math.isfinite(float(item)) or abs(float(item)) > max_abs:
            raise Invalid(f"{key}[{i}] must be finite with magnitude at most {max_abs:g}")
    return np.array(value, dtype=np.float64)


def int_matrix(data: Any, key: str, rows: int | None, cols: int, max_abs: int) -> np.ndarray:
    """A list of lists of JSON integers (1.0 is not an integer here), each of magnitude at most max_abs."""

    def integer(item: Any, where: str) -> None:
        if not isinstance(item, int) or isinstance(item, bool):
            raise Invalid(f"{where} must be an integer, got {type(item).__name__} {item!r}")
        if abs(item) > max_abs:
            raise Invalid(f"{where} must have magnitude at most {max_abs}")

    value = _matrix(data[key] if isinstance(data, dict) else data, key, rows, cols, integer, "integers")
    return np.array(value, dtype=np.int64).reshape(len(value), cols)


def _violations(name: str, found: list[str]) -> None:
    if found:
        more = f" (and {len(found) - MAX_LISTED_VIOLATIONS} more)" if len(found) > MAX_LISTED_VIOLATIONS else ""
        raise Invalid(f"{name}: " + "; ".join(found[:MAX_LISTED_VIOLATIONS]) + more)


def _distinct_rows(points: np.ndarray, key: str) -> None:
    seen: dict[tuple[float, ...], int] = {}
    for i, row in enumerate(points):
        t = tuple(float(v) for v in row)
        if t in seen:
            raise Invalid(f"{key}[{i}] duplicates {key}[{seen[t]}]")
        seen[t] = i


# ------------------------------------------------------------------------------------------------- problems


def circles_in_square(data: dict[str, Any], n: int) -> float:
    """n disjoint disks inside the unit square; score Σr (maximise). Exact rational checks."""
    _only_keys(data, ("circles",))
    c = real_matrix(data, "circles", n, 3)
    _check_circles(c, width=Fraction(1), height=Fraction(1))
    return math.fsum(c[:, 2])


def circles_in_rectangle(data: dict[str, Any], n: int, half_perimeter: float = 2.0) -> float:
    """n disjoint disks whose bounding box has width + height ≤ half_perimeter; score Σr (maximise)."""
    _only_keys(data, ("circles",))
    c = real_matrix(data, "circles", n, 3)
    _check_circles(c, width=None, height=None)
    q = [(Fraction(x), Fraction(y), Fraction(r)) for x, y, r in c.tolist()]
    w = max(x + r for x, _, r in q) - min(x - r for x, _, r in q)
    h = max(y + r for _, y, r in q) - min(y - r for _, y, r in q)
    if w + h > Fraction(half_perimeter):
        raise Invalid(f"bounding box: width + height = {float(w + h)!r} exceeds {half_perimeter}")
    return math.fsum(c[:, 2])


def _check_circles(c: np.ndarray, width: Fraction | None, height: Fraction | None) -> None:
    negative = [f"circles[{i}] has radius {r!r} < 0" for i, r in enumerate(c[:, 2].tolist()) if r < 0]
    _violations("radius", negative)
    _distinct_rows(c[:, :2], "circles")
    q = [(Fraction(x), Fraction(y), Fraction(r)) for x, y, r in c.tolist()]
    if width is not None and height is not None:
        outside = [
            f"circles[{i}] leaves the square"
            for i, (x, y, r) in enumerate(q)
            if x - r < 0 or x + r > width or y - r < 0 or y + r > height
        ]
        _violations("containment", outside)
    overlaps = []
    for (i, (xi, yi, ri)), (j, (xj, yj, rj)) in combinations(enumerate(q), 2):
        if (xi - xj) ** 2 + (yi - yj) ** 2 < (ri + rj) ** 2:
            overlaps.append(f"circles[{i}] and circles[{j}] overlap")
    _violations("disjointness", overlaps)


def min_max_distance_ratio(data: dict[str, Any], n: int, dim: int = 2) -> float:
    """n distinct points; score (d_max / d_min)² (minimise), computed exactly then rounded once."""
    _only_keys(data, ("points",))
    p = real_matrix(data, "points", n, dim)
    _distinct_rows(p, "points")
    q = [tuple(Fraction(v) for v in row) for row in p.tolist()]
    d2 = [sum((a - b) ** 2 for a, b in zip(u, v, strict=True)) for u, v in combinations(q, 2)]
    return float(max(d2) / min(d2))


SQRT3_OVER_4 = math.sqrt(3) / 4


def _double_area(a: tuple[Fraction, ...], b: tuple[Fraction, ...], c: tuple[Fraction, ...]) -> Fraction:
    return abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


def heilbronn_triangle(data: dict[str, Any], n: int) -> float:
    """n points in the triangle (0,0), (1,0), (1/2, √3/2); score min triangle area / (√3/4) (maximise)."""
    _only_keys(data, ("points",))
    p = real_matrix(data, "points", n, 2)
    _distinct_rows(p, "points")
    q = [(Fraction(x), Fraction(y)) for x, y in p.tolist()]
    outside = []
    for i, (x, y) in enumerate(q):
        # y ≥ 0, y ≤ √3·x and y ≤ √3·(1 − x), decided exactly by squaring non-negative sides.
        inside = y >= 0 and x >= 0 and 1 - x >= 0 and y * y <= 3 * x * x and y * y <= 3 * (1 - x) ** 2
        if not inside:
            outside.append(f"points[{i}] lies outside the triangle")
    _violations("containment", outside)
    smallest = min(_double_area(a, b, c) for a, b, c in combinations(q, 3)) / 2
    return float(smallest) / SQRT3_OVER_4


def _hull(points: list[tuple[Fraction, Fraction]]) -> list[tuple[Fraction, Fraction]]:
    pts = sorted(set(points))

    def cross(o: tuple[Fraction, Fraction], a: tuple[Fraction, Fraction], b: tuple[Fraction, Fraction]) -> Fraction:
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
    """n points; score min triangle area / area of their convex hull (maximise). Exact rationals."""
    _only_keys(data, ("points",))
    p = real_matrix(data, "points", n, 2)
    _distinct_rows(p, "points")
    q = [(Fraction(x), Fraction(y)) for x, y in p.tolist()]
    hull = _hull(q)
    hull_area2 = abs(sum(a[0] * b[1] - b[0] * a[1] for a, b in zip(hull, hull[1:] + hull[:1], strict=True)))
    if hull_area2 == 0:
        raise Invalid("points: the convex hull is degenerate (zero area)")
    smallest2 = min(_double_area(a, b, c) for a, b, c in combinations(q, 3))
    return float(smallest2 / hull_area2)


def erdos_minimum_overlap(data: dict[str, Any], max_n: int) -> float:
    """Step heights h on [0, 2]; score (2/n)·max_k Σ_i h_i (1 − h_{i+k}) (minimise).

    Rule for ∫h = 1: the heights are rescaled to sum exactly n/2 (as EinsteinArena does), then every rescaled
    height must lie in [0, 1] with zero tolerance.
    """
    _only_keys(data, ("heights",))
    h = real_vector(data, "heights", 2, max_n, max_abs=1e6)
    if (h < 0).any():
        raise Invalid(f"heights[{int(np.argmax(h < 0))}] is negative")
    total = math.fsum(h)
    if not total > 0:
        raise Invalid("heights must have a positive sum")
    n = len(h)
    h = h * ((n / 2) / total)
    if (h > 1).any():
        raise Invalid(f"heights[{int(np.argmax(h > 1))}] exceeds 1 after rescaling to sum n/2")
    return float(np.max(np.correlate(h, 1 - h, mode="full")) * 2 / n)


def first_autocorrelation(data: dict[str, Any], max_n: int) -> float:
    """Non-negative steps f on [−1/4, 1/4]; score 2n·max(f∗f)/(Σf)² (minimise)."""
    _only_keys(data, ("values",))
    f = _nonnegative_steps(data, max_n)
    n = len(f)
    return float(2 * n * np.max(np.convolve(f, f)) / math.fsum(f) ** 2)


def second_autocorrelation(data: dict[str, Any], max_n: int) -> float:
    """Non-negative steps f; score ‖f∗f‖₂² / (‖f∗f‖₁ · ‖f∗f‖∞) (maximise), ‖·‖₂² by piecewise-linear integration."""
    _only_keys(data, ("values",))
    f = _nonnegative_steps(data, max_n)
    conv = np.convolve(f, f)
    m = len(conv)
    y = np.concatenate(([0.0], conv, [0.0]))
    width = 1.0 / (m + 1)  # the convolution lives on [−1/2, 1/2], sampled at m interior points
    l2_squared = float(np.sum(width / 3 * (y[:-1] ** 2 + y[:-1] * y[1:] + y[1:] ** 2)))
    l1 = float(np.sum(np.abs(conv)) / (m + 1))
    linf = float(np.max(np.abs(conv)))
    return l2_squared / (l1 * linf)


def _nonnegative_steps(data: dict[str, Any], max_n: int) -> np.ndarray:
    f = real_vector(data, "values", 1, max_n, max_abs=1e6)
    if (f < 0).any():
        raise Invalid(f"values[{int(np.argmax(f < 0))}] is negative")
    if not math.fsum(f) > 1e-9:
        raise Invalid("values must have a sum above 1e-9")
    return f


def kissing_configuration(data: dict[str, Any], dim: int, max_vectors: int = 5000, max_abs: int = 1_000_000) -> float:
    """Integer vectors C ⊂ ℤ^dim, 0 ∉ C, min ‖x − y‖² ≥ max ‖x‖²; score |C| (maximise). Exact integers."""
    _only_keys(data, ("vectors",))
    v = int_matrix(data, "vectors", None, dim, max_abs)
    if not 1 <= len(v) <= max_vectors:
        raise Invalid(f"vectors must hold between 1 and {max_vectors} rows, got {len(v)}")
    norms = (v * v).sum(axis=1)
    if (norms == 0).any():
        raise Invalid(f"vectors[{int(np.argmax(norms == 0))}] is the zero vector")
    _distinct_rows(v, "vectors")
    longest = int(norms.max())
    for i in range(len(v) - 1):
        d2 = ((v[i + 1 :] - v[i]) ** 2).sum(axis=1)
        close = np.flatnonzero(d2 < longest)
        if close.size:
            j = i + 1 + int(close[0])
            raise Invalid(f"vectors[{i}] and vectors[{j}]: squared distance {int(d2[close[0]])} < max squared "
                          f"norm {longest}")
    return float(len(v))


def job_shop(data: dict[str, Any], instances: dict[str, dict[str, list[list[int]]]]) -> float:
    """Start times for every operation of every instance; score Σ makespans (minimise). Exact integers."""
    _only_keys(data, ("schedules",))
    schedules = data["schedules"]
    if not isinstance(schedules, dict):
        raise Invalid("schedules must be an object mapping instance names to start-time matrices")
    extra = sorted(set(schedules) - set(instances))
    missing = sorted(set(instances) - set(schedules))
    if extra or missing:
        raise Invalid(f"schedules must name exactly {sorted(instances)}; extra {extra}, missing {missing}")
    total = 0
    for name in sorted(instances):
        durations = np.array(instances[name]["duration_matrix"], dtype=np.int64)
        machines = np.array(instances[name]["machines_matrix"], dtype=np.int64)
        jobs, ops = durations.shape
        start = int_matrix(schedules[name], f"schedules[{name}]", jobs, ops, 10**9)
        if (start < 0).any():
            raise Invalid(f"schedules[{name}]: start times must be ≥ 0")
        end = start + durations
        late = np.argwhere(start[:, 1:] < end[:, :-1])
        if late.size:
            j, k = late[0]
            raise Invalid(f"schedules[{name}]: job {j} operation {k + 1} starts before operation {k} ends")
        for m in range(int(machines.max()) + 1):
            js, ks = np.nonzero(machines == m)
            order = np.argsort(start[js, ks], kind="stable")
            s, e = start[js, ks][order], end[js, ks][order]
            clash = np.flatnonzero(s[1:] < e[:-1])
            if clash.size:
                raise Invalid(f"schedules[{name}]: two operations overlap on machine {m}")
        total += int(end.max())
    return float(total)


PROBLEMS: dict[str, Callable[..., float]] = {
    "circles_in_square": circles_in_square,
    "circles_in_rectangle": circles_in_rectangle,
    "min_max_distance_ratio": min_max_distance_ratio,
    "heilbronn_triangle": heilbronn_triangle,
    "heilbronn_convex": heilbronn_convex,
    "erdos_minimum_overlap": erdos_minimum_overlap,
    "first_autocorrelation": first_autocorrelation,
    "second_autocorrelation": second_autocorrelation,
    "kissing_configuration": kissing_configuration,
    "job_shop": job_shop,
}


def check(problem: str, params: dict[str, Any], data: dict[str, Any]) -> tuple[list[str], float | None]:
    """(errors, score): no errors and the recomputed objective, or the errors and None."""
    if problem not in PROBLEMS:
        return [f"unknown problem {problem!r}"], None
    try:
        score = PROBLEMS[problem](data, **params)
    except Invalid as error:
        return [str(error)], None
    if not math.isfinite(score):
        return ["the objective is not finite"], None
    return [], score


def check_file(problem: str, params: dict[str, Any], path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES
               ) -> tuple[list[str], float | None]:
    try:
        data = load_submission(path, max_bytes)
    except Invalid as error:
        return [str(error)], None
    return check(problem, params, data)


def main_from_config(config_file: str) -> None:
    """The sandbox's validate.py: the check configuration comes from task.json beside this module."""
    config = json.loads((Path(__file__).resolve().parent / config_file).read_text(encoding="utf-8"))
    main(config["problem"], config["params"], config["max_bytes"])


def main(problem: str, params: dict[str, Any], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Validator command line: `python validate.py SUBMISSION.json` prints a JSON verdict; exit 0 iff valid."""
    if len(sys.argv) != 2:
        print("usage: python validate.py SUBMISSION.json", file=sys.stderr)
        raise SystemExit(2)
    errors, score = check_file(problem, params, sys.argv[1], max_bytes)
    print(json.dumps({"valid": not errors, "score": score, "errors": errors}))
    raise SystemExit(0 if not errors else 1)
