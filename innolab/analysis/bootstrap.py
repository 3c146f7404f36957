"""innolab's one bootstrap engine, and the task-level statistics of App. E.2 built on it.

Every resampling function takes keyword-only settings named as `scipy.stats.bootstrap` names them
(`confidence_level`, `n_resamples`, `rng`: an integer seed or a numpy Generator), checked by one
validator (`check_settings`) that raises one error class (`BootstrapError`), and returns one result
type (`Interval`; a paired test is an `Interval` of the mean difference with its p-value). The unit
of resampling is the row: a vector (or a matrix, one column per statistic) holds one value per unit
(a task, a run).

An interval contains its estimate by its method, or is NaN with a reason (`Interval.note`); no
bound is ever widened to its estimate. The percentile interval of a mean over units contains the
mean wherever at least α/2 of the resampled means lie on each side of it (the resampled means
centre on the mean), and it is computed so that rounding cannot break this: in float64, on
deviations from a reference value of each column (its first counted value), so that a constant
column's resampled means, bounds and mean are that value exactly, and the bounds and mean are that
reference plus deviations (rounding is monotone, so bounds that contain the mean's deviation
contain the mean). Where the bounds still miss the mean (the resampled means lie on one side of it
beyond the tail α/2, possible at a confidence level near 0 with a skewed column), the bounds are
NaN and the note says so. A statistic whose percentile bootstrap is invalid (a maximum such as best
of k) is not resampled here: see `innolab.analysis.sweeps.factor_effect`.

Fewer than `MIN_UNITS` (10) units: no interval and no bootstrap p (NaN, with a note). The percentile
interval of a mean is about mean ± z·σ̂/√n with the plug-in σ̂, so it undercovers at small n: the
nominal 95 % interval of a normal mean covers 0.48 of the time at 2 units, 0.84 at 5, 0.88 at 8,
0.91 at 10 and 0.92 at 15 (2,000 simulated samples each, 2,000 resamples; `tests/test_bootstrap.py`
checks 2 and 10 units); from 10 units its shortfall is a few points, below it the interval says
more than the data do. An interval from 10 units is still approximate (read 0.95 as about 0.91
there).

Runs of one task are not independent of each other: `cluster_bootstrap_ci` resamples clusters
(tasks), keeping each one's units (runs) together.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from innolab.metrics import impute

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
MIN_RESAMPLES = 100
# the fewest units a percentile bootstrap interval (or p) is given from: see the module's docstring
MIN_UNITS = 10
# resampled cells per block (8 MB of float64): memory stays bounded, caches stay warm
_BLOCK_CELLS = 1_000_000

PValueMethod = Literal["percentile", "shift"]
Rng = int | np.random.Generator
Values = np.ndarray | pd.Series | pd.DataFrame | list[float]


class BootstrapError(ValueError):
    """Bad input to an interval function; the message names the argument and the rule."""


@dataclass(frozen=True)
class Interval:
    """A mean over `n` units and its percentile bootstrap interval.

    The bounds are NaN below `MIN_UNITS` units (or clusters), or where the percentile bounds miss
    the mean; `note` then says which (empty where the interval is given).
    """

    mean: float
    ci_low: float
    ci_high: float
    n: int
    confidence_level: float
    n_resamples: int
    note: str = field(default="", kw_only=True)

    def as_dict(self) -> dict[str, float]:
        """Return the interval's fields by name."""
        return asdict(self)


@dataclass(frozen=True)
class PairedTest(Interval):
    """A paired bootstrap comparison a − b over units.

    `mean` is the mean difference; two-sided `p_value` (NaN below `MIN_UNITS` units, as the
    bounds, with the note).
    """

    p_value: float


