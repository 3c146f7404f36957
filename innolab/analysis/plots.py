"""Figures of the innovation metrics and main results (matplotlib, seaborn), each a Figure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from innolab.analysis.bootstrap import MIN_UNITS
from innolab.analysis.colours import AGENT_COLOURS, agent_of, colours
from innolab.metrics import (
    DEFAULT_GAIN_TOLERANCE,
    DEFAULT_MAX_ANGLE,
    DEFAULT_NOVELTY_THRESHOLD,
    NOVELTY_SCALE,
    Region,
    to_complex,
)

REGION_COLOURS = {
    Region.BREAKTHROUGH: "#2a9d8f",
    Region.PERFORMANCE: "#8ab17d",
    Region.CONCEPTUAL: "#e9c46a",
    Region.UNSUCCESSFUL: "#e76f51",
}


def _drawable(points: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The points whose ratio and N are known, and how many were left out (N not computed)."""
    known = points["ratio"].notna() & points["novelty"].notna()
    return points[known], int((~known).sum())


def _left_out(ax, count: int) -> None:
    """Say on the axes how many solutions are not drawn because their N was not computed."""
    if count:
        ax.text(0.99, 0.01, f"{count} with N not computed: not drawn", transform=ax.transAxes,
                ha="right", va="bottom", fontsize=7, color="grey")


def _clusters(ax, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
              radius_px: float = 6.0) -> list[list[int]]:
    """Points with one label that lie within `radius_px` of each other on the axes, as groups.

    Args:
        ax: The axes (their limits set).
        xs: The points' x.
        ys: Their y.
        labels: Their labels.
        radius_px: How close, in display pixels, two points of one label count as one place.

    Returns:
        The groups of point indices, in the points' order.
    """
    where = ax.transData.transform(np.column_stack([xs, ys])) if len(xs) else np.empty((0, 2))
    groups: list[list[int]] = []
    for i in range(len(xs)):
        for group in groups:
            j = group[0]
            if labels[j] == labels[i] and np.hypot(*(where[i] - where[j])) <= radius_px:
                group.append(i)
                break
        else:
            groups.append([i])
    return groups


def annotate_apart(ax, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
                   fontsize: float = 8) -> None:
    """Label points so that no two labels overlap: a label that would is moved up, with a leader.

    Call it once the axes' limits are set (positions are placed in display space).

    Args:
        ax: The axes.
        xs: The points' x.
        ys: Their y.
        labels: Their labels ("" for none).
        fontsize: The labels' size in points.
    """
    if not len(xs):
        return
    scale = ax.figure.dpi / 72.0
    where = ax.transData.transform(np.column_stack([xs, ys]))
    height = fontsize * 1.35 * scale
    placed: list[tuple[float, float, float, float]] = []
    for i in sorted(range(len(xs)), key=lambda k: (where[k][1], where[k][0])):
        if not labels[i]:
            continue
        width = len(labels[i]) * fontsize * 0.55 * scale
        x0 = where[i][0] + 4 * scale
        dy = 4 * scale
        while any(x0 < bx1 and bx0 < x0 + width and where[i][1] + dy < by1
                  and by0 < where[i][1] + dy + height for bx0, by0, bx1, by1 in placed):
            dy += height
        placed.append((x0, where[i][1] + dy, x0 + width, where[i][1] + dy + height))
        moved = dy > 4 * scale + 1e-9
        ax.annotate(labels[i], (xs[i], ys[i]), textcoords="offset points",
                    xytext=(4, dy / scale), fontsize=fontsize,
                    arrowprops={"arrowstyle": "-", "color": "grey", "lw": 0.6} if moved else None)


