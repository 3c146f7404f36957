"""Dev scores the agent cannot steer: the validate and submit tools use a pristine checker, in both
runtimes."""

import json
import os
import shlex
from contextlib import contextmanager
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.gym.factory import open_validator
from innolab.gym.local import LocalSandbox
from innolab.gym.policy import RunConfig
from innolab.gym.tools import Toolbox, ToolCall
from innolab.gym.validator import DockerValidator, LocalValidator
from innolab.tasks import get_task
from tests.gym_policies import GRID

# the scripted policies are registered agents of the tests' own (the gym builds only those)
pytestmark = pytest.mark.usefixtures("test_agents")

FAKE_VALIDATOR = 'import json\nprint(json.dumps({"valid": True, "score": 99.0, "errors": []}))\n'
FAKE_CORE = "def check(*args, **kwargs):\n    return [], 99.0\n"
BAD_PACKING = json.dumps({"circles": [[0.1 + 0.03 * i, 0.5, 0.09] for i in range(26)]})

TAMPERING = [
    ["write_file", {"path": "validate.py", "content": FAKE_VALIDATOR}],
    ["write_file", {"path": "taskkit/core.py", "content": FAKE_CORE}],
    [
        "bash",
        {"command": "python3 validate.py anything.json", "timeout": 10},
    ],  # the workspace copy is fooled
    ["write_file", {"path": "bad.json", "content": BAD_PACKING}],
    ["validate", {"path": "bad.json"}],
    ["submit", {"path": "bad.json"}],
    ["write_file", {"path": "good.json", "content": json.dumps({"circles": GRID})}],
    ["submit", {"path": "good.json"}],
]


def tampered_run(
    tmp_path: Path, runtime: str, image: str | None = None
) -> tuple[list[traces.AnyEvent], dict]:
    config = RunConfig(
        task="circle-packing-26",
        policy="tests.gym_policies:CallPolicy",
        policy_args={"calls": TAMPERING},
        runtime=runtime,
        image=image,
        max_steps=20,
        wall_clock_s=300,
        agent="scripted-calls",  # the tamperer, a registered test agent
    )
    outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    return traces.read_events(Path(outcome["run_dir"])), outcome


def check_pristine(events: list[traces.AnyEvent], outcome: dict) -> None:
    results = [e for e in events if e.type == "tool_result"]
    assert (
        '"score": 99.0' in results[2].output
    )  # the agent's own copy now says what the agent wants
    validations = [e for e in events if e.type == "validation"]
    assert validations[0].valid is False and validations[0].score is None
    assert "overlap" in " ".join(validations[0].errors)
    submissions = [e for e in events if e.type == "submission"]
    assert [s.dev_valid for s in submissions] == [False, True]
    assert submissions[0].dev_score is None and submissions[1].dev_score == pytest.approx(
        26 / 12, rel=1e-9
    )
    finished = next(e for e in events if e.type == "run_finished")
    assert finished.final_submission == submissions[1].file  # chosen by the pristine dev score
    assert outcome["valid"] and outcome["score"] == pytest.approx(26 / 12, rel=1e-9)
    assert all(e.score != 99.0 for e in events if e.type in ("validation", "score"))
    assert all(e.dev_score != 99.0 for e in events if e.type == "submission")


def test_tampered_validator_steers_nothing_local(tmp_path):
    events, outcome = tampered_run(tmp_path, "local")
    check_pristine(events, outcome)


@pytest.mark.docker
def test_tampered_validator_steers_nothing_docker(tmp_path, docker_client, base_image):
    events, outcome = tampered_run(tmp_path, "docker", base_image)
    check_pristine(events, outcome)
    assert not [
        c for c in docker_client.containers.list(all=True) if c.labels.get("innolab") == "validator"
    ]


# ---------------------------------------------------- the checker's folder, attacked from the shell

GOOD = json.dumps({"circles": GRID})
ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0, reason="a separate user for the agent needs innolab to run as root"
)


def attack(validator_root: Path) -> str:
    """The agent's shell: make the validator's folder writable, then overwrite (or plant) its
    validate.py."""
    fake = shlex.quote(FAKE_VALIDATOR)
    return (
        f'V={shlex.quote(str(validator_root))}; chmod -R u+w "$V"; '
        f'for f in "$V/checker/validate.py" "$V/validate.py" $(find "$V" -name validate.py); do '
        f'mkdir -p "$(dirname "$f")" && printf \'%s\' {fake} > "$f" && echo "overwrote $f"; '
        "done; true"
    )


