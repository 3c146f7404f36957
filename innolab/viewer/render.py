"""HTML and SVG fragments of a run: timeline, best so far, AIDE's tree, a step's detail, totals.

Strings with nothing external, shared by the JupyterLab views and the self-contained export.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from innolab.traces import Node
from innolab.viewer.model import Exchanges, RunData, Step

COLOURS = {"model": "#4C72B0", "cached": "#A6BDDB", "tool_ok": "#55A868", "tool_failed": "#C44E52",
           "validation": "#8172B2", "submission": "#DD8452", "best": "#222222", "v_star": "#937860",
           "draft": "#4C72B0", "debug": "#C44E52", "improve": "#55A868"}
MAX_TEXT = 20_000


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """Escaped text; "://" written with an entity.

    So that no address in a run's content reads as a resource.
    """
    value = value if isinstance(value, str) else json.dumps(value, indent=1, default=str)
    if len(value) > limit:
        value = value[:limit] + f"\n... ({len(value) - limit} more characters)"
    return html.escape(value).replace("://", "&#58;//")


def number(value: Any, digits: int = 6) -> str:
    """A value as shown: a float to `digits` significant digits, None as "-", else its text.

    Args:
        value: the value.
        digits: the significant digits of a float.

    Returns:
        The text.
    """
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def missing(value: Any) -> bool:
    """None, NaN, pandas' NA or NaT, or an empty text: a value a table shows as "-"."""
    if isinstance(value, str):
        return value == ""
    return (value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA
            or value is pd.NaT)


SECONDS = {"wall_s", "budget_s", "model_s", "tools_s", "overhead_s", "t_s", "duration_s",
           "latency_s"}
FIXED = {"ratio": 3, "gain": 4, "novelty": 1, "ratio_raw": 3, "novelty_raw": 1}


def human(column: str, value: Any) -> str:
    """A table cell as a person reads it.

    Seconds to 0.1 s (120.00816665600007 -> "120.0 s"), ratio to 3 decimals, N to 1, money to 4,
    other decimals to 6 significant digits, yes/no, "-" for a missing value.
    """
    if missing(value):
        return "-"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int):
        return f"{value} s" if column in SECONDS else str(value)
    if isinstance(value, float):
        if column in SECONDS:
            return f"{value:.1f} s"
        if column == "cost_usd":
            return f"$ {value:.4f}"
        if column in FIXED:
            return f"{value:.{FIXED[column]}f}"
        return f"{value:.6g}"
    return str(value)


def arguments_text(arguments: dict[str, Any]) -> str:
    """A tool call's arguments as a reader wants them.

    Each text (code, command, content) as it is; a number to 6 significant digits (a model's
    `timeout: 17.99968635350001` reads 17.9997), for display only: the trace keeps it whole.
    """
    if not isinstance(arguments, dict):
        return text(shown_floats(arguments))
    return "\n".join(f"{text(k, 40)}: {text(shown_floats(v))}"
                     if not isinstance(v, str) or "\n" not in v
                     else f"{text(k, 40)}:\n{text(v)}" for k, v in arguments.items())