def gain_novelty_plane(
    points: pd.DataFrame,
    gain_tolerance: float = DEFAULT_GAIN_TOLERANCE,
    novelty_threshold: float = DEFAULT_NOVELTY_THRESHOLD,
    ratio_range: tuple[float, float] = (-1.05, 0.5),
) -> Figure:
    """Plot the (ratio, N) plane with the four innovation regions shaded.

    NaN novelty: a solution whose N was not computed has no place on the plane: it is not drawn
    (never at N = 0), and the figure says how many were left out.

    Args:
        points: The solutions: ratio, novelty and an optional label.
        gain_tolerance: The ratio within which a solution ties with the best known.
        novelty_threshold: The N from which a solution counts as novel.
        ratio_range: The ratio axis's least range (widened to fit the points).

    Returns:
        The figure.
    """
    fig, ax = plt.subplots(figsize=(6, 5.2))
    points, left_out = _drawable(points)
    lo, hi = ratio_range
    hi = max(hi, float(points["ratio"].max()) + 0.1) if len(points) else hi
    lo = min(lo, float(points["ratio"].min()) - 0.05) if len(points) else lo
    t, n = gain_tolerance, novelty_threshold
    patches = [
        (Region.BREAKTHROUGH, (t, n), hi - t, NOVELTY_SCALE - n),
        (Region.PERFORMANCE, (t, 0), hi - t, n),
        (Region.CONCEPTUAL, (-t, n), 2 * t, NOVELTY_SCALE - n),
        (Region.UNSUCCESSFUL, (lo, 0), -t - lo, NOVELTY_SCALE),
        (Region.UNSUCCESSFUL, (-t, 0), 2 * t, n),
    ]
    seen = set()
    for region, xy, width, height in patches:
        ax.add_patch(plt.Rectangle(xy, width, height, color=REGION_COLOURS[region], alpha=0.25,
                                   label=None if region in seen else region.value))
        seen.add(region)
    labels = [str(v) for v in points["label"]] if "label" in points else [""] * len(points)
    shades = colours(labels)
    ax.scatter(points["ratio"], points["novelty"], zorder=3, alpha=0.8,
               color=[shades[label] if agent_of(label) else "black" for label in labels])
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, NOVELTY_SCALE)
    # points of one label in one place are counted, not stacked: one label "name (5 runs)"
    xs, ys = points["ratio"].tolist(), points["novelty"].tolist()
    groups = _clusters(ax, xs, ys, labels)
    annotate_apart(ax, [xs[g[0]] for g in groups], [ys[g[0]] for g in groups],
                   [labels[g[0]] + (f" ({len(g)} at this point)" if len(g) > 1 else "")
                    for g in groups])
    ax.set_xlabel("ratio G/|V*| (0 = best known; > 0 beats it)")
    ax.set_ylabel("novelty N (0-100)")
    ax.set_title("Innovation regions")
    _left_out(ax, left_out)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, fontsize=7)
    fig.tight_layout()
    return fig


def complex_plane(points: pd.DataFrame, max_angle: float = DEFAULT_MAX_ANGLE) -> Figure:
    """Plot solutions as z = (1 + ratio)·exp(i·N/100·max_angle); the unit arc is the best known.

    NaN novelty: a solution whose N was not computed has no angle: it is not drawn (never at
    N = 0), and the figure says how many were left out.

    Args:
        points: The solutions: ratio, novelty and an optional label.
        max_angle: The angle of N = 100, in radians.

    Returns:
        The figure.
    """
    fig, ax = plt.subplots(figsize=(5, 5))
    points, left_out = _drawable(points)
    theta = np.linspace(0, max_angle, 100)
    ax.plot(np.cos(theta), np.sin(theta), color="grey", ls="--", lw=0.8,
            label="|z| = 1: equals V*")
    radius = 1.0
    zs = [to_complex(row["ratio"], row["novelty"], max_angle) for _, row in points.iterrows()]
    for z in zs:
        radius = max(radius, abs(z))
        ax.plot([0, z.real], [0, z.imag], color="#264653", lw=1)
        ax.scatter([z.real], [z.imag], color="#264653", zorder=3)
    lim = 1.1 * radius
    ax.set_xlim(min(-0.05, lim * math.cos(max_angle)), lim * 1.25)
    ax.set_ylim(-0.05, lim)
    ax.set_aspect("equal")
    labels = [str(v) for v in points["label"]] if "label" in points else [""] * len(points)
    annotate_apart(ax, [z.real for z in zs], [z.imag for z in zs], labels)
    ax.set_xlabel("Re z")
    ax.set_ylabel("Im z")
    ax.set_title("Complex plane: |z| = 1 + ratio, arg z ∝ N")
    _left_out(ax, left_out)
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    return fig


