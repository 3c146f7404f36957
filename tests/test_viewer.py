"""The viewer, as a person would look at it: the HTML export of scripted runs opened in headless
Chromium (a screenshot that is not blank, a DOM that holds every step and the final score), and the
JupyterLab views built and their contents checked."""

from __future__ import annotations

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
    """A folder of two scripted runs: AIDE (a journal of three nodes) and CodeAct (a sequence of
    actions)."""
    folder = tmp_path_factory.mktemp("viewer") / "runs"
    nodes = [
        {"plan": "plan A: a buggy first try", "code": BUGGY},
        {"plan": "plan B: fix it with a grid", "code": SOLUTION_CODE},
        {"plan": "plan C: shrink the margin", "code": BETTER},
    ]
    with FakeLLM(replies={"aide_node": nodes}, in_call_order=True) as server:
        config = runner.agent_config(
            "aide",
            "circle-packing-26",
            budget_s=300,
            max_steps=9,
            settings=settings(server),
            num_drafts=1,
            debug_prob=1.0,
        )
        runner.start(config, folder / "aide", novelty="ast", show_progress=False)
    with FakeLLM() as server:
        config = runner.agent_config(
            "codeact",
            "circle-packing-26",
            budget_s=300,
            max_steps=8,
            settings=settings(server),
            temperature=0.3,
        )
        runner.start(config, folder / "codeact", novelty="ast", show_progress=False)
    return folder


def steps_of(run_dir: Path) -> list[int]:
    return sorted(
        {
            e.step
            for e in traces.read_events(run_dir)
            if e.type in ("llm_call", "tool_call") and e.step is not None
        }
    )


