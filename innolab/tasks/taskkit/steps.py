"""Step functions: Erdős minimum overlap, the first and second autocorrelation inequalities."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import numpy as np

from .core import Invalid, Outcome, hostile_variants, only_keys, real_vector, size


def erdos_minimum_overlap(data: dict[str, Any], max_n: int) -> float:
    """Check step heights h on [0, 2]; score (2/n)·max_k Σ_i g_i (1 − g_{i+k}) (minimise).

    Rule for ∫h = 1: the heights are rescaled exactly (as EinsteinArena rescales, but in rational
    arithmetic) to g_i = h_i · n / (2·Σh), Σh the exact sum of the submitted float64 numbers, so
    that Σg = n/2 exactly; every g_i must lie in [0, 1], decided exactly with zero tolerance. The
    score is computed in float64 from the g_i, each rounded to the float64 nearest to it.

    Args:
        data: The submission: {"heights": [h, ...]}.
        max_n: The most steps.

    Returns:
        The overlap.

    Raises:
        Invalid: The submission breaks a rule.
    """
    only_keys(data, ("heights",))
    h = real_vector(data, "heights", 2, max_n, max_abs=1e6)
    if (h < 0).any():
        raise Invalid(f"heights[{int(np.argmax(h < 0))}] is negative")
    g = rescaled_exactly(h, len(h) / 2, "heights")
    n = len(g)
    return float(np.max(np.correlate(g, 1 - g, mode="full")) * 2 / n)


def rescaled_exactly(h: np.ndarray, target: float, field: str) -> np.ndarray:
    """Rescale non-negative float64 values exactly to sum `target`; each must then be at most 1.

    A float64 is a dyadic rational p/q, so over the common denominator Q (the largest q, a power
    of two) every value is an integer P_i/Q and the sum T/Q is exact; the rescaled value
    P_i · target / T is then one correctly rounded division of integers.

    Args:
        h: The values, all non-negative.
        target: The sum wanted (n/2: an integer or a half-integer).
        field: The field's name, for the errors.

    Returns:
        The rescaled values, each the float64 nearest to its exact value.

    Raises:
        Invalid: The values do not have a positive sum, or one exceeds 1 after rescaling.
    """
    ratios = [value.as_integer_ratio() for value in h.tolist()]
    common = max(q for _, q in ratios)
    scaled = [p * (common // q) for p, q in ratios]
    total = sum(scaled)
    if total <= 0:
        raise Invalid(f"{field} must have a positive sum")
    top, (num, den) = int(np.argmax(h)), target.as_integer_ratio()
    # the largest rescaled value P·num/(den·T) exceeds 1 iff P·num > den·T
    if scaled[top] * num > den * total:
        excess = Fraction(scaled[top] * num - den * total, den * total)
        raise Invalid(f"{field}[{top}] exceeds 1 by {size(excess)} after rescaling exactly to "
                      f"sum {target:g}")
    return np.array([p * num / (den * total) for p in scaled], dtype=np.float64)


def first_autocorrelation(data: dict[str, Any], max_n: int) -> float:
    """Check non-negative steps f on [−1/4, 1/4]; score 2n·max(f∗f)/(Σf)² (minimise).

    Args:
        data: The submission: {"values": [f, ...]}.
        max_n: The most steps.

    Returns:
        The autocorrelation ratio.

    Raises:
        Invalid: The submission breaks a rule.
    """
    only_keys(data, ("values",))
    f = _nonnegative_steps(data, max_n)
    n = len(f)
    return float(2 * n * np.max(np.convolve(f, f)) / math.fsum(f) ** 2)


def second_autocorrelation(data: dict[str, Any], max_n: int) -> float:
    """Check non-negative steps f; score ‖f∗f‖₂² / (‖f∗f‖₁ · ‖f∗f‖∞) (maximise).

    ‖·‖₂² is integrated piecewise-linearly.

    Args:
        data: The submission: {"values": [f, ...]}.
        max_n: The most steps.

    Returns:
        The ratio.

    Raises:
        Invalid: The submission breaks a rule.
    """
    only_keys(data, ("values",))
    f = _nonnegative_steps(data, max_n)
    conv = np.convolve(f, f)
    m = len(conv)
    y = np.concatenate(([0.0], conv, [0.0]))
    # the convolution lives on [−1/2, 1/2], sampled at m interior points
    width = 1.0 / (m + 1)
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


# ---------------------------------------------------------------------------- outcome descriptors

STEPS_SCALE = (
    "step functions: both functions resampled exactly onto a common grid of their domain (the "
    "least common multiple of the two step counts, or 8192 cell averages beyond 32768) and "
    "compared up to the transformations their score ignores: every objective ignores reversal; "
    "Erdős minimum overlap compares heights rescaled to ∫h = 1 (the task's own rule), also up to "
    "h → 1 − h, as 100 × the mean absolute difference of the heights (0-100, heights lie in "
    "[0, 1]); the first autocorrelation compares f / ∫f as a distribution on its fixed domain, "
    "also up to shifts that move only zero steps across its ends, and the second compares f / ∫f "
    "on its support (leading and trailing zero steps cut, the rest stretched onto [0, 1]: it "
    "ignores shifts and dilations), both as 100 × the total-variation distance (half the L1 "
    "distance of the densities: 0 the same distribution, 100 disjoint supports)"
)
EXACT_GRID = 32768
COARSE_GRID = 8192


def _grid(na: int, nb: int) -> int:
    m = math.lcm(na, nb)
    return m if m <= EXACT_GRID else COARSE_GRID


def _cell_masses(values: np.ndarray, m: int) -> np.ndarray:
    """The integral of a step function of equal steps on [0, 1] over each of m equal cells."""
    n = len(values)
    cumulative = np.concatenate(([0.0], np.cumsum(values) / n))
    if m % n == 0:  # each step splits into whole cells: no interpolation error
        return np.repeat(values / m, m // n)
    at = np.interp(np.arange(m + 1) / m, np.arange(n + 1) / n, cumulative)
    return np.diff(at)


def _zero_run(values: np.ndarray) -> int:
    nonzero = np.flatnonzero(values)
    return int(nonzero[0]) if len(nonzero) else len(values)


def _total_variation(a: np.ndarray, b: np.ndarray, shifts: range) -> float:
    """Half the least L1 distance of b[i] and a[i + u] over u in `shifts` (zero outside a)."""
    reach = max(abs(shifts.start), abs(shifts.stop - 1))
    padded = np.concatenate((np.zeros(reach), a, np.zeros(reach)))
    m = len(b)
    best = math.inf
    for u in shifts:
        start = reach + u
        inside = float(np.abs(padded[start:start + m] - b).sum())
        outside = float(padded.sum() - padded[start:start + m].sum())
        best = min(best, inside + outside)
    return best / 2


def _describe_overlap(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    only_keys(data, ("heights",))
    h = real_vector(data, "heights", 2, params.get("max_n", 20000), max_abs=1e6)
    if (h < 0).any() or not math.fsum(h) > 0:
        raise Invalid("heights must be non-negative with a positive sum")
    return h * ((len(h) / 2) / math.fsum(h))


def _overlap_distance(a: np.ndarray, b: np.ndarray) -> float:
    m = _grid(len(a), len(b))
    ha, hb = _cell_masses(a, m) * m, _cell_masses(b, m) * m
    images = (hb, hb[::-1], 1 - hb, 1 - hb[::-1])
    return float(min(100.0, 100 * min(np.abs(ha - x).mean() for x in images)))


def _describe_density(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    only_keys(data, ("values",))
    return _unit_mean(_nonnegative_steps(data, params.get("max_n", 100000)))


def _unit_mean(f: np.ndarray) -> np.ndarray:
    """Heights rescaled to mean 1: a density on [0, 1] (unit integral)."""
    return f * (len(f) / math.fsum(f))


def _describe_support(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    f = _describe_density(data, params)
    return _unit_mean(f[_zero_run(f):len(f) - _zero_run(f[::-1])])


def _shifted_distance(a: np.ndarray, b: np.ndarray) -> float:
    m = _grid(len(a), len(b))
    pa, pb = _cell_masses(a, m), _cell_masses(b, m)
    best = 1.0
    for x in (pb, pb[::-1]):
        # x[i] is compared with pa[i + u]; a and x may each slide over their own zero margins
        low = -(_zero_run(x) + _zero_run(pa[::-1]))
        high = _zero_run(x[::-1]) + _zero_run(pa)
        best = min(best, _total_variation(pa, x, range(low, high + 1)))
    return float(100 * best)


def _support_distance(a: np.ndarray, b: np.ndarray) -> float:
    m = _grid(len(a), len(b))
    pa, pb = _cell_masses(a, m), _cell_masses(b, m)
    return float(100 * min(np.abs(pa - pb).sum(), np.abs(pa - pb[::-1]).sum()) / 2)


OUTCOMES = {
    "erdos_minimum_overlap": Outcome(_describe_overlap, _overlap_distance, STEPS_SCALE),
    "first_autocorrelation": Outcome(_describe_density, _shifted_distance, STEPS_SCALE),
    "second_autocorrelation": Outcome(_describe_support, _support_distance, STEPS_SCALE),
}


# ------------------------------------------------------------------------------- hostile inputs

CHECKS = ("erdos_minimum_overlap", "first_autocorrelation", "second_autocorrelation")
KEYS = {"erdos_minimum_overlap": "heights", "first_autocorrelation": "values",
        "second_autocorrelation": "values"}


def _hostile_of(name: str) -> Any:
    def hostile(params: dict[str, Any]) -> dict[str, str]:
        key = KEYS[name]
        out = hostile_variants(key, [0.5] * 8, fixed_rows=False)
        out["too many steps"] = json.dumps({key: [0.5] * (int(params["max_n"]) + 1)})
        out["no steps"] = json.dumps({key: []})
        return out

    return hostile


HOSTILE = {name: _hostile_of(name) for name in CHECKS}
