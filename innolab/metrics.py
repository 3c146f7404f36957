"""Innovation metrics of InnoGym: performance, gain, ratio, novelty, regions and the complex plane.

Pure functions, no I/O. Formulas follow arXiv 2512.01822, §2.1–2.3 and App. E.2.

Conventions:

* ``V = C · R``: a submission's performance is its evaluator score R when the validator C accepts
  it, else 0.
* **Direction.** The paper's formulas assume larger is better. innolab makes the gain
  direction-aware so that *better is always positive*: ``G = V − V*`` for ``direction="max"`` and
  ``G = V* − V`` for ``direction="min"``. ``ratio = G / |V*|`` in both cases; it is 0 at the best
  known value and positive when the best known value is beaten. Which of two values is better is
  `better`'s rule, and the best of many `best_index`'s (ties go to the first).
* **Failed runs.** An invalid submission (C = 0) is scored pessimistically, ``ratio = −1`` and
  ``N = 0`` (App. E.2; `impute`). For maximisation with V* > 0 this is exactly what ``V = 0``
  gives; for minimisation (where V = 0 would look perfect) innolab applies the same −1 explicitly,
  so that ``G = −|V*|``. A valid submission whose N was not computed has N NaN, never 0.
* **Novelty.** ``N = C · min_h D(s, h)`` over the known solutions, with D on the 0–100 scale of
  D_AGENT. With no known solution (an exploratory task) the paper's completeness convention gives
  ``N = +inf``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import numpy as np

Direction = Literal["max", "min"]
DIRECTIONS: tuple[Direction, ...] = ("max", "min")

FAILED_RATIO = -1.0
FAILED_NOVELTY = 0.0
NOVELTY_SCALE = 100.0

# Defaults of the innovation regions (documented in `innovation_region`).
DEFAULT_GAIN_TOLERANCE = 0.05
DEFAULT_NOVELTY_THRESHOLD = 50.0


class MetricError(ValueError):
    """A metric received an input that breaks one of its rules.

    The message names the argument and the rule.
    """


def _check_direction(direction: str) -> Direction:
    if direction not in DIRECTIONS:
        raise MetricError(f"direction must be 'max' or 'min', got {direction!r}")
    return direction  # type: ignore[return-value]


def _check_finite(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise MetricError(f"{name} must be a finite number, got {value!r}")
    return value


def _check_v_star(v_star: float) -> float:
    v_star = _check_finite("v_star", v_star)
    if v_star == 0.0:
        raise MetricError("v_star must be non-zero: the ratio G/|V*| is undefined at V* = 0")
    return v_star


def performance(valid: bool, score: float | None) -> float:
    """Return V = C · R, a submission's performance.

    Args:
        valid: Whether the validator accepts the submission (C).
        score: The evaluator's score R; may be None for an invalid submission.

    Returns:
        The score when the submission is valid, else 0.

    Raises:
        MetricError: When a valid submission has no score or a non-finite one.
    """
    if not valid:
        return 0.0
    if score is None:
        raise MetricError("score must be given for a valid submission")
    return _check_finite("score", score)


def gain(v: float, v_star: float, direction: Direction = "max") -> float:
    """Return the gain G over the best known value; positive means better than the best known.

    Args:
        v: The submission's performance V.
        v_star: The best known value V*.
        direction: "max" (G = V − V*) or "min" (G = V* − V).

    Returns:
        The gain G.

    Raises:
        MetricError: When `direction` is neither "max" nor "min" or a value is not finite.
    """
    direction = _check_direction(direction)
    v = _check_finite("v", v)
    v_star = _check_finite("v_star", v_star)
    return v - v_star if direction == "max" else v_star - v


def ratio(v: float, v_star: float, direction: Direction = "max") -> float:
    """Return ratio = G / |V*|, the gain relative to the best known value.

    Args:
        v: The submission's performance V.
        v_star: The best known value V*; non-zero.
        direction: "max" or "min".

    Returns:
        The ratio: 0 at V*, positive when V* is beaten.

    Raises:
        MetricError: When `direction` is neither "max" nor "min", a value is not finite or V* is 0.
    """
    return gain(v, v_star, direction) / abs(_check_v_star(v_star))


def novelty(valid: bool, distances: Iterable[float]) -> float:
    """Return N = C · min over the known solutions of D(s, h).

    Args:
        valid: Whether the submission is valid (C).
        distances: Its distances D to each known solution, each in [0, 100].

    Returns:
        The smallest distance for a valid submission (+inf with no known solution: an exploratory
        task), `FAILED_NOVELTY` (0) for an invalid one.

    Raises:
        MetricError: When a distance is not a finite number in [0, 100].
    """
    values = [float(d) for d in distances]
    for i, d in enumerate(values):
        if not math.isfinite(d) or not 0.0 <= d <= NOVELTY_SCALE:
            raise MetricError(f"distances[{i}] must lie in [0, {NOVELTY_SCALE:g}], got {d!r}")
    if not valid:
        return FAILED_NOVELTY
    if not values:
        return math.inf
    return min(values)


@dataclass(frozen=True)
class SolutionScore:
    """The scores of one submission against one task."""

    valid: bool
    v: float
    v_star: float
    direction: Direction
    gain: float
    ratio: float
    novelty: float | None = None


def score_solution(
    valid: bool,
    score: float | None,
    v_star: float,
    direction: Direction = "max",
    distances: Iterable[float] | None = None,
) -> SolutionScore:
    """Return all metrics of one submission, invalid ones scored pessimistically (ratio −1, N 0).

    Args:
        valid: Whether the validator accepts the submission.
        score: The evaluator's score; may be None for an invalid submission.
        v_star: The best known value V*; non-zero.
        direction: "max" or "min".
        distances: The distances to the known solutions; None leaves the novelty out.

    Returns:
        The submission's `SolutionScore`.

    Raises:
        MetricError: When an argument breaks the rule of `performance`, `gain`, `ratio` or
            `novelty`.
    """
    direction = _check_direction(direction)
    v_star = _check_v_star(v_star)
    v = performance(valid, score)
    if valid:
        g = gain(v, v_star, direction)
        r = g / abs(v_star)
    else:
        g = FAILED_RATIO * abs(v_star)
        r = FAILED_RATIO
    n = novelty(valid, distances) if distances is not None else None
    return SolutionScore(valid=bool(valid), v=v, v_star=v_star, direction=direction, gain=g,
                         ratio=r, novelty=n)


def _missing(value: float | None) -> bool:
    """None or NaN: a value that is not there (never the best, imputed when failed)."""
    return value is None or (isinstance(value, float | np.floating) and math.isnan(value))


def better(a: float | None, b: float | None, direction: Direction) -> bool:
    """Return whether `a` is strictly better than `b` under the task's direction.

    Args:
        a: The candidate value; None or NaN is never better than anything.
        b: The value to beat; None or NaN (no value yet) is beaten by any number.
        direction: "max" (larger is better) or "min" (smaller is better).

    Returns:
        True when `a` beats `b`; a tie is not better, so the first of equal values stays the best.

    Raises:
        MetricError: When `direction` is neither "max" nor "min".
    """
    direction = _check_direction(direction)
    if _missing(a):
        return False
    if _missing(b):
        return True
    return bool(a > b if direction == "max" else a < b)  # type: ignore[operator]


def best_index(values: Sequence[float | None] | np.ndarray, direction: Direction) -> int | None:
    """Return the index of the best value under `direction` (`better`).

    Args:
        values: The values in order (for example the dev scores of a run's submissions).
        direction: "max" or "min".

    Returns:
        The index of the first of equal best values, or None when no value is present (None and
        NaN are never best).

    Raises:
        MetricError: When `direction` is neither "max" nor "min".
    """
    direction = _check_direction(direction)
    best: int | None = None
    for i, value in enumerate(values):
        if better(value, None if best is None else values[best], direction):
            best = i
    return best


def impute(valid: bool, ratio: float | None, novelty: float | None) -> tuple[float, float]:
    """Return one configuration's ratio and novelty under the paper's pessimistic imputation.

    App. E.2: a configuration without a valid submission counts as ratio −1 and N 0. A valid
    configuration whose N was not computed (no back end, a failed judge, no code) has N NaN:
    not computed is not "not novel".

    Args:
        valid: Whether the configuration has a valid submission.
        ratio: Its ratio G/|V*|, or None when not measured.
        novelty: Its novelty N, or None when not computed.

    Returns:
        (ratio, novelty): `FAILED_RATIO` (−1) and `FAILED_NOVELTY` (0) for an invalid
        configuration; for a valid one, `FAILED_RATIO` in place of a ratio that is None and NaN in
        place of a novelty that is None; the given values otherwise.
    """
    if not valid:
        return FAILED_RATIO, FAILED_NOVELTY
    return (FAILED_RATIO if ratio is None else float(ratio),
            math.nan if novelty is None else float(novelty))


def impute_failed(
    ratios: Sequence[float | None] | np.ndarray,
    novelties: Sequence[float | None] | np.ndarray,
    valid: Sequence[bool] | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Return many configurations' ratios and novelties under the pessimistic imputation.

    Each configuration is imputed by `impute`; valid ones keep their values, which must then be
    finite: a missing value on a valid configuration is an error, not something to impute.

    Args:
        ratios: The ratios, any shape.
        novelties: The novelties, of the same shape.
        valid: Whether each configuration has a valid submission, of the same shape.

    Returns:
        The imputed ratios and novelties, in that shape.

    Raises:
        MetricError: When the shapes differ or a valid configuration lacks a finite value.
    """
    r = np.asarray(ratios, dtype=float)
    n = np.asarray(novelties, dtype=float)
    ok = np.asarray(valid, dtype=bool)
    if not (r.shape == n.shape == ok.shape):
        raise MetricError(f"ratios, novelties and valid must have one shape, got {r.shape}, "
                          f"{n.shape}, {ok.shape}")
    bad = ok & ~(np.isfinite(r) & np.isfinite(n))
    if bad.any():
        where = np.flatnonzero(bad.ravel()).tolist()
        raise MetricError("valid configurations need finite ratio and novelty; missing at "
                          f"positions {where}")
    pairs = [impute(bool(c), float(x), float(y))
             for c, x, y in zip(ok.ravel(), r.ravel(), n.ravel(), strict=True)]
    imputed = np.array(pairs, dtype=float).reshape(*r.shape, 2)
    return imputed[..., 0], imputed[..., 1]


def best_valid(
    values: Sequence[float | None] | np.ndarray,
    valid: Sequence[bool] | np.ndarray,
    direction: Direction = "max",
) -> int | None:
    """Return the index of the best valid run among k runs (the paper reports the best of 3).

    Args:
        values: Each run's value.
        valid: Whether each run is valid.
        direction: "max" or "min".

    Returns:
        The index of the best valid run (the first of equal ones, `best_index`), or None when none
        is valid.

    Raises:
        MetricError: When `direction` is neither "max" nor "min", the two are not 1-D of one
            length, or a valid run's value is not finite.
    """
    direction = _check_direction(direction)
    v = np.asarray(values, dtype=float)
    ok = np.asarray(valid, dtype=bool)
    if v.shape != ok.shape or v.ndim != 1:
        raise MetricError(f"values and valid must be 1-D of one length, got {v.shape} and "
                          f"{ok.shape}")
    if (ok & ~np.isfinite(v)).any():
        raise MetricError("a valid run must have a finite value")
    return best_index([float(x) if c else None for x, c in zip(v, ok, strict=True)], direction)


def success_rate(valid: Sequence[bool] | np.ndarray) -> float:
    """Return the share of runs with a valid submission (the paper's Table 6).

    Args:
        valid: Whether each run is valid.

    Returns:
        The share in [0, 1].

    Raises:
        MetricError: When there is no run.
    """
    ok = np.asarray(valid, dtype=bool)
    if ok.size == 0:
        raise MetricError("success_rate needs at least one run")
    return float(ok.mean())


class Region(StrEnum):
    """The four innovation regions of §2.2."""

    BREAKTHROUGH = "breakthrough innovation"
    PERFORMANCE = "performance innovation"
    CONCEPTUAL = "conceptual innovation"
    UNSUCCESSFUL = "unsuccessful exploration"


def innovation_region(
    ratio_value: float,
    novelty_value: float,
    gain_tolerance: float = DEFAULT_GAIN_TOLERANCE,
    novelty_threshold: float = DEFAULT_NOVELTY_THRESHOLD,
) -> Region:
    """Return the innovation region (§2.2) of a solution.

    The paper names the regions by "high", "≈ 0" and "low" without numbers; innolab's thresholds:

    * gain is *high* when ``ratio > gain_tolerance``, *≈ 0* when ``|ratio| ≤ gain_tolerance`` and
      *clearly negative* below ``−gain_tolerance`` (default 0.05, i.e. within 5 % of the best
      known value);
    * novelty is *high* when ``N ≥ novelty_threshold`` (default 50 on the 0–100 D_AGENT scale: on
      average "moderately different", 2 of 4, on each dimension).

    high G, high N → breakthrough; high G, low N → performance; G ≈ 0, high N → conceptual;
    everything else (clearly negative gain, or G ≈ 0 with low novelty: neither better nor
    different) → unsuccessful exploration.

    Args:
        ratio_value: The solution's ratio; finite.
        novelty_value: Its novelty N, ≥ 0 (+inf allowed).
        gain_tolerance: The band of ratios that count as ≈ 0; finite and ≥ 0.
        novelty_threshold: The novelty from which N is high, in [0, 100].

    Returns:
        The solution's `Region`.

    Raises:
        MetricError: When an argument breaks its rule above.
    """
    r = _check_finite("ratio", ratio_value)
    n = float(novelty_value)
    if math.isnan(n) or n < 0:
        raise MetricError(f"novelty must be ≥ 0 (or +inf), got {novelty_value!r}")
    if gain_tolerance < 0 or not math.isfinite(gain_tolerance):
        raise MetricError(f"gain_tolerance must be finite and ≥ 0, got {gain_tolerance!r}")
    if not 0 <= novelty_threshold <= NOVELTY_SCALE:
        raise MetricError(f"novelty_threshold must lie in [0, 100], got {novelty_threshold!r}")
    high_novelty = n >= novelty_threshold
    if r > gain_tolerance:
        return Region.BREAKTHROUGH if high_novelty else Region.PERFORMANCE
    if r >= -gain_tolerance and high_novelty:
        return Region.CONCEPTUAL
    return Region.UNSUCCESSFUL


# The complex-plane view (Fig. 5). The paper does not give its normalisation; innolab's:
#   magnitude = 1 + ratio   (relative performance V/V* for maximisation: 0 = failed,
#                            1 = best known, > 1 = beaten)
#   angle     = N / 100 · max_angle   (0 = identical to a known solution,
#                                      max_angle = completely different)
# so a solution is z = (1 + ratio) · exp(i · angle). Ratios below −1 (possible only for
# minimisation) are clipped to magnitude 0. The inverse recovers (ratio, N) exactly wherever
# 1 + ratio > 0.
DEFAULT_MAX_ANGLE = math.pi / 2


def to_complex(ratio_value: float, novelty_value: float,
               max_angle: float = DEFAULT_MAX_ANGLE) -> complex:
    """Return a solution's point on the complex plane: magnitude 1 + ratio, angle N/100 · max_angle.

    Args:
        ratio_value: The solution's ratio; finite.
        novelty_value: Its novelty N in [0, 100].
        max_angle: The angle of a completely different solution, in (0, pi].

    Returns:
        The point z.

    Raises:
        MetricError: When an argument breaks its rule above.
    """
    r = _check_finite("ratio", ratio_value)
    n = _check_finite("novelty", novelty_value)
    if not 0 <= n <= NOVELTY_SCALE:
        raise MetricError(f"novelty must lie in [0, 100] for the complex plane, got {n!r}")
    if not 0 < max_angle <= math.pi:
        raise MetricError(f"max_angle must lie in (0, pi], got {max_angle!r}")
    magnitude = max(0.0, 1.0 + r)
    angle = n / NOVELTY_SCALE * max_angle
    return complex(magnitude * math.cos(angle), magnitude * math.sin(angle))


def from_complex(z: complex, max_angle: float = DEFAULT_MAX_ANGLE) -> tuple[float, float]:
    """Return (ratio, N) of a point on the complex plane: the inverse of `to_complex`.

    Args:
        z: The point; finite, with an angle in [0, max_angle].
        max_angle: The angle of a completely different solution, in (0, pi].

    Returns:
        (ratio, N); at z = 0 (a failed solution) the angle is undefined and N = 0.

    Raises:
        MetricError: When an argument breaks its rule above.
    """
    if not (math.isfinite(z.real) and math.isfinite(z.imag)):
        raise MetricError(f"z must be finite, got {z!r}")
    if not 0 < max_angle <= math.pi:
        raise MetricError(f"max_angle must lie in (0, pi], got {max_angle!r}")
    magnitude = abs(z)
    if magnitude == 0.0:
        return FAILED_RATIO, FAILED_NOVELTY
    angle = math.atan2(z.imag, z.real)
    if angle < -1e-12 or angle > max_angle + 1e-12:
        raise MetricError(f"arg(z) must lie in [0, max_angle], got {angle!r}")
    n = min(max(angle, 0.0), max_angle) / max_angle * NOVELTY_SCALE
    return magnitude - 1.0, n