def check_settings(*, confidence_level: float, n_resamples: int | None = None) -> None:
    """Check interval settings: the one validator of them.

    Args:
        confidence_level: The interval's confidence level, in (0, 1).
        n_resamples: The number of resamples, an integer ≥ `MIN_RESAMPLES`; None where the
            function does not resample.

    Raises:
        BootstrapError: When a setting breaks its rule.
    """
    if isinstance(confidence_level, bool) \
            or not isinstance(confidence_level, int | float | np.floating) \
            or not 0 < confidence_level < 1:
        raise BootstrapError(f"confidence_level must lie in (0, 1), got {confidence_level!r}")
    if n_resamples is not None and (isinstance(n_resamples, bool)
                                    or not isinstance(n_resamples, int | np.integer)
                                    or n_resamples < MIN_RESAMPLES):
        raise BootstrapError(f"n_resamples must be an integer >= {MIN_RESAMPLES}, "
                             f"got {n_resamples!r}")


def generator(rng: Rng) -> np.random.Generator:
    """Return the Generator of `rng`.

    Args:
        rng: A non-negative integer, which seeds a new Generator, or a Generator, used as it is.

    Returns:
        The Generator.

    Raises:
        BootstrapError: When `rng` is neither.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, bool) or not isinstance(rng, int | np.integer) or rng < 0:
        raise BootstrapError("rng must be a non-negative integer seed or a numpy Generator, "
                             f"got {rng!r}")
    return np.random.default_rng(int(rng))


def draw_indices(gen: np.random.Generator, size: tuple[int, int], n: int) -> np.ndarray:
    """Return indices in [0, n) drawn with replacement.

    Args:
        gen: The Generator to draw with.
        size: The shape of the draws.
        n: The number of units.

    Returns:
        The indices, in the narrowest integer type that holds them (16-bit draws are about 4x
        faster than 64-bit ones).
    """
    dtype = np.uint16 if n <= np.iinfo(np.uint16).max \
        else np.uint32 if n <= np.iinfo(np.uint32).max else np.int64
    return gen.integers(0, n, size=size, dtype=dtype)


def percentile_bounds(samples: np.ndarray, confidence_level: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Return the percentile bounds of bootstrap statistics, as they are (nothing is widened).

    Args:
        samples: The statistics, resamples × columns; NaN resamples are left out.
        confidence_level: The confidence level of the bounds.

    Returns:
        The lower and upper bounds of each column (NaN for a column with no resample left).
    """
    alpha = (1.0 - confidence_level) / 2.0
    quantile = np.nanquantile if np.isnan(samples).any() else np.quantile
    with warnings.catch_warnings():
        # a column with no resample left: NaN bounds
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = quantile(samples, [alpha, 1.0 - alpha], axis=0)
    return np.asarray(low, dtype=float), np.asarray(high, dtype=float)


def _missed_note(confidence_level: float, low: float, high: float, mean: float) -> str:
    return (f"no interval: the {confidence_level:g} percentile bounds [{low:.6g}, {high:.6g}] of "
            f"the resampled means miss the mean {mean:.6g} (more than the tail of the resamples "
            "lies on one side of it)")


def too_few(k: int, what: str = "unit") -> str:
    """Return the note of an interval not given for too few units ('' from `MIN_UNITS` on).

    Args:
        k: The units (or clusters) counted.
        what: What they are, singular ("unit", "task", "run").

    Returns:
        The reason, or '' where there are enough.
    """
    if k >= MIN_UNITS:
        return ""
    return (f"{k} {what}(s): a percentile bootstrap interval needs at least {MIN_UNITS} (below, "
            "it covers well under its level: a nominal 95 % interval of a normal mean about 48 % "
            "of the time at 2, 84 % at 5, 88 % at 8)")


