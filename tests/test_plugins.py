"""Agents from other distributions: a third party's agent, installed beside innolab (no file of
innolab changed), is listed, runs, takes its option from the CLI and a sweep spec, and is a column;
a broken entry point is listed with its error and naming it is a clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "data" / "plugins" / "innolab-example-agent"
INNOLAB = Path(sys.executable).parent / "innolab"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example distribution, built and installed by pip into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--disable-pip-version-check", "--target", str(target), str(PLUGIN)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (target / "innolab_example_agent-0.2.0.dist-info" / "entry_points.txt").is_file()
    return target


def innolab(site: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    env = {k: v for k, v in env.items() if not k.startswith("INNOLAB_LLM_")}
    return subprocess.run([str(INNOLAB), *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout, check=False)


def test_a_third_partys_agent_is_listed_with_its_option_and_distribution(site):
    listed = {e["name"]: e for e in json.loads(innolab(site, "agents", "list", "--json").stdout)}
    walker = listed["grid-walker"]
    assert (walker["mode"], walker["needs_model"], walker["distribution"], walker["version"]) == (
        "no model", False, "innolab-example-agent", "0.2.0")
    assert walker["options"]["rows"]["default"] == 5 and not walker["broken"]
    assert {"aide", "mlab", "codeact", "baseline"} <= set(listed)  # the built-ins, the same way
    assert all(listed[n]["distribution"] == "innolab" for n in ("aide", "baseline"))
    broken = listed["broken-walker"]
    assert broken["broken"] and "ModuleNotFoundError" in broken["error"]
    text = innolab(site, "agents", "list").stdout
    assert "broken-walker BROKEN" in text and "--rows (int, default 5)" in text


def test_naming_a_broken_agent_in_a_run_is_a_clear_error(site):
    done = innolab(site, "run", "--agent", "broken-walker", "--task", "circle-packing-26")
    assert done.returncode == 2
    assert "agent 'broken-walker'" in done.stderr and "does not load" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_third_partys_agent_runs_with_its_option_and_is_a_column(site, tmp_path):
    run_dir = tmp_path / "runs" / "walker"
    done = innolab(site, "run", "--agent", "grid-walker", "--task", "circle-packing-26",
                   "--rows", "4", "--budget", "60s", "--novelty", "ast", "--run-dir",
                   str(run_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["policy"] == "innolab_example_agent:GridWalker"
    assert config["policy_args"] == {"rows": 4} and config["llm"] is None
    score = json.loads((run_dir / "score.json").read_text())
    assert score["valid"] and score["novelty"] is not None
    table = innolab(site, "sweep", "collect", str(tmp_path / "runs"))
    assert table.returncode == 0, table.stderr[-2000:]
    code = ("import pandas as pd, sys; t = pd.read_parquet(sys.argv[1]); "
            "print(t.loc[0, 'rows'], t.loc[0, 'agent'])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    shown = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs" / "runs.parquet")],
                           capture_output=True, text=True, env=env, check=True)
    assert shown.stdout.split() == ["4", "grid-walker"]


def test_a_sweep_spec_varies_a_third_partys_option(site, tmp_path):
    spec = tmp_path / "walker.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "walker", "base": {"task": "circle-packing-26", "agent": "grid-walker",
                                   "budget": "30s", "novelty": "none"},
        "grid": {"rows": [4, 5]}}))
    done = innolab(site, "sweep", "run", str(spec), "--workers", "1", "--output",
                   str(tmp_path / "sweep"), timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    code = ("import pandas as pd, sys; t = pd.read_parquet(sys.argv[1]); "
            "print(sorted(t['rows'].tolist()), t['valid'].all())")
    shown = subprocess.run([sys.executable, "-c", code, str(tmp_path / "sweep" / "runs.parquet")],
                           capture_output=True, text=True, env=env, check=True)
    assert shown.stdout.strip() == "[4, 5] True"


def test_without_the_distribution_innolab_knows_no_such_agent():
    from innolab.agents import registry

    assert "grid-walker" not in registry.registered(reload=True)
