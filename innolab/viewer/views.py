"""The JupyterLab views of a run (RunView) and of a sweep or folder of runs (SweepView).

RunView: timeline, step browser, AIDE's tree or the actions, totals. SweepView: the runs table with
filters by factor, best-so-far curves of the selected runs, a run opened in a RunView.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from innolab.metrics import better
from innolab.viewer.model import Exchanges, RunData, load_run, task_direction
from innolab.viewer.render import (
    STYLE,
    actions_html,
    curves_svg,
    header_html,
    human,
    journal_svg,
    legend_html,
    missing,
    node_html,
    number,
    state_html,
    step_html,
    text,
    timeline_svg,
    totals_html,
    totals_rows,
)

STYLE_TAG = f"<style>{STYLE.replace('body{', '.innolab-view{')}</style>"


def guarded(action: Callable[[], Any], message: widgets.HTML) -> Callable[..., None]:
    """A widget callback that reports its failure in the view, not in JupyterLab's log console.

    An exception raised in a callback (a button's click, a control's change) is not shown in the
    notebook: ipywidgets hands it to the kernel's log, which JupyterLab puts in its log console.
    The guarded callback writes the error's message into `message`, an area of the view itself,
    and clears it when the action succeeds.

    Args:
        action: What the callback does.
        message: The view's message area.

    Returns:
        The callback (it takes and ignores the widget's argument).
    """
    def callback(*_: Any) -> None:
        try:
            action()
        except Exception as error:  # every failure of a callback belongs in the view
            shown = text(str(error) or type(error).__name__, 500)
            message.value = f'<p class="note error">{shown}</p>'
        else:
            message.value = ""
    return callback


class RunView:
    """A run, to look at.

    `RunView(run_dir)` displays itself in a notebook; its parts are widgets.
    """

    def __init__(self, run_dir: str | Path) -> None:
        self.run: RunData = load_run(run_dir)
        self.exchanges = Exchanges(self.run.run_dir)
        self.header = widgets.HTML(STYLE_TAG + header_html(self.run))
        self.totals = widgets.HTML(totals_html(self.run))
        self.timeline = widgets.HTML(legend_html() + timeline_svg(self.run))
        last = max(len(self.run.steps) - 1, 0)
        self.step_slider = widgets.IntSlider(value=0, min=0, max=last, description="step",
                                             disabled=not self.run.steps, continuous_update=False)
        self.step_detail = widgets.HTML()
        self.message = widgets.HTML()  # a callback's failure, shown in the view
        self.step_slider.observe(
            lambda change: guarded(lambda: self.show_step(change["new"]), self.message)(),
            names="value")
        self.show_step(0)
        browser = widgets.VBox([self.step_slider, self.step_detail,
                                widgets.HTML(state_html(self.run))])
        if self.run.journal:
            options = [(self._node_label(n), n["id"]) for n in self.run.journal]
            self.node_picker = widgets.Select(options=options, rows=min(len(self.run.journal), 10),
                                              description="node")
            self.node_detail = widgets.HTML()
            self.node_picker.observe(
                lambda change: guarded(lambda: self.show_node(change["new"]), self.message)(),
                names="value")
            self.show_node(self.run.journal[0]["id"])
            structure: widgets.Widget = widgets.VBox([
                widgets.HTML(journal_svg(self.run)),
                widgets.HBox([self.node_picker, self.node_detail])])
            structure_title = "AIDE journal"
        else:
            structure = widgets.HTML(actions_html(self.run))
            structure_title = "Actions"
        self.tabs = widgets.Tab([self.timeline, browser, structure, self.totals])
        for index, title in enumerate(["Timeline", "Steps", structure_title, "Totals"]):
            self.tabs.set_title(index, title)
        self.widget = widgets.VBox([self.header, self.message, self.tabs])

    @staticmethod
    def _node_label(node: dict[str, Any]) -> str:
        state = f"metric {number(node.get('metric'))}" if node.get("valid") else "buggy"
        return f"{node['id']} {node.get('stage', '')} ({state})"

    def show_step(self, index: int) -> None:
        """Show step `index` (its position in the run) in the step browser."""
        if self.run.steps:
            self.step_detail.value = step_html(self.run.steps[index], self.exchanges)

    def show_node(self, node_id: int) -> None:
        """Show AIDE node `node_id`'s plan and code (what clicking it in the tree does)."""
        node = next(n for n in self.run.journal if n["id"] == node_id)
        self.node_detail.value = node_html(node)

    def totals_table(self) -> pd.DataFrame:
        """The run's totals as a person reads them (seconds to 0.1 s, money to 4 decimals)."""
        table = pd.DataFrame(totals_rows(self.run.totals), columns=["total", "value"])
        return table.set_index("total")

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def sweep_factors() -> list[str]:
    """The configuration columns a sweep's runs may differ in, the agent first, the seed last.

    The run schema's (innolab.runspec): a plugin's option or an added setting is a factor too.
    The seed, a run's replicate, comes last in a run's label ("aide · T=0.7 · budget 300 s ·
    seed 0").
    """
    from innolab import runspec

    names = [n for n in runspec.columns() if n not in ("agent", "seed")]
    return ["agent", *names, "seed"]
SHOWN = ["config_id", "valid", "score", "ratio", "novelty", "end_reason", "tool_calls", "wall_s"]
ALL = "(all)"


def factor_text(factor: str, value: Any) -> str:
    """One factor's level, short and unambiguous.

    "T=0.25", "budget 300 s", "seed 2", "prior: <name>".
    """
    shown = human(factor, value)
    if factor == "temperature":
        return "T unset" if shown == "-" else f"T={shown}"
    if factor == "budget_s":
        return f"budget {shown}"
    if factor == "seed":
        return f"seed {shown}"
    if factor == "prior_solution":
        return "no prior" if shown == "-" else f"prior: {shown}"
    if factor == "innovation_prompt":
        return "innovation prompt" if value is True else "plain prompt"
    if factor == "top_p":
        return f"top_p={shown}"
    if factor == "agent" and value == "baseline":
        return "baseline (classical search)"
    return shown


def run_labels(rows: pd.DataFrame, factors: list[str]) -> list[str]:
    """One label per row, each different from the others.

    The levels of the factors that vary (agent, task, model, temperature, budget, seed, ...), then
    the config id; where one configuration was run more than once, its run folder too (and, where
    two rows still read alike, their position).

    Args:
        rows: rows of the runs table.
        factors: the factors that vary.

    Returns:
        The labels, in the rows' order.
    """
    labels = [" · ".join([*(factor_text(f, row[f]) for f in factors), str(row["config_id"])])
              for _, row in rows.iterrows()]
    repeated = {label for label, count in Counter(labels).items() if count > 1}
    if repeated and "run_dir" in rows:
        labels = [f"{label} · run {Path(str(run_dir)).name}"
                  if label in repeated and not missing(run_dir) else label
                  for label, run_dir in zip(labels, rows["run_dir"], strict=True)]
    counts, seen = Counter(labels), Counter[str]()
    unique = []
    for label in labels:
        seen[label] += 1
        unique.append(label if counts[label] == 1 else f"{label} · #{seen[label]}")
    return unique


class SweepView:
    """A sweep (or a folder of runs), to look at.

    Filter the runs by factor, draw the best-so-far curves of the selected runs, open one in a
    RunView. Each run is one option of the picker, labelled by what sets it apart.
    """

    def __init__(self, sweep_dir: str | Path) -> None:
        from innolab import results

        self.sweep_dir = Path(sweep_dir)
        self.runs = results.runs(self.sweep_dir).reset_index(drop=True)
        self.trajectory = results.trajectory(self.sweep_dir)
        self.factors = [f for f in sweep_factors() if f in self.runs and self._varies(f)]
        self.labels = dict(enumerate(run_labels(self.runs, self.factors)))  # row position -> label
        self.filters = {f: widgets.Dropdown(options=[ALL, *sorted(self.levels(f).unique())],
                                            description=f)
                        for f in self.factors}
        self.message = widgets.HTML()  # what a click or a change could not do, and why
        for dropdown in self.filters.values():
            dropdown.observe(guarded(self._refresh, self.message), names="value")
        self.table = widgets.HTML()
        longest = max((len(label) for label in self.labels.values()), default=20)
        # wide enough for the longest label (no option is cut), one line per run up to 12
        width = f"calc({math.ceil(longest * 1.15)}ch + 9em)"
        self.picker = widgets.SelectMultiple(description="runs",
                                             rows=min(max(len(self.runs), 2), 12),
                                             layout=widgets.Layout(width=width))
        self.picker.observe(guarded(self._draw, self.message), names="value")
        self.curves = widgets.HTML()
        self.open_button = widgets.Button(description="Open run",
                                          tooltip="open the first selected run")
        self.open_button.on_click(guarded(self.open_run, self.message))
        self.run_area = widgets.VBox()
        self.run_view: RunView | None = None
        # a sweep's live status (innolab.sweep.status), read again by the button while it runs
        self.status = widgets.HTML()
        self.status_button = widgets.Button(description="Refresh status",
                                            tooltip="read the sweep's status again")
        self.status_button.on_click(guarded(self.refresh_status, self.message))
        self._stop = threading.Event()
        state = self.refresh_status()
        if state is not None and state["counts"].get("running"):
            self.watch()  # a sweep that runs: follow it
        self._refresh()
        self._draw()
        self.widget = widgets.VBox([widgets.HTML(STYLE_TAG),
                                    widgets.HBox([self.status, self.status_button]),
                                    widgets.HBox(list(self.filters.values())), self.table,
                                    widgets.HBox([self.picker, self.open_button]), self.message,
                                    self.curves, self.run_area],
                                   layout=widgets.Layout(overflow="auto"))

    def _varies(self, factor: str) -> bool:
        """Whether a factor sets runs apart.

        Its levels differ among one agent's runs (a missing level, e.g. no prior solution, is a
        level), or among the runs that set it. A setting that only some policies take (a model,
        a temperature, an agent's own option: unset for the baseline or the other agents) does
        not set runs apart by being unset: the agent already does.
        """
        levels = self.levels(factor)
        if factor == "agent" or "agent" not in self.runs:
            return bool(levels.nunique() > 1)
        if (levels.groupby(self.runs["agent"].astype(str)).nunique() > 1).any():
            return True
        unset = self.runs[factor].map(lambda v: missing(v) or v == "none")  # the baseline's model
        return bool(levels[~unset].nunique() > 1)

    def refresh_status(self) -> dict[str, Any] | None:
        """Read the sweep's status again: counts by state, spend, stop for cost, runs in flight.

        Returns:
            The status (None for a folder of runs that is not a sweep).
        """
        from innolab import sweep

        if not (self.sweep_dir / "sweep.json").is_file():
            self.status.value = ""
            return None
        state = sweep.status(self.sweep_dir)
        counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in state["counts"].items() if n)
        cap = f" of a ${state['max_cost_usd']:g} cap" if state["max_cost_usd"] else ""
        stop = " — <b>stopped for cost</b>" if state["stopped_for_cost"] else ""
        flights = "".join(f"<li>{text(f['config_id'])}: {f['elapsed_s'] or 0:.0f} s, "
                          f"${f['cost_usd']:.4f}</li>" for f in state["in_flight"])
        self.status.value = (f"<p>{counts or 'no configurations'}; ${state['cost_usd']:.4f} spent"
                             f"{cap}{stop}</p>" + (f"<ul>{flights}</ul>" if flights else ""))
        return state

    def watch(self, interval_s: float = 5.0, idle_s: float = 120.0) -> threading.Thread:
        """Read the status again every `interval_s` seconds, in the background.

        Until the sweep has nothing pending or running, until no run has been in flight for
        `idle_s` seconds (a driver that stopped or was killed leaves its pending runs pending;
        between two runs, while a kernel starts, none is in flight for a few seconds), or until
        `unwatch` is called. A view opened on a sweep with runs in flight watches it from the
        start.

        Args:
            interval_s: The seconds between two readings.
            idle_s: How long without a run in flight ends the watch.

        Returns:
            The watching thread (a daemon).
        """
        self.unwatch()  # one watcher at a time
        stop = self._stop = threading.Event()

        def follow() -> None:
            last_seen = time.monotonic()  # when a run was last in flight
            while True:
                try:
                    counts = (self.refresh_status() or {}).get("counts", {})
                except (OSError, ValueError) as error:  # a file caught mid-write: read it again
                    self.status.value = (f"<p>the status could not be read ({text(str(error))});"
                                         f" reading it again in {interval_s:g} s</p>")
                    counts = None  # unread: neither done nor in flight (idle_s still bounds it)
                if counts and counts.get("running"):
                    last_seen = time.monotonic()
                done = counts is not None and not (counts.get("pending") or counts.get("running"))
                if done or time.monotonic() - last_seen >= idle_s:
                    return
                if stop.wait(interval_s):
                    return

        thread = threading.Thread(target=follow, name="sweep-status", daemon=True)
        thread.start()
        return thread

    def unwatch(self) -> None:
        """Stop reading the status in the background."""
        self._stop.set()

    def filtered(self) -> pd.DataFrame:
        """The runs that pass every filter."""
        keep = pd.Series(True, index=self.runs.index)
        for factor, dropdown in self.filters.items():
            if dropdown.value != ALL:
                keep &= self.levels(factor) == dropdown.value
        return self.runs[keep]

    def levels(self, factor: str) -> pd.Series:
        """Each run's level of a factor.

        As shown (a missing level is "-", one level like the others).
        """
        return self.runs[factor].map(lambda value: human(factor, value)).astype(object)

    def set_filter(self, factor: str, value: Any) -> None:
        """Keep the runs at this level of the factor (None: all)."""
        self.filters[factor].value = ALL if value is None else human(factor, value)

    def _refresh(self) -> None:
        rows = self.filtered()
        columns = [c for c in [*self.factors, *SHOWN] if c in rows]
        body = "".join("<tr>" + "".join(f"<td>{text(human(c, row[c]), 80)}</td>" for c in columns)
                       + "</tr>" for _, row in rows.iterrows())
        head = "".join(f"<th>{text(c)}</th>" for c in columns)
        self.table.value = (f'<p>{len(rows)} of {len(self.runs)} runs</p><table><tr>{head}</tr>'
                            f'{body}</table>')
        self.picker.options = [(self.labels[position], position) for position in rows.index]

    def positions(self, key: str) -> list[int]:
        """The rows a key names.

        A run folder (as in the table, or its name) or a config id (every run of it).

        Raises:
            ValueError: a key that names no run.
        """
        by_dir = [i for i, d in self.runs["run_dir"].items()
                  if not missing(d) and key in (str(d), Path(str(d)).name)]
        found = by_dir or [i for i, c in self.runs["config_id"].items() if str(c) == key]
        if not found:
            raise ValueError(f"run: {key!r} is neither a config id nor a run folder of "
                             f"{self.sweep_dir.name}")
        return found

    def select(self, keys: list[str]) -> None:
        """Select runs by config id (every run of it) or run folder."""
        shown = {position for _, position in self.picker.options}
        wanted = [p for key in keys for p in self.positions(key)]
        hidden = [self.labels[p] for p in wanted if p not in shown]
        if hidden:
            raise ValueError(f"runs: {hidden} are hidden by the filters; clear them first")
        self.picker.value = tuple(dict.fromkeys(wanted))

    def selected(self) -> pd.DataFrame:
        """The selected runs' rows."""
        return self.runs.loc[list(self.picker.value)]

    def run_key(self, position: int) -> str:
        """A run's key: its run folder as in the table (unique), else its config id."""
        row = self.runs.loc[position]
        return str(row["config_id"]) if missing(row.get("run_dir")) else str(row["run_dir"])

    def _draw(self) -> None:
        rows = self.selected()
        if rows.empty:
            self.curves.value = ('<p class="muted">Select runs to draw their best-so-far dev score '
                                 'curves.</p>')
            return
        curves, labels, empty = {}, {}, []
        for position, row in rows.iterrows():
            key = self.run_key(int(position))  # type: ignore[arg-type]
            submissions = self._submissions(int(position))  # type: ignore[arg-type]
            valid = submissions[submissions["dev_valid"].astype(bool)]
            points = valid.dropna(subset=["dev_score"]).sort_values("t_s")
            direction = task_direction(str(row["task"]))
            best, series = None, []
            for t, value in zip(points["t_s"], points["dev_score"], strict=True):
                if better(value, best, direction):  # type: ignore[arg-type]
                    best = value
                    series.append((float(t), float(value)))
            label = self.labels[int(position)]  # type: ignore[arg-type]
            curves[key], labels[key] = series, label
            if not series:
                empty.append(f"{label}: {self._why_empty(row, len(submissions))}")
        reasons = "".join(f"<li>{text(line, 400)}</li>" for line in empty)
        if len(empty) == len(rows):
            plural = "s" if len(rows) > 1 else ""
            self.curves.value = (f'<p class="note">No valid submission among the {len(rows)} '
                                 f'selected run{plural}: no best-so-far curve to draw.</p>'
                                 f'<ul class="note">{reasons}</ul>')
            return
        note = (f'<p class="note">{len(empty)} of the {len(rows)} selected runs had no valid '
                f'submission:</p><ul class="note">{reasons}</ul>') if empty else ""
        ends = {}  # each curve ends where its run ended (its wall time), not at the longest run's
        for position, row in rows.iterrows():
            wall = pd.to_numeric(pd.Series([row.get("wall_s")]), errors="coerce").iloc[0]
            if pd.notna(wall):
                ends[self.run_key(int(position))] = float(wall)  # type: ignore[arg-type]
        self.curves.value = curves_svg(curves, labels=labels, ends=ends) + note

    def _submissions(self, position: int) -> pd.DataFrame:
        """A run's rows of the trajectory table.

        Where its configuration was run more than once (the table keys rows by config id), read from
        its own run folder.
        """
        row = self.runs.loc[position]
        if (self.runs["config_id"] == row["config_id"]).sum() == 1 or missing(row.get("run_dir")):
            return self.trajectory[self.trajectory["config_id"] == row["config_id"]]
        from innolab.results import TRAJECTORY_COLUMNS, trajectory_rows

        return pd.DataFrame(trajectory_rows(self._run_dir(row)), columns=TRAJECTORY_COLUMNS)

    def _run_dir(self, row: pd.Series) -> Path:
        run_dir = Path(row["run_dir"])
        return run_dir if run_dir.is_absolute() else self.sweep_dir / run_dir

    @staticmethod
    def _why_empty(row: pd.Series, submissions: int) -> str:
        """Why a run has no curve.

        No submission, or none that passed the dev check; how the run ended.
        """
        plural = "s" if submissions > 1 else ""
        what = ("no submission" if submissions == 0
                else f"{submissions} submission{plural}, none valid on the dev check")
        ended = human("end_reason", row.get("end_reason"))
        error = "" if missing(row.get("error")) else f"; error: {row['error']}"
        return f"{what} (ended: {ended}{error})"

    def open_run(self, key: str | None = None) -> RunView:
        """Open a run in a RunView below the table.

        Args:
            key: a run folder, or a config id that names one run (default: the first selected run).

        Returns:
            The RunView.

        Raises:
            ValueError: no run selected, a key that names no run or several, or a run without a
                folder (it did not start).
        """
        if key is None:
            if not self.picker.value:
                raise ValueError("Open run: select a run first (click one in the list of runs, "
                                 "then Open run)")
            position = self.picker.value[0]
        else:
            found = self.positions(key)
            if len(found) > 1:
                folders = [self.run_key(p) for p in found]
                raise ValueError(f"run: config id {key!r} names {len(found)} runs "
                                 f"({', '.join(folders)}): pass the run folder")
            position = found[0]
        row = self.runs.loc[position]
        if missing(row.get("run_dir")):
            raise ValueError(f"run: {self.labels[position]} has no run folder (it did not start)")
        self.run_view = RunView(self._run_dir(row))
        self.run_area.children = [self.run_view.widget]
        return self.run_view

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