def shown_floats(value: Any, digits: int = 6) -> Any:
    """A value with each float in it rounded to `digits` significant digits, for display.

    In lists and mappings too; a rounded float's shortest text has at most that many digits.
    """
    if isinstance(value, float) and math.isfinite(value):
        return float(f"{value:.{digits}g}")
    if isinstance(value, list | tuple):
        return [shown_floats(v, digits) for v in value]
    if isinstance(value, dict):
        return {k: shown_floats(v, digits) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------- the timeline

LANES = ("steps", "model", "tools", "checks")


def timeline_svg(run: RunData, width: int = 1100) -> str:
    """The run on a time axis.

    Steps (alternating bands), model calls (latency), tool calls (duration, ok or failed),
    validations and submissions (marks); below it, the best-so-far dev score against V*.
    """
    end = max([run.totals["wall_s"], *(s.end_s for s in run.steps), 1e-9])
    left, right, lane_h = 70, 10, 18
    scale = (width - left - right) / end

    def x(t: float) -> float:
        return left + max(t, 0.0) * scale

    parts: list[str] = []
    for row, name in enumerate(LANES):
        y = 20 + row * (lane_h + 4)
        parts.append(f'<text x="4" y="{y + 13}" class="lane">{name}</text>')
    y_steps, y_model, y_tools, y_checks = (20 + row * (lane_h + 4) for row in range(4))
    for step in run.steps:
        fill = "#eeeeee" if step.index % 2 else "#dddddd"
        span = max((step.end_s - step.start_s) * scale, 0.8)
        parts.append(f'<rect x="{x(step.start_s):.1f}" y="{y_steps}" width="{span:.1f}" '
                     f'height="{lane_h}" fill="{fill}"><title>{text(step.label, 300)}</title>'
                     '</rect>')
        for call in step.model_calls:
            latency = float(call.get("latency_s") or 0.0)
            colour = COLOURS["cached"] if call.get("cached") else COLOURS["model"]
            tokens = int(call.get("prompt_tokens") or 0) + int(call.get("completion_tokens") or 0)
            purpose = text(call.get("purpose") or "model call", 80)
            parts.append(f'<rect x="{x(call["time_s"] - latency):.1f}" y="{y_model}" '
                         f'width="{max(latency * scale, 1.0):.1f}" height="{lane_h}" '
                         f'fill="{colour}"><title>step {step.index}: {purpose}, {tokens} tokens, '
                         f'{latency:.2f} s</title></rect>')
        for call in step.tool_calls:
            duration = float(call.get("duration_s") or 0.0)
            colour = COLOURS["tool_failed"] if call.get("ok") is False else COLOURS["tool_ok"]
            start = call.get("end_s", call["t_s"]) - duration
            parts.append(f'<rect x="{x(start):.1f}" y="{y_tools}" '
                         f'width="{max(duration * scale, 1.0):.1f}" height="{lane_h}" '
                         f'fill="{colour}"><title>step {step.index}: {text(call["tool"], 40)} '
                         f'{"ok" if call.get("ok") else "failed"}, {duration:.2f} s</title></rect>')
        for check in step.validations:
            parts.append(f'<circle cx="{x(check["t_s"]):.1f}" cy="{y_checks + 6}" r="3.5" '
                         f'fill="{COLOURS["validation"]}"><title>step {step.index}: validation, '
                         f'{"valid" if check.get("valid") else "invalid"}, score '
                         f'{number(check.get("score"))}</title></circle>')
        for sub in step.submissions:
            parts.append(f'<path d="M{x(sub["t_s"]):.1f},{y_checks + 8} l5,8 l-10,0 z" '
                         f'fill="{COLOURS["submission"]}"><title>step {step.index}: submission '
                         f'{text(sub["file"], 100)}, dev score {number(sub.get("dev_score"))}'
                         f'</title></path>')
    axis_y = y_checks + lane_h + 8
    parts.append(_axis(left, width - right, axis_y, end, scale))
    chart = _best_chart(run, left, width - right, axis_y + 30, 140, scale)
    height = axis_y + 30 + 140 + 30
    # inline SVG in HTML needs no namespace attribute (and so holds no address at all)
    return (f'<svg class="timeline" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'
            f'<style>.lane{{fill:#333}}</style>{"".join(parts)}{chart}</svg>')


def _axis(x0: float, x1: float, y: float, end: float, scale: float) -> str:
    ticks = _ticks(end)
    marks = "".join(f'<line x1="{x0 + t * scale:.1f}" x2="{x0 + t * scale:.1f}" y1="{y}" '
                    f'y2="{y + 4}" stroke="#555"/><text x="{x0 + t * scale:.1f}" y="{y + 15}" '
                    f'text-anchor="middle">{t:g}</text>' for t in ticks)
    return (f'<line x1="{x0}" x2="{x1}" y1="{y}" y2="{y}" stroke="#555"/>{marks}'
            f'<text x="{x1}" y="{y + 27}" text-anchor="end">seconds since the start</text>')


def _ticks(end: float, count: int = 8) -> list[float]:
    import math

    raw = end / count
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(int(end / step) + 1)]


