"""Figures of the innovation metrics and the main results (matplotlib/seaborn; each returns its Figure)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

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


def gain_novelty_plane(
    points: pd.DataFrame,
    gain_tolerance: float = DEFAULT_GAIN_TOLERANCE,
    novelty_threshold: float = DEFAULT_NOVELTY_THRESHOLD,
    ratio_range: tuple[float, float] = (-1.05, 0.5),
) -> Figure:
    """The (ratio, N) plane with the four innovation regions shaded; `points` has ratio, novelty, label."""
    fig, ax = plt.subplots(figsize=(6, 5.2))
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
    ax.scatter(points["ratio"], points["novelty"], color="black", zorder=3)
    for _, row in points.iterrows():
        ax.annotate(str(row.get("label", "")), (row["ratio"], row["novelty"]), textcoords="offset points",
                    xytext=(4, 4), fontsize=8)
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, NOVELTY_SCALE)
    ax.set_xlabel("ratio G/|V*| (0 = best known; > 0 beats it)")
    ax.set_ylabel("novelty N (0-100)")
    ax.set_title("Innovation regions")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, fontsize=7)
    fig.tight_layout()
    return fig


def complex_plane(points: pd.DataFrame, max_angle: float = DEFAULT_MAX_ANGLE) -> Figure:
    """Solutions as z = (1 + ratio)·exp(i·N/100·max_angle); the unit arc is the best known performance."""
    fig, ax = plt.subplots(figsize=(5, 5))
    theta = np.linspace(0, max_angle, 100)
    ax.plot(np.cos(theta), np.sin(theta), color="grey", ls="--", lw=0.8, label="|z| = 1: equals V*")
    radius = 1.0
    for _, row in points.iterrows():
        z = to_complex(row["ratio"], row["novelty"], max_angle)
        radius = max(radius, abs(z))
        ax.plot([0, z.real], [0, z.imag], color="#264653", lw=1)
        ax.scatter([z.real], [z.imag], color="#264653", zorder=3)
        ax.annotate(str(row.get("label", "")), (z.real, z.imag), textcoords="offset points", xytext=(4, 4),
                    fontsize=8)
    lim = 1.1 * radius
    ax.set_xlim(min(-0.05, lim * math.cos(max_angle)), lim)
    ax.set_ylim(-0.05, lim)
    ax.set_aspect("equal")
    ax.set_xlabel("Re z")
    ax.set_ylabel("Im z")
    ax.set_title("Complex plane: |z| = 1 + ratio, arg z ∝ N")
    ax.legend(loc="upper right", fontsize=7)
    fig.tight_layout()
    return fig


def table2_heatmaps(filled: pd.DataFrame) -> Figure:
    """Table 2 as two heatmaps (ratio, novelty): failed cells blank and marked '/', assumed cells marked '*'."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharey=True)
    tasks = list(dict.fromkeys(filled["task"]))
    frameworks = list(dict.fromkeys(filled["framework"]))
    for ax, metric, cmap, vmin, vmax in ((axes[0], "ratio", "RdYlGn", -1, 0), (axes[1], "novelty", "viridis", 0, 100)):
        values = filled.pivot(index="task", columns="framework", values=metric).loc[tasks, frameworks]
        valid = filled.pivot(index="task", columns="framework", values="valid").loc[tasks, frameworks]
        assumed = filled.pivot(index="task", columns="framework", values="assumed").loc[tasks, frameworks]
        shown = values.where(valid.astype(bool))
        labels = shown.map(lambda x: "" if pd.isna(x) else f"{x:.3f}" if abs(x) < 0.01 else f"{x:.2f}")
        labels = labels.where(~assumed.astype(bool), labels + "*")
        sns.heatmap(shown.astype(float), ax=ax, cmap=cmap, vmin=vmin, vmax=vmax, annot=labels, fmt="",
                    cbar_kws={"label": metric}, linewidths=0.5, linecolor="white")
        for i, task in enumerate(tasks):  # seaborn leaves masked cells unannotated: mark failures by hand
            for j, framework in enumerate(frameworks):
                if not bool(valid.at[task, framework]):
                    ax.text(j + 0.5, i + 0.5, "/", ha="center", va="center", color="grey")
        ax.set_title(f"Table 2: {metric}")
        ax.set_xlabel("")
        ax.set_ylabel("")
    fig.text(0.01, 0.01, "'/' no valid submission in 3 runs;  '*' value not printed by the paper, filled by assumption",
             fontsize=8)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def interval_plot(intervals: pd.DataFrame) -> Figure:
    """Each framework's mean with its bootstrap interval, one panel per metric."""
    metrics = list(dict.fromkeys(intervals["metric"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.5))
    axes = np.atleast_1d(axes)
    for ax, metric in zip(axes, metrics, strict=True):
        part = intervals[intervals["metric"] == metric].reset_index(drop=True)
        y = np.arange(len(part))
        ax.errorbar(part["mean"], y, xerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
                    fmt="o", capsize=4, color="#264653")
        ax.set_yticks(y, part["framework"])
        ax.set_title(f"mean {metric}, 95% bootstrap CI over tasks")
        ax.invert_yaxis()
    fig.tight_layout()
    return fig