def table2_heatmaps(filled: pd.DataFrame) -> Figure:
    """Plot Table 2 as two heatmaps (ratio, novelty).

    Failed cells are left blank and marked '/', assumed cells are marked '*'. NaN novelty: a
    valid cell whose N was not computed is left blank and marked 'n/c' (never coloured as 0).

    Args:
        filled: Table 2 as `main_results.fill_unreported` returns it (task, framework, ratio,
            novelty, valid, assumed).

    Returns:
        The figure.
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharey=True)
    not_computed = bool((filled["valid"].astype(bool) & filled["novelty"].isna()).any())
    tasks = list(dict.fromkeys(filled["task"]))
    frameworks = list(dict.fromkeys(filled["framework"]))
    for ax, metric, cmap, vmin, vmax in ((axes[0], "ratio", "RdYlGn", -1, 0),
                                         (axes[1], "novelty", "viridis", 0, 100)):
        values = filled.pivot(index="task", columns="framework", values=metric).loc[
            tasks, frameworks]
        valid = filled.pivot(index="task", columns="framework", values="valid").loc[
            tasks, frameworks]
        assumed = filled.pivot(index="task", columns="framework", values="assumed").loc[
            tasks, frameworks]
        shown = values.where(valid.astype(bool))
        labels = shown.map(
            lambda x: "" if pd.isna(x) else f"{x:.3f}" if abs(x) < 0.01 else f"{x:.2f}")
        labels = labels.where(~assumed.astype(bool), labels + "*")
        sns.heatmap(shown.astype(float), ax=ax, cmap=cmap, vmin=vmin, vmax=vmax, annot=labels,
                    fmt="", cbar_kws={"label": metric}, linewidths=0.5, linecolor="white")
        # seaborn leaves masked cells unannotated: mark failures by hand
        for i, task in enumerate(tasks):
            for j, framework in enumerate(frameworks):
                if not bool(valid.at[task, framework]):
                    ax.text(j + 0.5, i + 0.5, "/", ha="center", va="center", color="grey")
                elif metric == "novelty" and pd.isna(values.at[task, framework]):
                    ax.text(j + 0.5, i + 0.5, "n/c", ha="center", va="center", color="grey",
                            fontsize=7)
        ax.set_title(f"Table 2: {metric}")
        ax.set_xlabel("")
        ax.set_ylabel("")
    fig.text(0.01, 0.01, "'/' no valid submission in 3 runs;  "
             "'*' value not printed by the paper, filled by assumption"
             + ("; 'n/c' valid, N not computed" if not_computed else ""),
             fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def interval_plot(intervals: pd.DataFrame) -> Figure:
    """Plot each framework's mean with its bootstrap interval, one panel per metric.

    NaN novelty: the intervals leave out N not computed (`framework_intervals`); a NaN mean or
    bound (no task counted) is not drawn.

    Args:
        intervals: framework, metric, mean, ci_low, ci_high (see
            `main_results.framework_intervals`).

    Returns:
        The figure.
    """
    metrics = list(dict.fromkeys(intervals["metric"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.5))
    axes = np.atleast_1d(axes)
    for ax, metric in zip(axes, metrics, strict=True):
        part = intervals[intervals["metric"] == metric].reset_index(drop=True)
        y = np.arange(len(part))
        ax.errorbar(part["mean"], y,
                    xerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                    fmt="o", capsize=4, color="#264653")
        ax.set_yticks(y, part["framework"])
        ax.set_title(f"mean {metric}, 95% bootstrap CI over tasks")
        ax.invert_yaxis()
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------- sweep analyses


def save_figure(fig: Figure, folder: str | Path, name: str) -> list[Path]:
    """Write a figure as PNG and PDF.

    Args:
        fig: The figure.
        folder: The folder (created).
        name: The files' name without suffix.

    Returns:
        The PNG's and the PDF's paths.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}.png", folder / f"{name}.pdf"]
    fig.savefig(paths[0], dpi=150, bbox_inches="tight")
    fig.savefig(paths[1], bbox_inches="tight", metadata={"CreationDate": None})
    return paths


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9,
            color="grey", wrap=True)