def value_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values between `low` and `high` for a value axis (1, 2 or 5 times a power of ten).

    Args:
        low: The axis's lowest value.
        high: Its highest.
        count: About how many ticks.

    Returns:
        The ticks, ascending (the one value where low equals high).
    """
    if not high > low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step - 1e-9)
    return [round(k * step, 12) for k in range(first, math.floor(high / step + 1e-9) + 1)]


def tick_labels(ticks: list[float]) -> list[str]:
    """Tick labels that differ from each other with as few digits as that takes.

    Args:
        ticks: The ticks.

    Returns:
        One label per tick (2.6, 2.62, 2.625: never 17 digits).
    """
    for digits in range(2, 13):
        labels = [f"{t:.{digits}g}" for t in ticks]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{t:.12g}" for t in ticks]


def _value_axis(x0: float, ticks: list[float], y: Any) -> str:
    """Ticks and labels of a chart's value axis, with light grid lines."""
    return "".join(f'<line x1="{x0 - 3}" x2="{x0}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                   f'stroke="#555"/><text x="{x0 - 5}" y="{y(t) + 4:.1f}" text-anchor="end">'
                   f'{label}</text>' for t, label in zip(ticks, tick_labels(ticks), strict=True))


def _best_chart(run: RunData, x0: float, x1: float, top: float, height: float,
                scale: float) -> str:
    values = [p["score"] for p in run.best_so_far]
    values += [run.v_star] if run.v_star is not None else []
    title = (f'<text x="{x0}" y="{top - 6}">best-so-far dev score'
             f'{" against V* = " + number(run.v_star) if run.v_star is not None else ""}</text>')
    frame = (f'<rect x="{x0}" y="{top}" width="{x1 - x0}" height="{height}" fill="none" '
             'stroke="#999"/>')
    if not run.best_so_far:
        submitted = sum(len(step.submissions) for step in run.steps)
        why = (f"no valid submission: {submitted} submission{'s' * (submitted != 1)}, none valid "
               "on the dev check" if submitted else "no valid submission: nothing was submitted")
        if run.finished is None:
            why += " (the run has not finished)"
        return title + frame + (f'<text class="empty" x="{(x0 + x1) / 2}" '
                                f'y="{top + height / 2}" text-anchor="middle">{text(why)}</text>')
    low, high = min(values), max(values)
    pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
    low, high = low - pad, high + pad

    def y(v: float) -> float:
        return top + height - (v - low) / (high - low) * height

    parts = [title, frame, _value_axis(x0, value_ticks(low, high, 4), y)]
    if run.v_star is not None:
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y(run.v_star):.1f}" '
                     f'y2="{y(run.v_star):.1f}" stroke="{COLOURS["v_star"]}" '
                     f'stroke-dasharray="5,3"><title>V* = {number(run.v_star)}</title></line>')
    if run.best_so_far:
        points, previous = [], None
        for point in run.best_so_far:
            px = x0 + point["t_s"] * scale
            if previous is not None:
                points.append(f"{px:.1f},{previous:.1f}")
            previous = y(point["score"])
            points.append(f"{px:.1f},{previous:.1f}")
        points.append(f"{x1:.1f},{previous:.1f}")
        parts.append(f'<polyline points="{" ".join(points)}" fill="none" '
                     f'stroke="{COLOURS["best"]}" stroke-width="1.5"/>')
        parts += [f'<circle cx="{x0 + p["t_s"] * scale:.1f}" cy="{y(p["score"]):.1f}" r="3" '
                  f'fill="{COLOURS["submission"]}"><title>step {p["step"]}: '
                  f'{number(p["score"])}</title></circle>' for p in run.best_so_far]
    return "".join(parts)


