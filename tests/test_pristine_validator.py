"""Dev scores the agent cannot steer: the validate and submit tools use a pristine checker, in both runtimes."""

import json
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.gym.policy import RunConfig
from tests.gym_policies import GRID

FAKE_VALIDATOR = 'import json\nprint(json.dumps({"valid": True, "score": 99.0, "errors": []}))\n'
FAKE_CORE = "def check(*args, **kwargs):\n    return [], 99.0\n"
BAD_PACKING = json.dumps({"circles": [[0.1 + 0.03 * i, 0.5, 0.09] for i in range(26)]})

TAMPERING = [
    ["write_file", {"path": "validate.py", "content": FAKE_VALIDATOR}],
    ["write_file", {"path": "taskkit/core.py", "content": FAKE_CORE}],
    ["bash", {"command": "python3 validate.py anything.json", "timeout": 10}],  # the workspace copy is fooled
    ["write_file", {"path": "bad.json", "content": BAD_PACKING}],
    ["validate", {"path": "bad.json"}],
    ["submit", {"path": "bad.json"}],
    ["write_file", {"path": "good.json", "content": json.dumps({"circles": GRID})}],
    ["submit", {"path": "good.json"}],
]


def tampered_run(tmp_path: Path, runtime: str, image: str | None = None) -> tuple[list[dict], dict]:
    config = RunConfig(task="circle-packing-26", policy="tests.gym_policies:CallPolicy",
                       policy_args={"calls": TAMPERING},
                       runtime=runtime, image=image, max_steps=20, wall_clock_s=300, agent="tamperer")
    outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    return traces.read_events(Path(outcome["run_dir"])), outcome


def check_pristine(events: list[dict], outcome: dict) -> None:
    results = [e for e in events if e["type"] == "tool_result"]
    assert '"score": 99.0' in results[2]["output"]  # the agent's own copy now says what the agent wants
    validations = [e for e in events if e["type"] == "validation"]
    assert validations[0]["valid"] is False and validations[0]["score"] is None
    assert "overlap" in " ".join(validations[0]["errors"])
    submissions = [e for e in events if e["type"] == "submission"]
    assert [s["dev_valid"] for s in submissions] == [False, True]
    assert submissions[0]["dev_score"] is None and submissions[1]["dev_score"] == pytest.approx(26 / 12, rel=1e-9)
    finished = next(e for e in events if e["type"] == "run_finished")
    assert finished["final_submission"] == submissions[1]["file"]  # chosen by the pristine dev score
    assert outcome["valid"] and outcome["score"] == pytest.approx(26 / 12, rel=1e-9)
    assert all(e.get("score") != 99.0 for e in events if e["type"] in ("validation", "submission", "score"))


def test_tampered_validator_steers_nothing_local(tmp_path):
    events, outcome = tampered_run(tmp_path, "local")
    check_pristine(events, outcome)


def test_tampered_validator_steers_nothing_docker(tmp_path, docker_client, base_image):
    events, outcome = tampered_run(tmp_path, "docker", base_image)
    check_pristine(events, outcome)
    assert not [c for c in docker_client.containers.list(all=True) if c.labels.get("innolab") == "validator"]
