"""Views of one run's trace (the DataFrame of innolab.traces.load): steps, scores, AIDE's tree."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

# pyplot is imported by the plotting functions only: the run notebook starts faster without it
if TYPE_CHECKING:
    from matplotlib.figure import Figure


def events_of(trace: pd.DataFrame, *kinds: str) -> pd.DataFrame:
    """The rows of a trace's DataFrame whose events are of the given types, in order.

    Args:
        trace: the DataFrame of `innolab.traces.load`.
        *kinds: event types, e.g. "node".

    Returns:
        The matching rows.
    """
    return trace[trace["type"].isin(kinds)]


def steps_table(trace: pd.DataFrame) -> pd.DataFrame:
    """One row per step: tool calls, failed results, LLM calls (and cache hits), seconds."""
    if trace.empty:
        return pd.DataFrame(columns=["step", "tool_calls", "failed", "llm_calls", "cache_hits"])
    steps = trace[trace["step"].notna()].copy()
    steps["step"] = steps["step"].astype(int)
    rows = []
    for step, group in steps.groupby("step"):
        results, llm = events_of(group, "tool_result"), events_of(group, "llm_call")
        cached = llm["cached"].fillna(False).astype(bool).sum() if "cached" in llm else 0
        rows.append({"step": step, "tool_calls": len(events_of(group, "tool_call")),
                     "failed": int((~results["ok"].astype(bool)).sum()) if len(results) else 0,
                     "llm_calls": len(llm), "cache_hits": int(cached),
                     "tools": ", ".join(results["tool"].astype(str)) if len(results) else ""})
    return pd.DataFrame(rows)


# the verdict and score columns of each event type that carries a validator's score
SCORED = {"validation": ("valid", "score"), "submission": ("dev_valid", "dev_score")}


def score_over_time(trace: pd.DataFrame) -> pd.DataFrame:
    """The validator's score of each valid submission and validation.

    With its time since the start.
    """
    start = trace["time"].min()
    rows = []
    for _, event in events_of(trace, *SCORED).iterrows():
        kind = event["type"]
        valid, score = SCORED[kind]
        if bool(event.get(valid)):
            rows.append({"seconds": (event["time"] - start).total_seconds(), "step": event["step"],
                         "kind": kind, "score": event.get(score)})
    return pd.DataFrame(rows, columns=["seconds", "step", "kind", "score"])


def plot_score_over_time(scores: pd.DataFrame, v_star: float | None = None) -> Figure:
    """Plot a run's validator scores against the seconds since its start.

    Args:
        scores: the table `score_over_time` returns (seconds, step, kind, score).
        v_star: V*, drawn as a dashed line where given.

    Returns:
        The figure.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for kind, group in scores.groupby("kind"):
        ax.plot(group["seconds"], group["score"], "o-" if kind == "submission" else ".", label=kind)
    if v_star is not None:
        ax.axhline(v_star, color="grey", ls="--", lw=0.8, label="V*")
    ax.set_xlabel("seconds since the start")
    ax.set_ylabel("validator score")
    ax.set_title("Score over time" if len(scores) else "Score over time (no valid candidate)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def aide_tree(trace: pd.DataFrame) -> pd.DataFrame:
    """AIDE's journal from its node events: id, parent, stage, valid, metric."""
    nodes = events_of(trace, "node")
    columns = ["id", "parent", "stage", "valid", "metric", "debug_depth"]
    if nodes.empty:
        return pd.DataFrame(columns=columns)
    return nodes[columns].reset_index(drop=True)


def plot_aide_tree(nodes: pd.DataFrame) -> Figure:
    """Nodes by depth (drafts on top), edges to parents; green valid, red buggy."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    depth: dict[int, int] = {}
    for node in nodes.itertuples():
        depth[int(node.id)] = 0 if pd.isna(node.parent) else depth.get(int(node.parent), 0) + 1
    position = {int(n.id): (i, -depth[int(n.id)]) for i, n in enumerate(nodes.itertuples())}
    for node in nodes.itertuples():
        x, y = position[int(node.id)]
        if not pd.isna(node.parent):
            px, py = position[int(node.parent)]
            ax.plot([px, x], [py, y], color="grey", lw=0.8)
        ax.scatter([x], [y], color="#2a9d8f" if node.valid else "#e76f51", s=80, zorder=3)
        label = f"{node.stage} {int(node.id)}" + (f"\n{node.metric:.4g}" if node.valid else "")
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(0, 8), ha="center",
                    fontsize=7)
    ax.set_axis_off()
    ax.set_title("AIDE's solution tree (green: valid, red: buggy)")
    fig.tight_layout()
    return fig


def describe_outcome(trace: pd.DataFrame, reason: str) -> str:
    """A plain sentence on how a run ended, from its last score event."""
    score = events_of(trace, "score").iloc[-1]
    if score["valid"]:
        return (f"The run ended ({reason}) with a valid submission: score {score['score']!r}, "
                f"V* {score['v_star']!r}, ratio {score['ratio']:.4f}.")
    errors = "; ".join(score["errors"] or [])[:300]
    return (f"The run ended ({reason}) without a valid submission, so V = 0 and ratio = -1 "
            f"(errors: {errors}). With the embedded 135M model this is expected: it exercises the "
            "whole pipeline but rarely writes working code.")