# -------------------------------------------------------------------------------- AIDE's journal


def journal_svg(run: RunData, width: int = 1100, clickable: bool = False) -> str:
    """AIDE's solution tree.

    One circle per node (colour: stage; filled: valid, hollow: buggy), its metric beside; with
    `clickable`, each node carries data-node for the export's script.
    """
    nodes = run.journal
    if not nodes:
        return ""
    children: dict[int | None, list[dict[str, Any]]] = {}
    for node in nodes:
        children.setdefault(node.get("parent"), []).append(node)
    positions: dict[int, tuple[float, float]] = {}
    column = [0]

    def place(node: dict[str, Any], depth: int) -> None:
        kids = children.get(node["id"], [])
        for kid in kids:
            place(kid, depth + 1)
        if kids:
            xs = [positions[k["id"]][0] for k in kids]
            positions[node["id"]] = ((min(xs) + max(xs)) / 2, depth)
        else:
            positions[node["id"]] = (column[0], depth)
            column[0] += 1

    for root in children.get(None, []):
        place(root, 0)
    for node in nodes:  # a node whose parent is not in the journal
        if node["id"] not in positions:
            place(node, 0)
    gap_x, gap_y, margin = 90, 70, 40
    total_width = max(width, int(column[0] * gap_x + 2 * margin))
    depth = max(d for _, d in positions.values())
    height = int((depth + 1) * gap_y + margin)

    def xy(node_id: int) -> tuple[float, float]:
        col, row = positions[node_id]
        return margin + col * gap_x, margin / 2 + 14 + row * gap_y

    parts = []
    for node in nodes:
        if node.get("parent") in positions:
            (x1, y1), (x2, y2) = xy(node["parent"]), xy(node["id"])
            parts.append(f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#999"/>')
    for node in nodes:
        cx, cy = xy(node["id"])
        colour = COLOURS.get(node.get("stage", "draft"), "#777")
        fill = colour if node.get("valid") else "white"
        state = "valid" if node.get("valid") else "buggy"
        shown = number(node.get("metric"), 5) if node.get("valid") else state
        data = f' data-node="{node["id"]}" style="cursor:pointer"' if clickable else ""
        stage = text(node.get("stage", ""), 20)
        parts.append(f'<g class="node"{data}><circle cx="{cx}" cy="{cy}" r="12" fill="{fill}" '
                     f'stroke="{colour}" stroke-width="2.5"/><text x="{cx}" y="{cy + 4}" '
                     f'text-anchor="middle" font-size="10">{node["id"]}</text><text x="{cx}" '
                     f'y="{cy + 28}" text-anchor="middle" font-size="10">{stage} · {shown}</text>'
                     f'<title>node {node["id"]} ({stage}, {state}): '
                     f'{text(node.get("plan", ""), 300)}</title></g>')
    return (f'<svg class="journal" width="{total_width}" height="{height}" '
            f'font-family="sans-serif" font-size="11">{"".join(parts)}</svg>')


def node_html(node: dict[str, Any]) -> str:
    """One AIDE node: stage, verdict, metric, plan and code."""
    state = "valid" if node.get("valid") else "buggy"
    return (f'<div class="node-detail"><h4>Node {node["id"]} — {text(node.get("stage", ""))}, '
            f'{state}, metric {number(node.get("metric"))} (parent {number(node.get("parent"))}, '
            f'debug depth {node.get("debug_depth", 0)})</h4><p>{text(node.get("plan", ""))}</p>'
            f'<pre>{text(node.get("code", ""))}</pre></div>')


# ------------------------------------------------------------------------------ steps and totals


def step_html(step: Step, exchanges: Exchanges | None = None) -> str:
    """One step: each model call with its prompt and reply (from the run's cache).

    Each tool call with its arguments and output, the checks and submissions, and the scaffold's
    notes (AIDE node, research log).
    """
    parts = [f'<div class="step" id="step-{step.index}"><h3>Step {step.index}</h3>'
             f'<p class="muted">{step.start_s:.2f} s – {step.end_s:.2f} s</p>']
    for call in step.model_calls:
        tokens = f'{call.get("prompt_tokens", 0)} + {call.get("completion_tokens", 0)} tokens'
        cached = ", cached" if call.get("cached") else ""
        failed = ", failed: " + text(call.get("error"), 300) if call.get("failed") else ""
        head = (f'Model call ({text(call.get("purpose") or "agent", 80)}): {tokens}, '
                f'{float(call.get("latency_s") or 0):.2f} s{cached}{failed}')
        exchange = exchanges.get(call.get("key")) if exchanges is not None else None
        body = ""
        if exchange is not None:
            body = "".join(f'<div class="msg"><b>{text(m.get("role", ""))}</b>'
                           f'<pre>{text(m.get("content") or "")}</pre></div>'
                           for m in exchange["messages"])
            body += f'<div class="msg reply"><b>reply</b><pre>{text(exchange["reply"])}</pre></div>'
            body += "".join(f'<pre>tool call {text(c)}</pre>'
                            for c in exchange.get("tool_calls", []))
        else:
            body = ('<p class="muted">The prompt is not kept here: the run\'s response cache is '
                    'not in its folder (a packed sweep drops it); the reply is the trace\'s.</p>'
                    f'<div class="msg reply"><b>reply</b><pre>{text(call.get("response") or "")}'
                    '</pre></div>')
        parts.append(f'<details class="call"><summary>{head}</summary>{body}</details>')
    for call in step.tool_calls:
        status = "ok" if call.get("ok") else "failed" if call.get("ok") is False else "no result"
        shown = arguments_text(call["arguments"])
        parts.append(f'<details class="tool" open><summary>Tool {text(call["tool"])}: {status}, '
                     f'{float(call.get("duration_s") or 0):.2f} s</summary><pre>{shown}</pre>'
                     f'<pre class="output">{text(call.get("output", ""))}</pre></details>')
    for check in step.validations:
        errors = "; " + text("; ".join(check.get("errors", [])), 500) if check.get("errors") else ""
        parts.append(f'<p>Validation: {"valid" if check.get("valid") else "invalid"}, score '
                     f'{number(check.get("score"))}{errors}</p>')
    for sub in step.submissions:
        verdict = "valid" if sub.get("dev_valid") else "invalid"
        parts.append(f'<p>Submission {text(sub["file"])}: dev {verdict}, '
                     f'dev score {number(sub.get("dev_score"))}</p>')
    for note in step.notes:
        if isinstance(note, Node):
            parts.append(node_html(note.payload()))
        else:
            parts.append(f'<details><summary>Research log</summary><pre>{text(note.entry)}</pre>'
                         '</details>')
    parts.append("</div>")
    return "".join(parts)


def header_html(run: RunData) -> str:
    """Task, agent, model, how the run ended and its final score."""
    score = run.score or {}
    finished = run.finished or {}
    rows = [("task", run.task), ("agent", run.agent_label), ("model", run.model),
            ("ended", finished.get("reason", "not finished")),
            *([("cause", run.cause)] if run.cause else []),
            ("final submission", finished.get("final_submission") or "-"),
            ("final dev score", number(finished.get("dev_score")))]
    if score:
        final = number(score.get("score")) if score.get("valid") else "invalid"
        rows += [("final score V", final),
                 ("V*", number(score.get("v_star"))), ("gain G", number(score.get("gain"))),
                 ("ratio", number(score.get("ratio"))), ("novelty N", number(score.get("novelty")))]
    elif run.v_star is not None:
        rows.append(("V*", number(run.v_star)))
    cells = "".join(f'<tr><th>{text(k)}</th><td class="{k.replace(" ", "-")}">{text(v)}</td></tr>'
                    for k, v in rows)
    return f'<table class="header">{cells}</table>'


def totals_rows(totals: dict[str, float]) -> list[tuple[str, str]]:
    """A run's totals in words and rounded numbers: (what, how much)."""
    t = totals
    return [("steps", str(t["steps"])),
            ("model calls (cached)", f'{t["model_calls"]} ({t["cached_calls"]})'),
            ("tool calls (failed)", f'{t["tool_calls"]} ({t["failed_tool_calls"]})'),
            ("tokens (prompt + completion)", f'{t["prompt_tokens"]} + {t["completion_tokens"]}'),
            ("cost", human("cost_usd", float(t["cost_usd"]))),
            ("wall time", human("wall_s", float(t["wall_s"]))),
            ("model", human("model_s", float(t["model_s"]))),
            ("tools", human("tools_s", float(t["tools_s"]))),
            ("overhead", human("overhead_s", float(t["overhead_s"])))]


def totals_html(run: RunData) -> str:
    """The run's totals (wall time, model, tools, overhead) as an HTML table.

    Args:
        run: the run.

    Returns:
        The HTML.
    """
    cells = "".join(f"<tr><th>{text(k)}</th><td>{text(v)}</td></tr>"
                    for k, v in totals_rows(run.totals))
    return f'<table class="totals">{cells}</table>'


def state_html(run: RunData) -> str:
    """The scaffold's own state at the run's last checkpoint, where the run kept one.

    It is the scaffold's memory: AIDE's journal and phase, CodeAct's and MLAB's conversation and
    plan.
    """
    if not run.agent_state:
        return '<p class="muted">No agent state was kept (no checkpoint).</p>'
    items = "".join(f"<details><summary>{text(k, 80)}</summary><pre>{text(v)}</pre></details>"
                    for k, v in sorted(run.agent_state.items()))
    return f'<div class="agent-state"><h4>Agent state at the last checkpoint</h4>{items}</div>'


def actions_html(run: RunData) -> str:
    """The sequence of actions (CodeAct, MLAB): step, tool, its argument in brief, outcome."""
    rows = "".join(f'<tr><td>{a["step"]}</td><td>{text(a["tool"])}</td>'
                   f'<td><code>{text(a["arguments"], 160)}</code></td>'
                   f'<td>{"ok" if a["ok"] else "failed"}</td>'
                   f'<td>{float(a["duration_s"] or 0):.2f} s</td></tr>' for a in run.actions())
    return ('<table class="actions"><tr><th>step</th><th>tool</th><th>arguments</th>'
            f'<th>outcome</th><th>duration</th></tr>{rows}</table>')


STYLE = """
body{font-family:sans-serif;margin:16px;color:#222}
table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid #ccc;padding:2px 8px;text-align:left;font-size:13px;vertical-align:top}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;max-height:400px;overflow:auto;
font-size:12px}
.step{border-left:3px solid #4C72B0;padding-left:10px;margin:12px 0}
.muted{color:#777;font-size:12px}
.node-detail{border:1px dashed #999;padding:6px;margin:6px 0}
.legend span{display:inline-block;margin-right:12px;font-size:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
.curve-legend{list-style:none;padding-left:0;font-size:12px}
.note{color:#8a4b00;font-size:13px}
"""


def legend_html() -> str:
    """The timeline's legend (model calls, tools, validations, submissions) in HTML.

    Returns:
        The HTML.
    """
    items = [("model call", "model"), ("cached call", "cached"), ("tool ok", "tool_ok"),
             ("tool failed", "tool_failed"), ("validation", "validation"),
             ("submission", "submission")]
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{COLOURS[c]}"></i>{n}</span>' for n, c in items) + "</div>"


PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B2", "#937860", "#DA8BC3", "#8C8C8C",
           "#CCB974", "#64B5CD"]


