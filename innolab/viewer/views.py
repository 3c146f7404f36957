"""The JupyterLab views: RunView (timeline, step browser, AIDE's tree or the actions, totals) and SweepView (the
runs table with filters by factor, best-so-far curves of the selected runs, a run opened in a RunView)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from innolab.viewer.model import Exchanges, RunData, load_run, task_direction
from innolab.viewer.render import (
    STYLE,
    actions_html,
    curves_svg,
    header_html,
    journal_svg,
    legend_html,
    node_html,
    state_html,
    step_html,
    text,
    timeline_svg,
    totals_html,
)

STYLE_TAG = f"<style>{STYLE.replace('body{', '.innolab-view{')}</style>"


class RunView:
    """A run, to look at: `RunView(run_dir)` displays itself in a notebook; its parts are widgets."""

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
        self.step_slider.observe(lambda change: self.show_step(change["new"]), names="value")
        self.show_step(0)
        browser = widgets.VBox([self.step_slider, self.step_detail, widgets.HTML(state_html(self.run))])
        if self.run.journal:
            self.node_picker = widgets.Select(options=[(self._node_label(n), n["id"]) for n in self.run.journal],
                                              rows=min(len(self.run.journal), 10), description="node")
            self.node_detail = widgets.HTML()
            self.node_picker.observe(lambda change: self.show_node(change["new"]), names="value")
            self.show_node(self.run.journal[0]["id"])
            structure: widgets.Widget = widgets.VBox([widgets.HTML(journal_svg(self.run)),
                                                      widgets.HBox([self.node_picker, self.node_detail])])
            structure_title = "AIDE journal"
        else:
            structure = widgets.HTML(actions_html(self.run))
            structure_title = "Actions"
        self.tabs = widgets.Tab([self.timeline, browser, structure, self.totals])
        for index, title in enumerate(["Timeline", "Steps", structure_title, "Totals"]):
            self.tabs.set_title(index, title)
        self.widget = widgets.VBox([self.header, self.tabs])

    @staticmethod
    def _node_label(node: dict[str, Any]) -> str:
        state = f"metric {node.get('metric')!r}" if node.get("valid") else "buggy"
        return f"{node['id']} {node.get('stage', '')} ({state})"

    def show_step(self, index: int) -> None:
        """Show step `index` (its position in the run) in the step browser."""
        if self.run.steps:
            self.step_detail.value = step_html(self.run.steps[index], self.exchanges)

    def show_node(self, node_id: int) -> None:
        """Show AIDE node `node_id`'s plan and code (what clicking it in the tree does)."""
        node = next(n for n in self.run.journal if n["id"] == node_id)
        self.node_detail.value = node_html(node)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


FACTORS = ["task", "agent", "model", "temperature", "budget_s", "prior_solution", "innovation_prompt", "seed",
           "runtime", "backbone"]
SHOWN = ["config_id", "valid", "score", "ratio", "novelty", "end_reason", "tool_calls", "wall_s"]
ALL = "(all)"


class SweepView:
    """A sweep (or a folder of runs), to look at: filter the runs by factor, draw the best-so-far curves of the
    selected runs, open one in a RunView."""

    def __init__(self, sweep_dir: str | Path) -> None:
        from innolab import results

        self.sweep_dir = Path(sweep_dir)
        self.runs = results.runs(self.sweep_dir).reset_index(drop=True)
        self.trajectory = results.trajectory(self.sweep_dir)
        self.factors = [f for f in FACTORS if f in self.runs and self.runs[f].astype(str).nunique() > 1]
        self.filters = {f: widgets.Dropdown(options=[ALL, *sorted(self.runs[f].astype(str).unique())],
                                            description=f) for f in self.factors}
        for dropdown in self.filters.values():
            dropdown.observe(lambda change: self._refresh(), names="value")
        self.table = widgets.HTML()
        self.picker = widgets.SelectMultiple(description="runs", rows=8)
        self.picker.observe(lambda change: self._draw(), names="value")
        self.curves = widgets.HTML()
        self.open_button = widgets.Button(description="Open run", tooltip="open the first selected run")
        self.open_button.on_click(lambda _: self.open_run())
        self.run_area = widgets.VBox()
        self.run_view: RunView | None = None
        self._refresh()
        self.widget = widgets.VBox([widgets.HTML(STYLE_TAG), widgets.HBox(list(self.filters.values())), self.table,
                                    widgets.HBox([self.picker, self.open_button]), self.curves, self.run_area])

    def filtered(self) -> pd.DataFrame:
        """The runs that pass every filter."""
        keep = pd.Series(True, index=self.runs.index)
        for factor, dropdown in self.filters.items():
            if dropdown.value != ALL:
                keep &= self.runs[factor].astype(str) == dropdown.value
        return self.runs[keep]

    def set_filter(self, factor: str, value: Any) -> None:
        self.filters[factor].value = ALL if value is None else str(value)

    def _label(self, row: pd.Series) -> str:
        return " · ".join([str(row["config_id"]), *(f"{f}={row[f]}" for f in self.factors)])

    def _refresh(self) -> None:
        rows = self.filtered()
        columns = [c for c in [*self.factors, *SHOWN] if c in rows]
        body = "".join("<tr>" + "".join(f"<td>{text(str(row[c]), 80)}</td>" for c in columns) + "</tr>"
                       for _, row in rows.iterrows())
        head = "".join(f"<th>{text(c)}</th>" for c in columns)
        self.table.value = f'<p>{len(rows)} of {len(self.runs)} runs</p><table><tr>{head}</tr>{body}</table>'
        self.picker.options = [(self._label(row), row["config_id"]) for _, row in rows.iterrows()]

    def select(self, config_ids: list[str]) -> None:
        self.picker.value = tuple(config_ids)

    def _draw(self) -> None:
        curves = {}
        for identifier in self.picker.value:
            points = self.trajectory[(self.trajectory["config_id"] == identifier) & self.trajectory["dev_valid"]]
            points = points.dropna(subset=["dev_score"]).sort_values("t_s")
            direction_max = task_direction(str(self.runs.loc[self.runs["config_id"] == identifier, "task"].iloc[0])
                                           ) == "max"
            best, series = None, []
            for t, value in zip(points["t_s"], points["dev_score"], strict=True):
                if best is None or (value > best if direction_max else value < best):
                    best = value
                    series.append((float(t), float(value)))
            curves[identifier] = series
        self.curves.value = curves_svg(curves) if curves else ""

    def open_run(self, config_id: str | None = None) -> RunView:
        """Open a run (the first selected one by default) in a RunView below the table."""
        identifier = config_id or (self.picker.value[0] if self.picker.value else None)
        if identifier is None:
            raise ValueError("select a run first")
        row = self.runs[self.runs["config_id"] == identifier].iloc[0]
        run_dir = Path(row["run_dir"])
        if not run_dir.is_absolute():
            run_dir = self.sweep_dir / run_dir
        self.run_view = RunView(run_dir)
        self.run_area.children = [self.run_view.widget]
        return self.run_view

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
