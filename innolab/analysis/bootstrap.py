"""Task-level statistics of App. E.2: macro-averages, percentile bootstrap intervals, paired bootstrap tests.

Vectorised numpy; every resampling function takes a seed, so results are reproducible. The unit of
resampling is the task: a vector (or matrix, one column per framework) holds one value per task.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import pandas as pd

from innolab.metrics import FAILED_NOVELTY, FAILED_RATIO

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95

PValueMethod = Literal["percentile", "shift"]


class BootstrapError(ValueError):
    """Bad input to a bootstrap function; the message names the argument and the rule."""


@dataclass(frozen=True)
class Interval:
    """A mean and its percentile bootstrap confidence interval."""

    mean: float
    ci_low: float
    ci_high: float
    confidence: float
    n_resamples: int

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class PairedTest:
    """A paired bootstrap comparison a − b over tasks: mean difference, its interval and a two-sided p-value."""

    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    confidence: float
    n_resamples: int

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def _as_task_matrix(values: np.ndarray | pd.Series | pd.DataFrame | list[float], name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise BootstrapError(f"{name} must be 1-D (tasks) or 2-D (tasks × columns), got {arr.ndim}-D")
    if arr.shape[0] < 2:
        raise BootstrapError(f"{name} needs at least 2 tasks to resample, got {arr.shape[0]}")
    if not np.isfinite(arr).all():
        raise BootstrapError(f"{name} must be finite; impute failed configurations first (NaN or inf found)")
    return arr


def _check_settings(n_resamples: int, confidence: float) -> None:
    if int(n_resamples) != n_resamples or n_resamples < 100:
        raise BootstrapError(f"n_resamples must be an integer ≥ 100, got {n_resamples!r}")
    if not 0 < confidence < 1:
        raise BootstrapError(f"confidence must lie in (0, 1), got {confidence!r}")


def resample_indices(n_tasks: int, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """(n_resamples, n_tasks) task indices drawn with replacement; shared by intervals and paired tests."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_tasks, size=(n_resamples, n_tasks))


def bootstrap_means(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Means of every resample: (n_resamples, n_columns) for a (n_tasks, n_columns) matrix."""
    return values[indices].mean(axis=1)


def _percentile_bounds(samples: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [alpha, 1.0 - alpha], axis=0)
    return low, high


def bootstrap_ci(
    values: np.ndarray | pd.Series | list[float],
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> Interval | list[Interval]:
    """Percentile bootstrap interval of the mean over tasks (one Interval, or one per column of a matrix)."""
    _check_settings(n_resamples, confidence)
    matrix = _as_task_matrix(values, "values")
    means = bootstrap_means(matrix, resample_indices(matrix.shape[0], n_resamples, seed))
    low, high = _percentile_bounds(means, confidence)
    observed = matrix.mean(axis=0)
    intervals = [
        Interval(float(observed[j]), float(low[j]), float(high[j]), confidence, int(n_resamples))
        for j in range(matrix.shape[1])
    ]
    return intervals[0] if np.asarray(values).ndim == 1 else intervals


def _two_sided_p(samples: np.ndarray, observed: np.ndarray, method: PValueMethod) -> np.ndarray:
    n = samples.shape[0]
    if method == "percentile":
        # Twice the share of bootstrap means on the far side of zero (+1 correction keeps p > 0).
        below = (np.sum(samples <= 0.0, axis=0) + 1) / (n + 1)
        above = (np.sum(samples >= 0.0, axis=0) + 1) / (n + 1)
        return np.minimum(1.0, 2.0 * np.minimum(below, above))
    if method == "shift":
        # Null distribution: the bootstrap means recentred on zero.
        extreme = np.sum(np.abs(samples - observed) >= np.abs(observed), axis=0)
        return np.minimum(1.0, (extreme + 1) / (n + 1))
    raise BootstrapError(f"p_method must be 'percentile' or 'shift', got {method!r}")


def paired_bootstrap(
    a: np.ndarray | pd.Series | list[float],
    b: np.ndarray | pd.Series | list[float],
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    p_method: PValueMethod = "percentile",
) -> PairedTest:
    """Paired bootstrap of the task-wise differences a − b (App. E.2): mean, percentile CI, two-sided p.

    ``p_method="percentile"`` (default) doubles the share of bootstrap means on the far side of zero;
    ``"shift"`` compares |mean* − mean| with |mean| (the bootstrap distribution recentred under H0).
    """
    _check_settings(n_resamples, confidence)
    va, vb = _as_task_matrix(a, "a"), _as_task_matrix(b, "b")
    if va.shape != vb.shape:
        raise BootstrapError(f"a and b must hold one value per task each, got {va.shape[0]} and {vb.shape[0]} tasks")
    diffs = va - vb
    means = bootstrap_means(diffs, resample_indices(diffs.shape[0], n_resamples, seed))
    low, high = _percentile_bounds(means, confidence)
    observed = diffs.mean(axis=0)
    p = _two_sided_p(means, observed, p_method)
    return PairedTest(float(observed[0]), float(low[0]), float(high[0]), float(p[0]), confidence, int(n_resamples))


def impute_scores(
    scores: pd.DataFrame,
    valid_col: str = "valid",
    ratio_col: str = "ratio",
    novelty_col: str = "novelty",
) -> pd.DataFrame:
    """Copy of a per-(task, framework) score table with failed configurations set to ratio −1, N 0."""
    missing = [c for c in (valid_col, ratio_col, novelty_col) if c not in scores.columns]
    if missing:
        raise BootstrapError(f"scores lacks the columns {missing}")
    out = scores.copy()
    valid = out[valid_col].astype(bool)
    lacking = valid & out[[ratio_col, novelty_col]].isna().any(axis=1)
    if lacking.any():
        rows = out.loc[lacking].index.tolist()
        raise BootstrapError(f"valid configurations need ratio and novelty (fill unreported cells first): rows {rows}")
    out.loc[~valid, ratio_col] = FAILED_RATIO
    out.loc[~valid, novelty_col] = FAILED_NOVELTY
    return out


def macro_average(
    scores: pd.DataFrame,
    metrics: tuple[str, ...] = ("ratio", "novelty"),
    framework_col: str = "framework",
    task_col: str = "task",
    valid_col: str = "valid",
) -> pd.DataFrame:
    """Macro-average over tasks per framework, with pessimistic imputation; adds n_valid and n_tasks."""
    imputed = impute_scores(scores, valid_col=valid_col)
    counts = imputed.groupby([framework_col, task_col]).size()
    if (counts > 1).any():
        dup = counts[counts > 1].index.tolist()
        raise BootstrapError(f"one row per (framework, task) expected; duplicated: {dup}")
    grouped = imputed.groupby(framework_col, sort=False)
    out = grouped[list(metrics)].mean()
    out["n_valid"] = grouped[valid_col].sum().astype(int)
    out["n_tasks"] = grouped[task_col].nunique()
    return out.reset_index()
