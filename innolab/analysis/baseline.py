"""The baseline beside the agents in a sweep's tables: labels, agent vs baseline, both N axes.

`baseline` is a budget-matched classical search with no model (innolab's own search templates,
run through the same gym, budgets and scoring), not an agent: figures call it "baseline
(classical search)". Pure functions on the tables of `innolab.results` (DataFrames in, DataFrames
or Figures out, no file I/O).

Two novelty axes: `novelty` (N, the method: the program's distance from the known solutions'
code) and `novelty_out` (N_out, the outcome: the submission's distance from the known solutions'
outputs up to the task's symmetries). NaN on either axis means "not computed" (no back end, a
judge that failed, no code, a program that does not reproduce; for N_out also a family with no
descriptor, or tables written before N_out existed): it is never read as 0. Functions here leave
NaN out of means, pairs and trends and report how many were left out. Invalid runs carry the
paper's imputation (ratio −1, N 0) on both axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from innolab.analysis import sweeps as sw
from innolab.analysis.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, Rng, check_settings
from innolab.analysis.colours import colours
from innolab.metrics import NOVELTY_SCALE

BASELINE = "baseline"  # the baseline's `agent` in the tables (its `model` is "none")
BASELINE_LABEL = "baseline (classical search)"  # what figures and tables call it
NOVELTY_AXES = {"novelty": "N (method)", "novelty_out": "N_out (outcome)"}
DEFAULT_METRICS = ("ratio", "novelty", "novelty_out")
# a matched budget and start: same task, seed, budget and prior solution (None: from scratch)
PAIR_ON = ("task", "seed", "budget_s", "prior_solution")
VERSUS_COLUMNS = [
    "agent", "metric", "task", "level_a", "level_b", "mean_diff", "ci_low", "ci_high", "p_value",
    "p_holm", "n_pairs", "runs_agent", "valid_agent", "known_agent", "runs_baseline",
    "valid_baseline", "known_baseline", "note",
]


def is_baseline(runs: pd.DataFrame) -> pd.Series:
    """Which rows are the baseline's.

    Args:
        runs: A table with an `agent` column.

    Returns:
        A boolean Series aligned with `runs`.

    Raises:
        AnalysisError: `runs` has no `agent` column.
    """
    sw._columns(runs, ["agent"], "runs")
    return runs["agent"].eq(BASELINE)


def labelled(runs: pd.DataFrame, columns: Sequence[str] = ("agent", "model")) -> pd.DataFrame:
    """A copy whose baseline rows read "baseline (classical search)" in the given columns.

    For figures and tables shown to a reader; analyses that pair on `agent` take the table as
    recorded.

    Args:
        runs: A runs table (or any table with `agent`).
        columns: The columns relabelled on the baseline's rows (those present).

    Returns:
        The relabelled copy (object dtype in those columns).

    Raises:
        AnalysisError: `runs` has no `agent` column.
    """
    mask = is_baseline(runs)
    out = runs.copy()
    for column in columns:
        if column in out:
            out[column] = out[column].astype(object)
            out.loc[mask, column] = BASELINE_LABEL
    return out


def as_level(runs: pd.DataFrame, factor: str) -> pd.DataFrame:
    """A copy where the baseline's rows stand at a level of their own of `factor`, as text.

    A factor the baseline does not take (temperature, backbone) is NaN on its rows; shown beside
    the levels it reads "baseline (classical search)". Every level becomes text (for a figure's
    categories).

    Args:
        runs: A runs table with `agent` and `factor`.
        factor: The factor's column.

    Returns:
        The copy.

    Raises:
        AnalysisError: A column is missing.
    """
    sw._columns(runs, ["agent", factor], "runs")
    out = runs.copy()
    out[factor] = out[factor].map(lambda v: "none" if pd.isna(v) else str(v)).astype(object)
    out.loc[is_baseline(runs), factor] = BASELINE_LABEL
    return out


def novelty_axes(frame: pd.DataFrame) -> list[str]:
    """The novelty axes a table holds (`novelty`, then `novelty_out` where recorded)."""
    return [axis for axis in NOVELTY_AXES if axis in frame]


def on_axis(trajectory: pd.DataFrame, axis: str) -> pd.DataFrame:
    """A copy of a table whose `novelty` column is the given axis (for `sweeps` functions).

    Args:
        trajectory: A trajectory (or runs) table.
        axis: "novelty" or "novelty_out".

    Returns:
        The copy.

    Raises:
        AnalysisError: An unknown axis, or one the table does not hold.
    """
    if axis not in NOVELTY_AXES:
        raise sw.AnalysisError(f"axis must be one of {list(NOVELTY_AXES)}, got {axis!r}")
    sw._columns(trajectory, [axis], "trajectory")
    return trajectory.assign(novelty=trajectory[axis].astype(float))


def anytime_axes(trajectory: pd.DataFrame, runs: pd.DataFrame, by: str | Sequence[str] | None,
                 grid_s: Sequence[float], *, confidence_level: float = DEFAULT_CONFIDENCE,
                 n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """The anytime curves (`sweeps.anytime`) with the mean of both novelty axes.

    NaN: as `sweeps.anytime`, per axis (`n_novelty`, `n_novelty_out` count the runs each mean
    holds); without `novelty_out` in the trajectory, `mean_novelty_out` is NaN and
    `n_novelty_out` 0.

    Args:
        trajectory: The trajectory table.
        runs: The runs table.
        by: The grouping column or columns, or None for one group.
        grid_s: The times, in seconds, increasing.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        `sweeps.anytime`'s columns, then `mean_novelty_out, n_novelty_out`.

    Raises:
        AnalysisError: As `sweeps.anytime`.
    """
    settings = {"confidence_level": confidence_level, "n_resamples": n_resamples, "rng": rng}
    curves = sw.anytime(trajectory, runs, by, grid_s, **settings)
    if "novelty_out" not in trajectory:
        return curves.assign(mean_novelty_out=np.nan, n_novelty_out=0)
    outcome = sw.anytime(on_axis(trajectory, "novelty_out"), runs, by, grid_s, **settings)
    keys = [*sw._by(by), "t_s"]
    outcome = outcome[[*keys, "mean_novelty", "n_novelty"]].rename(
        columns={"mean_novelty": "mean_novelty_out", "n_novelty": "n_novelty_out"})
    return curves.merge(outcome, on=keys, how="left")


def anytime_runs_axes(
    trajectory: pd.DataFrame, runs: pd.DataFrame, grid_s: Sequence[float]
) -> pd.DataFrame:
    """`sweeps.anytime_runs` with both axes and the runs' `agent` (repeated measures per run).

    Args:
        trajectory: The trajectory table.
        runs: The runs table (config_id, agent, budget_s).
        grid_s: The times, in seconds, increasing.

    Returns:
        Columns `config_id, agent, t_s, ratio, novelty, novelty_out` (NaN where not computed or
        not recorded).

    Raises:
        AnalysisError: As `sweeps.anytime_values`.
    """
    sw._columns(runs, ["config_id", "agent"], "runs")
    rows = sw.anytime_runs(trajectory, runs, grid_s)
    if "novelty_out" in trajectory:
        rows["novelty_out"] = sw.anytime_runs(
            on_axis(trajectory, "novelty_out"), runs, grid_s)["novelty"].to_numpy()
    else:
        rows["novelty_out"] = np.nan
    agents = runs.set_index("config_id")["agent"]
    rows.insert(1, "agent", rows["config_id"].map(agents))
    return rows


def trend_checks(stated: pd.DataFrame, data: pd.DataFrame, x: str, by: str = "agent", *,
                 unit: str = "config_id", alpha: float = 0.05) -> pd.DataFrame:
    """`sweeps.check_trends` per group (each agent, the baseline apart), on both novelty axes.

    The stated trend of N is tested on `novelty` (method) and again on `novelty_out` (outcome)
    where the data hold it. Units as `unit` (`config_id`: runs), NaN rows dropped by
    `sweeps.trend_holds` (`n` counts what was tested).

    Args:
        stated: The stated trends (quantity, trend, detail).
        data: The values (one row per unit and level), with `by`, `x` and the value columns.
        x: The column of the levels.
        by: The column whose groups are tested apart.
        unit: The column naming the unit of observation.
        alpha: The tests' significance level.

    Returns:
        `sweeps.check_trends`'s columns after `by` and `axis` (the column tested); with no data,
        one group "all" whose checks say "not enough data".

    Raises:
        AnalysisError: A column is missing, or as `sweeps.trend_holds`.
    """
    sw._columns(data, [by, x, unit, "ratio", "novelty"], "data")
    tables = []
    groups = list(data.groupby(by, sort=True)) or [("all", data)]  # none: "not enough data"
    for group, part in groups:
        axes = [({"gain": "ratio", "novelty": "novelty"}, "ratio / novelty")]
        if "novelty_out" in part:
            axes.append(({"novelty": "novelty_out"}, "novelty_out"))
        for columns, axis in axes:
            checks = sw.check_trends(stated, part, x, columns, unit=unit, alpha=alpha)
            checks.insert(0, "axis", [columns.get(q, axis) for q in checks["quantity"]])
            checks.insert(0, by, BASELINE_LABEL if group == BASELINE else group)
            tables.append(checks)
    return pd.concat(tables, ignore_index=True)


def _keys(runs: pd.DataFrame, pair_on: list[str]) -> pd.Index:
    return pd.MultiIndex.from_frame(runs[pair_on].astype(object)) if pair_on else pd.Index([])


def agent_vs_baseline(runs: pd.DataFrame, metrics: Sequence[str] | None = None,
                      pair_on: Sequence[str] = PAIR_ON, *,
                      confidence_level: float = DEFAULT_CONFIDENCE,
                      n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """Each agent against the baseline at a matched budget: `sweeps.paired_effect` per metric.

    An agent's runs pair with the baseline's runs of the same `pair_on` key (task, seed, budget
    and prior solution: a run from a prior never pairs with one from scratch); several runs on
    one key (an agent's temperatures, say) average into one value, so one key is one pair.
    `mean_diff` is agent − baseline (level_b − level_a). With its
    denominators per row: the runs attempted on each side at the keys both sides have
    (`runs_agent`, `runs_baseline`), of them valid (`valid_*`) and with the metric known
    (`known_*`).

    NaN (N not computed, N_out not recorded): left out before pairing by `paired_effect`; a key
    with no known value on a side is no pair. Invalid runs count with the paper's imputation
    (ratio −1, N 0). An agent with no pair gets one row, `n_pairs` 0 and a `note` saying why.

    Args:
        runs: The runs table (agent, valid, the metrics and the `pair_on` columns).
        metrics: The metrics compared (default: ratio, novelty and novelty_out, those present).
        pair_on: The columns that match runs.
        confidence_level: The intervals' confidence level.
        n_resamples: The number of bootstrap resamples.
        rng: A seed or a numpy Generator.

    Returns:
        Columns `VERSUS_COLUMNS`: per agent and metric, one row per task and one for all tasks.

    Raises:
        AnalysisError: A column is missing (a metric named but absent included), or a setting is
            out of range.
    """
    keys = list(pair_on)
    if "prior_solution" in keys:  # from scratch is a start of its own: None pairs with None
        start = runs["prior_solution"] if "prior_solution" in runs else pd.Series(None, runs.index)
        runs = runs.assign(prior_solution=start.fillna("none").astype(str))
    sw._columns(runs, ["agent", "valid", *keys], "runs")
    if metrics is None:
        metrics = [m for m in DEFAULT_METRICS if m in runs]
    sw._columns(runs, list(metrics), "runs")
    check_settings(confidence_level=confidence_level, n_resamples=n_resamples)
    base = runs[is_baseline(runs)]
    agents = sorted(str(a) for a in runs["agent"].dropna().unique() if a != BASELINE)
    rows: list[dict[str, Any]] = []
    for agent in agents:
        mine = runs[runs["agent"] == agent]
        shared = _keys(mine, keys).intersection(_keys(base, keys))
        at_a = mine[_keys(mine, keys).isin(shared)] if len(shared) else mine.iloc[:0]
        at_b = base[_keys(base, keys).isin(shared)] if len(shared) else base.iloc[:0]
        for metric in metrics:
            try:
                effect = sw.paired_effect(
                    pd.concat([at_a, at_b]), "agent", metric, keys, levels=(BASELINE, agent),
                    confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)
                note = ""
            except sw.AnalysisError as error:
                why = ("the sweep has no baseline runs" if base.empty else
                       f"no baseline run shares a {'/'.join(keys)} with its runs"
                       if not len(shared) else str(error))
                effect = pd.DataFrame([{"task": "all", "level_a": BASELINE, "level_b": agent,
                                        "n_pairs": 0}])
                note = f"no pairs: {why}"
            for row in effect.to_dict("records"):
                task = row["task"]
                a = at_a if task == "all" or "task" not in keys else at_a[at_a["task"] == task]
                b = at_b if task == "all" or "task" not in keys else at_b[at_b["task"] == task]
                rows.append({**row, "agent": agent, "metric": metric, "note": note,
                             "runs_agent": len(a), "valid_agent": int(a["valid"].fillna(False)
                                                                      .astype(bool).sum()),
                             "known_agent": int(a[metric].notna().sum()),
                             "runs_baseline": len(b), "valid_baseline": int(
                                 b["valid"].fillna(False).astype(bool).sum()),
                             "known_baseline": int(b[metric].notna().sum())})
    return pd.DataFrame(rows, columns=VERSUS_COLUMNS)


# a table's column as an axis reads it (never a raw column name such as "t_s")
AXIS_LABELS = {"t_s": "seconds since the start", "budget_s": "time budget (s)",
               "temperature": "sampling temperature", "agent": "agent", "backbone": "backbone",
               "prior_solution": "prior solution", "innovation_prompt": "innovation prompt",
               "seed": "seed"}


def _group_colours(groups: Sequence[Any]) -> dict[Any, Any]:
    return colours(groups)  # each agent's own colour, the baseline's black, in every figure


def novelty_axes_plot(frame: pd.DataFrame, x: str, by: str | None = None, *,
                      y: Sequence[str] = ("novelty", "novelty_out"), kind: str = "points",
                      title: str = "Both novelty axes") -> Figure:
    """Plot the method axis (N) beside the outcome axis (N_out), one colour per group.

    NaN (not computed, or N_out not recorded in these tables): not drawn, never at 0; each panel
    says how many values it left out, or that its axis is absent from the table. The baseline's
    group ("baseline (classical search)") is drawn in black.

    Args:
        frame: The values: `x`, `by` and the two `y` columns (one may be absent).
        x: The column on the horizontal axis.
        by: The column whose groups get a colour each (None: one group).
        y: The method and outcome columns (e.g. `mean_novelty`, `mean_novelty_out` of curves).
        kind: "points" (one marker per row, categorical or numeric x) or "lines" (one line per
            group along a numeric x).
        title: The figure's title.

    Returns:
        The figure.

    Raises:
        AnalysisError: `kind` is neither "points" nor "lines", or `x` or `by` is missing.
    """
    if kind not in ("points", "lines"):
        raise sw.AnalysisError(f"kind must be 'points' or 'lines', got {kind!r}")
    sw._columns(frame, [x, *([by] if by else [])], "frame")
    sns.set_theme(style="whitegrid", context="paper")
    fig, panels = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    groups = ["all"] if by is None else list(dict.fromkeys(frame[by].astype(str)))
    colours = _group_colours(groups)
    categorical = kind == "points" and not pd.api.types.is_numeric_dtype(frame[x])
    order = list(dict.fromkeys(frame[x].astype(str))) if categorical else []
    for ax, column, name in zip(panels, y, NOVELTY_AXES.values(), strict=True):
        ax.set_ylim(-2, NOVELTY_SCALE + 2)
        ax.set_xlabel(AXIS_LABELS.get(x, x.replace("_", " ")))
        ax.set_ylabel(f"{name}, 0-100")
        if column not in frame:
            ax.text(0.5, 0.5, f"{column} is not in these tables\n(recorded by runs scored with "
                    "outcome novelty)", ha="center", va="center", transform=ax.transAxes,
                    fontsize=8, color="grey")
            continue
        missing = int(frame[column].isna().sum())
        for group in groups:
            part = frame if by is None else frame[frame[by].astype(str) == group]
            part = part[part[column].notna()]
            if part.empty:
                continue
            xs = (part[x].astype(str).map(order.index) if categorical else part[x])
            if kind == "lines":
                part = part.assign(_x=xs).sort_values("_x")
                ax.plot(part["_x"], part[column], color=colours[group], label=group)
            else:
                jitter = (np.random.default_rng(0).uniform(-0.12, 0.12, len(part))
                          if categorical else 0.0)
                ax.plot(xs + jitter, part[column], "o", color=colours[group], alpha=0.7,
                        label=group)
        if categorical:
            ax.set_xticks(range(len(order)), order, rotation=20, ha="right", fontsize=7)
        if missing:
            ax.text(0.99, 0.01, f"{missing} not computed (NaN): not drawn",
                    transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="grey")
    handles, labels = panels[0].get_legend_handles_labels()
    if not handles:
        handles, labels = panels[1].get_legend_handles_labels()
    if handles:
        unique = dict(zip(labels, handles, strict=True))
        panels[0].legend(unique.values(), unique.keys(), fontsize=7, title=by)
    fig.suptitle(title)
    fig.tight_layout()
    return fig
