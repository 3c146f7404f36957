"""The paper's analyses over a sweep's run tables (Fig. 5, 6a–c, Tables 2/4/5/6/7): pure functions.

DataFrames in (`runs.parquet` and `trajectory.parquet` of `innolab.results`), DataFrames or small
frozen results out, no file I/O. Interval functions take keyword-only `confidence_level` and, where
they resample, `n_resamples` and `rng`, as scipy.stats names them, all checked by
`innolab.analysis.bootstrap` (the one bootstrap engine). Every interval contains its estimate by
its method (a percentile bootstrap of a mean, Wilson's score interval, a Wald interval) or is NaN
with a reason; none is widened to its estimate, and a best of k is not bootstrapped over its own
seeds (see `factor_effect`). A percentile bootstrap is given from `bootstrap.MIN_UNITS` (10)
units, NaN with a note below (it undercovers there); runs spread over several tasks are resampled
by task (`factor_effect`). Every statistic names its unit of observation (a run, a task; trend
tests take `unit=`, e.g. `config_id`: one run), and every test states its hypothesis and, beside
its p, the smallest p its design can reach (`p_min`, NaN with a reason where no test ran), in its
docstring and its output. A verdict over repeated measures counts a change only beyond a stated
`min_effect` (in the metric's units), so that it does not follow the number of runs that moved.
A run without a valid submission counts with ratio −1 and N 0 (the paper's imputation, App. E.2):
`runs.parquet` already holds imputed `ratio` and `novelty`.

NaN novelty: a valid run (or candidate) whose N was not computed (no back end, a judge that
failed, no code; `novelty_status` says which) has N = NaN, never 0. No function here reads it as 0:
each states in its docstring what it does with it (left out of means with the count reported,
pairs excluded from paired tests, rows dropped from trend tests and regressions, passed through
as NaN in tables of single values).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from innolab.analysis.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    MIN_UNITS,
    Rng,
    bootstrap_ci,
    check_settings,
    cluster_bootstrap_ci,
    generator,
    too_few,
)
from innolab.metrics import FAILED_NOVELTY, FAILED_RATIO

Trend = Literal["increasing", "decreasing", "peak"]
Verdict = Literal["holds", "does not hold", "not enough data"]

# the paper's names of innolab's scaffolds (Tables 2, 4, 5)
FRAMEWORK_NAMES = {"mlab": "MLAB", "codeact": "CodeAct", "aide": "AIDE"}
# columns that name one run: rows that repeat one of them are repeated measures of that run
RUN_ID_COLUMNS = ("config_id", "run_id", "run_dir")


class AnalysisError(ValueError):
    """Bad input to a sweep analysis; the message names the argument and the rule."""


def _columns(frame: pd.DataFrame, needed: Sequence[str], name: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise AnalysisError(f"{name} lacks the columns {missing}; it has {list(frame.columns)}")


def _by(by: str | Sequence[str] | None) -> list[str]:
    return [] if by is None else [by] if isinstance(by, str) else list(by)


def _groups(frame: pd.DataFrame, by: list[str]):
    """(key tuple, sub-frame) pairs, also with no grouping column (one group, key ())."""
    if not by:
        yield (), frame
        return
    for key, part in frame.groupby(by, sort=True, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), part


# ------------------------------------------------------------------------------------------ Table 6


def success_rates(
    runs: pd.DataFrame, by: str | Sequence[str], *, confidence_level: float = DEFAULT_CONFIDENCE
) -> pd.DataFrame:
    """Compute the share of runs with a valid submission per group, with Wilson intervals (Table 6).

    Unit: a run; every run of the group is in its denominator (a run whose `valid` is missing
    counts as a failure). The interval is Wilson's score interval
    (`scipy.stats.binomtest(...).proportion_ci(method="wilson")`): the rates that the score test
    does not reject, which contain the observed rate by construction (its score statistic is 0),
    with the bounds at 0 and at n successes exactly 0 and 1. Nothing is widened.

    Args:
        runs: The runs table (needs `valid` and the `by` columns).
        by: The grouping column or columns.
        confidence_level: The intervals' confidence level.

    Returns:
        Columns `*by, n, successes, rate, ci_low, ci_high`.

    Raises:
        AnalysisError: A column is missing or the confidence level is out of range.
    """
    keys = _by(by)
    _columns(runs, [*keys, "valid"], "runs")
    check_settings(confidence_level=confidence_level)
    valid = runs["valid"].fillna(False).astype(bool)
    grouped = valid.groupby([runs[k] for k in keys], sort=True, dropna=False) if keys else (
        valid.groupby(np.zeros(len(runs))))
    table = grouped.agg(n="size", successes="sum").reset_index()
    if not keys:
        table = table.drop(columns=table.columns[0])
    table["successes"] = table["successes"].astype(int)
    table["rate"] = table["successes"] / table["n"]
    bounds = [stats.binomtest(int(k), int(n)).proportion_ci(confidence_level, method="wilson")
              for k, n in zip(table["successes"], table["n"], strict=True)]
    table["ci_low"] = [float(b.low) for b in bounds]
    table["ci_high"] = [float(b.high) for b in bounds]
    return table[[*keys, "n", "successes", "rate", "ci_low", "ci_high"]]


# --------------------------------------------------------------------------------------- Fig. 6(a)


def anytime_values(trajectory: pd.DataFrame, runs: pd.DataFrame, grid_s: Sequence[float]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Compute each run's best-so-far value at each time of a grid.

    At time t a run's ratio is that of its best valid candidate (hidden evaluator) with t_s <= t,
    or −1 while it has none; its N is that candidate's N (0 while none: the imputation). NaN
    novelty: where that candidate's N was not computed, the run's N at t is NaN (not 0).

    Args:
        trajectory: The trajectory table (config_id, t_s, valid, ratio, novelty).
        runs: The runs table, one row per config_id (and `budget_s` where known).
        grid_s: The times, in seconds, increasing.

    Returns:
        (ratio, novelty, in_budget), each runs × grid; `in_budget` is false where t exceeds the
        run's own budget (`budget_s`), so that runs of separate budgets each count up to their own
        end.

    Raises:
        AnalysisError: A column is missing, the grid is not a non-empty increasing sequence of
            finite seconds, or `runs` repeats a config_id.
    """
    _columns(runs, ["config_id"], "runs")
    _columns(trajectory, ["config_id", "t_s", "valid", "ratio", "novelty"], "trajectory")
    grid = np.asarray(grid_s, dtype=float)
    if (grid.ndim != 1 or grid.size == 0 or not np.isfinite(grid).all()
            or (np.diff(grid) < 0).any()):
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
    novelty = valid["novelty"].to_numpy(dtype=float)[keep]  # NaN: not computed, kept
    order = np.lexsort((t, run_of))
    run_of, t, ratio, novelty = run_of[order], t[order], ratio[order], novelty[order]
    # best so far within each run: a running maximum that restarts at each run, and the N of the
    # best candidate
    best_ratio = np.empty_like(ratio)
    best_novelty = np.empty_like(novelty)
    if ratio.size:
        starts = np.r_[0, np.flatnonzero(np.diff(run_of)) + 1]
        offset = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, ratio.size]))
        # shift each run's ratios above every earlier run's so that one global running maximum
        # restarts per run
        span = float(np.nanmax(ratio) - np.nanmin(ratio)) + 1.0
        shifted = ratio + offset * span
        running = np.maximum.accumulate(shifted)
        at_best = np.maximum.accumulate(np.where(shifted == running, np.arange(ratio.size), 0))
        # exact values, not shifted ones
        best_ratio, best_novelty = ratio[at_best], novelty[at_best]
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
    budget = (runs["budget_s"].to_numpy(dtype=float) if "budget_s" in runs
              else np.full(n_runs, np.inf))
    in_budget = grid[None, :] <= np.where(np.isfinite(budget), budget, np.inf)[:, None] + 1e-9
    return out_ratio, out_novelty, in_budget


def anytime_runs(
    trajectory: pd.DataFrame, runs: pd.DataFrame, grid_s: Sequence[float]
) -> pd.DataFrame:
    """Give `anytime_values` as one row per run and grid time within the run's budget.

    Args:
        trajectory: The trajectory table.
        runs: The runs table.
        grid_s: The times, in seconds, increasing.

    Returns:
        Columns `config_id, t_s, ratio, novelty` (repeated measures of each run: test trends on
        them with `unit="config_id"`). NaN novelty: as `anytime_values`, NaN where the best
        candidate's N was not computed (a trend test drops those rows, see `trend_holds`).

    Raises:
        AnalysisError: As `anytime_values`.
    """
    ratio, novelty, in_budget = anytime_values(trajectory, runs, grid_s)
    run, time = np.nonzero(in_budget)
    grid = np.asarray(grid_s, dtype=float)
    return pd.DataFrame({"config_id": runs["config_id"].to_numpy()[run], "t_s": grid[time],
                         "ratio": ratio[run, time], "novelty": novelty[run, time]})


