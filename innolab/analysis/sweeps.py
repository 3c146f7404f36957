"""The paper's analyses over a sweep's run tables (Fig. 5, Fig. 6a–c, Tables 2/4/5/6/7): pure functions.

DataFrames in (`runs.parquet` and `trajectory.parquet` of `innolab.results`), DataFrames or small frozen results
out, no file I/O. Resampling functions take `confidence`, `n_resamples` and `seed` as scipy.stats names them.
A run without a valid submission counts with ratio −1 and N 0 (the paper's imputation, App. E.2): `runs.parquet`
already holds imputed `ratio` and `novelty`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from innolab.metrics import FAILED_NOVELTY, FAILED_RATIO

DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 10_000

Trend = Literal["increasing", "decreasing", "peak"]
Verdict = Literal["holds", "does not hold", "not enough data"]

# the paper's names of innolab's scaffolds (Tables 2, 4, 5)
FRAMEWORK_NAMES = {"mlab": "MLAB", "codeact": "CodeAct", "aide": "AIDE"}


class AnalysisError(ValueError):
    """Bad input to a sweep analysis; the message names the argument and the rule."""


def _columns(frame: pd.DataFrame, needed: Sequence[str], name: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise AnalysisError(f"{name} lacks the columns {missing}; it has {list(frame.columns)}")


def _settings(confidence: float, n_resamples: int) -> None:
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must lie in (0, 1), got {confidence!r}")
    if int(n_resamples) != n_resamples or n_resamples < 100:
        raise AnalysisError(f"n_resamples must be an integer >= 100, got {n_resamples!r}")


def _by(by: str | Sequence[str] | None) -> list[str]:
    return [] if by is None else [by] if isinstance(by, str) else list(by)


def _groups(frame: pd.DataFrame, by: list[str]):
    """(key tuple, sub-frame) pairs, also with no grouping column (one group, key ())."""
    if not by:
        yield (), frame
        return
    for key, part in frame.groupby(by, sort=True, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), part


def _draws(rng: np.random.Generator, size: tuple[int, int], n: int) -> np.ndarray:
    """Resample indices in the narrowest integer type that holds them (drawing 16-bit integers is ~4x faster)."""
    dtype = np.uint16 if n <= np.iinfo(np.uint16).max else np.uint32 if n <= np.iinfo(np.uint32).max else np.int64
    return rng.integers(0, n, size=size, dtype=dtype)


def bootstrap_mean_ci(values: np.ndarray, confidence: float = DEFAULT_CONFIDENCE,
                      n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0, mask: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap interval of the column means of a (units × columns) matrix, resampling units.

    `mask` (same shape) leaves cells out of their column's mean. One column: each resample's mean is gathered
    directly; several columns or a mask: each resample becomes count weights applied to all columns by one matrix
    product. Resamples run in blocks, so memory stays bounded. A column with fewer than 2 units gives NaN."""
    matrix = np.asarray(values, dtype=float)
    if matrix.ndim == 1:
        matrix = matrix[:, None]
    n, columns = matrix.shape
    present = None if mask is None else np.asarray(mask, dtype=bool).reshape(matrix.shape)
    few = (np.full(columns, n) if present is None else present.sum(axis=0)) < 2
    if n < 2:
        return np.full(columns, np.nan), np.full(columns, np.nan)
    rng = np.random.default_rng(seed)
    means = np.empty((n_resamples, columns))
    block = max(1, min(n_resamples, 5_000_000 // n))  # about 40 MB of gathered values per block
    if present is None and columns == 1:
        # gathered in single precision (half the memory traffic), summed in double: bounds good to ~1e-7 relative
        column = matrix[:, 0].astype(np.float32)
        for start in range(0, n_resamples, block):
            size = min(block, n_resamples - start)
            means[start:start + size, 0] = column[_draws(rng, (size, n), n)].mean(axis=1, dtype=np.float64)
    else:  # counts (exact in single precision) times values by sgemm: bounds good to ~1e-6 relative
        full = present is None or bool(present.all())
        weights_of = np.ones(matrix.shape, dtype=np.float32) if full else present.astype(np.float32)
        masked = np.where(weights_of > 0, matrix, 0.0).astype(np.float32)
        counts = np.empty((block, n), dtype=np.float32)
        for start in range(0, n_resamples, block):
            size = min(block, n_resamples - start)
            draws = _draws(rng, (size, n), n)
            for row in range(size):
                counts[row] = np.bincount(draws[row], minlength=n)
            sums = (counts[:size] @ masked).astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                means[start:start + size] = sums / n if full else sums / (counts[:size] @ weights_of)
    alpha = (1.0 - confidence) / 2.0
    with np.errstate(invalid="ignore"):
        low, high = np.nanquantile(means, [alpha, 1.0 - alpha], axis=0) if np.isnan(means).any() else \
            np.quantile(means, [alpha, 1.0 - alpha], axis=0)
    low[few], high[few] = np.nan, np.nan
    return low, high


# ------------------------------------------------------------------------------------------------ Table 6


def success_rates(runs: pd.DataFrame, by: str | Sequence[str], confidence: float = DEFAULT_CONFIDENCE
                  ) -> pd.DataFrame:
    """Share of runs with a valid submission per group, with Wilson intervals (the paper's Table 6).

    Columns: `*by, n, successes, rate, ci_low, ci_high`."""
    from statsmodels.stats.proportion import proportion_confint

    keys = _by(by)
    _columns(runs, [*keys, "valid"], "runs")
    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must lie in (0, 1), got {confidence!r}")
    valid = runs["valid"].fillna(False).astype(bool)
    grouped = valid.groupby([runs[k] for k in keys], sort=True, dropna=False) if keys else valid.groupby(
        np.zeros(len(runs)))
    table = grouped.agg(n="size", successes="sum").reset_index()
    if not keys:
        table = table.drop(columns=table.columns[0])
    table["successes"] = table["successes"].astype(int)
    table["rate"] = table["successes"] / table["n"]
    low, high = proportion_confint(table["successes"], table["n"], alpha=1 - confidence, method="wilson")
    table["ci_low"], table["ci_high"] = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    return table[[*keys, "n", "successes", "rate", "ci_low", "ci_high"]]


# ------------------------------------------------------------------------------------------------ Fig. 6(a)


def anytime_values(trajectory: pd.DataFrame, runs: pd.DataFrame, grid_s: Sequence[float]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each run's best-so-far value at each time of the grid: (ratio, novelty, in_budget), each runs × grid.

    At time t a run's ratio is that of its best valid candidate (hidden evaluator) with t_s <= t, or −1 while it
    has none; its N is that candidate's N (0 while none). `in_budget` is false where t exceeds the run's own
    budget (`budget_s`), so that runs of separate budgets each count up to their own end."""
    _columns(runs, ["config_id"], "runs")
    _columns(trajectory, ["config_id", "t_s", "valid", "ratio", "novelty"], "trajectory")
    grid = np.asarray(grid_s, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or not np.isfinite(grid).all() or (np.diff(grid) < 0).any():
        raise AnalysisError("grid_s must be a non-empty increasing sequence of finite seconds")
    ids = runs["config_id"].to_numpy()
    index = pd.Index(ids)
    if not index.is_unique:
        raise AnalysisError("runs must hold one row per config_id")
    valid = trajectory[trajectory["valid"].fillna(False).astype(bool) & trajectory["ratio"].notna()]
    position = index.get_indexer(valid["config_id"])
    keep = position >= 0
    run_of = position[keep]
    t = valid["t_s"].to_numpy(dtype=float)[keep]
    ratio = valid["ratio"].to_numpy(dtype=float)[keep]
    novelty = valid["novelty"].fillna(FAILED_NOVELTY).to_numpy(dtype=float)[keep]
    order = np.lexsort((t, run_of))
    run_of, t, ratio, novelty = run_of[order], t[order], ratio[order], novelty[order]
    # best so far within each run: a running maximum that restarts at each run, and the N of the best candidate
    best_ratio = np.empty_like(ratio)
    best_novelty = np.empty_like(novelty)
    if ratio.size:
        starts = np.r_[0, np.flatnonzero(np.diff(run_of)) + 1]
        offset = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, ratio.size]))
        # shift each run's ratios above every earlier run's so that one global running maximum restarts per run
        span = float(np.nanmax(ratio) - np.nanmin(ratio)) + 1.0
        shifted = ratio + offset * span
        running = np.maximum.accumulate(shifted)
        at_best = np.maximum.accumulate(np.where(shifted == running, np.arange(ratio.size), 0))
        best_ratio, best_novelty = ratio[at_best], novelty[at_best]  # exact values, not shifted ones
    horizon = float(grid.max()) + 1.0
    keys = run_of * horizon + np.minimum(t, horizon - 0.5)
    n_runs, n_grid = len(ids), grid.size
    out_ratio = np.full((n_runs, n_grid), FAILED_RATIO)
    out_novelty = np.full((n_runs, n_grid), FAILED_NOVELTY)
    queries = np.arange(n_runs)[:, None] * horizon + grid[None, :]
    found = np.searchsorted(keys, queries.ravel(), side="right") - 1
    hit = found >= 0
    hit[hit] = run_of[found[hit]] == np.repeat(np.arange(n_runs), n_grid)[hit]
    out_ratio.ravel()[hit] = best_ratio[found[hit]]
    out_novelty.ravel()[hit] = best_novelty[found[hit]]
    budget = runs["budget_s"].to_numpy(dtype=float) if "budget_s" in runs else np.full(n_runs, np.inf)
    in_budget = grid[None, :] <= np.where(np.isfinite(budget), budget, np.inf)[:, None] + 1e-9
    return out_ratio, out_novelty, in_budget


def anytime(trajectory: pd.DataFrame, runs: pd.DataFrame, by: str | Sequence[str] | None, grid_s: Sequence[float],
            confidence: float = DEFAULT_CONFIDENCE, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
            ) -> pd.DataFrame:
    """The anytime curve (Fig. 6a): per group and time, the mean best-so-far ratio over runs with a bootstrap
    interval over runs, and the mean N of the best-so-far candidates.

    Columns: `*by, t_s, n, mean_ratio, ci_low, ci_high, mean_novelty` (`n`: runs whose budget reaches t_s)."""
    _settings(confidence, n_resamples)
    keys = _by(by)
    _columns(runs, keys, "runs")
    ratio, novelty, in_budget = anytime_values(trajectory, runs, grid_s)
    grid = np.asarray(grid_s, dtype=float)
    rows = []
    for key, part in _groups(runs.reset_index(drop=True), keys):
        members = part.index.to_numpy()
        inside = in_budget[members]
        values, novelties = ratio[members], novelty[members]
        low, high = bootstrap_mean_ci(values, confidence, n_resamples, seed, mask=inside)
        counts = inside.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_ratio = np.where(inside, values, 0.0).sum(axis=0) / counts
            mean_novelty = np.where(inside, novelties, 0.0).sum(axis=0) / counts
        for j, t in enumerate(grid):
            if counts[j] == 0:
                continue
            rows.append({**dict(zip(keys, key, strict=True)), "t_s": float(t), "n": int(counts[j]),
                         "mean_ratio": float(mean_ratio[j]), "ci_low": float(low[j]), "ci_high": float(high[j]),
                         "mean_novelty": float(mean_novelty[j])})
    return pd.DataFrame(rows, columns=[*keys, "t_s", "n", "mean_ratio", "ci_low", "ci_high", "mean_novelty"])


# ------------------------------------------------------------------------------------------- Fig. 6(b), 6(c)


def _first_k(part: pd.DataFrame, k: int | None) -> pd.DataFrame:
    """The runs of each task in seed order, the first k of them (all when None): what "best of k" chooses from."""
    ordered = part.sort_values(["seed"] if "seed" in part else [], kind="stable")
    return ordered if k is None else ordered.groupby("task", sort=False).head(k)


def _best_of(part: pd.DataFrame, metric: str, k: int | None) -> pd.DataFrame:
    """The best run (by imputed ratio) of each (task, level) among its first k seeds."""
    ordered = _first_k(part, k)
    best = ordered.loc[ordered.groupby("task", sort=True)["ratio"].idxmax()]
    return best[list(dict.fromkeys(["task", metric, "ratio"]))]


def factor_effect(runs: pd.DataFrame, factor: str, metric: str, best_of: int | None = None,
                  confidence: float = DEFAULT_CONFIDENCE, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0
                  ) -> pd.DataFrame:
    """A factor's effect on a metric, per level: `mean, ci_low, ci_high, n`, both per run (`kind` "per_run",
    bootstrap over runs) and best of k per (task, level) as the paper reports (`kind` "best_of_k": the run with the
    best ratio among the first `best_of` seeds of each task, all when None; its metric averaged over tasks, the
    interval from resampling the runs within each task).

    Rows whose metric is missing (for example `score` of an invalid run) are left out of the per-run mean."""
    _settings(confidence, n_resamples)
    _columns(runs, [factor, metric, "task", "ratio"], "runs")
    if best_of is not None and (int(best_of) != best_of or best_of < 1):
        raise AnalysisError(f"best_of must be a positive integer or None, got {best_of!r}")
    rows = []
    for (level,), part in _groups(runs, [factor]):
        present = part[part[metric].notna()]
        values = present[metric].to_numpy(dtype=float)
        low, high = bootstrap_mean_ci(values, confidence, n_resamples, seed) if values.size else ([np.nan],) * 2
        rows.append({factor: level, "kind": "per_run", "mean": float(values.mean()) if values.size else np.nan,
                     "ci_low": float(low[0]), "ci_high": float(high[0]), "n": int(values.size)})
        best = _best_of(part, metric, best_of)
        low, high = _best_of_interval(part, metric, best_of, confidence, n_resamples, seed)
        rows.append({factor: level, "kind": "best_of_k", "mean": float(best[metric].mean()),
                     "ci_low": low, "ci_high": high, "n": len(best)})
    return pd.DataFrame(rows, columns=[factor, "kind", "mean", "ci_low", "ci_high", "n"])


def _best_of_interval(part: pd.DataFrame, metric: str, k: int | None, confidence: float, n_resamples: int,
                      seed: int) -> tuple[float, float]:
    """Bootstrap of the mean over tasks of the best-of-k run's metric, resampling each task's runs."""
    rng = np.random.default_rng(seed)
    totals = np.zeros(n_resamples)
    tasks = 0
    for _, runs_of_task in part.groupby("task", sort=True):
        ordered = _first_k(runs_of_task, k)
        ratio = ordered["ratio"].to_numpy(dtype=float)
        if len(ratio) < 2:
            return np.nan, np.nan
        # runs ranked best first (ties in seed order, as the point estimate): the best of a resample is the run of
        # its smallest drawn rank, and drawing ranks uniformly is drawing runs uniformly
        by_rank = ordered[metric].to_numpy(dtype=float)[np.argsort(-ratio, kind="stable")]
        totals += by_rank[_draws(rng, (n_resamples, len(ratio)), len(ratio)).min(axis=1)]
        tasks += 1
    means = totals / max(tasks, 1)
    if np.isnan(means).any():
        return np.nan, np.nan
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1 - alpha))


@dataclass(frozen=True)
class TradeOff:
    """Mean ratio and N per level of a factor, the Pareto set and the level with the best trade-off."""

    table: pd.DataFrame  # factor, mean_ratio, mean_novelty, n, ratio_norm, novelty_norm, product, pareto
    best_level: Any  # None when several levels tie
    rule: str


def trade_off(runs: pd.DataFrame, factor: str) -> TradeOff:
    """Fig. 6(c)'s trade-off between gain and novelty over the levels of a factor.

    Rule: each level's mean ratio and mean N are min-max normalised over the levels (1 = the best level); the best
    trade-off is the level with the largest product of the two, among the Pareto set (levels that no other level
    beats on both). With one level, that level."""
    _columns(runs, [factor, "ratio", "novelty"], "runs")
    if runs.empty:
        raise AnalysisError("trade_off needs at least one run")
    table = runs.groupby(factor, sort=True).agg(mean_ratio=("ratio", "mean"), mean_novelty=("novelty", "mean"),
                                                n=("ratio", "size")).reset_index()

    def normalise(column: pd.Series) -> pd.Series:
        span = column.max() - column.min()
        return (column - column.min()) / span if span > 0 else pd.Series(1.0, index=column.index)

    table["ratio_norm"] = normalise(table["mean_ratio"])
    table["novelty_norm"] = normalise(table["mean_novelty"])
    table["product"] = table["ratio_norm"] * table["novelty_norm"]
    g, n = table["mean_ratio"].to_numpy(), table["mean_novelty"].to_numpy()
    dominated = [bool(((g >= g[i]) & (n >= n[i]) & ((g > g[i]) | (n > n[i]))).any()) for i in range(len(table))]
    table["pareto"] = ~np.asarray(dominated)
    front = table[table["pareto"]]
    top = front[np.isclose(front["product"], front["product"].max())]
    best = top[factor].iloc[0] if len(top) == 1 or len(table) == 1 else None
    rule = ("largest product of min-max normalised mean ratio and mean N over the levels, among the Pareto set"
            + ("" if best is not None else f"; no single best level: {len(top)} levels tie"))
    return TradeOff(table=table, best_level=best, rule=rule)


# ------------------------------------------------------------------------------------------------ Table 7


def paired_effect(runs: pd.DataFrame, factor: str, metric: str, pair_on: Sequence[str] = ("task", "seed"),
                  levels: tuple[Any, Any] | None = None, confidence: float = DEFAULT_CONFIDENCE,
                  n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> pd.DataFrame:
    """The paired effect of a two-level factor on a metric (Table 7: the innovation prompt), as
    `levels[1] − levels[0]` over runs matched on `pair_on` (default: same task and seed).

    One row per task and, with several tasks, one row `task == "all"`: `level_a, level_b, mean_diff, ci_low,
    ci_high, p_value, n_pairs` (paired bootstrap interval; two-sided Wilcoxon signed-rank p from scipy; 1.0 when
    every difference is 0; NaN below 2 pairs), and `p_holm`, the per-task p-values Holm-corrected over tasks
    (statsmodels `multipletests`)."""
    from statsmodels.stats.multitest import multipletests

    _settings(confidence, n_resamples)
    keys = list(pair_on)
    _columns(runs, [factor, metric, *keys], "runs")
    present = sorted(runs[factor].dropna().unique().tolist())
    if levels is None:
        if len(present) != 2:
            raise AnalysisError(f"{factor} has levels {present}: name the two to compare with levels=(a, b)")
        levels = (present[0], present[1])
    a, b = levels
    wide = runs[runs[factor].isin([a, b])].pivot_table(index=keys, columns=factor, values=metric, aggfunc="mean")
    if a not in wide.columns or b not in wide.columns:
        raise AnalysisError(f"no runs at {factor} = {a!r} or {b!r}")
    pairs = pd.DataFrame({"a": wide[a], "b": wide[b]}).dropna().reset_index()  # scalar keys: a bool level works
    pairs["diff"] = pairs["b"] - pairs["a"]

    def row(task: str, diffs: np.ndarray) -> dict[str, Any]:
        out = {"task": task, "level_a": a, "level_b": b, "n_pairs": int(diffs.size)}
        if diffs.size == 0:
            return {**out, "mean_diff": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan}
        low, high = bootstrap_mean_ci(diffs, confidence, n_resamples, seed)
        if diffs.size < 2:
            p = np.nan
        elif np.allclose(diffs, 0.0):
            p = 1.0
        else:
            p = float(stats.wilcoxon(diffs, zero_method="wilcox").pvalue)
        return {**out, "mean_diff": float(diffs.mean()), "ci_low": float(low[0]), "ci_high": float(high[0]),
                "p_value": p}

    by_task = "task" in keys
    rows = [row(str(task), part["diff"].to_numpy()) for task, part in pairs.groupby("task", sort=True)] \
        if by_task else []
    table = pd.DataFrame(rows)
    if len(rows) > 1 or not by_task:
        table = pd.concat([table, pd.DataFrame([row("all", pairs["diff"].to_numpy())])], ignore_index=True)
    table["p_holm"] = np.nan
    per_task = table["task"] != "all"
    testable = per_task & table["p_value"].notna()
    if testable.sum() > 1:
        table.loc[testable, "p_holm"] = multipletests(table.loc[testable, "p_value"], method="holm")[1]
    elif testable.sum() == 1:
        table.loc[testable, "p_holm"] = table.loc[testable, "p_value"]
    return table[["task", "level_a", "level_b", "mean_diff", "ci_low", "ci_high", "p_value", "p_holm", "n_pairs"]]


# ------------------------------------------------------------------------------------------------ Fig. 5


def prior_trajectory(trajectory: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """G, ratio and N of each improving candidate over time and steps, in runs that start from a prior solution
    (Fig. 5): N against the known solutions (`novelty`) and against the prior itself (`novelty_vs_prior`).

    With `runs`, only runs with a `prior_solution` are kept and their factor columns join each row."""
    _columns(trajectory, ["config_id", "t_s", "step", "improving", "valid", "gain", "ratio", "novelty"], "trajectory")
    rows = trajectory[trajectory["improving"].fillna(False).astype(bool)].copy()
    if "novelty_vs_prior" not in rows:
        rows["novelty_vs_prior"] = np.nan
    if runs is not None:
        _columns(runs, ["config_id", "prior_solution"], "runs")
        started = runs[runs["prior_solution"].notna()]
        extra = [c for c in ("task", "agent", "prior_solution", "seed", "temperature") if c in started]
        rows = rows.merge(started[["config_id", *extra]], on="config_id", how="inner")
    rows = rows.sort_values(["config_id", "t_s"], kind="stable")
    rows["candidate"] = rows.groupby("config_id").cumcount()
    columns = ["config_id", "candidate", "t_s", "step", "valid", "gain", "ratio", "novelty", "novelty_vs_prior"]
    return rows[columns + [c for c in rows.columns if c not in columns and c not in
                           ("file", "dev_valid", "dev_score", "improving", "score")]].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------ trends


@dataclass(frozen=True)
class TrendCheck:
    """Whether a stated trend holds on a sweep, with the test that decided it."""

    trend: str
    verdict: Verdict
    test: str
    statistic: float
    p_value: float
    n: int
    detail: str


def trend_holds(data: pd.DataFrame, x: str, y: str, trend: Trend, alpha: float = 0.05, min_levels: int = 3
                ) -> TrendCheck:
    """Check a trend of `fig6_trends.csv` on per-run values (one row per run: its x and its y).

    * increasing / decreasing: Spearman's ρ between x and y; holds when ρ has the stated sign with p < alpha.
    * peak: OLS of y on x and x²; holds when the x² coefficient is negative with p < alpha and the vertex lies
      inside the observed range of x.
    Fewer than `min_levels` distinct x values (or fewer than 4 runs) is "not enough data"."""
    _columns(data, [x, y], "data")
    if trend not in ("increasing", "decreasing", "peak"):
        raise AnalysisError(f"trend must be increasing, decreasing or peak, got {trend!r}")
    points = data[[x, y]].dropna().astype(float)
    n, levels = len(points), points[x].nunique()
    if levels < min_levels or n < 4:
        return TrendCheck(trend, "not enough data", "none", np.nan, np.nan, n,
                          f"{levels} level(s) of {x} and {n} point(s); at least {min_levels} levels and 4 points "
                          "needed")
    if trend in ("increasing", "decreasing"):
        result = stats.spearmanr(points[x], points[y])
        rho, p = float(result.statistic), float(result.pvalue)
        if np.isnan(rho):
            return TrendCheck(trend, "does not hold", "Spearman rho", rho, p, n, f"{y} does not vary with {x}")
        right_sign = rho > 0 if trend == "increasing" else rho < 0
        verdict: Verdict = "holds" if right_sign and p < alpha else "does not hold"
        return TrendCheck(trend, verdict, "Spearman rho", rho, p, n,
                          f"rho = {rho:.3f}, p = {p:.3g} over {n} points at {levels} levels of {x}")
    import statsmodels.api as sm

    design = sm.add_constant(np.column_stack([points[x], points[x] ** 2]))
    fit = sm.OLS(points[y].to_numpy(), design).fit()
    curvature, p = float(fit.params[2]), float(fit.pvalues[2])
    vertex = -fit.params[1] / (2 * fit.params[2]) if fit.params[2] != 0 else np.nan
    inside = bool(points[x].min() < vertex < points[x].max())
    verdict = "holds" if curvature < 0 and p < alpha and inside else "does not hold"
    return TrendCheck(trend, verdict, "OLS quadratic term", curvature, p, n,
                      f"x^2 coefficient {curvature:.3g} (p = {p:.3g}), vertex at {x} = {vertex:.3g}")


def check_trends(stated: pd.DataFrame, data: pd.DataFrame, x: str, columns: dict[str, str],
                 alpha: float = 0.05) -> pd.DataFrame:
    """Each stated trend of `fig6_trends.csv` (rows with quantity, trend, detail) tested on `data` with
    `trend_holds`; `columns` maps a quantity (gain, novelty) to the column that measures it. A quantity without a
    column (e.g. trade_off) is left to the caller."""
    _columns(stated, ["quantity", "trend", "detail"], "stated")
    rows = []
    for row in stated.itertuples():
        if row.quantity not in columns:
            continue
        check = trend_holds(data, x, columns[row.quantity], row.trend, alpha=alpha)
        rows.append({"quantity": row.quantity, "paper": row.detail, "trend": row.trend, "this sweep": check.verdict,
                     "test": check.test, "statistic": check.statistic, "p_value": check.p_value,
                     "detail": check.detail})
    return pd.DataFrame(rows, columns=["quantity", "paper", "trend", "this sweep", "test", "statistic", "p_value",
                                       "detail"])


# ------------------------------------------------------------------------------------------------ regression


def regression(runs: pd.DataFrame, formula: str, kind: Literal["ols", "mixed"] = "ols", groups: str = "task",
               confidence: float = DEFAULT_CONFIDENCE) -> pd.DataFrame:
    """A tidy coefficient table (`term, estimate, std_error, statistic, p_value, ci_low, ci_high, n, method`).

    `ols`: OLS with errors clustered by `groups` when it has at least 2 levels (else heteroscedasticity-robust
    HC1); `mixed`: a linear mixed model with a random intercept per level of `groups`. Example:
    `regression(runs, "ratio ~ temperature + C(agent)")`."""
    import statsmodels.formula.api as smf
    from patsy import PatsyError

    if not 0 < confidence < 1:
        raise AnalysisError(f"confidence must lie in (0, 1), got {confidence!r}")
    data = runs.copy()
    for column in data.columns:
        if data[column].dtype == bool:
            data[column] = data[column].astype(int)
    try:
        if kind == "ols":
            model = smf.ols(formula, data)
            if groups in data and data[groups].nunique() >= 2:
                codes = pd.factorize(data.loc[model.data.row_labels, groups])[0]
                fit = model.fit(cov_type="cluster", cov_kwds={"groups": codes})
                method = f"OLS, errors clustered by {groups}"
            else:
                fit = model.fit(cov_type="HC1")
                method = "OLS, HC1 robust errors"
        elif kind == "mixed":
            fit = smf.mixedlm(formula, data, groups=data[groups]).fit()
            method = f"MixedLM, random intercept per {groups}"
        else:
            raise AnalysisError(f"kind must be 'ols' or 'mixed', got {kind!r}")
    except AnalysisError:
        raise
    except (PatsyError, ValueError, np.linalg.LinAlgError, KeyError) as error:
        raise AnalysisError(f"formula {formula!r}: {str(error).splitlines()[0]}") from None
    interval = fit.conf_int(alpha=1 - confidence)
    table = pd.DataFrame({"term": fit.params.index, "estimate": fit.params.to_numpy(),
                          "std_error": fit.bse.to_numpy(), "statistic": fit.tvalues.to_numpy(),
                          "p_value": fit.pvalues.to_numpy(), "ci_low": interval.iloc[:, 0].to_numpy(),
                          "ci_high": interval.iloc[:, 1].to_numpy()})
    table["n"] = int(fit.nobs)
    table["method"] = method
    return table


# ------------------------------------------------------------------------------------- Tables 2, 4, 5 from runs


def sweep_scores(runs: pd.DataFrame, best_of: int | None = None) -> pd.DataFrame:
    """Table 2 from one's own runs: per (task, framework), the best of k runs by ratio (the paper's best of 3),
    in the format of `innolab.analysis.main_results` (`task, framework, valid, ratio, novelty, gain, runs`)."""
    _columns(runs, ["task", "agent", "valid", "ratio", "novelty"], "runs")
    rows = []
    for (task, agent), part in runs.groupby(["task", "agent"], sort=True):
        ordered = part.sort_values("seed", kind="stable") if "seed" in part else part
        if best_of is not None:
            ordered = ordered.head(best_of)
        valid = ordered[ordered["valid"].fillna(False).astype(bool)]
        framework = FRAMEWORK_NAMES.get(agent, agent)
        if valid.empty:
            rows.append({"task": task, "framework": framework, "valid": False, "ratio": np.nan, "novelty": np.nan,
                         "gain": np.nan, "runs": len(ordered)})
            continue
        best = valid.loc[valid["ratio"].idxmax()]
        rows.append({"task": task, "framework": framework, "valid": True, "ratio": float(best["ratio"]),
                     "novelty": float(best["novelty"]), "gain": best.get("gain"), "runs": len(ordered)})
    return pd.DataFrame(rows, columns=["task", "framework", "valid", "ratio", "novelty", "gain", "runs"])


@dataclass(frozen=True)
class MainResults:
    """Tables 2, 4 and 5 recomputed from a sweep; intervals and tests need at least 2 tasks (else empty)."""

    scores: pd.DataFrame
    means: pd.DataFrame
    intervals: pd.DataFrame
    paired: pd.DataFrame
    note: str


def main_results(runs: pd.DataFrame, best_of: int | None = None, confidence: float = DEFAULT_CONFIDENCE,
                 n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> MainResults:
    """The paper's main results over one's own runs, with the code that recomputes the published tables: best of
    k per task × framework, pessimistic imputation, macro means, bootstrap intervals over tasks, paired tests."""
    from innolab.analysis import main_results as published

    _settings(confidence, n_resamples)
    scores = sweep_scores(runs, best_of)
    means = published.table4_means(scores)
    frameworks = tuple(dict.fromkeys(scores["framework"]))
    tasks = scores["task"].nunique()
    if tasks < 2:
        empty = pd.DataFrame()
        return MainResults(scores, means, empty, empty,
                           f"{tasks} task(s): intervals and paired tests resample tasks and need at least 2")
    intervals = published.framework_intervals(scores, n_resamples=n_resamples, confidence=confidence, seed=seed,
                                              frameworks=frameworks)
    paired = published.paired_tests(scores, n_resamples=n_resamples, confidence=confidence, seed=seed) \
        if len(frameworks) > 1 else pd.DataFrame()
    return MainResults(scores, means, intervals, paired, f"{tasks} tasks, {len(frameworks)} framework(s)")


def describe(runs: pd.DataFrame) -> str:
    """What a sweep's data are, in one paragraph: model(s), tasks, agents, budgets, runs, seeds, valid runs."""
    if runs.empty:
        return "No runs."

    def listing(column: str) -> str:
        if column not in runs:
            return "?"
        values = sorted({str(v) for v in runs[column].dropna()})
        return ", ".join(values) if values else "none"

    valid = int(runs["valid"].fillna(False).astype(bool).sum()) if "valid" in runs else 0
    complete = int(runs["complete"].fillna(False).astype(bool).sum()) if "complete" in runs else len(runs)
    budgets = ", ".join(f"{b:g} s" for b in sorted(runs["budget_s"].dropna().unique())) if "budget_s" in runs else "?"
    return (f"{len(runs)} runs ({complete} complete, {valid} with a valid submission); model: {listing('model')}; "
            f"tasks: {listing('task')}; agents: {listing('agent')}; budget: {budgets}; seeds: {listing('seed')}; "
            f"temperatures: {listing('temperature')}; prior solutions: {listing('prior_solution')}.")