def _ratio_and_novelty_axes(
    left, right, xlabel: str, ratio_label: str, novelty_label: str
) -> None:
    """A ratio panel (0 = the best known, dashed) beside an N panel on the 0-100 scale, one x."""
    left.axhline(0, color="grey", ls="--", lw=0.8)
    left.set_xlabel(xlabel)
    left.set_ylabel(ratio_label)
    right.set_xlabel(xlabel)
    right.set_ylabel(novelty_label)
    right.set_ylim(0, NOVELTY_SCALE)


def time_budget_curves(
    curves: pd.DataFrame, by: str | None = None, title: str = "Time budget (Fig. 6a)"
) -> Figure:
    """Plot anytime curves: mean best-so-far ratio with its bootstrap band, and mean N.

    A curve with fewer than `bootstrap.MIN_UNITS` runs at a time has no band there (its interval
    is NaN); the panel says so in its title.

    NaN novelty: `mean_novelty` already leaves out runs whose N was not computed (`n_novelty`
    counts the rest); a time with none is a gap in the N line, never 0.

    Args:
        curves: The curves from `sweeps.anytime` (t_s, mean_ratio, ci_low, ci_high,
            mean_novelty).
        by: A column that splits the curves into groups, one line each; None for one group.
        title: The figure's title.

    Returns:
        The figure.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    groups = [("all", curves)] if by is None else list(curves.groupby(by, sort=True))
    shades = colours(label for label, _ in groups)  # an agent's colour is its own in every figure
    for label, part in groups:
        colour = shades[label]
        left.plot(part["t_s"], part["mean_ratio"], color=colour, label=str(label))
        left.fill_between(part["t_s"], part["ci_low"], part["ci_high"], color=colour, alpha=0.2,
                          lw=0)
        right.plot(part["t_s"], part["mean_novelty"], color=colour, label=str(label))
    if curves.empty:
        _empty(left, "no runs")
    elif curves["ci_low"].isna().any():  # the bootstrap gives no band below MIN_UNITS runs
        left.set_title(f"band: bootstrap interval over runs; none where fewer than "
                       f"{MIN_UNITS} runs", fontsize=8, color="0.35")
    _ratio_and_novelty_axes(left, right, "time budget t (s)",
                            "mean ratio of the best valid candidate by t\n(-1 while none)",
                            "mean N of that candidate")
    left.legend(fontsize=8, title=by)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def backbone_bars(effect: pd.DataFrame, factor: str, paper: pd.DataFrame | None = None,
                  reference: float | None = None,
                  metric_label: str = "sum of radii (best of k)") -> Figure:
    """Plot the best-of-k value per level of a factor beside the paper's values.

    NaN novelty (or any NaN metric): `factor_effect` leaves NaN values out; a level with none has
    a NaN mean and gets no bar (never a bar at 0).

    Args:
        effect: The effect from `sweeps.factor_effect` (rows of kind best_of_k are plotted).
        factor: The factor's column.
        paper: The paper's values (`fig6_backbone.csv`: framework, backbone, sum_of_radii), or
            None.
        reference: A reference line (AlphaEvolve's 2.65 in Fig. 6b), or None.
        metric_label: The value axis's label.

    Returns:
        The figure.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ours = effect[effect["kind"] == "best_of_k"]
    labels = [f"this sweep: {v}" for v in ours[factor]]
    values = list(ours["mean"])
    errors = [list((ours["mean"] - ours["ci_low"]).fillna(0)),
              list((ours["ci_high"] - ours["mean"]).fillna(0))]
    # the baseline's level in its own colour, as in every figure
    colours = [AGENT_COLOURS["baseline"] if agent_of(v) == "baseline" else "#264653"
               for v in ours[factor]]
    if paper is not None and len(paper):
        published = paper[paper["framework"].notna()]
        labels += [f"paper: {b}" for b in published["backbone"]]
        values += list(published["sum_of_radii"])
        errors[0] += [0.0] * len(published)
        errors[1] += [0.0] * len(published)
        colours += ["#e9c46a"] * len(published)
    y = np.arange(len(labels))
    ax.barh(y, values, xerr=errors, color=colours, capsize=3)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    if reference is not None:
        ax.axvline(reference, color="#e76f51", ls="--", lw=1, label=f"AlphaEvolve {reference:g}")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_xlabel(metric_label)
    ax.set_title("Backbone (Fig. 6b): this sweep beside the paper")
    fig.tight_layout()
    return fig


def temperature_panel(table: pd.DataFrame, factor: str, best_level: object | None,
                      paper_best: tuple[float, float] | None = (0.5, 0.75)) -> Figure:
    """Plot mean ratio and mean N per level, the best trade-off level marked.

    NaN novelty: `mean_novelty` already leaves out runs whose N was not computed (`n_novelty`);
    a level with none is a gap in the N line, never 0.

    Args:
        table: The table from `sweeps.trade_off` (the factor, mean_ratio, mean_novelty).
        factor: The factor's column.
        best_level: The best trade-off level, marked; None marks none.
        paper_best: The range the paper names as best (Fig. 6c: T = 0.5-0.75), shaded; None
            shades none.

    Returns:
        The figure.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, left = plt.subplots(figsize=(6.5, 3.8))
    right = left.twinx()
    left.plot(table[factor], table["mean_ratio"], "o-", color="#264653",
              label="mean ratio (G/|V*|)")
    right.plot(table[factor], table["mean_novelty"], "s--", color="#e76f51", label="mean N")
    if paper_best is not None:
        left.axvspan(*paper_best, color="#e9c46a", alpha=0.25,
                     label=f"paper's best T {paper_best[0]}-{paper_best[1]}")
    if best_level is not None:
        left.axvline(float(best_level), color="#2a9d8f", lw=1.5,
                     label=f"best trade-off here: {best_level}")
    right.grid(False)
    left.set_xlabel(factor)
    left.set_ylabel("mean ratio")
    right.set_ylabel("mean N")
    right.set_ylim(0, NOVELTY_SCALE)
    handles = left.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    left.legend(handles[0] + more[0], handles[1] + more[1], fontsize=7, loc="upper center",
                bbox_to_anchor=(0.5, -0.18), ncol=2)
    left.set_title("Temperature (Fig. 6c): gain, novelty and the trade-off")
    fig.tight_layout()
    return fig


def prior_trajectory_plot(rows: pd.DataFrame) -> Figure:
    """Plot each improving candidate of the runs from a prior start, over time (Fig. 5).

    NaN novelty: a candidate whose N was not computed is a gap in its run's N line, never 0.

    Args:
        rows: The rows from `sweeps.prior_trajectory` (config_id, t_s, ratio, novelty against
            the known solutions, novelty_vs_prior).

    Returns:
        The figure.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    # each run in its agent's colour (as in every figure), runs of one agent told apart by style
    agents = rows["agent"].astype(str) if "agent" in rows else pd.Series("", index=rows.index)
    shades = colours(dict.fromkeys(agents))
    styles = ["-", "--", "-.", (0, (1, 1))]
    count: dict[str, int] = {}
    for run, part in rows.groupby("config_id", sort=True):
        agent = str(agents[part.index[0]])
        style = styles[count.get(agent, 0) % len(styles)]
        count[agent] = count.get(agent, 0) + 1
        colour = shades[agent]
        label = f"{agent} {run}".strip()
        left.plot(part["t_s"], part["ratio"], marker="o", ls=style, color=colour, label=label)
        right.plot(part["t_s"], part["novelty"], marker="o", ls=style, color=colour)
        right.plot(part["t_s"], part["novelty_vs_prior"], marker="x", ls=style, color=colour,
                   alpha=0.6)
    if rows.empty:
        _empty(left, "no improving candidate in a run from a prior")
    _ratio_and_novelty_axes(left, right, "seconds since the start", "ratio (hidden evaluator)",
                            "N: o vs known solutions, x vs the prior")
    if len(rows):
        left.legend(fontsize=7, title="run")
    fig.suptitle("From a prior solution (Fig. 5)")
    fig.tight_layout()
    return fig


def success_heatmap(rates: pd.DataFrame, index: str, columns: str) -> Figure:
    """Plot success rates as a heatmap annotated with their Wilson intervals.

    Args:
        rates: The rates from `sweeps.success_rates` by two columns (rate, ci_low, ci_high,
            successes, n).
        index: The column shown as rows.
        columns: The column shown as columns.

    Returns:
        The figure.
    """
    sns.set_theme(style="white", context="paper")
    table = rates.assign(**{index: rates[index].astype(str), columns: rates[columns].astype(str)})
    values = table.pivot(index=index, columns=columns, values="rate")
    notes = table.assign(note=[f"{r:.0%}\n[{lo:.0%}, {hi:.0%}]\n{s}/{n}" for r, lo, hi, s, n in zip(
        table["rate"], table["ci_low"], table["ci_high"], table["successes"], table["n"],
        strict=True)]
    ).pivot(index=index, columns=columns, values="note")
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * values.shape[1], 1.2 + 0.9 * values.shape[0]))
    sns.heatmap(values.astype(float), annot=notes.reindex_like(values), fmt="", cmap="YlGn",
                vmin=0, vmax=1, ax=ax,
                cbar_kws={"label": "share of runs with a valid submission"},
                annot_kws={"fontsize": 7})
    ax.set_xlabel(columns.replace("_", " "))  # a column's name as words, never "prior_solution"
    ax.set_ylabel(index.replace("_", " "))
    ax.set_title("Success rates (Table 6) with 95% Wilson intervals")
    fig.tight_layout()
    return fig


