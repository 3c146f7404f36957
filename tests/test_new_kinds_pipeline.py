"""The two new kinds (prediction on hidden labels, graph colouring) go through everything a built-in
task goes through: the baseline runs them in both runtimes, they are scored on both novelty axes,
a sweep runs them, notebooks 21-25 read that sweep, the viewer shows a run, the frontier prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from innolab import notebooks
from innolab.paths import notebooks_dir
from tests.fake_llm import FakeLLM
from tests.test_analysis_sweeps import SWEEP_NOTEBOOKS

ROOT = Path(__file__).resolve().parent.parent
INNOLAB = Path(sys.executable).parent / "innolab"
TASKS = ("colouring-queen15-15", "mnist1d")


def innolab(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(INNOLAB), *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, check=False)


@pytest.mark.docker
@pytest.mark.parametrize("task", TASKS)
def test_the_baseline_runs_each_new_kind_in_docker_and_is_scored_on_both_axes(
        task, tmp_path, base_image):
    run_dir = tmp_path / "run"
    # a valid colouring comes in the first round; mnist1d's rounds import PyTorch and train
    budget = "30s" if task == "mnist1d" else "20s"
    done = innolab("run", "--agent", "baseline", "--task", task, "--budget", budget, "--runtime",
                   "docker", "--novelty", "ast", "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    score = json.loads((run_dir / "score.json").read_text())
    assert score["valid"] and score["novelty"] == score["novelty"] >= 0
    assert score["novelty_out"] == score["novelty_out"] >= 0  # not NaN
    config = json.loads((run_dir / "config.json").read_text())
    assert config["runtime"] == "docker" and config["image"] == "innolab/base:latest"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """A sweep of both new kinds: CodeAct at two temperatures on the scripted endpoint (the network
    boundary; it plays a circle packing, so these runs end invalid) and the baseline."""
    folder = tmp_path_factory.mktemp("sweep")
    spec = folder / "new-kinds.yaml"
    out = folder / "out"
    with FakeLLM() as server:
        spec.write_text(yaml.safe_dump({
            "name": "new-kinds",
            "base": {"agent": "codeact", "budget": "8s", "runtime": "local", "novelty": "ast",
                     "base_url": server.base_url, "model": "fake"},
            "grid": {"task": list(TASKS), "temperature": [0.25, 0.75]},
            # mnist1d's rounds import PyTorch and train; a valid colouring comes in the first
            "include": [{"agent": "baseline", "task": task,
                         "budget": "30s" if task == "mnist1d" else "15s", "base_url": None,
                         "model": None} for task in TASKS],
            "seeds": [0]}))
        done = innolab("sweep", "run", str(spec), "--workers", "2", "--output", str(out),
                       timeout=1800)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    return out


def test_a_sweep_runs_the_new_kinds_and_scores_both_axes(sweep):
    runs = pd.read_parquet(sweep / "runs.parquet")
    assert sorted(runs["task"]) == sorted(TASKS * 3) and runs["complete"].all()
    baseline = runs[runs["agent"] == "baseline"]
    assert len(baseline) == 2 and baseline["valid"].all()
    assert baseline["novelty"].notna().all() and baseline["novelty_out"].notna().all()
    colouring = baseline[baseline["task"] == "colouring-queen15-15"]
    assert (colouring["score"] >= 15).all() and (colouring["ratio"] <= 0).all()
    agents = runs[runs["agent"] == "codeact"]
    assert len(agents) == 4 and (agents[~agents["valid"]]["ratio"] == -1).all()
    trajectory = pd.read_parquet(sweep / "trajectory.parquet")
    assert set(baseline["config_id"]) <= set(trajectory["config_id"])


@pytest.mark.notebook
def test_notebooks_21_to_25_read_that_sweep(sweep, tmp_path):
    with notebooks.forked_kernels():  # one kernel server for the five
        for name in SWEEP_NOTEBOOKS:
            executed = tmp_path / f"{name}.ipynb"
            notebooks.execute(notebooks_dir() / f"{name}.ipynb", executed,
                              {"sweep_dir": str(sweep), "results_dir": str(tmp_path / "results"),
                               "figures_dir": str(tmp_path / "figures"), "n_resamples": 200})
            assert json.loads(executed.read_text())["metadata"]["papermill"]["exception"] is None


def test_the_viewer_exports_a_run_of_each_kind(sweep, tmp_path):
    for run in sorted((sweep / "runs").iterdir()):
        if not (run / "score.json").is_file():
            continue
        out = tmp_path / f"{run.name}.html"
        done = innolab("view", str(run), "--html", str(out))
        assert done.returncode == 0, done.stderr[-2000:]
        page = out.read_text()
        task = json.loads((run / "config.json").read_text())["task"]
        assert task in page and "<svg" in page


@pytest.mark.parametrize("task", [*TASKS, "colouring-queen27-27"])
def test_the_frontier_prints_the_dated_ledger(task):
    done = innolab("tasks", "frontier", task, "--json")
    assert done.returncode == 0, done.stderr
    frontier = json.loads(done.stdout)
    assert frontier["entries"] and all(e["date"] and e["source"] for e in frontier["entries"])
    if task == "colouring-queen27-27":
        assert frontier["v_star"] == 28 and frontier["bound"]["value"] == 27
    if task == "mnist1d":
        assert frontier["v_star"] == 0.988 and frontier["direction"] == "max"