@contextmanager
def local_toolbox(separate_user: bool):
    task = get_task("circle-packing-26")
    sandbox = LocalSandbox(separate_user=separate_user)
    validator = open_validator(task, sandbox)
    toolbox = Toolbox(sandbox, validator)
    try:
        for name, content in task.visible_files().items():
            sandbox.write_file(name, content)
        for name, content in (("good.json", GOOD), ("bad.json", BAD_PACKING)):
            toolbox.run(ToolCall(name, "write_file", {"path": name, "content": content}), 10)
        yield sandbox, validator, toolbox
    finally:
        toolbox.close()
        sandbox.close()
        validator.close()


def dev_scores(toolbox: Toolbox) -> list[tuple[bool, float | None]]:
    verdicts = [
        toolbox.run(ToolCall(f"v-{p}", "validate", {"path": p}), 60).extra["verdict"]
        for p in ("good.json", "bad.json")
    ]
    return [(v["valid"], v["score"]) for v in verdicts]


@pytest.mark.parametrize("separate_user", [pytest.param(True, marks=ROOT_ONLY), False])
def test_chmod_and_overwrite_from_the_agents_shell_steers_nothing_local(separate_user):
    with local_toolbox(separate_user) as (sandbox, validator, toolbox):
        before = dev_scores(toolbox)
        assert before[0] == (True, pytest.approx(26 / 12, rel=1e-9)) and before[1] == (False, None)
        done = toolbox.run(ToolCall("attack", "bash", {"command": attack(validator.root)}), 30)
        if separate_user:  # the agent's user cannot enter innolab's folder, let alone change it
            assert sandbox.uid is not None and "overwrote" not in done.output
            assert "Operation not permitted" in done.output or "Permission denied" in done.output
        else:  # same user: the attack writes, and the next check copies the checker afresh anyway
            assert (
                "overwrote" in done.output
                and (validator.root / "checker" / "validate.py").is_file()
            )
        assert dev_scores(toolbox) == before
        assert (
            toolbox.run(ToolCall("s", "submit", {"path": "good.json"}), 60).extra["verdict"][
                "score"
            ]
            == before[0][1]
        )


@ROOT_ONLY
def test_a_racing_writer_never_reaches_the_checks_copy():
    """A background loop of the agent's keeps overwriting every copy it can find while checks
    run."""
    with local_toolbox(separate_user=True) as (_, validator, toolbox):
        loop = (
            f'V={shlex.quote(str(validator.root))}; (while true; do for d in "$V"/check-*; do '
            f"printf '%s' {shlex.quote(FAKE_VALIDATOR)} > \"$d/checker/validate.py\"; "
            "done 2>/dev/null; "
            "done) >/dev/null 2>&1 & echo started"
        )
        assert "started" in toolbox.run(ToolCall("loop", "bash", {"command": loop}), 10).output
        assert all(
            dev_scores(toolbox) == [(True, pytest.approx(26 / 12, rel=1e-9)), (False, None)]
            for _ in range(3)
        )


def test_a_copy_altered_before_use_is_refused(monkeypatch):
    """The hash check itself: a copy changed after it is written and before it runs is not run."""
    validator = LocalValidator(get_task("circle-packing-26").validator_files())
    write = LocalValidator._copy

    def copy_then_alter(self, folder: Path) -> None:
        write(self, folder)
        (folder / "checker" / "validate.py").write_text(FAKE_VALIDATOR)

    try:
        assert validator.check(GOOD.encode(), 60)["valid"]
        monkeypatch.setattr(LocalValidator, "_copy", copy_then_alter)
        verdict = validator.check(GOOD.encode(), 60)
        assert verdict["valid"] is False and verdict["score"] is None
        assert "validate.py" in verdict["errors"][0] and "altered" in verdict["errors"][0]
        assert [p.name for p in validator.root.iterdir()] == [
            ".innolab-owner"
        ]  # each check's folder is gone
    finally:
        validator.close()
    assert not validator.root.exists()


def test_a_check_after_close_is_an_error_and_leaves_no_folder():
    from innolab.gym.sandbox import SandboxError

    validator = LocalValidator(get_task("circle-packing-26").validator_files())
    validator.close()
    with pytest.raises(SandboxError, match="closed"):
        validator.check(GOOD.encode(), 60)
    assert not validator.root.exists()  # not recreated


@pytest.mark.docker
def test_a_copy_altered_before_use_is_refused_docker(docker_client, base_image):
    task = get_task("circle-packing-26")
    validator = DockerValidator(task.validator_files(), base_image, docker_client)
    assert validator.check(GOOD.encode(), 60)["valid"]
    validator.files["validate.py"] = (
        FAKE_VALIDATOR.encode()
    )  # what reaches the container is not what was hashed
    verdict = validator.check(GOOD.encode(), 60)
    assert verdict["valid"] is False and "altered" in verdict["errors"][0]