def paired_plot(
    pairs: pd.DataFrame, factor: str, metric: str, level_a: object, level_b: object
) -> Figure:
    """Plot paired runs at two levels of a factor, one line per pair.

    Table 7: without and with the innovation prompt.

    Args:
        pairs: One row per run, with `factor`, `metric` and a `pair` label.
        factor: The factor's column.
        metric: The metric's column.
        level_a: The first level (left).
        level_b: The second level (right).

    Returns:
        The figure (a note when no pair has runs at both levels).
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(4.5, 3.8))
    wide = pairs.pivot_table(index="pair", columns=factor, values=metric, aggfunc="mean")
    if level_a in wide.columns and level_b in wide.columns:
        # scalar keys: bool levels work
        both = pd.DataFrame({"a": wide[level_a], "b": wide[level_b]}).dropna()
        for a, b in zip(both["a"], both["b"], strict=True):
            ax.plot([0, 1], [a, b], "o-", color="#264653", alpha=0.6)
    else:
        _empty(ax, f"no pairs: the sweep has no runs at both levels of {factor}")
    ax.set_xticks([0, 1], [f"{factor} = {level_a}", f"{factor} = {level_b}"])
    ax.set_xlim(-0.3, 1.3)
    ax.set_ylabel(metric)
    ax.set_title(f"Paired runs: {metric}")
    fig.tight_layout()
    return fig


def chain_plot(chain: pd.DataFrame, paper: list[float] | None = None) -> Figure:
    """Plot EXP-Bench's conjunctive chain (M -> M·C·D -> M·C·D·I -> M·C·D·I·E) per agent and model.

    Args:
        chain: agent, model, step, percent.
        paper: The paper's chain (Fig. 6b: 20.6, 3.7, 0.4, 0.2 %), drawn dashed; or None.

    Returns:
        The figure.
    """
    sns.set_theme(style="whitegrid", context="paper")
    fig, ax = plt.subplots(figsize=(7, 3.8))
    steps = list(dict.fromkeys(chain["step"])) or ["M", "M·C·D", "M·C·D·I", "M·C·D·I·E"]
    for label, part in chain.groupby(["agent", "model"], sort=True):
        ax.plot(part["step"], part["percent"], "o-", label=" + ".join(label))
    if paper is not None:
        ax.plot(steps[:len(paper)], paper, "k--", lw=1, label="paper (Fig. 6b)")
    if chain.empty:
        _empty(ax, "no judged tasks")
    ax.set_ylabel("% of tasks")
    ax.set_ylim(0, 100)
    ax.set_title("EXP-Bench: the conjunctive chain")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
