"""The viewer, as a person would look at it: the HTML export of scripted runs opened in headless Chromium (a
screenshot that is not blank, a DOM that holds every step and the final score), and the JupyterLab views built
and their contents checked."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.viewer import render
from tests.fake_llm import SOLUTION_CODE, FakeLLM

ROOT = Path(__file__).resolve().parents[1]
BUGGY = "raise RuntimeError('not yet')\n"
BETTER = SOLUTION_CODE.replace("(1 - 1e-12)", "(1 - 1e-13)")


def settings(server):
    return {"base_url": server.base_url, "model": "fake", "backoff_s": 0.0, "timeout_s": 5.0}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder of two scripted runs: AIDE (a journal of three nodes) and CodeAct (a sequence of actions)."""
    folder = tmp_path_factory.mktemp("viewer") / "runs"
    nodes = [{"plan": "plan A: a buggy first try", "code": BUGGY},
             {"plan": "plan B: fix it with a grid", "code": SOLUTION_CODE},
             {"plan": "plan C: shrink the margin", "code": BETTER}]
    with FakeLLM(replies={"aide_node": nodes}, in_call_order=True) as server:
        config = runner.agent_config("aide", "circle-packing-26", budget_s=300, max_steps=9, settings=settings(server),
                                     num_drafts=1, debug_prob=1.0)
        runner.start(config, folder / "aide", novelty="ast", show_progress=False)
    with FakeLLM() as server:
        config = runner.agent_config("codeact", "circle-packing-26", budget_s=300, max_steps=8,
                                     settings=settings(server), temperature=0.3)
        runner.start(config, folder / "codeact", novelty="ast", show_progress=False)
    return folder


def steps_of(run_dir: Path) -> list[int]:
    return sorted({e["step"] for e in traces.read_events(run_dir)
                   if e["type"] in ("llm_call", "tool_call") and e["step"] is not None})


def export(run_dir: Path, out: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "innolab.cli", "view", str(run_dir), "--html", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8")


def test_the_html_export_is_self_contained_and_holds_every_step_and_the_final_score(runs, tmp_path):
    for name in ("aide", "codeact"):
        page = export(runs / name, tmp_path / f"{name}.html")
        assert "http://" not in page and "https://" not in page  # not even the endpoint's address
        assert not re.search(r"""(src|href)\s*=|@import|url\(""", page)  # nothing loaded from anywhere
        assert "<script>" in page and "<style>" in page and "<svg" in page
        assert "circle-packing-26" in page
        for step in steps_of(runs / name):
            assert f'id="step-{step}"' in page and f"<h3>Step {step}</h3>" in page
        score = traces.read_events(runs / name)[-1]
        assert score["type"] == "score" and render.number(score["score"]) in page
        assert f'<td class="final-score-V">{render.number(score["score"])}</td>' in page
    aide = (tmp_path / "aide.html").read_text()
    assert aide.count('data-node="') == 3 and "plan B: fix it with a grid" in aide
    assert "You are an expert solving an optimisation task" in aide  # the prompt, from the run's cache


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(chromium() is None and os.environ.get("INNOLAB_REQUIRE_CHROMIUM") != "1",
                    reason="no chromium here (.ci/run installs Debian's)")
def test_the_export_in_headless_chromium(runs, tmp_path):
    from matplotlib.image import imread

    browser = chromium()
    assert browser, "chromium is required (INNOLAB_REQUIRE_CHROMIUM=1) but not installed"
    page = tmp_path / "aide.html"
    export(runs / "aide", page)
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,1600",
             f"--user-data-dir={tmp_path / 'profile'}"]
    shot = tmp_path / "aide.png"
    done = subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert shot.is_file(), done.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1280)
    assert (pixels.min(axis=2) < 0.9).mean() > 0.02 and pixels.std() > 0.05  # drawn, not a blank page
    coloured = (abs(pixels[..., 0] - pixels[..., 2]) > 0.2).mean()
    assert coloured > 0.001  # the timeline's coloured bars
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    for step in steps_of(runs / "aide"):
        assert f'id="step-{step}"' in dom
    score = traces.read_events(runs / "aide")[-1]["score"]
    assert f'<td class="final-score-V">{render.number(score)}</td>' in dom


def test_run_view_widgets_show_the_timeline_steps_journal_and_totals(runs):
    from innolab.viewer import RunView

    view = RunView(runs / "aide")
    assert "circle-packing-26" in view.header.value and "<svg" in view.timeline.value
    assert view.step_slider.max == len(view.run.steps) - 1 == len(steps_of(runs / "aide")) - 1
    with_call = next(i for i, s in enumerate(view.run.steps) if s.model_calls and s.index > 0)
    view.step_slider.value = with_call
    shown = view.step_detail.value
    assert f"Step {view.run.steps[with_call].index}" in shown and "You are an expert" in shown  # prompt from cache
    assert "plan B: fix it with a grid" in shown or "plan C" in shown  # the reply
    assert len(view.node_picker.options) == 3
    view.node_picker.value = 1
    assert "plan B: fix it with a grid" in view.node_detail.value and "circles = [" in view.node_detail.value
    totals = view.run.totals
    calls = [e for e in traces.read_events(runs / "aide") if e["type"] == "llm_call"]
    assert totals["model_calls"] == len(calls) >= 3 and totals["tools_s"] > 0
    assert totals["prompt_tokens"] == sum(e["prompt_tokens"] for e in calls) > 0
    assert "tokens (prompt + completion)" in view.totals.value
    assert [view.tabs.get_title(i) for i in range(4)] == ["Timeline", "Steps", "AIDE journal", "Totals"]
    state = view.tabs.children[1].children[2].value  # the scaffold's memory at the last checkpoint
    assert "Agent state at the last checkpoint" in state and "journal" in state and "plan C" in state
    codeact = RunView(runs / "codeact")
    assert codeact.tabs.get_title(2) == "Actions"
    assert "submit" in codeact.tabs.children[2].value and "python" in codeact.tabs.children[2].value
    assert codeact.run.best_so_far and codeact.run.v_star == pytest.approx(2.6359830849176076)


def test_sweep_view_filters_draws_curves_and_opens_a_run(runs):
    from innolab.viewer import SweepView

    view = SweepView(runs)
    assert len(view.runs) == 2 and "agent" in view.factors and "temperature" in view.factors
    assert "2 of 2 runs" in view.table.value
    view.set_filter("agent", "codeact")
    assert "1 of 2 runs" in view.table.value and len(view.picker.options) == 1
    identifier = view.picker.options[0][1]
    view.select([identifier])
    assert f'data-run="{identifier}"' in view.curves.value and "<polyline" in view.curves.value
    opened = view.open_run()
    assert opened.run.agent == "codeact" and view.run_area.children == (opened.widget,)
    view.set_filter("agent", None)
    assert "2 of 2 runs" in view.table.value