def _percentile_interval(matrix: np.ndarray, present: np.ndarray | None, confidence_level: float,
                         n_resamples: int, gen: np.random.Generator
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str],
                                    np.ndarray | None]:
    """The mean of each column over its counted units and its percentile interval.

    Computed on deviations from each column's first counted value (see the module's docstring).

    Returns:
        (mean, ci_low, ci_high, n, notes, resampled means or None below `MIN_UNITS` units in
        every column; a column below it has NaN bounds and its note).
    """
    counted = np.ones(matrix.shape, dtype=bool) if present is None else present
    n = counted.sum(axis=0)
    reference = np.zeros(matrix.shape[1])
    if matrix.shape[0]:
        first = np.argmax(counted, axis=0)
        reference = np.where(n > 0, matrix[first, np.arange(matrix.shape[1])], 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        deviation = np.where(counted, matrix - reference, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = deviation.sum(axis=0) / n
    mean = reference + centre
    low = np.full(matrix.shape[1], np.nan)
    high = np.full(matrix.shape[1], np.nan)
    notes = [too_few(int(k), "unit") for k in n]
    if not (n >= MIN_UNITS).any():
        return mean, low, high, n, notes, None
    means = _resample_means(deviation, present, n_resamples, gen)
    dev_low, dev_high = percentile_bounds(means, confidence_level)
    for j in np.flatnonzero(n >= MIN_UNITS):
        if dev_low[j] <= centre[j] <= dev_high[j]:
            low[j], high[j] = reference[j] + dev_low[j], reference[j] + dev_high[j]
        else:
            notes[j] = _missed_note(confidence_level, reference[j] + dev_low[j],
                                    reference[j] + dev_high[j], mean[j])
    return mean, low, high, n, notes, means + reference


def _unit_matrix(values: Values, mask: np.ndarray | None, name: str
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    matrix = np.asarray(values, dtype=np.float64)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    if matrix.ndim != 2:
        raise BootstrapError(f"{name} must be 1-D (units) or 2-D (units × columns), "
                             f"got {matrix.ndim}-D")
    present = None
    if mask is not None:
        present = np.asarray(mask, dtype=bool)
        if present.shape not in (matrix.shape, np.shape(values)):
            raise BootstrapError(f"mask must have the shape of {name} {np.shape(values)}, "
                                 f"got {present.shape}")
        present = present.reshape(matrix.shape)
    counted = matrix if present is None else matrix[present]
    if not np.isfinite(counted).all():
        raise BootstrapError(f"{name} must be finite where counted; impute failed configurations "
                             "first or leave cells out with mask (NaN or inf found)")
    return matrix, present


def _resample_means(matrix: np.ndarray, present: np.ndarray | None, n_resamples: int,
                    gen: np.random.Generator) -> np.ndarray:
    """Column means of `n_resamples` resamples of the units (rows), in float64.

    The result has the shape (n_resamples, columns).

    `present` (the shape of `matrix`, or None) leaves cells out of their column's mean; a resample
    with no counted cell in a column gives NaN there. One column: each resample's values are
    gathered; otherwise each resample becomes count weights applied to every column by one matrix
    product. Resamples run in blocks.
    """
    n, columns = matrix.shape
    means = np.empty((n_resamples, columns))
    block = max(1, min(n_resamples, _BLOCK_CELLS // n))
    if present is None and columns == 1:
        column = matrix[:, 0]
        for start in range(0, n_resamples, block):
            size = min(block, n_resamples - start)
            means[start:start + size, 0] = column[draw_indices(gen, (size, n), n)].mean(axis=1)
        return means
    full = present is None or bool(present.all())
    # one product gives each resample's sums and, with a mask, its counted units:
    # [values | counted] per column
    weights = matrix if full \
        else np.hstack([np.where(present, matrix, 0.0), present.astype(np.float64)])
    offsets = (np.arange(block, dtype=np.uint32 if block * n < 2**32 else np.int64) * n)[:, None]
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        # each resample's draw counts per unit, all rows of the block in one bincount
        # (row r's indices offset by r·n); the draws of the one-column path
        draws = draw_indices(gen, (size, n), n).astype(offsets.dtype)
        draws += offsets[:size]
        counts = np.bincount(draws.ravel(), minlength=size * n).reshape(size, n).astype(np.float64)
        products = counts @ weights
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start:start + size] = products / n if full \
                else products[:, :columns] / products[:, columns:]
    return means


def bootstrap_ci(values: Values, *, confidence_level: float = DEFAULT_CONFIDENCE,
                 n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0,
                 mask: np.ndarray | None = None) -> Interval | list[Interval]:
    """Return the percentile bootstrap interval of the mean over units.

    Args:
        values: One value per unit (a vector), or one column per statistic (a matrix).
        confidence_level: The interval's confidence level, in (0, 1).
        n_resamples: The number of resamples.
        rng: A seed or a Generator (`generator`).
        mask: Cells to count (the shape of `values`); None counts every cell. It leaves cells out,
            for example runs whose budget ends before a time.

    Returns:
        One Interval for a vector, one per column of a matrix. A column with fewer than
        `MIN_UNITS` counted units gets NaN bounds (and a NaN mean with none), as does one whose
        percentile bounds miss its mean; the Interval's note says which.

    Raises:
        BootstrapError: When a setting breaks its rule, the values are not 1-D or 2-D, the mask
            has another shape, or a counted value is not finite.
    """
    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    matrix, present = _unit_matrix(values, mask, "values")
    observed, low, high, n, notes, _ = _percentile_interval(matrix, present, confidence_level,
                                                            n_resamples, generator(rng))
    intervals = [Interval(float(observed[j]), float(low[j]), float(high[j]), int(n[j]),
                          float(confidence_level), int(n_resamples), note=notes[j])
                 for j in range(matrix.shape[1])]
    return intervals[0] if np.ndim(values) == 1 else intervals


def _two_sided_p(samples: np.ndarray, observed: np.ndarray, method: PValueMethod) -> np.ndarray:
    n = samples.shape[0]
    if method == "percentile":
        # Twice the share of bootstrap means on the far side of zero (+1 correction keeps p > 0).
        below = (np.sum(samples <= 0.0, axis=0) + 1) / (n + 1)
        above = (np.sum(samples >= 0.0, axis=0) + 1) / (n + 1)
        return np.minimum(1.0, 2.0 * np.minimum(below, above))
    # Null distribution: the bootstrap means recentred on zero.
    extreme = np.sum(np.abs(samples - observed) >= np.abs(observed), axis=0)
    return np.minimum(1.0, (extreme + 1) / (n + 1))


def paired_bootstrap(a: Values, b: Values, *, confidence_level: float = DEFAULT_CONFIDENCE,
                     n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0,
                     p_method: PValueMethod = "percentile") -> PairedTest:
    """Return the paired bootstrap of the unit-wise differences a − b (App. E.2).

    Args:
        a: One value per unit.
        b: One value per unit, paired with `a`.
        confidence_level: The interval's confidence level, in (0, 1).
        n_resamples: The number of resamples.
        rng: A seed or a Generator (`generator`).
        p_method: "percentile" doubles the share of bootstrap means on the far side of zero;
            "shift" compares |mean* − mean| with |mean| (the bootstrap distribution recentred
            under H0).

    Returns:
        The mean difference, its percentile interval (NaN with a note where the bounds miss the
        mean, as `bootstrap_ci`) and its two-sided p-value. Below `MIN_UNITS` units the interval
        and the p-value are NaN and the note says why: the bootstrap distribution the p reads is
        the one the interval would (its smallest p is 2 / (n_resamples + 1) with "percentile",
        1 / (n_resamples + 1) with "shift", whatever the number of units).

    Raises:
        BootstrapError: When a setting breaks its rule, `a` and `b` are not vectors of one length,
            there are fewer than 2 units, or a value is not finite.
    """
    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    if p_method not in ("percentile", "shift"):
        raise BootstrapError(f"p_method must be 'percentile' or 'shift', got {p_method!r}")
    va, vb = _unit_matrix(a, None, "a")[0], _unit_matrix(b, None, "b")[0]
    if va.shape != vb.shape or va.shape[1] != 1:
        raise BootstrapError("a and b must be vectors of one value per unit each, got "
                             f"{va.shape[0]} and {vb.shape[0]} units")
    if va.shape[0] < 2:
        raise BootstrapError(f"a paired test needs at least 2 units, got {va.shape[0]}")
    observed, low, high, n, notes, means = _percentile_interval(
        va - vb, None, confidence_level, n_resamples, generator(rng))
    p = np.full(1, np.nan) if means is None else _two_sided_p(means, observed, p_method)
    return PairedTest(float(observed[0]), float(low[0]), float(high[0]), int(n[0]),
                      float(confidence_level), int(n_resamples), p_value=float(p[0]),
                      note=notes[0] + (" (so no p-value either)" if means is None else ""))


def cluster_bootstrap_ci(values: Values, clusters: Values, *,
                         confidence_level: float = DEFAULT_CONFIDENCE,
                         n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0,
                         cluster_name: str = "cluster") -> Interval:
    """Return the mean over units and its percentile interval from resampling clusters.

    The units (runs) come in clusters (tasks): each resample draws clusters with replacement and
    keeps every unit of a drawn cluster; its statistic is the mean over the units it holds
    (Σ cluster sums / Σ cluster sizes). Units are not resampled again within a drawn cluster:
    the within-cluster variation is already in the spread of the cluster sums, and a second
    stage counts it twice (Davison & Hinkley 1997, §3.8), widening the interval. Computed on
    deviations from the first value, as `bootstrap_ci` (a constant vector's bounds are its
    mean exactly).

    Args:
        values: One value per unit.
        clusters: The cluster of each unit (any hashable labels), as long as `values`.
        confidence_level: The interval's confidence level, in (0, 1).
        n_resamples: The number of resamples.
        rng: A seed or a Generator (`generator`).
        cluster_name: What a cluster is ("task"), for the note.

    Returns:
        The mean over the units (`n`: units) and its interval; NaN bounds with a note below
        `MIN_UNITS` clusters (the clusters are the units of resampling) or where the bounds miss
        the mean.

    Raises:
        BootstrapError: When a setting breaks its rule, `values` is not a vector of finite
            values, or `clusters` has another length.
    """
    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    vector = _unit_matrix(values, None, "values")[0]
    if vector.shape[1] != 1:
        raise BootstrapError("values must be a vector, one value per unit")
    labels = np.asarray(clusters)
    if labels.shape != (vector.shape[0],):
        raise BootstrapError(f"clusters must name the cluster of each of the {vector.shape[0]} "
                             f"units, got shape {labels.shape}")
    column = vector[:, 0]
    n = column.size
    if n == 0:
        return Interval(np.nan, np.nan, np.nan, 0, float(confidence_level), int(n_resamples),
                        note=too_few(0, cluster_name))
    codes = pd.factorize(pd.Series(labels, dtype=object))[0]
    k = int(codes.max()) + 1
    reference = column[0]
    deviation = column - reference
    sums = np.bincount(codes, weights=deviation, minlength=k)
    sizes = np.bincount(codes, minlength=k).astype(np.float64)
    centre = float(sums.sum() / n)
    mean = reference + centre
    note = too_few(k, cluster_name)
    if note:
        return Interval(mean, np.nan, np.nan, n, float(confidence_level), int(n_resamples),
                        note=note)
    gen = generator(rng)
    means = np.empty(n_resamples)
    block = max(1, min(n_resamples, _BLOCK_CELLS // k))
    offsets = np.arange(block, dtype=np.int64)[:, None] * k
    for start in range(0, n_resamples, block):
        size = min(block, n_resamples - start)
        draws = draw_indices(gen, (size, k), k).astype(np.int64) + offsets[:size]
        counts = np.bincount(draws.ravel(), minlength=size * k).reshape(size, k)
        means[start:start + size] = (counts @ sums) / (counts @ sizes)
    dev_low, dev_high = percentile_bounds(means[:, None], confidence_level)
    if not dev_low[0] <= centre <= dev_high[0]:
        return Interval(mean, np.nan, np.nan, n, float(confidence_level), int(n_resamples),
                        note=_missed_note(confidence_level, reference + dev_low[0],
                                          reference + dev_high[0], mean))
    return Interval(mean, float(reference + dev_low[0]), float(reference + dev_high[0]), n,
                    float(confidence_level), int(n_resamples))


def impute_scores(
    scores: pd.DataFrame,
    valid_col: str = "valid",
    ratio_col: str = "ratio",
    novelty_col: str = "novelty",
) -> pd.DataFrame:
    """Return a copy of a score table with failed configurations imputed (`metrics.impute`).

    NaN novelty: a failed configuration's N is imputed 0 (the paper's N = C · min D with C = 0);
    a valid configuration whose N was not computed keeps NaN, never 0 (not computed is not "not
    novel"): whoever averages or tests N leaves those cells out and says how many.

    Args:
        scores: One row per (task, framework).
        valid_col: The column of validity.
        ratio_col: The column of ratios.
        novelty_col: The column of novelties.

    Returns:
        The copy, failed configurations set to ratio −1, N 0; valid ones as they were.

    Raises:
        BootstrapError: When a column is missing or a valid configuration lacks its ratio.
    """
    missing = [c for c in (valid_col, ratio_col, novelty_col) if c not in scores.columns]
    if missing:
        raise BootstrapError(f"scores lacks the columns {missing}")
    out = scores.copy()
    valid = out[valid_col].astype(bool)
    lacking = valid & out[ratio_col].isna()
    if lacking.any():
        rows = out.loc[lacking].index.tolist()
        raise BootstrapError("valid configurations need a ratio (fill unreported cells "
                             f"first): rows {rows}")
    imputed = [impute(ok, r, None if pd.isna(n) else n)
               for ok, r, n in zip(valid, out[ratio_col], out[novelty_col], strict=True)]
    out[ratio_col] = [r for r, _ in imputed]
    out[novelty_col] = [n for _, n in imputed]
    return out


def macro_average(
    scores: pd.DataFrame,
    metrics: tuple[str, ...] = ("ratio", "novelty"),
    framework_col: str = "framework",
    task_col: str = "task",
    valid_col: str = "valid",
) -> pd.DataFrame:
    """Return the macro-average over tasks per framework, with pessimistic imputation.

    Args:
        scores: One row per (framework, task).
        metrics: The columns to average.
        framework_col: The column of frameworks.
        task_col: The column of tasks.
        valid_col: The column of validity.

    Returns:
        One row per framework: the averaged metrics, `n_valid`, `n_tasks` and, per metric,
        `n_<metric>`: the tasks its mean counts. A valid task whose value is NaN (N not computed)
        is left out of that metric's mean (never read as 0) and so out of `n_<metric>`.

    Raises:
        BootstrapError: When a column is missing, a valid configuration lacks its ratio, or a
            (framework, task) has more than one row.
    """
    imputed = impute_scores(scores, valid_col=valid_col)
    counts = imputed.groupby([framework_col, task_col]).size()
    if (counts > 1).any():
        dup = counts[counts > 1].index.tolist()
        raise BootstrapError(f"one row per (framework, task) expected; duplicated: {dup}")
    grouped = imputed.groupby(framework_col, sort=False)
    out = grouped[list(metrics)].mean()
    out["n_valid"] = grouped[valid_col].sum().astype(int)
    out["n_tasks"] = grouped[task_col].nunique()
    for metric in metrics:
        out[f"n_{metric}"] = grouped[metric].count().astype(int)
    return out.reset_index()