def anytime(trajectory: pd.DataFrame, runs: pd.DataFrame, by: str | Sequence[str] | None,
            grid_s: Sequence[float], *, confidence_level: float = DEFAULT_CONFIDENCE,
            n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """Compute the anytime curve (Fig. 6a).

    Per group and time: the mean best-so-far ratio over runs with a percentile bootstrap interval
    over runs (NaN with fewer than `bootstrap.MIN_UNITS` runs at that time; `note` says why), and
    the mean N of the best-so-far candidates.

    NaN novelty: a run whose best-so-far candidate's N was not computed is left out of
    `mean_novelty` at that time (never read as 0); `n_novelty` counts the runs the mean holds
    (`n` counts those the ratio holds). With none, `mean_novelty` is NaN.

    Args:
        trajectory: The trajectory table.
        runs: The runs table.
        by: The grouping column or columns, or None for one group.
        grid_s: The times, in seconds, increasing.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        Columns `*by, t_s, n, mean_ratio, ci_low, ci_high, mean_novelty, n_novelty, note` (`n`:
        runs whose budget reaches t_s; `n_novelty`: those of them whose N at t_s is known;
        `note`: why the bounds are NaN, empty where they are given).

    Raises:
        AnalysisError: A column is missing, a setting is out of range, or as `anytime_values`.
    """
    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    keys = _by(by)
    _columns(runs, keys, "runs")
    ratio, novelty, in_budget = anytime_values(trajectory, runs, grid_s)
    grid = np.asarray(grid_s, dtype=float)
    rows = []
    for key, part in _groups(runs.reset_index(drop=True), keys):
        members = part.index.to_numpy()
        inside = in_budget[members]
        intervals = bootstrap_ci(ratio[members], confidence_level=confidence_level,
                                 n_resamples=n_resamples, rng=rng, mask=inside)
        counted = inside & ~np.isnan(novelty[members])
        n_novelty = counted.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_novelty = np.where(counted, novelty[members], 0.0).sum(axis=0) / n_novelty
        for j, (t, interval) in enumerate(zip(grid, intervals, strict=True)):
            if interval.n == 0:
                continue
            rows.append({**dict(zip(keys, key, strict=True)), "t_s": float(t), "n": interval.n,
                         "mean_ratio": interval.mean, "ci_low": interval.ci_low,
                         "ci_high": interval.ci_high, "mean_novelty": float(mean_novelty[j]),
                         "n_novelty": int(n_novelty[j]), "note": interval.note})
    return pd.DataFrame(rows, columns=[*keys, "t_s", "n", "mean_ratio", "ci_low", "ci_high",
                                       "mean_novelty", "n_novelty", "note"])


# ---------------------------------------------------------------------------------- Fig. 6(b), 6(c)


def best_of_weights(m: int, k: int) -> np.ndarray:
    """Return the chance that the run of each rank is the best of k runs drawn from m.

    Order statistics: among k of m runs drawn without replacement, every k-subset equally
    likely, the run of rank i (1 = the best) is the best of the subset with chance
    C(m − i, k − 1) / C(m, k). Weighting each run's value by it gives the mean over all k-subsets
    of the best run's value: the unbiased estimate of the expected best of k from m runs (the
    observed best when m = k; the mean of the runs when k = 1).

    Args:
        m: The runs.
        k: The runs the best is chosen from, 1 ≤ k ≤ m.

    Returns:
        The m weights, by rank (best first); they sum to 1.

    Raises:
        AnalysisError: k is not within 1..m.
    """
    if not 1 <= k <= m:
        raise AnalysisError(f"best of k needs 1 <= k <= m, got k = {k}, m = {m}")
    total = math.comb(m, k)
    return np.array([math.comb(m - i, k - 1) / total for i in range(1, m + 1)])


@dataclass(frozen=True)
class _TaskBest:
    """One task's best of k: its value (NaN when no weighted run's metric is known) and counts."""

    value: float
    seeds: int
    k: int


def _task_best_of(runs_of_task: pd.DataFrame, metric: str, k: int | None) -> _TaskBest:
    """The expected metric of the best run by ratio among k of the task's seeds (order statistics).

    Runs are ranked by ratio, best first, ties in seed order. A run whose metric is NaN (not
    computed) is left out of the weights: the value is the mean over the k-subsets whose best
    run's metric is known.
    """
    ordered = runs_of_task.sort_values(["seed"] if "seed" in runs_of_task else [], kind="stable")
    ordered = ordered.sort_values("ratio", ascending=False, kind="stable", na_position="last")
    m = len(ordered)
    chosen = m if k is None else min(k, m)
    weights = best_of_weights(m, chosen)
    values = ordered[metric].to_numpy(dtype=float)
    known = ~np.isnan(values)
    weight = float(weights[known].sum())
    value = float(np.dot(weights[known], values[known]) / weight) if weight > 0 else np.nan
    return _TaskBest(value, m, chosen)


def factor_effect(runs: pd.DataFrame, factor: str, metric: str, best_of: int | None = None, *,
                  confidence_level: float = DEFAULT_CONFIDENCE,
                  n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """Measure a factor's effect on a metric, per level, per run and best of k.

    Per run (`kind` "per_run"): unit a run; the mean over runs; rows whose metric is missing (for
    example `score` of an invalid run) are left out. Runs of one task are not independent (they
    share its difficulty), so where a level's runs span several tasks its interval resamples
    tasks, each with all its runs (`bootstrap.cluster_bootstrap_ci`; runs are not resampled again
    within a task, which would count their spread twice), and needs `bootstrap.MIN_UNITS` (10)
    tasks: with 2 to 9 there is none (NaN; `note` says so: filter to one task for an interval
    over its runs). Where they all come from one task, the interval is a percentile bootstrap
    over its runs (an interval for that task), from 10 runs.

    Best of k (`kind` "best_of_k"), as the paper reports (the run with the best ratio among k
    seeds of a task, its metric): unit a task. Each task's value is the expected best of k over
    its m seeds by order statistics (`best_of_weights`: the mean over every k of its m seeds of
    the best run's metric; with m = k, the observed best; a task with fewer than k seeds counts
    with the best of those it has, said in `note`); the estimate is the mean over tasks. The
    interval is a percentile bootstrap over tasks of these per-task values (a mean, for which the
    percentile bootstrap is valid). Seeds are not resampled: the bootstrap of a maximum over
    resampled seeds is invalid (its resampled best can never exceed the observed best). With
    fewer than `bootstrap.MIN_UNITS` (10) tasks there is no interval: NaN, and `note` says why.
    Failed runs count with their imputed ratio −1 (and N 0), so they stay in every k-subset.

    NaN novelty (and any NaN metric): per run, NaN rows are left out and `n` counts the runs
    kept; best of k, the runs are still ranked by ratio, a run whose metric is NaN is left out of
    its task's weights (the mean over the k-subsets whose best run's metric is known), and a task
    where no weighted run's metric is known is left out of the mean over tasks (`n` counts the
    tasks kept; `note` the tasks left out). Never read as 0.

    Args:
        runs: The runs table (the factor, the metric, task, ratio; seed where known).
        factor: The factor's column.
        metric: The metric's column.
        best_of: k, the seeds per task the best is chosen from; None for all of a task's seeds.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        Columns `factor, kind, mean, ci_low, ci_high, n, method, note`, two rows per level
        (`n`: runs per run, tasks for best of k; `method`: the estimate and its interval in
        words, with the number of tasks resampled; `note`: why a bound is NaN, and what a best
        of k left out).

    Raises:
        AnalysisError: A column is missing, a setting is out of range, or `best_of` is not a
            positive integer or None.
    """
    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    _columns(runs, [factor, metric, "task", "ratio"], "runs")
    if best_of is not None and (isinstance(best_of, bool) or int(best_of) != best_of
                                or best_of < 1):
        raise AnalysisError(f"best_of must be a positive integer or None, got {best_of!r}")
    k = None if best_of is None else int(best_of)
    gen = generator(rng)
    settings = {"confidence_level": confidence_level, "n_resamples": n_resamples, "rng": gen}
    chosen = ("the best of all its seeds" if k is None else
              f"the mean over every {k} of its seeds of the best (order statistics)")
    best_method = (f"per task, {metric} of the run best by ratio: {chosen}; mean over tasks; "
                   "percentile bootstrap over tasks (seeds not resampled)")
    rows = []
    for (level,), part in _groups(runs, [factor]):
        counted = part.dropna(subset=[metric])
        values = counted[metric].to_numpy(dtype=float)
        n_tasks = counted["task"].nunique()
        if n_tasks <= 1:
            interval = bootstrap_ci(values, **settings)
            per_run_method = "mean over runs; percentile bootstrap over runs (one task)"
            per_run_note = interval.note
        else:
            interval = cluster_bootstrap_ci(values, counted["task"].to_numpy(), **settings,
                                            cluster_name="task")
            per_run_method = (f"mean over runs; percentile bootstrap over its {n_tasks} tasks, "
                              "each with all its runs (runs of one task are not independent)")
            per_run_note = interval.note + (
                "; filter to one task for an interval over its runs" if n_tasks < MIN_UNITS
                else "")
        rows.append({factor: level, "kind": "per_run", "mean": interval.mean,
                     "ci_low": interval.ci_low, "ci_high": interval.ci_high, "n": interval.n,
                     "method": per_run_method, "note": per_run_note})
        tasks = {task: _task_best_of(of_task, metric, k)
                 for task, of_task in part.groupby("task", sort=True)}
        known = {task: best for task, best in tasks.items() if not np.isnan(best.value)}
        best = bootstrap_ci(np.array([b.value for b in known.values()], dtype=float), **settings)
        notes = []
        if best.n < MIN_UNITS:
            notes.append(f"{best.n} task(s) with a known best of k: the interval resamples tasks "
                         f"and needs at least {MIN_UNITS} (a bootstrap of the best over "
                         "resampled seeds is invalid, so none is given)")
        elif best.note:
            notes.append(best.note)
        if len(known) < len(tasks):
            notes.append(f"{len(tasks) - len(known)} task(s) left out: no run that could be the "
                         f"best has {metric} known")
        short = [f"{task} ({b.seeds})" for task, b in tasks.items() if k is not None and b.k < k]
        if short:
            notes.append(f"fewer than {k} seeds, best of those: {', '.join(short)}")
        rows.append({factor: level, "kind": "best_of_k", "mean": best.mean, "ci_low": best.ci_low,
                     "ci_high": best.ci_high, "n": best.n, "method": best_method,
                     "note": "; ".join(notes)})
    return pd.DataFrame(rows, columns=[factor, "kind", "mean", "ci_low", "ci_high", "n", "method",
                                       "note"])


@dataclass(frozen=True)
class TradeOff:
    """Mean ratio and N per level of a factor, the Pareto set and the level with the best trade-off.

    Attributes:
        table: Per level: the factor, mean_ratio, mean_novelty, n, n_novelty, ratio_norm,
            novelty_norm, product, pareto.
        best_level: The level with the best trade-off; None when several levels tie.
        rule: The rule that chose it, in words.
    """

    table: pd.DataFrame
    best_level: Any
    rule: str


def trade_off(runs: pd.DataFrame, factor: str) -> TradeOff:
    """Find Fig. 6(c)'s trade-off between gain and novelty over the levels of a factor.

    Rule: each level's mean ratio and mean N are min-max normalised over the levels (1 = the best
    level); the best trade-off is the level with the largest product of the two, among the Pareto
    set (levels that no other level beats on both). With one level, that level.

    NaN novelty: runs whose N was not computed are left out of their level's mean N (never read
    as 0); `n_novelty` counts the runs the mean holds (`n` all runs of the level). A level with
    no known N has mean N NaN, is in no Pareto set and cannot be the best level.

    Args:
        runs: The runs table (the factor, ratio, novelty).
        factor: The factor's column.

    Returns:
        The table per level, the best level and the rule.

    Raises:
        AnalysisError: A column is missing or there are no runs.
    """
    _columns(runs, [factor, "ratio", "novelty"], "runs")
    if runs.empty:
        raise AnalysisError("trade_off needs at least one run")
    table = runs.groupby(factor, sort=True).agg(mean_ratio=("ratio", "mean"),
                                                mean_novelty=("novelty", "mean"),
                                                n=("ratio", "size"),
                                                n_novelty=("novelty", "count")).reset_index()

    def normalise(column: pd.Series) -> pd.Series:
        span = column.max() - column.min()
        return (column - column.min()) / span if span > 0 else pd.Series(1.0, index=column.index)

    table["ratio_norm"] = normalise(table["mean_ratio"])
    table["novelty_norm"] = normalise(table["mean_novelty"])
    table["product"] = table["ratio_norm"] * table["novelty_norm"]
    g, n = table["mean_ratio"].to_numpy(), table["mean_novelty"].to_numpy()
    dominated = [bool(((g >= g[i]) & (n >= n[i]) & ((g > g[i]) | (n > n[i]))).any())
                 for i in range(len(table))]
    table["pareto"] = ~np.asarray(dominated) & table["mean_novelty"].notna().to_numpy()
    front = table[table["pareto"]]
    top = front[np.isclose(front["product"], front["product"].max())]
    best = top[factor].iloc[0] if len(top) == 1 or len(table) == 1 else None
    rule = ("largest product of min-max normalised mean ratio and mean N over the levels, "
            "among the Pareto set"
            + ("" if best is not None else f"; no single best level: {len(top)} levels tie"))
    return TradeOff(table=table, best_level=best, rule=rule)


# ------------------------------------------------------------------------------------------ Table 7


def paired_effect(runs: pd.DataFrame, factor: str, metric: str,
                  pair_on: Sequence[str] = ("task", "seed"), levels: tuple[Any, Any] | None = None,
                  *, confidence_level: float = DEFAULT_CONFIDENCE,
                  n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """Measure the paired effect of a two-level factor on a metric (Table 7: the innovation prompt).

    Unit: a pair (the runs of one `pair_on` key at the two levels). The effect is `levels[1] −
    levels[0]` over pairs. The interval is a percentile bootstrap over pairs of the mean
    difference (NaN with fewer than `bootstrap.MIN_UNITS` pairs). The test: H0 the paired
    differences are symmetric about 0, two-sided Wilcoxon signed-rank over pairs from scipy
    (zero differences dropped, as scipy's zero_method "wilcox" does; 1.0 when every difference
    is 0; NaN below 2 pairs); `p_min` is the smallest p it can reach with the pairs whose
    difference is not 0 (2 / 2^k for k of them: 0.5 with 2, 0.0625 with 5; [0, 0, −1, −2, −3]
    has k = 3, so 0.25), so a p that cannot fall below a level is not read as evidence of no
    effect. No verdict is drawn here. `p_holm` holds the per-task p-values Holm-corrected over
    tasks (statsmodels `multipletests`).

    NaN novelty (and any NaN metric): runs whose metric is NaN (N not computed) are left out
    before matching (several runs on one key average those known), and a key with no known value
    at either level is an excluded pair, never a difference from 0; `n_pairs` counts the pairs
    tested.

    Args:
        runs: The runs table (the factor, the metric and the `pair_on` columns).
        factor: The factor's column.
        metric: The metric's column.
        pair_on: The columns that match runs (default: same task and seed).
        levels: The two levels (a, b) compared; None when the factor has exactly two.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        One row per task and, with several tasks, one row `task == "all"`: `task, level_a,
        level_b, mean_diff, ci_low, ci_high, p_value, p_holm, p_min, n_pairs, hypothesis`.

    Raises:
        AnalysisError: A column is missing, a setting is out of range, the levels are not named
            where the factor has other than two, or no runs pair up.
    """
    from statsmodels.stats.multitest import multipletests

    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    keys = list(pair_on)
    _columns(runs, [factor, metric, *keys], "runs")
    present = sorted(runs[factor].dropna().unique().tolist())
    if levels is None:
        if len(present) != 2:
            raise AnalysisError(
                f"{factor} has levels {present}: name the two to compare with levels=(a, b)")
        levels = (present[0], present[1])
    a, b = levels
    wide = runs[runs[factor].isin([a, b])].pivot_table(index=keys, columns=factor, values=metric,
                                                       aggfunc="mean")
    unknown = int(runs[metric].isna().sum())
    why = (f" ({unknown} of {len(runs)} runs have {metric} NaN: not computed, left out)"
           if unknown else "")
    if a not in wide.columns or b not in wide.columns:
        raise AnalysisError(f"no runs at {factor} = {a!r} or {b!r} with {metric} known{why}")
    # scalar keys: a bool level works
    pairs = pd.DataFrame({"a": wide[a], "b": wide[b]}).dropna().reset_index()
    if pairs.empty:
        raise AnalysisError(
            f"no runs at {factor} = {a!r} pair up with runs at {factor} = {b!r} on {keys}"
            f" with {metric} known at both{why}")
    pairs["diff"] = pairs["b"] - pairs["a"]

    def row(task: str, diffs: np.ndarray) -> dict[str, Any]:
        out = {"task": task, "level_a": a, "level_b": b, "n_pairs": int(diffs.size)}
        interval = bootstrap_ci(diffs, confidence_level=confidence_level, n_resamples=n_resamples,
                                rng=rng)
        if diffs.size < 2:
            p = p_min = np.nan
        else:
            p, p_min = _wilcoxon(diffs, "two-sided")
        return {**out, "mean_diff": interval.mean, "ci_low": interval.ci_low,
                "ci_high": interval.ci_high, "p_value": p, "p_min": p_min}

    by_task = "task" in keys
    rows = [row(str(task), part["diff"].to_numpy())
            for task, part in pairs.groupby("task", sort=True)] if by_task else []
    table = pd.DataFrame(rows)
    if len(rows) > 1 or not by_task:
        table = pd.concat([table, pd.DataFrame([row("all", pairs["diff"].to_numpy())])],
                          ignore_index=True)
    table["p_holm"] = np.nan
    per_task = table["task"] != "all"
    testable = per_task & table["p_value"].notna()
    if testable.sum() > 1:
        table.loc[testable, "p_holm"] = multipletests(table.loc[testable, "p_value"],
                                                      method="holm")[1]
    elif testable.sum() == 1:
        table.loc[testable, "p_holm"] = table.loc[testable, "p_value"]
    table["hypothesis"] = (f"H0: {metric} at {factor} = {b!r} minus at {a!r}, paired on "
                           f"{'/'.join(keys)}, is symmetric about 0 (two-sided Wilcoxon "
                           "signed-rank over pairs, zero differences dropped; p_min from the "
                           "pairs whose difference is not 0)")
    return table[["task", "level_a", "level_b", "mean_diff", "ci_low", "ci_high", "p_value",
                  "p_holm", "p_min", "n_pairs", "hypothesis"]]


# ------------------------------------------------------------------------------------------- Fig. 5


def prior_trajectory(trajectory: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """List G, ratio and N of each improving candidate over time, in runs from a prior (Fig. 5).

    N is given against the known solutions (`novelty`) and against the prior itself
    (`novelty_vs_prior`). NaN novelty: passed through as NaN (not computed), never 0.

    Args:
        trajectory: The trajectory table (config_id, t_s, step, improving, valid, gain, ratio,
            novelty; novelty_vs_prior where known).
        runs: The runs table; given, only runs with a `prior_solution` are kept and their factor
            columns join each row.

    Returns:
        One row per improving candidate, numbered per run (`candidate`), in time order.

    Raises:
        AnalysisError: A column is missing.
    """
    _columns(trajectory,
             ["config_id", "t_s", "step", "improving", "valid", "gain", "ratio", "novelty"],
             "trajectory")
    rows = trajectory[trajectory["improving"].fillna(False).astype(bool)].copy()
    if "novelty_vs_prior" not in rows:
        rows["novelty_vs_prior"] = np.nan
    if runs is not None:
        _columns(runs, ["config_id", "prior_solution"], "runs")
        started = runs[runs["prior_solution"].notna()]
        extra = [c for c in ("task", "agent", "prior_solution", "seed", "temperature")
                 if c in started]
        rows = rows.merge(started[["config_id", *extra]], on="config_id", how="inner")
    rows = rows.sort_values(["config_id", "t_s"], kind="stable")
    rows["candidate"] = rows.groupby("config_id").cumcount()
    columns = ["config_id", "candidate", "t_s", "step", "valid", "gain", "ratio", "novelty",
               "novelty_vs_prior"]
    return rows[columns + [c for c in rows.columns if c not in columns and c not in
                           ("file", "dev_valid", "dev_score", "improving", "score")]
                ].reset_index(drop=True)


# ------------------------------------------------------------------------------------------- trends


@dataclass(frozen=True)
class TrendCheck:
    """Whether a stated trend holds on a sweep: the hypothesis, the test, the effect and the units.

    Attributes:
        trend: "increasing", "decreasing" or "peak".
        verdict: "holds", "does not hold" or "not enough data".
        test: The test or rule, in words.
        hypothesis: What the verdict claims and what the p-value tests, in words.
        statistic: The test's statistic.
        p_value: The test's p-value (NaN where no test ran; `detail` says why).
        p_min: The smallest p-value the test can reach with this design (its units, their
            non-zero differences and, across units, its levels of x); 0 for a parametric test,
            which has no such floor; NaN where no test ran (`detail` says why).
        estimate: The effect the verdict rests on or reports (see `hypothesis`).
        ci_low: Its lower bound (NaN where none exists; `detail` says why).
        ci_high: Its upper bound.
        min_effect: The smallest change, in y's units, that counts (repeated measures); NaN for
            tests across units, which use none.
        n: The values (rows) tested.
        unit: The column naming the unit of observation.
        n_units: The units the test counted.
        detail: What was found, in words.
    """

    trend: str
    verdict: Verdict
    test: str
    hypothesis: str
    statistic: float
    p_value: float
    p_min: float
    estimate: float
    ci_low: float
    ci_high: float
    min_effect: float
    n: int
    unit: str
    n_units: int
    detail: str


TREND_COLUMNS = ["quantity", "paper", "trend", "this sweep", "test", "hypothesis", "unit",
                 "n_units", "n", "estimate", "ci_low", "ci_high", "min_effect", "statistic",
                 "p_value", "p_min", "detail"]

# The smallest change per unit, in the metric's units, that a verdict over repeated measures
# counts: 1 % of the metric's scale. For the ratio G/|V*| (the column the notebooks test for the
# gain), 0.01 is 1 % of the best known value; for N (0 to 100), 1 point.
DEFAULT_MIN_EFFECT = 0.01
MIN_EFFECTS = {"gain": DEFAULT_MIN_EFFECT, "novelty": 1.0}

_NO_TEST = "no test ran, so p_value and p_min are NaN (not computed)"


def _unit_needed(data: pd.DataFrame, x: str) -> str:
    """Why a trend test needs `unit=`, with the repeated measures found in `data` if any."""
    message = ("trend_holds needs unit=, the column naming the unit of observation "
               "(e.g. 'config_id': one run); values of one run at several levels are repeated "
               "measures, not independent points")
    for column in RUN_ID_COLUMNS:
        if column in data and data[column].duplicated().any():
            return (f"{message}: these rows repeat {column} ({len(data)} rows, "
                    f"{data[column].nunique()} distinct), "
                    f"so they hold several values of one run across {x}; pass unit={column!r}")
    return message


def _check(trend: str, verdict: Verdict, unit: str, n: int, n_units: int, detail: str, *,
           test: str = "none", hypothesis: str = "", statistic: float = np.nan,
           p_value: float = np.nan, p_min: float = np.nan, estimate: float = np.nan,
           ci_low: float = np.nan, ci_high: float = np.nan,
           min_effect: float = np.nan) -> TrendCheck:
    return TrendCheck(trend=trend, verdict=verdict, test=test, hypothesis=hypothesis,
                      statistic=float(statistic), p_value=float(p_value), p_min=float(p_min),
                      estimate=float(estimate), ci_low=float(ci_low), ci_high=float(ci_high),
                      min_effect=float(min_effect), n=int(n), unit=unit, n_units=int(n_units),
                      detail=detail)


def _not_enough(trend: str, unit: str, n: int, n_units: int, why: str, **test: Any) -> TrendCheck:
    return _check(trend, "not enough data", unit, n, n_units, why, **test)


def _ranks_correlation(fixed: np.ndarray) -> Any:
    """A vectorised statistic: Pearson's r of `fixed` with each row of ranks (Spearman's ρ)."""
    centred = fixed - fixed.mean()

    def statistic(ranks: np.ndarray, axis: int = -1) -> np.ndarray:
        ranks = np.moveaxis(np.asarray(ranks, dtype=float), axis, -1)
        other = ranks - ranks.mean(axis=-1, keepdims=True)
        scale = np.sqrt((centred ** 2).sum() * (other ** 2).sum(axis=-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            return (other * centred).sum(axis=-1) / scale

    return statistic


# above this many units, Spearman's ρ is tested by its t approximation (scipy.stats.spearmanr),
# which is accurate there, rather than by drawn pairings
ASYMPTOTIC_UNITS = 500


def _spearman_test(x: np.ndarray, y: np.ndarray | None, trend: Trend, n_resamples: int,
                   gen: np.random.Generator) -> tuple[float, float, float, str]:
    """Spearman's ρ of x and y, its one-sided p, the design's smallest p and the test's name.

    Up to `ASYMPTOTIC_UNITS` units, a permutation test (scipy.stats.permutation_test, pairings):
    exact where the n! pairings number at most `n_resamples`, and then its smallest p is that of
    the same test on the most favourable data of this design (distinct values in the order of x,
    ties of x kept); otherwise `n_resamples` drawn pairings, whose smallest p is 1 /
    (n_resamples + 1). Above, the t approximation of scipy.stats.spearmanr, whose smallest p is
    that of the most favourable data.

    Args:
        x: The levels, one per unit.
        y: The values, one per unit; None for the design's smallest p alone (ρ and p NaN).
        trend: "increasing" or "decreasing".
        n_resamples: The drawn pairings where the test is not exact.
        gen: The Generator.

    Returns:
        (ρ, p, smallest p, the test in words).
    """
    alternative = "greater" if trend == "increasing" else "less"
    ranks = np.arange(1.0, len(x) + 1)
    best = np.empty(len(x))
    best[np.argsort(x, kind="stable")] = ranks if trend == "increasing" else ranks[::-1]
    if len(x) > ASYMPTOTIC_UNITS:
        floor = stats.spearmanr(x, best, alternative=alternative).pvalue
        result = stats.spearmanr(x, y, alternative=alternative) if y is not None else None
        return (np.nan if result is None else float(result.statistic),
                np.nan if result is None else float(result.pvalue), float(floor),
                "Spearman's rho over units, t approximation (one-sided)")
    statistic = _ranks_correlation(stats.rankdata(x))

    def test(values: np.ndarray) -> Any:
        # batches of about a million cells keep memory bounded
        return stats.permutation_test((values,), statistic, permutation_type="pairings",
                                      vectorized=True, n_resamples=n_resamples,
                                      batch=max(1, 1_000_000 // len(values)),
                                      alternative=alternative, rng=gen)

    exact = math.factorial(len(x)) <= n_resamples
    result = test(stats.rankdata(y)) if y is not None else None
    floor = test(best).pvalue if exact else 1 / (n_resamples + 1)
    return (np.nan if result is None else float(result.statistic),
            np.nan if result is None else float(result.pvalue), float(floor),
            f"{'exact' if exact else f'{n_resamples} drawn pairings'} permutation test of "
            "Spearman's rho over units (one-sided)")


def _across_units(points: pd.DataFrame, x: str, y: str, trend: Trend, unit: str, alpha: float,
                  n_resamples: int, gen: np.random.Generator) -> TrendCheck:
    """One value per unit: a test of Spearman's ρ (`_spearman_test`), or OLS on x and x² (peak)."""
    n, levels = len(points), points[x].nunique()
    where = f"over {n} units ({unit}, one value each) at {levels} levels of {x}"
    if trend in ("increasing", "decreasing"):
        sign = ">" if trend == "increasing" else "<"
        name = "Spearman's rho over units (one-sided)"
        hypothesis = (f"H0: {y} is independent of {x} over units (every pairing of the values "
                      f"with the levels equally likely); H1: rho {sign} 0. Holds where p < "
                      f"{alpha:g}; where the design's smallest p is not below {alpha:g}, no "
                      "verdict (the number of units alone would decide it); no minimum effect "
                      "(a rank test: the estimate is rho)")
        if np.ptp(points[y].to_numpy(dtype=float)) == 0:
            _, _, p_min, name = _spearman_test(points[x].to_numpy(dtype=float), None, trend,
                                               n_resamples, gen)
            return _not_enough(trend, unit, n, n,
                               f"{y} takes one value {where}: rho is undefined (no order of the "
                               "values to compare with the levels), so the test cannot tell; "
                               f"p_value NaN, smallest p of this design {p_min:.3g}",
                               test=name, hypothesis=hypothesis, p_min=p_min)
        rho, p, p_min, name = _spearman_test(points[x].to_numpy(dtype=float),
                                             points[y].to_numpy(dtype=float), trend,
                                             n_resamples, gen)
        found = f"rho = {rho:.3f}, one-sided p = {p:.3g} {where}; smallest p of this design " \
                f"{p_min:.3g}"
        test = {"test": name, "hypothesis": hypothesis, "statistic": rho, "p_value": p,
                "p_min": p_min, "estimate": rho}
        if p_min >= alpha:
            return _not_enough(trend, unit, n, n, f"{found}: not below {alpha:g}, so the test "
                               "cannot decide with these units", **test)
        verdict: Verdict = "holds" if p < alpha else "does not hold"
        return _check(trend, verdict, unit, n, n, found, **test)
    import statsmodels.api as sm

    design = sm.add_constant(np.column_stack([points[x], points[x] ** 2]))
    fit = sm.OLS(points[y].to_numpy(), design).fit()
    curvature, two_sided = float(fit.params[2]), float(fit.pvalues[2])
    p = two_sided / 2 if curvature < 0 else 1 - two_sided / 2
    low, high = fit.conf_int(alpha=2 * alpha)[2]
    vertex = -fit.params[1] / (2 * fit.params[2]) if fit.params[2] != 0 else np.nan
    inside = bool(points[x].min() < vertex < points[x].max())
    verdict = "holds" if p < alpha and inside else "does not hold"
    return _check(trend, verdict, unit, n, n,
                  f"x^2 coefficient {curvature:.3g} (one-sided p = {p:.3g}) {where}, "
                  f"vertex at {x} = {vertex:.3g} ({'inside' if inside else 'outside'} the range)",
                  test="OLS quadratic term over units (one-sided t test)",
                  hypothesis=(f"H0: the x^2 coefficient of {y} on {x} is >= 0; H1: < 0 (concave). "
                              f"Holds where p < {alpha:g} and the vertex lies inside the range of "
                              f"{x}; estimate: the coefficient, with its {1 - 2 * alpha:g} t "
                              "interval (a parametric test: no floor on p)"),
                  statistic=curvature, p_value=p, p_min=0.0, estimate=curvature, ci_low=low,
                  ci_high=high)


def _by_unit(points: pd.DataFrame, x: str, y: str, unit: str) -> pd.DataFrame:
    """Each unit's mean value at each of its levels: units × levels (NaN where it has none)."""
    return points.pivot_table(index=unit, columns=x, values=y, aggfunc="mean").sort_index(axis=1)


@functools.lru_cache(maxsize=256)
def _wilcoxon_floor(nonzero: int, alternative: str) -> float:
    """The smallest p of scipy's Wilcoxon signed-rank test with `nonzero` non-zero differences.

    scipy drops zero differences (zero_method "wilcox"), so the floor is that of the same test
    on `nonzero` distinct values of the favoured sign (2 / 2^k two-sided, 1 / 2^k one-sided,
    exactly, up to 50); with none, 1 (no test can reject).
    """
    if nonzero == 0:
        return 1.0
    favoured = np.arange(1.0, nonzero + 1) * (-1 if alternative == "less" else 1)
    return float(stats.wilcoxon(favoured, alternative=alternative).pvalue)


def _wilcoxon(values: np.ndarray, alternative: str) -> tuple[float, float]:
    """Wilcoxon signed-rank p of `values` (zeros dropped; 1 where all are 0) and the design's floor.

    The floor: the p of the same test on as many distinct values of the favoured sign as
    `values` has non-zero ones (`_wilcoxon_floor`).

    Returns:
        (p, smallest p).
    """
    nonzero = int(np.count_nonzero(values))
    p_min = _wilcoxon_floor(nonzero, alternative)
    if nonzero == 0:
        return 1.0, p_min
    return float(stats.wilcoxon(values, alternative=alternative).pvalue), p_min


def _lower_bounds(columns: np.ndarray, alpha: float, n_resamples: int, gen: np.random.Generator
                  ) -> list[Any]:
    """Percentile bootstrap over units of each column's mean at 1 − 2α: lower bounds one-sided."""
    return bootstrap_ci(columns, confidence_level=1 - 2 * alpha, n_resamples=n_resamples, rng=gen)


def _within_units(points: pd.DataFrame, x: str, y: str, trend: Trend, unit: str, alpha: float,
                  min_effect: float, n_resamples: int, gen: np.random.Generator) -> TrendCheck:
    """Several values per unit at ordered levels: each unit's net and later-half change, over units.

    Returns:
        The verdict, counting units.
    """
    n = len(points)
    if trend == "peak":
        return _peak_within_units(points, x, y, unit, alpha, min_effect, n_resamples, gen)
    sign = 1.0 if trend == "increasing" else -1.0
    word = "rising" if trend == "increasing" else "falling"
    firsts, middles, lasts, mids = [], [], [], []
    for _, row in _by_unit(points, x, y, unit).iterrows():
        known = row.dropna()
        if len(known) < 3:
            continue
        firsts.append(known.iloc[0])
        middles.append(known.iloc[(len(known) - 1) // 2])
        lasts.append(known.iloc[-1])
        mids.append(float(known.index[(len(known) - 1) // 2]))
    first, middle, last = (np.asarray(v, dtype=float) for v in (firsts, middles, lasts))
    net, early, late = sign * (last - first), sign * (middle - first), sign * (last - middle)
    n_units = net.size
    name = (f"keeps {word} by more than min_effect: percentile bootstrap over units of the mean "
            f"net and later-half change per unit (one-sided {1 - alpha:g} lower bounds, from "
            f"{MIN_UNITS} units); beside it, a two-sided Wilcoxon signed-rank test over units of "
            "later- minus earlier-half change")
    hypothesis = (f"Verdict: the values keep {word}: the mean change per unit from its first to "
                  f"its last level of {x}, and from its middle level to its last, both exceed "
                  f"min_effect = {min_effect:g} (in {y}'s units) in the stated direction: their "
                  f"one-sided {1 - alpha:g} percentile-bootstrap lower bounds over units lie "
                  "above it. A change smaller than min_effect is no rise however many units make "
                  "it, and a curve that flattens after its middle level does not hold; below "
                  f"{MIN_UNITS} units no verdict (the bootstrap bound undercovers there). "
                  f"Estimate: the mean later-half change with its {1 - 2 * alpha:g} interval. "
                  "Test beside it, the stated null of returns (decides no verdict): H0 each "
                  "unit's later-half change equals its earlier-half change (returns neither "
                  "diminish nor grow), two-sided Wilcoxon signed-rank over units; p_min: its "
                  "smallest p with these units' non-zero differences")
    where = (f"{n} values at {points[x].nunique()} levels of {x}; changes signed so that {word} "
             "is positive")
    if n_units == 0:
        return _not_enough(trend, unit, n, 0,
                           f"no unit ({unit}) has values at 3 or more levels of {x}: {_NO_TEST}",
                           test=name, hypothesis=hypothesis, min_effect=min_effect)
    whole, later = _lower_bounds(np.column_stack([net, late]), alpha, n_resamples, gen)
    returns = late - early
    p, p_min = _wilcoxon(returns, "two-sided")
    moving = int((late > min_effect).sum())
    shape = ("diminishing" if returns.mean() < 0 else "growing" if returns.mean() > 0 else "even")

    def shown(interval: Any) -> str:
        return (f"[{interval.ci_low:.3g}, {interval.ci_high:.3g}]" if interval.note == ""
                else "(no interval)")

    found = (f"over {n_units} units ({unit}): net change {whole.mean:.3g} {shown(whole)}, change "
             f"after the middle level (x = {np.median(mids):g} for the median unit) "
             f"{later.mean:.3g} {shown(later)} ({1 - 2 * alpha:g} bootstrap intervals over "
             f"units), min_effect {min_effect:g}; {moving} of {n_units} units still {word} by "
             f"more than it after the middle level; later minus earlier change "
             f"{returns.mean():.3g} ({shape} returns), Wilcoxon p = {p:.3g}, smallest p with "
             f"these units {p_min:.3g}; {where}")
    test = {"test": name, "hypothesis": hypothesis, "statistic": float(returns.mean()),
            "p_value": p, "p_min": p_min, "estimate": later.mean, "ci_low": later.ci_low,
            "ci_high": later.ci_high, "min_effect": min_effect}
    if n_units < MIN_UNITS:
        return _not_enough(trend, unit, n, n_units,
                           f"{found}; no verdict: {n_units} unit(s), the bootstrap bound it rests "
                           f"on needs at least {MIN_UNITS}", **test)
    if np.isnan(whole.ci_low) or np.isnan(later.ci_low):
        return _not_enough(trend, unit, n, n_units,
                           f"{found}; no interval: {whole.note or later.note}", **test)
    holds = whole.ci_low > min_effect and later.ci_low > min_effect
    why = "" if holds else (
        f"; no net change beyond min_effect in the stated direction ({word})"
        if whole.ci_low <= min_effect
        else f"; flattens after the middle level: its change is below min_effect ({word} by "
        "less than the smallest change that counts)" if later.ci_high <= min_effect
        else "; not shown to keep " + word + ": the interval of its change after the middle "
        "level reaches below min_effect")
    return _check(trend, "holds" if holds else "does not hold", unit, n, n_units, found + why,
                  **test)


def _peak_within_units(points: pd.DataFrame, x: str, y: str, unit: str, alpha: float,
                       min_effect: float, n_resamples: int, gen: np.random.Generator
                       ) -> TrendCheck:
    """A peak over repeated measures: a rise to an interior level and a fall after it.

    Per interior level of x, an intersection-union test (both sides must hold); over the
    interior levels, Bonferroni (the level is not chosen from the data before testing).

    Returns:
        The verdict, counting units.
    """
    n = len(points)
    wide = _by_unit(points, x, y, unit)
    levels = wide.columns.to_numpy(dtype=float)
    values = wide.to_numpy(dtype=float)
    means = points.groupby(x)[y].mean()
    top = float(means.idxmax())
    known = ~np.isnan(values)
    first_at = np.argmax(known, axis=1)
    last_at = known.shape[1] - 1 - np.argmax(known[:, ::-1], axis=1)
    first = values[np.arange(len(values)), first_at]
    last = values[np.arange(len(values)), last_at]
    tested = []
    for j in range(1, len(levels) - 1):
        inside = known[:, j] & (first_at < j) & (j < last_at)
        if not inside.any():
            continue
        rise, fall = values[inside, j] - first[inside], values[inside, j] - last[inside]
        p_rise, floor_rise = _wilcoxon(rise - min_effect, "greater")
        p_fall, floor_fall = _wilcoxon(fall - min_effect, "greater")
        tested.append((max(p_rise, p_fall), max(floor_rise, floor_fall), -means.iloc[j], j, rise,
                       fall, p_rise, p_fall))
    m = len(tested)
    edge = (f"; the best mean of {y} is at the edge of {x} ({x} = {top:g})"
            if top in (levels.min(), levels.max()) else f"; best mean at {x} = {top:g}")
    name = ("rise to and fall after an interior level: per level, one-sided Wilcoxon signed-rank "
            "tests over units of each unit's rise and fall beyond min_effect "
            "(intersection-union: the larger p), Bonferroni over the interior levels tested; "
            "beside it, the effect at the level with the smallest p, with a percentile-bootstrap "
            "interval over units at the Bonferroni level")
    hypothesis = (f"H0: at no interior level of {x} do units both rise to it from their first "
                  f"level and fall from it to their last level by more than min_effect = "
                  f"{min_effect:g} (in {y}'s units): per level, each side symmetric about "
                  "min_effect or below it. H1: a peak inside. p: the smallest per-level p (the "
                  "larger of its two one-sided Wilcoxon p) times the interior levels tested "
                  "(Bonferroni), so choosing the level from the data does not inflate it; holds "
                  f"where p < {alpha:g}; where the design's smallest p (p_min, from the units' "
                  f"non-zero differences) is not below {alpha:g}, no verdict. Estimate: the "
                  "smaller of the mean rise and mean fall at the level with the smallest p, with "
                  f"its percentile-bootstrap interval over units at 1 - 2·{alpha:g}/levels "
                  f"(NaN below {MIN_UNITS} units)")
    if m == 0:
        return _not_enough("peak", unit, n, 0,
                           f"no unit ({unit}) has values at an interior level of {x} and on both "
                           f"sides of it: {_NO_TEST}{edge}", test=name, hypothesis=hypothesis,
                           min_effect=min_effect)
    p_level, _, _, j, rise, fall, p_rise, p_fall = min(tested, key=lambda t: t[:3])
    p = min(1.0, m * p_level)
    p_min = min(1.0, m * min(t[1] for t in tested))
    up, down = bootstrap_ci(np.column_stack([rise, fall]), confidence_level=1 - 2 * alpha / m,
                            n_resamples=n_resamples, rng=gen)
    binding = up if up.mean <= down.mean else down
    n_units = rise.size
    interval = (f"[{binding.ci_low:.3g}, {binding.ci_high:.3g}]" if binding.note == ""
                else f"(no interval: {binding.note})")
    found = (f"{m} interior level(s) of {x} tested; smallest p at {x} = {levels[j]:g}, over "
             f"{n_units} units ({unit}): mean rise {up.mean:.3g}, mean fall {down.mean:.3g}, "
             f"the smaller {binding.mean:.3g} {interval} ({1 - 2 * alpha / m:.3g} bootstrap "
             f"interval over units); Wilcoxon p rise {p_rise:.3g}, fall {p_fall:.3g}; "
             f"Bonferroni p = {p:.3g}, smallest p of this design {p_min:.3g}; min_effect "
             f"{min_effect:g}{edge}")
    test = {"test": name, "hypothesis": hypothesis, "statistic": binding.mean, "p_value": p,
            "p_min": p_min, "estimate": binding.mean, "ci_low": binding.ci_low,
            "ci_high": binding.ci_high, "min_effect": min_effect}
    if p_min >= alpha:
        return _not_enough("peak", unit, n, n_units,
                           f"{found}: not below {alpha:g}, so the test cannot decide with these "
                           "units", **test)
    return _check("peak", "holds" if p < alpha else "does not hold", unit, n, n_units, found,
                  **test)


def trend_holds(data: pd.DataFrame, x: str, y: str, trend: Trend, *, unit: str | None = None,
                alpha: float = 0.05, min_levels: int = 3,
                min_effect: float = DEFAULT_MIN_EFFECT, n_resamples: int = DEFAULT_RESAMPLES,
                rng: Rng = 0) -> TrendCheck:
    """Check a trend of `fig6_trends.csv` on `data`; the test counts units, never points.

    Every check states its hypothesis (`TrendCheck.hypothesis`) and, beside its p-value, the
    smallest p its design can reach (`p_min`; NaN with the reason in `detail` where no test
    ran), and no verdict is decided by the number of units alone.

    * One value per unit (temperature, backbone, or budgets as separate runs: one row per run),
      increasing / decreasing: H0 y is independent of x over units, H1 Spearman's ρ has the
      stated sign; a permutation test (scipy.stats.permutation_test; exact where the pairings
      number at most `n_resamples`; above `ASYMPTOTIC_UNITS` units, scipy's t approximation),
      one-sided. Holds where p < alpha. Where the design cannot reach alpha (p_min >= alpha: too
      few units or levels), or y takes one value (ρ undefined), the verdict is "not enough
      data", never "does not hold". A peak: OLS of y on x and x², H0 the x² coefficient is >= 0,
      one-sided t test, holding where p < alpha and the vertex lies inside the observed x (p_min
      0: a parametric test has no floor). No minimum effect across units.
    * Several values per unit at ordered levels (repeated measures: a run's best-so-far value at
      several times or budgets). A best-so-far curve can only rise, so a test of "it rises"
      (each unit's ρ against 0) is decided by the number of units, not by the curves; and the
      bootstrap lower bound of a mean of non-negative changes lies above 0 as soon as enough
      units move at all, however little. Instead, per unit: its net change (first to last
      level) and its later-half change (its middle level to its last; of its L levels, the
      middle is number (L − 1) // 2 counting from 0), each in the stated direction. The verdict
      "keeps rising" (or falling) holds where the percentile-bootstrap lower bounds over units
      (one-sided, 1 − alpha) of both mean changes lie above `min_effect`, a change in y's units
      too small to count: tiny rises do not keep rising however many units make them. It needs
      `bootstrap.MIN_UNITS` (10) units with a trend of their own, the fewest from which the
      percentile bound is given (below, it undercovers: see `innolab.analysis.bootstrap`); with
      fewer, "not enough data", with the effect (NaN interval) reported. The estimate is the
      mean later-half change with its interval. Beside it, the stated null of returns: H0 each
      unit's later-half change equals its earlier-half change (returns neither diminish nor
      grow), a two-sided Wilcoxon signed-rank test over units, with its p_min (2 / 2^k for k
      units whose difference is not 0); it decides no verdict. A peak: per interior level of x,
      one-sided Wilcoxon tests over units of the rise to it and the fall after it beyond
      `min_effect` (the larger p), Bonferroni over the interior levels tested (the level is not
      chosen from the data first, so the false-positive rate on flat data stays at or below
      alpha); p_min from the units' non-zero differences, "not enough data" where it is not
      below alpha; the effect (the smaller of mean rise and fall at the level with the smallest
      p) with its bootstrap interval at the Bonferroni level. Units with values at fewer than 3
      levels (or, for a peak, at no interior level with values on both sides) carry no trend of
      their own and are left out. `trend_steps` gives the change at each step.

    Fewer than `min_levels` distinct x values, or fewer than 4 values, is "not enough data"
    (no test runs: p_value and p_min NaN, and `detail` says so).

    NaN novelty (or any NaN x or y): those rows are dropped before testing, never read as 0; `n`
    and `n_units` count what was tested.

    Args:
        data: The values (the unit, x and y columns).
        x: The column of the levels.
        y: The column of the values.
        trend: "increasing", "decreasing" or "peak".
        unit: The column that names the unit of observation (`config_id`: one run).
        alpha: The tests' significance level, in (0, 0.5); one-sided bounds are at 1 − alpha.
        min_levels: The fewest distinct x values a test needs.
        min_effect: The smallest change per unit, in y's units, that counts as a rise or fall
            (repeated measures only), >= 0. The default, 0.01, is 1 % of the ratio G/|V*|'s
            scale (the best known value); pass 1.0 for N (0 to 100), as `check_trends` does by
            quantity (`MIN_EFFECTS`).
        n_resamples: The resamples of the bootstrap and of a permutation test that is not exact.
        rng: A seed or a numpy Generator.

    Returns:
        The verdict with its hypothesis, test, effect, p-value, smallest reachable p and counts.

    Raises:
        AnalysisError: An unknown trend, alpha outside (0, 0.5), a negative or non-finite
            min_effect, no `unit` (repeated measures cannot be told from independent points;
            rows that repeat a run identifier such as config_id are named in the message), a
            missing column, or a row without a unit.
    """
    if trend not in ("increasing", "decreasing", "peak"):
        raise AnalysisError(f"trend must be increasing, decreasing or peak, got {trend!r}")
    if not 0 < alpha < 0.5:
        raise AnalysisError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    if isinstance(min_effect, bool) or not isinstance(min_effect, int | float | np.number) \
            or not np.isfinite(min_effect) or min_effect < 0:
        raise AnalysisError(f"min_effect must be a finite number >= 0 in {y}'s units, "
                            f"got {min_effect!r}")
    check_settings(confidence_level=1 - 2 * alpha, n_resamples=n_resamples)
    if unit is None:
        raise AnalysisError(_unit_needed(data, x))
    _columns(data, [unit, x, y], "data")
    points = data[[unit, x, y]].dropna(subset=[x, y])
    if points[unit].isna().any():
        raise AnalysisError(f"data[{unit!r}] must name the unit of every row; "
                            f"{int(points[unit].isna().sum())} "
                            "row(s) have none")
    points = points.astype({x: float, y: float})
    n, levels, n_units = len(points), points[x].nunique(), points[unit].nunique()
    if levels < min_levels or n < 4:
        return _not_enough(trend, unit, n, n_units,
                           f"{levels} level(s) of {x} and {n} value(s) from {n_units} "
                           f"unit(s); at least {min_levels} levels and 4 values needed: "
                           f"{_NO_TEST}")
    gen = generator(rng)
    if n_units == n:
        return _across_units(points, x, y, trend, unit, alpha, n_resamples, gen)
    return _within_units(points, x, y, trend, unit, alpha, float(min_effect), n_resamples, gen)


def trend_steps(data: pd.DataFrame, x: str, y: str, *, unit: str,
                by: str | Sequence[str] | None = None,
                trend: Literal["increasing", "decreasing"] = "increasing",
                confidence_level: float = DEFAULT_CONFIDENCE,
                n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """Give the change of repeated measures at each step between consecutive levels, over units.

    Unit: `unit` (`config_id`: a run). Per group and step (two consecutive levels of x): the units
    with values at both; the mean change over them, with a percentile bootstrap interval over
    units (NaN with a note below `bootstrap.MIN_UNITS` units); the share of them that move in
    the `trend` direction at this step (`share_improving`); and the share that move in that
    direction anywhere after the step's first level, up to their own last level
    (`share_still_improving`: still improving after it).
    A unit's several values at one level are averaged. NaN x or y rows are dropped, never read
    as 0.

    Args:
        data: The values (the unit, x, y and `by` columns).
        x: The column of the levels.
        y: The column of the values.
        unit: The column naming the unit of observation.
        by: The grouping column or columns, or None for one group.
        trend: The direction that counts as improving.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        Columns `*by, from, to, n_units, mean_change, ci_low, ci_high, share_improving,
        share_still_improving, note` (note: why a bound is NaN).

    Raises:
        AnalysisError: A column is missing, a setting is out of range, or `trend` is neither
            direction.
    """
    if trend not in ("increasing", "decreasing"):
        raise AnalysisError(f"trend must be increasing or decreasing, got {trend!r}")
    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    keys = _by(by)
    _columns(data, [*keys, unit, x, y], "data")
    sign = 1.0 if trend == "increasing" else -1.0
    gen = generator(rng)
    columns = [*keys, "from", "to", "n_units", "mean_change", "ci_low", "ci_high",
               "share_improving", "share_still_improving", "note"]
    rows = []
    for key, part in _groups(data.dropna(subset=[x, y]), keys):
        wide = _by_unit(part.astype({x: float, y: float}), x, y, unit)
        if wide.shape[1] < 2:
            continue
        values = wide.to_numpy(dtype=float)
        last = np.array([r[~np.isnan(r)][-1] for r in values])
        change = np.diff(values, axis=1)
        present = ~np.isnan(change)
        intervals = bootstrap_ci(np.where(present, change, 0.0), confidence_level=confidence_level,
                                 n_resamples=n_resamples, rng=gen, mask=present)
        for j, interval in enumerate(intervals):
            counted = present[:, j]
            if not counted.any():
                continue
            rows.append({**dict(zip(keys, key, strict=True)), "from": float(wide.columns[j]),
                         "to": float(wide.columns[j + 1]), "n_units": interval.n,
                         "mean_change": interval.mean, "ci_low": interval.ci_low,
                         "ci_high": interval.ci_high,
                         "share_improving": float((sign * change[counted, j] > 0).mean()),
                         "share_still_improving": float(
                             (sign * (last[counted] - values[counted, j]) > 0).mean()),
                         "note": interval.note})
    return pd.DataFrame(rows, columns=columns)


def check_trends(stated: pd.DataFrame, data: pd.DataFrame, x: str, columns: dict[str, str], *,
                 unit: str | None = None, alpha: float = 0.05,
                 min_effects: Mapping[str, float] | None = None,
                 n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """Test each stated trend of `fig6_trends.csv` on `data` with `trend_holds`.

    Each row states its hypothesis and, beside its p-value, the smallest p its design can reach,
    and, for repeated measures, the smallest change that counts (`min_effect`, in the measuring
    column's units). NaN values (novelty not computed) are dropped by `trend_holds`; `n` says
    how many were tested.

    Args:
        stated: The stated trends (quantity, trend, detail).
        data: The values.
        x: The column of the levels.
        columns: The column that measures each quantity (gain, novelty); a quantity without a
            column (e.g. trade_off) is left to the caller.
        unit: The column that names the unit of observation.
        alpha: The tests' significance level.
        min_effects: The smallest change that counts per quantity, in its column's units; a
            quantity not named takes `MIN_EFFECTS` (gain 0.01 for the ratio G/|V*|, novelty 1.0
            on N's 0 to 100), else `DEFAULT_MIN_EFFECT`. Pass it when gain is measured by
            another column than the ratio.
        n_resamples: As `trend_holds`.
        rng: A seed or a numpy Generator.

    Returns:
        One row per tested trend: `TREND_COLUMNS` (quantity, paper, trend, this sweep, test,
        hypothesis, unit, n_units, n, estimate, ci_low, ci_high, min_effect, statistic,
        p_value, p_min, detail).

    Raises:
        AnalysisError: A column is missing, or as `trend_holds`.
    """
    _columns(stated, ["quantity", "trend", "detail"], "stated")
    smallest = {**MIN_EFFECTS, **(min_effects or {})}
    gen = generator(rng)
    rows = []
    for row in stated.itertuples():
        if row.quantity not in columns:
            continue
        check = trend_holds(data, x, columns[row.quantity], row.trend, unit=unit, alpha=alpha,
                            min_effect=smallest.get(row.quantity, DEFAULT_MIN_EFFECT),
                            n_resamples=n_resamples, rng=gen)
        rows.append({"quantity": row.quantity, "paper": row.detail, "trend": row.trend,
                     "this sweep": check.verdict, "test": check.test,
                     "hypothesis": check.hypothesis, "unit": check.unit,
                     "n_units": check.n_units, "n": check.n, "estimate": check.estimate,
                     "ci_low": check.ci_low, "ci_high": check.ci_high,
                     "min_effect": check.min_effect, "statistic": check.statistic,
                     "p_value": check.p_value, "p_min": check.p_min, "detail": check.detail})
    return pd.DataFrame(rows, columns=TREND_COLUMNS)


# --------------------------------------------------------------------------------------- regression


def regression(runs: pd.DataFrame, formula: str, kind: Literal["ols", "mixed"] = "ols",
               groups: str = "task", *, confidence_level: float = DEFAULT_CONFIDENCE
               ) -> pd.DataFrame:
    """Fit a regression and return a tidy coefficient table.

    `ols`: OLS with errors clustered by `groups` when it has at least 2 levels (else
    heteroscedasticity-robust HC1); `mixed`: a linear mixed model with a random intercept per level
    of `groups`. Example: `regression(runs, "ratio ~ temperature + C(agent)")`.

    Unit: a row of `runs` (a run); `ols` clusters the errors by `groups`, so runs of one task are
    not taken as independent. Each coefficient is tested against H0: coefficient = 0 (two-sided
    Wald test, t for OLS, z for the mixed model; a parametric test, so no floor on p set by n).
    The interval is the Wald interval, estimate ± quantile × standard error (statsmodels
    `conf_int`): symmetric about the estimate, so it contains it by construction (subtracting or
    adding a non-negative number cannot round past the estimate); NaN where the standard error
    is not computed, with a note.

    NaN novelty (or a NaN in any variable of the formula): the row is dropped (patsy's NA
    handling), never read as 0; `n` counts the rows fitted.

    Args:
        runs: The runs table (boolean columns enter as 0/1).
        formula: A patsy formula.
        kind: "ols" or "mixed".
        groups: The clustering (ols) or grouping (mixed) column.
        confidence_level: The intervals' confidence level.

    Returns:
        Columns `term, estimate, std_error, statistic, p_value, ci_low, ci_high, n, method,
        hypothesis, note` (note: why a bound is NaN; empty otherwise).

    Raises:
        AnalysisError: An unknown kind, a confidence level out of range, or a formula that does
            not fit the data.
    """
    import statsmodels.formula.api as smf
    from patsy import PatsyError

    check_settings(confidence_level=confidence_level)
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
    interval = fit.conf_int(alpha=1 - confidence_level)
    error = fit.bse.to_numpy(dtype=float)
    table = pd.DataFrame({"term": fit.params.index, "estimate": fit.params.to_numpy(),
                          "std_error": error, "statistic": fit.tvalues.to_numpy(),
                          "p_value": fit.pvalues.to_numpy(),
                          "ci_low": interval.iloc[:, 0].to_numpy(dtype=float),
                          "ci_high": interval.iloc[:, 1].to_numpy(dtype=float)})
    table["n"] = int(fit.nobs)
    table["method"] = method
    table["hypothesis"] = "H0: coefficient = 0 (two-sided Wald test; no floor on p)"
    table["note"] = np.where(np.isfinite(error), "",
                             "standard error not computed (a term the data do not identify): "
                             "no p-value or interval")
    return table


# ------------------------------------------------------------------------- Tables 2, 4, 5 from runs


def sweep_scores(runs: pd.DataFrame, best_of: int | None = None) -> pd.DataFrame:
    """Make Table 2 from one's own runs: per (task, framework), the best of k runs by ratio.

    The paper takes the best of 3.

    NaN novelty: the best run is chosen by ratio; where its N was not computed the cell's novelty
    is NaN (a valid cell with N unknown), never 0; `main_results` leaves it out of N means and
    tests and counts it in its note.

    Args:
        runs: The runs table (task, agent, valid, ratio, novelty; seed and gain where known).
        best_of: k, the first seeds the best is chosen from; None for all.

    Returns:
        Table 2 in the format of `innolab.analysis.main_results`: `task, framework, valid, ratio,
        novelty, gain, runs`.

    Raises:
        AnalysisError: A column is missing.
    """
    _columns(runs, ["task", "agent", "valid", "ratio", "novelty"], "runs")
    rows = []
    for (task, agent), part in runs.groupby(["task", "agent"], sort=True):
        ordered = part.sort_values("seed", kind="stable") if "seed" in part else part
        if best_of is not None:
            ordered = ordered.head(best_of)
        valid = ordered[ordered["valid"].fillna(False).astype(bool)]
        framework = FRAMEWORK_NAMES.get(agent, agent)
        if valid.empty:
            rows.append({"task": task, "framework": framework, "valid": False, "ratio": np.nan,
                         "novelty": np.nan, "gain": np.nan, "runs": len(ordered)})
            continue
        best = valid.loc[valid["ratio"].idxmax()]
        rows.append({"task": task, "framework": framework, "valid": True,
                     "ratio": float(best["ratio"]), "novelty": float(best["novelty"]),
                     "gain": best.get("gain"), "runs": len(ordered)})
    return pd.DataFrame(rows, columns=["task", "framework", "valid", "ratio", "novelty", "gain",
                                       "runs"])


@dataclass(frozen=True)
class MainResults:
    """Tables 2, 4 and 5 recomputed from a sweep.

    Attributes:
        scores: Table 2 (see `sweep_scores`).
        means: Table 4 (see `main_results.table4_means`).
        intervals: The bootstrap intervals over tasks (`main_results.framework_intervals`'s
            columns and `n_tasks`, `note`: NaN bounds below `bootstrap.MIN_UNITS` tasks, and
            why); empty below 2 tasks.
        paired: The paired tests (Table 5): `main_results.paired_tests`'s columns and, beside
            them, `n_tasks` (the tasks paired), `p_min`, `hypothesis` and `note`; empty below 2
            tasks or 2 frameworks.
        note: How many tasks and frameworks, or why intervals and tests are empty, and how many
            valid cells have N not computed (left out of N means and tests).
    """

    scores: pd.DataFrame
    means: pd.DataFrame
    intervals: pd.DataFrame
    paired: pd.DataFrame
    note: str


def _with_hypotheses(paired: pd.DataFrame, scores: pd.DataFrame, n_resamples: int
                     ) -> pd.DataFrame:
    """The paired tests with the tasks each counts, its hypothesis, its floor on p and a note."""
    from innolab.analysis import main_results as published

    out = paired.copy()
    counts = []
    for row in out.itertuples():
        matrix = published.framework_matrix(scores, row.metric, (row.framework_a,
                                                                 row.framework_b))
        counts.append(len(matrix.dropna()))
    out["n_tasks"] = counts
    enough = out["n_tasks"] >= MIN_UNITS
    out["p_min"] = np.where(enough, min(1.0, 2 / (n_resamples + 1)), np.nan)
    out["hypothesis"] = [
        f"H0: the mean over tasks of {row.metric} of {row.framework_a} minus "
        f"{row.framework_b} is 0 (two-sided; p from the paired percentile bootstrap over tasks, "
        "the paper's Table 5)" for row in out.itertuples()]
    out["note"] = [
        "" if ok else too_few(n, "task") + "; the p-value reads the same bootstrap, so it is "
        "NaN too (p_min NaN: no p is given)" for ok, n in zip(enough, out["n_tasks"], strict=True)]
    return out


def main_results(runs: pd.DataFrame, best_of: int | None = None, *,
                 confidence_level: float = DEFAULT_CONFIDENCE,
                 n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> MainResults:
    """Compute the paper's main results over one's own runs, with the published tables' code.

    Best of k per task × framework, pessimistic imputation, macro means, bootstrap intervals over
    tasks, paired tests.

    Unit: a task (each framework's best of k on it). The paired tests are the paper's (Table 5):
    H0 the mean over tasks of framework a's value minus b's is 0, a two-sided p from the paired
    percentile bootstrap over tasks (twice the share of resampled mean differences on the far
    side of 0). That p is read off the bootstrap distribution the interval is, so it is given
    from `bootstrap.MIN_UNITS` (10) tasks, as the interval: below, both are NaN and `note` says
    why (over 2 tasks the bootstrap p of two differences of one sign is 2 / (n_resamples + 1),
    whatever they are). `p_min`, its smallest value, is 2 / (n_resamples + 1) from 10 tasks on
    (the method's floor, not the design's: the number of tasks does not bound it), NaN below.

    NaN novelty: a cell whose best run's N was not computed is left out of the framework's mean
    N and its interval, and excluded from the paired N tests of its task (see
    `main_results.table4_means`, `framework_intervals`, `paired_tests`); the note says how many.

    Args:
        runs: The runs table.
        best_of: k, the first seeds the best is chosen from; None for all.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        Tables 2, 4 and 5 with a note.

    Raises:
        AnalysisError: A column is missing or a setting is out of range.
    """
    from innolab.analysis import main_results as published

    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    scores = sweep_scores(runs, best_of)
    means = published.table4_means(scores)
    frameworks = tuple(dict.fromkeys(scores["framework"]))
    tasks = scores["task"].nunique()
    missing = published.not_computed(scores)
    unknown = (f"; N not computed for {missing} valid cell(s) of {int(scores['valid'].sum())}: "
               "left out of N means and tests") if missing else ""
    if tasks < 2:
        empty = pd.DataFrame()
        return MainResults(scores, means, empty, empty,
                           f"{tasks} task(s): intervals and paired tests resample tasks and need "
                           f"at least 2{unknown}")
    intervals = published.framework_intervals(scores, frameworks=frameworks,
                                              confidence_level=confidence_level,
                                              n_resamples=n_resamples, rng=rng)
    counted = {(f, metric): int(published.framework_matrix(scores, metric, frameworks)[f].count())
               for metric in published.METRICS for f in frameworks}
    intervals["n_tasks"] = [counted[(f, m)] for f, m in zip(intervals["framework"],
                                                             intervals["metric"], strict=True)]
    intervals["note"] = [too_few(k, "task") or ("no interval: the percentile bounds miss the "
                                                "mean" if np.isnan(low) else "")
                         for k, low in zip(intervals["n_tasks"], intervals["ci_low"],
                                           strict=True)]
    paired = _with_hypotheses(published.paired_tests(scores, confidence_level=confidence_level,
                                                     n_resamples=n_resamples, rng=rng),
                              scores, n_resamples) if len(frameworks) > 1 else pd.DataFrame()
    return MainResults(scores, means, intervals, paired,
                       f"{tasks} tasks, {len(frameworks)} framework(s){unknown}")


def describe(runs: pd.DataFrame) -> str:
    """Say what a sweep's data are, in one paragraph.

    Args:
        runs: The runs table.

    Returns:
        The model(s), tasks, agents, budgets, runs, seeds, temperatures, prior solutions and valid
        runs; "No runs." for an empty table.
    """
    if runs.empty:
        return "No runs."

    def listing(column: str) -> str:
        if column not in runs:
            return "?"
        values = sorted({str(v) for v in runs[column].dropna()})
        return ", ".join(values) if values else "none"

    valid = int(runs["valid"].fillna(False).astype(bool).sum()) if "valid" in runs else 0
    complete = (int(runs["complete"].fillna(False).astype(bool).sum()) if "complete" in runs
                else len(runs))
    budgets = (", ".join(f"{b:g} s" for b in sorted(runs["budget_s"].dropna().unique()))
               if "budget_s" in runs else "?")
    return (f"{len(runs)} runs ({complete} complete, {valid} with a valid submission); "
            f"model: {listing('model')}; "
            f"tasks: {listing('task')}; agents: {listing('agent')}; budget: {budgets}; "
            f"seeds: {listing('seed')}; "
            f"temperatures: {listing('temperature')}; "
            f"prior solutions: {listing('prior_solution')}.")
