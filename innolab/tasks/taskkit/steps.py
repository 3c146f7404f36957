"""Step functions: Erdős minimum overlap, the first and second autocorrelation inequalities."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .core import Invalid, only_keys, real_vector


def erdos_minimum_overlap(data: dict[str, Any], max_n: int) -> float:
    """Check step heights h on [0, 2]; score (2/n)·max_k Σ_i h_i (1 − h_{i+k}) (minimise).

    Rule for ∫h = 1: the heights are rescaled to sum exactly n/2 (as EinsteinArena does), then
    every rescaled height must lie in [0, 1] with zero tolerance.

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
    total = math.fsum(h)
    if not total > 0:
        raise Invalid("heights must have a positive sum")
    n = len(h)
    h = h * ((n / 2) / total)
    if (h > 1).any():
        raise Invalid(f"heights[{int(np.argmax(h > 1))}] exceeds 1 after rescaling to sum n/2")
    return float(np.max(np.correlate(h, 1 - h, mode="full")) * 2 / n)


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