def export(run_dir: Path, out: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "innolab.cli", "view", str(run_dir), "--html", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8")


def test_the_html_export_is_self_contained_and_holds_every_step_and_the_final_score(runs, tmp_path):
    for name in ("aide", "codeact"):
        page = export(runs / name, tmp_path / f"{name}.html")
        assert "http://" not in page and "https://" not in page  # not even the endpoint's address
        assert not re.search(
            r"""(src|href)\s*=|@import|url\(""", page
        )  # nothing loaded from anywhere
        assert "<script>" in page and "<style>" in page and "<svg" in page
        assert "circle-packing-26" in page
        for step in steps_of(runs / name):
            assert f'id="step-{step}"' in page and f"<h3>Step {step}</h3>" in page
        score = traces.read_events(runs / name)[-1]
        assert score.type == "score" and render.number(score.score) in page
        assert f'<td class="final-score-V">{render.number(score.score)}</td>' in page
    aide = (tmp_path / "aide.html").read_text()
    assert aide.count('data-node="') == 3 and "plan B: fix it with a grid" in aide
    assert "You are an expert solving a task" in aide  # the prompt, from the run's cache


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.chromium
def test_the_export_in_headless_chromium(runs, tmp_path):
    from matplotlib.image import imread

    browser = chromium()
    page = tmp_path / "aide.html"
    export(runs / "aide", page)
    flags = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1280,1600",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    shot = tmp_path / "aide.png"
    done = subprocess.run(
        [*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert shot.is_file(), done.stderr[-2000:]
    pixels = imread(shot)[..., :3]
    assert pixels.shape[:2] == (1600, 1280)
    assert (
        pixels.min(axis=2) < 0.9
    ).mean() > 0.02 and pixels.std() > 0.05  # drawn, not a blank page
    coloured = (abs(pixels[..., 0] - pixels[..., 2]) > 0.2).mean()
    assert coloured > 0.001  # the timeline's coloured bars
    dom = subprocess.run(
        [*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    for step in steps_of(runs / "aide"):
        assert f'id="step-{step}"' in dom
    score = traces.read_events(runs / "aide")[-1].score
    assert f'<td class="final-score-V">{render.number(score)}</td>' in dom


def test_run_view_widgets_show_the_timeline_steps_journal_and_totals(runs):
    from innolab.viewer import RunView

    view = RunView(runs / "aide")
    assert "circle-packing-26" in view.header.value and "<svg" in view.timeline.value
    assert view.step_slider.max == len(view.run.steps) - 1 == len(steps_of(runs / "aide")) - 1
    with_call = next(i for i, s in enumerate(view.run.steps) if s.model_calls and s.index > 0)
    view.step_slider.value = with_call
    shown = view.step_detail.value
    assert (
        f"Step {view.run.steps[with_call].index}" in shown and "You are an expert" in shown
    )  # prompt from cache
    assert "plan B: fix it with a grid" in shown or "plan C" in shown  # the reply
    assert len(view.node_picker.options) == 3
    view.node_picker.value = 1
    assert (
        "plan B: fix it with a grid" in view.node_detail.value
        and "circles = [" in view.node_detail.value
    )
    totals = view.run.totals
    calls = [e for e in traces.read_events(runs / "aide") if e.type == "llm_call"]
    assert totals["model_calls"] == len(calls) >= 3 and totals["tools_s"] > 0
    assert totals["prompt_tokens"] == sum(e.prompt_tokens for e in calls) > 0
    assert "tokens (prompt + completion)" in view.totals.value
    assert [view.tabs.get_title(i) for i in range(4)] == [
        "Timeline",
        "Steps",
        "AIDE journal",
        "Totals",
    ]
    state = view.tabs.children[1].children[2].value  # the scaffold's memory at the last checkpoint
    assert (
        "Agent state at the last checkpoint" in state and "journal" in state and "plan C" in state
    )
    codeact = RunView(runs / "codeact")
    assert codeact.tabs.get_title(2) == "Actions"
    assert "submit" in codeact.tabs.children[2].value and "python" in codeact.tabs.children[2].value
    assert codeact.run.best_so_far and codeact.run.v_star == pytest.approx(2.6359830849176076)


def test_sweep_view_filters_draws_curves_and_opens_a_run(runs):
    from innolab.viewer import SweepView

    view = SweepView(runs)
    assert len(view.runs) == 2 and "agent" in view.factors and "temperature" in view.factors
    assert "2 of 2 runs" in view.table.value
    view.set_filter("agent", "aide")
    assert "1 of 2 runs" in view.table.value and len(view.picker.options) == 1
    label, position = view.picker.options[0]
    assert label.startswith("aide · T=0.7") and label.endswith(view.runs.at[position, "config_id"])
    view.select([view.runs.at[position, "config_id"]])
    key = view.run_key(position)
    assert f'data-run="{key}"' in view.curves.value and "<polyline" in view.curves.value
    assert (
        f'<li><i style="{render.SWATCH}background:#4C72B0"></i>{label}</li>' in view.curves.value
    )  # whole label
    opened = view.open_run()
    assert opened.run.agent == "aide" and view.run_area.children == (opened.widget,)
    view.set_filter("agent", None)
    assert "2 of 2 runs" in view.table.value


@pytest.fixture(scope="module")
def mixed(runs, tmp_path_factory):
    """A folder of runs as a newcomer's results/runs looks after a while: one configuration run
    twice (the AIDE run and its copy), and a broken CodeAct run (its code raises; another budget and
    seed), also twice."""
    folder = tmp_path_factory.mktemp("mixed")
    shutil.copytree(runs / "aide", folder / "aide")
    shutil.copytree(runs / "aide", folder / "aide-again")
    broken = [
        {"thought": "try", "action": "python", "code": BUGGY},
        {"thought": "submit it", "action": "submit", "path": "submission.json", "code": ""},
    ]
    with FakeLLM(replies={"codeact_action": broken}) as server:
        config = runner.agent_config(
            "codeact",
            "circle-packing-26",
            budget_s=120,
            max_steps=3,
            seed=3,
            settings=settings(server),
            temperature=0.3,
        )
        runner.start(config, folder / "broken", novelty="ast", show_progress=False)
    shutil.copytree(folder / "broken", folder / "broken-again")
    return folder


def test_run_picker_options_are_unique_and_name_what_sets_runs_apart(mixed):
    from innolab.viewer import SweepView

    view = SweepView(mixed)
    labels = [label for label, _ in view.picker.options]
    values = [value for _, value in view.picker.options]
    assert len(labels) == len(set(labels)) == len(values) == len(set(values)) == 4
    assert view.factors == ["agent", "temperature", "budget_s", "seed"]
    by_folder = {view.run_key(p): label for label, p in view.picker.options}
    repeated = view.runs.set_index("run_dir").at["aide", "config_id"]
    assert by_folder["aide"] == f"aide · T=0.7 · budget 300 s · seed 0 · {repeated} · run aide"
    assert (
        by_folder["aide-again"]
        == f"aide · T=0.7 · budget 300 s · seed 0 · {repeated} · run aide-again"
    )
    assert by_folder["broken"].startswith("codeact · T=0.3 · budget 120 s · seed 3 · ")
    width = int(re.match(r"calc\((\d+)ch", view.picker.layout.width).group(1))
    assert width >= max(map(len, labels))  # no option is cut short
    view.select([repeated])  # a config id run twice selects both runs
    assert sorted(view.run_key(p) for p in view.picker.value) == ["aide", "aide-again"]
    assert view.curves.value.count("<polyline") == 2
    with pytest.raises(ValueError, match=r"names 2 runs \(aide, aide-again\): pass the run folder"):
        view.open_run(repeated)
    assert view.open_run("aide-again").run.run_dir == mixed / "aide-again"
    with pytest.raises(ValueError, match="'nope' is neither a config id nor a run folder"):
        view.select(["nope"])


def test_run_labels_stay_unique_without_a_run_folder():
    import pandas as pd

    from innolab.viewer.views import run_labels

    rows = pd.DataFrame(
        {
            "config_id": ["abc", "abc", "def"],
            "run_dir": [None, None, "runs/def"],
            "agent": ["aide", "aide", "mlab"],
            "temperature": [0.5, 0.5, 0.75],
        }
    )
    assert run_labels(rows, ["agent", "temperature"]) == [
        "aide · T=0.5 · abc · #1",
        "aide · T=0.5 · abc · #2",
        "mlab · T=0.75 · def",
    ]


def test_an_all_invalid_selection_says_why(mixed):
    from innolab.viewer import SweepView

    view = SweepView(mixed)
    assert "Select runs" in view.curves.value
    view.select(["broken", "broken-again"])
    shown = view.curves.value
    assert "No valid submission among the 2 selected runs" in shown and "<svg" not in shown
    assert (
        shown.count("none valid on the dev check (ended:") + shown.count("no submission (ended:")
        == 2
    )
    view.select(["broken", "aide"])
    shown = view.curves.value
    assert "<polyline" in shown and "1 of the 2 selected runs had no valid submission" in shown
    assert "(no valid submission)" in shown  # in the legend, beside the broken run's label


def test_numbers_are_written_for_people(mixed):
    from innolab.viewer import RunView, SweepView

    assert render.human("wall_s", 120.00816665600007) == "120.0 s"
    assert (
        render.human("ratio", -0.17804212) == "-0.178"
        and render.human("novelty", 23.72894) == "23.7"
    )
    assert (
        render.human("prior_solution", float("nan")) == "-" and render.human("valid", True) == "yes"
    )
    view = SweepView(mixed)
    long_numbers = re.compile(r"\d\.\d{7,}")
    assert not long_numbers.search(view.table.value)
    wall = view.runs.at[0, "wall_s"]
    assert f"<td>{wall:.1f} s</td>" in view.table.value
    run_view = RunView(mixed / "aide")
    table = run_view.totals_table()
    assert table.at["wall time", "value"] == f"{run_view.run.totals['wall_s']:.1f} s"
    assert not long_numbers.search(table.to_string()) and not long_numbers.search(
        run_view.totals.value
    )


def test_a_sweep_view_stops_watching_a_sweep_that_no_longer_runs(tmp_path):
    """A sweep planned but not running (its driver stopped or was killed): pending runs, none in
    flight. The watch reads it for `idle_s` and ends, rather than following it for ever."""
    from innolab.sweep.engine import plan
    from innolab.viewer import SweepView

    spec = {"name": "idle", "base": {"task": "circle-packing-26", "agent": "baseline",
                                     "budget": "10s"}, "seeds": [0, 1]}
    _, folder, _ = plan(spec, tmp_path / "idle")
    view = SweepView(folder)
    assert "2 pending" in view.status.value
    calls = []
    original = view.refresh_status
    view.refresh_status = lambda: calls.append(1) or original()  # type: ignore[method-assign]
    thread = view.watch(interval_s=0.01, idle_s=0.1)
    thread.join(timeout=10)
    assert not thread.is_alive() and len(calls) >= 2


def test_a_sweep_view_reading_a_file_caught_mid_write_says_so_and_reads_again(tmp_path):
    from innolab.sweep.engine import plan
    from innolab.viewer import SweepView

    spec = {"name": "torn", "base": {"task": "circle-packing-26", "agent": "baseline",
                                     "budget": "10s"}, "seeds": [0]}
    _, folder, _ = plan(spec, tmp_path / "torn")
    view = SweepView(folder)
    shown: list[str] = []
    original = view.refresh_status

    def torn_once():
        if not shown:
            shown.append("torn")
            raise ValueError("Expecting value: line 1 column 1 (char 0)")
        shown.append(view.status.value)
        return original()

    view.refresh_status = torn_once  # type: ignore[method-assign]
    thread = view.watch(interval_s=0.01, idle_s=0.2)
    thread.join(timeout=10)
    assert not thread.is_alive() and len(shown) >= 2
    assert "could not be read" in shown[1] and "Expecting value" in shown[1]
    assert "1 pending" in view.status.value
