"""A run as one self-contained HTML file (inline CSS, script, SVG; no external address)."""

from __future__ import annotations

from pathlib import Path

from innolab.viewer.model import Exchanges, RunData, load_run
from innolab.viewer.render import (
    STYLE,
    actions_html,
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

SCRIPT = """
document.querySelectorAll('.journal [data-node]').forEach(function (g) {
  g.addEventListener('click', function () {
    document.querySelectorAll('.node-panel > div').forEach(function (d) { d.hidden = true; });
    var shown = document.getElementById('node-' + g.getAttribute('data-node'));
    if (shown) { shown.hidden = false; }
  });
});
var slider = document.getElementById('step-slider');
if (slider) {
  slider.addEventListener('input', function () {
    document.getElementById('step-number').textContent = slider.value;
    var step = document.getElementById('step-' + slider.value);
    if (step) { step.scrollIntoView(); }
  });
}
"""


def run_html(run: RunData) -> str:
    """Render a run's page.

    Header (task, final score), totals, timeline with best-so-far against V*, AIDE's tree (click a
    node for its plan and code) or the sequence of actions, and every step with its model calls
    and tool calls.

    Args:
        run: The run, loaded.

    Returns:
        The page's HTML.
    """
    exchanges = Exchanges(run.run_dir)
    try:
        steps = "".join(step_html(step, exchanges) for step in run.steps)
    finally:
        exchanges.close()
    if run.journal:
        panels = "".join(f'<div id="node-{n["id"]}" hidden>{node_html(n)}</div>'
                         for n in run.journal)
        middle = (f'<h2>AIDE journal</h2><p class="muted">Colour: stage (draft, debug, improve); '
                  f'filled: valid, '
                  f'hollow: buggy. Click a node for its plan and code.</p>'
                  f'{journal_svg(run, clickable=True)}'
                  f'<div class="node-panel">{panels}</div>')
    else:
        middle = f"<h2>Actions</h2>{actions_html(run)}"
    last = max(len(run.steps) - 1, 0)
    slider = (f'<p>Step <input type="range" id="step-slider" min="0" max="{last}" value="0"> '
              f'<span id="step-number">0</span> of {last}</p>') if run.steps else (
        "<p>No step.</p>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f'<title>innolab run {text(run.task)} '
            f'({text(run.agent)})</title><style>{STYLE}</style></head><body>'
            f'<h1>{text(run.agent)} on {text(run.task)}</h1>'
            f'<p class="muted">{text(run.run_dir.name)}</p>'
            f'{header_html(run)}<h2>Totals</h2>{totals_html(run)}<h2>Timeline</h2>{legend_html()}'
            f'{timeline_svg(run)}{middle}<h2>Steps</h2>{slider}{steps}{state_html(run)}'
            f'<script>{SCRIPT}</script></body></html>')


def export_html(run_dir: str | Path, out: str | Path) -> Path:
    """Write a run's page (`innolab view`).

    Args:
        run_dir: The run's folder.
        out: The HTML file to write (its folder is created).

    Returns:
        The file written.
    """
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(run_html(load_run(run_dir)), encoding="utf-8")
    return target
