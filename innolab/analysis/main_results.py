"""The paper's main results (Tables 2, 4, 5) from its Table 2: fill, impute, average, test."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd

from innolab.analysis.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Rng,
    bootstrap_ci,
    impute_scores,
    macro_average,
    paired_bootstrap,
)

FRAMEWORKS = ("MLAB", "CodeAct", "AIDE")
METRICS = ("ratio", "novelty")
FillMethod = Literal["equal_split", "reported_mean"]
FILL_METHODS: tuple[FillMethod, ...] = ("equal_split", "reported_mean")


class MainResultsError(ValueError):
    """Bad input to the main-results analysis; the message names the parameter and the rule."""


# D_AGENT's granularity: a distance is 100·k/24 for an integer total k of six 0–4 scores
# (paper §3.4 [derived]).
JUDGE_GRID = 100.0 / 24.0


def fill_unreported(
    table2: pd.DataFrame,
    averages: pd.DataFrame,
    method: FillMethod = "equal_split",
    novelty_grid: float | None = JUDGE_GRID,
) -> pd.DataFrame:
    """Fill the valid-but-unprinted cells of Table 2 (NPR, TrojanDetection for MLAB and CodeAct).

    * ``equal_split``: the framework's average over valid cells times their count gives the total
      of every valid cell; the total minus the printed cells is split equally among the unprinted
      ones.
    * ``reported_mean``: each unprinted cell takes the mean of the framework's printed valid cells.

    With ``novelty_grid`` (default 100/24, the judge's granularity) printed novelty values are
    replaced by the exact grid values they round (66.67 -> 66.666...), and the implied novelty
    total is snapped to the grid before it is split, which undoes the rounding of the printed
    averages.

    NaN novelty: only the unprinted cells may lack values (they are what is filled); a printed
    valid cell without a value is refused, never summed as 0.

    Args:
        table2: Table 2 in long form: task, framework, status, gain, ratio, novelty.
        averages: The printed averages per framework: framework, n_valid, gain, ratio, novelty.
        method: "equal_split" or "reported_mean".
        novelty_grid: The judge's granularity, or None to keep printed values.

    Returns:
        A copy of `table2` with the cells filled, a boolean column ``valid`` and a boolean column
        ``assumed`` that marks the filled cells.

    Raises:
        MainResultsError: An unknown method, a grid that is not positive, averages that lack
            a framework or disagree with Table 2's count of valid cells, or a printed valid cell
            without a value.
    """
    if method not in FILL_METHODS:
        raise MainResultsError(f"method must be one of {FILL_METHODS}, got {method!r}")
    if novelty_grid is not None and not novelty_grid > 0:
        raise MainResultsError(f"novelty_grid must be > 0 or None, got {novelty_grid!r}")
    out = table2.copy()
    out["valid"] = out["status"] != "failed"
    out["assumed"] = out["status"] == "valid_unreported"
    if novelty_grid is not None:
        out["novelty"] = (out["novelty"] / novelty_grid).round() * novelty_grid
    by_framework = averages.set_index("framework")
    for framework, rows in out.groupby("framework"):
        unreported = rows.index[rows["assumed"]]
        if unreported.empty:
            continue
        printed = rows[rows["valid"] & ~rows["assumed"]]
        for metric in ("gain", *METRICS):
            if printed[metric].isna().any():
                tasks = printed.loc[printed[metric].isna(), "task"].tolist()
                raise MainResultsError(f"{framework}: printed valid cells need a {metric}; "
                                       f"missing for {tasks}")
            if method == "equal_split":
                if framework not in by_framework.index:
                    raise MainResultsError(f"averages has no row for framework {framework!r}")
                n_valid = int(by_framework.at[framework, "n_valid"])
                counted = int(rows["valid"].sum())
                if n_valid != counted:
                    raise MainResultsError(
                        f"{framework}: averages n_valid={n_valid}, Table 2 has {counted}")
                total = float(by_framework.at[framework, metric]) * n_valid
                if metric == "novelty" and novelty_grid is not None:
                    total = round(total / novelty_grid) * novelty_grid
                value = (total - printed[metric].sum()) / len(unreported)
            else:
                value = printed[metric].mean()
            out.loc[unreported, metric] = value
    return out


def framework_matrix(
    scores: pd.DataFrame, metric: str, frameworks: tuple[str, ...] = FRAMEWORKS
) -> pd.DataFrame:
    """Build the tasks × frameworks matrix of one metric, failed runs imputed pessimistically.

    NaN novelty: a failed configuration's N is 0 (imputed); a valid one whose N was not computed
    stays NaN in the matrix, for the caller to leave out (never read as 0).

    Args:
        scores: One row per (task, framework) with valid, ratio and novelty.
        metric: "ratio" or "novelty".
        frameworks: The frameworks, in the matrix's column order.

    Returns:
        The matrix, tasks as rows.

    Raises:
        MainResultsError: A framework has no scores, or lacks a row for some task.
    """
    imputed = impute_scores(scores)
    matrix = imputed.pivot(index="task", columns="framework", values=metric)
    present = imputed.assign(_row=1.0).pivot(index="task", columns="framework", values="_row")
    missing = [f for f in frameworks if f not in matrix.columns]
    if missing:
        raise MainResultsError(f"no scores for frameworks {missing}")
    if present[list(frameworks)].isna().any().any():
        raise MainResultsError(f"every framework needs a row for every task ({metric})")
    return matrix[list(frameworks)]


def not_computed(scores: pd.DataFrame) -> int:
    """Count the valid configurations whose N was not computed (NaN).

    Args:
        scores: One row per (task, framework) with valid and novelty.

    Returns:
        How many valid rows have a NaN novelty.
    """
    return int((scores["valid"].fillna(False).astype(bool) & scores["novelty"].isna()).sum())


def table4_means(scores: pd.DataFrame) -> pd.DataFrame:
    """Compute Table 4: per framework, the mean ratio and novelty over tasks, imputed, and n_valid.

    NaN novelty: a valid task whose N was not computed is left out of the framework's mean N
    (never read as 0); `not_computed(scores)` counts them, and `bootstrap.macro_average` gives
    the tasks each mean counts (`n_novelty`).

    Args:
        scores: One row per (task, framework) with valid, ratio and novelty.

    Returns:
        One row per framework: framework, mean_ratio, mean_novelty, n_valid.
    """
    means = macro_average(scores)
    return means.rename(columns={"ratio": "mean_ratio", "novelty": "mean_novelty"})[
        ["framework", "mean_ratio", "mean_novelty", "n_valid"]
    ]


def framework_intervals(
    scores: pd.DataFrame,
    frameworks: tuple[str, ...] = FRAMEWORKS,
    *,
    confidence_level: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    rng: Rng = 0,
) -> pd.DataFrame:
    """Bootstrap over tasks the interval of each framework's mean ratio and mean novelty.

    NaN novelty: a valid task whose N was not computed is left out of that framework's N mean
    and its resamples (a mask), never read as 0; a framework with fewer than 2 tasks counted gets
    NaN bounds. `not_computed(scores)` counts the cells left out.

    Args:
        scores: One row per (task, framework) with valid, ratio and novelty.
        frameworks: The frameworks.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        Long format: framework, metric, mean, ci_low, ci_high.

    Raises:
        MainResultsError: A framework has no scores, or lacks a row for some task.
    """
    rows = []
    for metric in METRICS:
        matrix = framework_matrix(scores, metric, frameworks).to_numpy(dtype=float)
        known = ~np.isnan(matrix)
        intervals = bootstrap_ci(np.where(known, matrix, 0.0), confidence_level=confidence_level,
                                 n_resamples=n_resamples, rng=rng,
                                 mask=None if known.all() else known)
        for framework, interval in zip(frameworks, intervals, strict=True):
            rows.append(
                {"framework": framework, "metric": metric, "mean": interval.mean,
                 "ci_low": interval.ci_low, "ci_high": interval.ci_high}
            )
    return pd.DataFrame(rows)


def paired_tests(
    scores: pd.DataFrame,
    pairs: list[tuple[str, str]] | None = None,
    *,
    confidence_level: float = DEFAULT_CONFIDENCE,
    n_resamples: int = DEFAULT_RESAMPLES,
    rng: Rng = 0,
) -> pd.DataFrame:
    """Run paired bootstrap tests (Table 5) between frameworks on ratio and novelty.

    NaN novelty: a task where either framework's N was not computed is excluded from that pair's
    novelty test (never read as 0); with fewer than 2 pairs left the row holds the mean
    difference of those left (NaN with none) and NaN bounds and p. `not_computed(scores)` counts
    the cells behind the exclusions.

    Args:
        scores: One row per (task, framework) with valid, ratio and novelty.
        pairs: The (a, b) pairs of frameworks to test; None tests every pair.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        One row per pair and metric: framework_a, framework_b, metric, mean_diff, ci_low,
        ci_high, p_value.

    Raises:
        MainResultsError: A pair names a framework without scores, or a framework lacks a row
            for some task.
    """
    present = set(scores["framework"])
    frameworks = (tuple(f for f in FRAMEWORKS if f in present)
                  + tuple(sorted(present - set(FRAMEWORKS))))
    pairs = pairs if pairs is not None else list(combinations(frameworks, 2))
    rows = []
    for metric in METRICS:
        matrix = framework_matrix(scores, metric, frameworks)
        for a, b in pairs:
            if a not in matrix.columns or b not in matrix.columns:
                raise MainResultsError(f"pair ({a!r}, {b!r}) names a framework without scores")
            both = matrix[[a, b]].dropna()
            row = {"framework_a": a, "framework_b": b, "metric": metric}
            if len(both) < 2:
                diffs = (both[a] - both[b]).to_numpy(dtype=float)
                rows.append({**row, "mean_diff": float(diffs.mean()) if diffs.size else np.nan,
                             "ci_low": np.nan, "ci_high": np.nan, "p_value": np.nan})
                continue
            test = paired_bootstrap(both[a], both[b], confidence_level=confidence_level,
                                    n_resamples=n_resamples, rng=rng)
            rows.append({**row, "mean_diff": test.mean, "ci_low": test.ci_low,
                         "ci_high": test.ci_high, "p_value": test.p_value})
    return pd.DataFrame(rows)


def round_as_printed(values: pd.Series, decimals: int = 2) -> pd.Series:
    """Round half away from zero, as papers print (-0.615 -> -0.62), immune to binary float noise.

    Args:
        values: The values (NaN stays NaN).
        decimals: The decimals kept.

    Returns:
        The rounded values.
    """

    def one(x: float) -> float:
        if pd.isna(x):
            return x
        exact = Decimal(repr(round(float(x), 9)))
        return float(exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))

    return values.map(one)


def compare_with_published(
    recomputed: pd.DataFrame, published: pd.DataFrame, decimals: int = 2
) -> pd.DataFrame:
    """Put a recomputed Table 4 beside the paper's values.

    A match is equality after rounding as the paper prints (`round_as_printed`). NaN novelty: a
    recomputed mean N that is NaN (no task with N computed) matches nothing.

    Args:
        recomputed: Table 4 as `table4_means` returns it.
        published: The paper's values in long form: framework, metric, value.
        decimals: The decimals the paper prints.

    Returns:
        One row per framework: the recomputed columns, the paper's (prefixed ``paper_``) and
        ``ratio_matches`` / ``novelty_matches``.
    """
    wide = published.pivot(index="framework", columns="metric", values="value")
    out = recomputed.set_index("framework").join(wide.add_prefix("paper_"), how="left")
    for metric in ("ratio", "novelty"):
        rounded = round_as_printed(out[f"mean_{metric}"], decimals)
        out[f"{metric}_matches"] = ((rounded - out[f"paper_mean_{metric}"]).abs()
                                    < 0.5 * 10.0**-decimals)
    return out.reset_index()