def curves_svg(curves: dict[str, list[tuple[float, float]]], v_star: float | None = None,
               width: int = 900, height: int = 280, labels: dict[str, str] | None = None,
               ends: dict[str, float] | None = None) -> str:
    """Best-so-far step curves of several runs, one colour each, a mark at each improvement.

    Each curve ends where its run ended (`ends`), not at the axis's end: a 30 s run beside a 60 s
    one stops at 30 s. Both axes carry round ticks (about 8 in time, 5 in value).

    Args:
        curves: {key: [(t_s, best score), ...]} per run.
        v_star: V*, drawn as a dashed line (None: none).
        width: the chart's width in pixels.
        height: the chart's height in pixels.
        labels: each run's whole label (the key where none is given), shown in the legend below
            the chart: nothing cut short.
        ends: each run's length in seconds, by key (a run without one ends at its last
            improvement).

    Returns:
        The SVG chart and its legend, as HTML.
    """
    labels, ends = labels or {}, ends or {}
    x0, x1, top, bottom = 80, width - 20, 20, height - 45
    points = [p for series in curves.values() for p in series]
    values = [v for _, v in points] + ([v_star] if v_star is not None else [])
    end = max([t for t, _ in points] + list(ends.values()) + [1e-9])
    parts = [f'<rect x="{x0}" y="{top}" width="{x1 - x0}" height="{bottom - top}" fill="none" '
             'stroke="#999"/>']

    def x(t: float) -> float:
        return x0 + t / end * (x1 - x0)

    legend = []
    if values:
        low, high = min(values), max(values)
        pad = (high - low) * 0.08 or abs(high) * 0.05 or 1.0
        low, high = low - pad, high + pad

        def y(v: float) -> float:
            return bottom - (v - low) / (high - low) * (bottom - top)

        parts.append(_value_axis(x0, value_ticks(low, high), y))
        if v_star is not None:
            parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y(v_star):.1f}" y2="{y(v_star):.1f}" '
                         f'stroke="{COLOURS["v_star"]}" stroke-dasharray="5,3"/>')
    for index, (key, series) in enumerate(curves.items()):
        colour = PALETTE[index % len(PALETTE)]
        label = labels.get(key, key)
        if series and values:
            coords, previous = [], None
            for t, v in series:
                if previous is not None:
                    coords.append(f"{x(t):.1f},{previous:.1f}")
                previous = y(v)
                coords.append(f"{x(t):.1f},{previous:.1f}")
            last = max(ends.get(key, series[-1][0]), series[-1][0])
            coords.append(f"{x(last):.1f},{previous:.1f}")
            parts.append(f'<polyline class="curve" data-run="{text(key, 200)}" '
                         f'data-end="{last:.3f}" points="{" ".join(coords)}" fill="none" '
                         f'stroke="{colour}" stroke-width="1.5"><title>{text(label, 300)}'
                         f'</title></polyline>')
            parts += [f'<circle cx="{x(t):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}">'
                      f'<title>{text(label, 300)}: {number(v)} at {t:.1f} s</title></circle>'
                      for t, v in series]
            if key in ends:  # where the run ended
                parts.append(f'<line x1="{x(last):.1f}" x2="{x(last):.1f}" y1="{previous - 4:.1f}"'
                             f' y2="{previous + 4:.1f}" stroke="{colour}" stroke-width="1.5">'
                             f'<title>{text(label, 300)}: ended at {last:.1f} s</title></line>')
        legend.append(f'<li><i style="{SWATCH}background:{colour}"></i>{text(label, 300)}'
                      f'{"" if series else " <em>(no valid submission)</em>"}</li>')
    parts.append(_axis(x0, x1, bottom, end, (x1 - x0) / end).replace(
        "seconds since the start", "seconds since the start; best-so-far dev score"))
    return (f'<svg class="curves" width="{width}" height="{height}" font-family="sans-serif" '
            f'font-size="11">{"".join(parts)}</svg><ul class="legend curve-legend" '
            f'style="list-style:none;padding-left:0">{"".join(legend)}</ul>')


SWATCH = "display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;"
