"""The baseline policy: short runs per problem family, refusals, resume, tables, Docker."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from innolab import results, runner, traces
from innolab.agents.baseline import (
    FAMILIES,
    BaselineError,
    BaselinePolicy,
    BaselineState,
    family_of,
    round_limit,
    round_seed,
    template,
)
from innolab.agents.registry import build_policy, policies
from innolab.gym.policy import Observation
from innolab.gym.run import execute
from innolab.gym.tools import ToolResult
from innolab.runspec import SettingsError
from innolab.tasks.registry import get_task

ROOT = Path(__file__).resolve().parents[1]
# one built-in task per family; True: a continuous family (at least two improving candidates)
PER_FAMILY = {
    "circles": ("circle-packing-26", True),
    "points": ("min-max-distance-ratio-16", True),
    "steps": ("first-autocorrelation", True),
    "kissing": ("kissing-number-11", False),
    "jobshop": ("job-shop-taillard-41-50", False),
    "colouring": ("colouring-queen15-15", False),  # a number of colours
    "prediction": ("mnist1d", False),  # an accuracy on 500 development labels
}


def submissions(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()
            if json.loads(line)["type"] == "submission"]


def test_every_family_has_a_template_and_every_builtin_task_a_family():
    assert set(PER_FAMILY) == set(FAMILIES)
    for family in FAMILIES:
        assert "def main" in template(family)
    for path in sorted((ROOT / "innolab" / "tasks" / "builtin").iterdir()):
        if (path / "task.yaml").is_file():
            assert family_of(get_task(path.name)) in FAMILIES


def test_baseline_is_registered_beside_the_scaffolds_and_resolves_without_a_model():
    assert policies()["baseline"] == "innolab.agents.baseline:BaselinePolicy"
    config = runner.agent_config("baseline", "kissing-number-11", seed=7, budget_s=10)
    assert config.llm is None and config.endpoint is None and config.model_reported == "none"
    assert config.policy_args == {"family": "kissing", "seed": 7}
    assert runner.config_id(config) == runner.config_id(
        runner.agent_config("baseline", "kissing-number-11", seed=7, budget_s=10))


def test_model_settings_and_options_given_to_the_baseline_are_refused_by_name():
    with pytest.raises(SettingsError, match=r"model: the baseline has no model.*base_url"):
        runner.agent_config("baseline", "kissing-number-11", model="gpt-x",
                            settings={"base_url": "http://localhost:1/v1"})
    with pytest.warns(UserWarning, match="no model: temperature ignored"):
        quiet = runner.agent_config("baseline", "kissing-number-11", temperature=0.5)
    assert runner.config_id(quiet) == runner.config_id(
        runner.agent_config("baseline", "kissing-number-11"))
    with pytest.raises(SettingsError, match=r"innovation_prompt"):
        runner.agent_config("baseline", "kissing-number-11", innovation_prompt=True)
    refused = r"agent_options: baseline takes no option num_drafts \(it takes: none\)"
    with pytest.raises(SettingsError, match=refused):
        runner.agent_config("baseline", "kissing-number-11", num_drafts=3)
    assert runner.agent_config("baseline", "kissing-number-11", model="none").llm is None


def test_a_family_without_a_template_is_refused_naming_it():
    with pytest.raises(BaselineError, match=r"family 'tilings'.*circles.*points.*steps"):
        template("tilings")
    with pytest.raises(BaselineError, match=r"family 'tilings'"):
        BaselinePolicy(family="tilings")

    class OtherBenchmarkTask:
        id = "expbench:x/y/0"

    with pytest.raises(BaselineError, match=r"expbench:x/y/0.*has none"):
        family_of(OtherBenchmarkTask())


def test_round_seeds_and_time_limits():
    assert round_seed(0, 1) != round_seed(0, 2) != round_seed(1, 2)
    assert round_seed(3, 4) == round_seed(3, 4) and 0 <= round_seed(3, 4) < 2**31
    assert round_limit(4.0) is None  # no room for a round, its validation and the submission
    assert round_limit(10.0) == pytest.approx(2.5) and round_limit(1e6) == 60.0
    assert round_limit(None) == 10.0


def test_the_state_round_trips_and_a_malformed_one_is_named():
    policy = BaselinePolicy(family="circles", seed=1)
    action = policy.step(Observation(0, "", [], 30.0))
    assert [c.name for c in action.tool_calls] == ["write_file"]
    action = policy.step(Observation(1, "", [], 28.0))
    command = action.tool_calls[0].arguments["command"]
    assert "--seed" in command and "--out candidate-0.json" in command
    again = BaselinePolicy(family="circles", seed=1)
    again.load_state(json.loads(json.dumps(policy.state())))
    assert again.state() == policy.state() and again.memory.candidate == "candidate-0.json"
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['nodes'\]"):
        again.load_state({"nodes": []})
    with pytest.raises(ValueError, match="field 'phase'"):
        BaselineState.from_json({"phase": "dream"})


@pytest.mark.parametrize("family", sorted(PER_FAMILY))
def test_a_short_run_reaches_a_valid_submission(family, tmp_path):
    task, continuous = PER_FAMILY[family]
    # prediction's round imports PyTorch and trains: on a loaded machine 10 s can end before its
    # first candidate (seen in a CI run beside other work), so it has more room
    budget = 40 if family == "prediction" else 16 if continuous else 10
    config = runner.agent_config("baseline", task, seed=1, budget_s=budget)
    outcome = execute(runner.create_run(config, tmp_path / "run"), build_policy,
                      show_progress=False)
    assert outcome["dev_valid"], outcome
    records = submissions(tmp_path / "run")
    assert all(r["dev_valid"] for r in records)
    scores = [r["dev_score"] for r in records]
    assert scores == sorted(scores, reverse=get_task(task).direction == "min")  # each improves
    if continuous:
        assert len(records) >= 2, scores
    source = (tmp_path / "run" / records[-1]["source"]).read_text()
    assert template(family).splitlines()[0] in source and "# ran as: python3" in source


def test_a_killed_run_resumes_from_its_checkpoint(tmp_path):
    run_dir = runner.create_run(
        runner.agent_config("baseline", "heilbronn-triangle-11", seed=2, budget_s=12),
        tmp_path / "run")
    process = subprocess.Popen([sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"],
                               cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    state = run_dir / "checkpoint" / "state.json"
    deadline = time.time() + 60
    while time.time() < deadline and not (
            state.is_file() and json.loads(state.read_text())["step"] >= 3):
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    killed_at = json.loads(state.read_text())["step"]
    assert killed_at >= 3
    outcome = runner.resume(run_dir, novelty=None, show_progress=False)
    frame = traces.load(run_dir)
    assert "run_resumed" in set(frame["type"])
    assert frame["seq"].tolist() == list(range(len(frame)))
    assert outcome["valid"] and outcome["dev_valid"]
    steps = frame[frame["type"] == "checkpoint"]["step"].tolist()
    assert steps == sorted(set(steps)) and max(steps) > killed_at


def test_the_runs_table_names_the_agent_baseline_and_the_model_none(tmp_path):
    config = runner.agent_config("baseline", "kissing-number-11", seed=0, budget_s=10)
    outcome = runner.start(config, tmp_path / "runs" / "b", novelty="ast", show_progress=False)
    assert outcome["valid"]
    runs, trajectory = results.build(tmp_path / "runs")
    row = runs.iloc[0]
    assert row["agent"] == "baseline" and row["model"] == "none" and row["backbone"] is None
    assert row["valid"] and row["temperature"] is None
    assert len(trajectory) >= 1


@pytest.mark.docker
def test_a_docker_run_reaches_a_valid_submission(tmp_path, base_image):
    config = runner.agent_config("baseline", "circles-in-rectangle-21", seed=3, budget_s=20,
                                 runtime="docker", image=base_image)
    outcome = execute(runner.create_run(config, tmp_path / "run"), build_policy,
                      show_progress=False)
    assert outcome["dev_valid"], outcome
    assert json.loads((tmp_path / "run" / "config.json").read_text())["runtime"] == "docker"
    assert len(submissions(tmp_path / "run")) >= 1


def test_a_prior_solution_runs_as_the_first_round_and_is_submitted_as_itself():
    prior = "import json\njson.dump({'circles': []}, open('submission.json', 'w'))\n"
    config = runner.agent_config("baseline", "circle-packing-26", initial_solution=prior)
    assert config.policy_args["initial_solution"] == prior
    assert config.prior_solution["code"] == prior
    policy = BaselinePolicy(**config.policy_args)
    writes = policy.step(Observation(0, "", [], 30.0)).tool_calls
    assert [c.arguments["path"] for c in writes] == ["baseline_circles.py", "prior_solution.py"]
    run = policy.step(Observation(1, "", [], 29.0)).tool_calls[0]
    assert "python3 prior_solution.py && mv submission.json candidate-0.json" in run.arguments[
        "command"]
    ran = ToolResult("r0", "bash", "[exit code 0]", True)
    assert policy.step(Observation(2, "", [ran], 28.0)).tool_calls[0].name == "validate"
    verdict = {"valid": True, "score": 2.0, "errors": []}
    checked = ToolResult("r0-v", "validate", "", True, extra={"verdict": verdict})
    calls = policy.step(Observation(3, "", [checked], 27.0)).tool_calls
    assert [c.name for c in calls] == ["submit", "bash"] and calls[0].source == prior
    assert "--warm candidate-0.json" in calls[1].arguments["command"]
