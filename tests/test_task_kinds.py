"""Declared task kinds and sandbox abilities, and task schemes registered from above.

Both kinds of task are gym tasks, optional abilities have their defaults, the gym probes no
attribute, and the tasks hide no import of a package above them in a string.
"""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

import pytest

from innolab.expbench.data import ExpTask
from innolab.expbench.gym_task import WORKSPACE_RULES, ExpBenchGymTask
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.local import LocalSandbox
from innolab.gym.sandbox import ExecResult, Sandbox
from innolab.gym.task import GymTask
from innolab.gym.validator import LocalValidator
from innolab.tasks import TaskError, get_task
from innolab.tasks.model import Task
from innolab.tasks.registry import SCHEME_GROUP, resolve_task_options, scheme_of, schemes

ROOT = Path(__file__).resolve().parent.parent
PROBE = re.compile(
    r"\b(?:getattr|hasattr)\(\s*(?:self\.)?(?:task|sandbox)\b|type:\s*ignore\[attr-defined\]"
)


def exp_task() -> ExpTask:
    return ExpTask(
        conference="confA",
        paper_id="111",
        index=0,
        question="Does lr matter?",
        method="vary lr",
        agent_instructions="",
        expected_outcome="",
        design={},
        requirements=[],
        source=[],
        masked_source=None,
        mode=None,
        no_answer=None,
        subsection=None,
        repository=None,
    )


class TinyTask(GymTask):
    """A task defined in the test: it declares only what the protocol requires."""

    id = "tiny"
    description = "Write 1 to answer.txt."
    direction = "max"
    compute = "cpu"

    def visible_files(self) -> dict[str, bytes]:
        return {"description.md": self.description.encode(), "data/input.txt": b"1\n"}

    def validator_files(self) -> dict[str, bytes]:
        return {"validate.py": b'print(\'{"valid": true, "score": 1.0, "errors": []}\')\n'}


class RecordingSandbox(Sandbox):
    """A sandbox that declares only the required operations, recording each file written."""

    runtime = "recording"
    tmp_dir = "/tmp"

    def __init__(self) -> None:
        self.written: list[str] = []

    def exec(self, command: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        return ExecResult(0, "", "")

    def read_file(self, path: str, max_bytes: int = 0) -> bytes:
        return b""

    def write_file(self, path: str, content: bytes) -> None:
        self.written.append(path)

    def snapshot(self) -> bytes:
        return b""

    def restore(self, snapshot: bytes) -> None:
        return None

    def close(self) -> None:
        return None


def test_both_kinds_of_task_are_gym_tasks():
    improvable = get_task("circle-packing-26")
    expbench = ExpBenchGymTask(exp_task(), Path("clone"))
    assert isinstance(improvable, GymTask) and isinstance(expbench, GymTask)
    assert improvable.compute == improvable.spec.compute == "cpu"
    assert expbench.compute == "gpu-if-available" and expbench.direction == "max"
    assert expbench.id == "expbench:confA/111/0"


def test_an_object_lacking_a_required_part_is_no_gym_task():
    class NoValidator:
        id, description, direction, compute, workspace_rules = "x", "d", "max", "cpu", None

        def visible_files(self) -> dict[str, bytes]:
            return {}

        def collect(self, sandbox, run_dir, config) -> list[str]:
            return []

    assert not isinstance(NoValidator(), GymTask)


def test_optional_task_abilities_have_their_defaults(tmp_path):
    improvable = get_task("circle-packing-26")
    assert improvable.workspace_rules is None and Task.workspace_rules is None
    assert improvable.collect(RecordingSandbox(), tmp_path, None) == []
    tiny = TinyTask()
    assert tiny.workspace_rules is None and tiny.collect(RecordingSandbox(), tmp_path, None) == []
    assert ExpBenchGymTask(exp_task(), Path("clone")).workspace_rules == WORKSPACE_RULES
    assert list(tmp_path.iterdir()) == []  # the defaults keep nothing


def test_the_default_write_files_writes_each_file():
    sandbox = RecordingSandbox()
    sandbox.write_files({"a.txt": b"a", "b/c.txt": b"c"})
    assert sandbox.written == ["a.txt", "b/c.txt"]
    assert sandbox.client is None and sandbox.image is None and isinstance(sandbox, Sandbox)


def test_the_gym_opens_any_gym_task_through_the_declared_abilities():
    sandbox = open_sandbox(TinyTask(), "local")
    try:
        assert isinstance(sandbox, LocalSandbox) and isinstance(sandbox, Sandbox)
        assert sandbox.client is None and sandbox.image is None
        assert sandbox.read_file("data/input.txt") == b"1\n"
        validator = open_validator(TinyTask(), sandbox)
        try:
            assert isinstance(validator, LocalValidator)
            assert validator.check(b"{}", timeout_s=30) == {
                "valid": True,
                "score": 1.0,
                "errors": [],
            }
        finally:
            validator.close()
    finally:
        sandbox.close()


def probes(source: str) -> list[str]:
    """The lines of a source text that probe a task or a sandbox for an attribute."""
    return [line.strip() for line in source.splitlines() if PROBE.search(line)]


def test_the_gym_probes_no_task_or_sandbox_attribute():
    planted = (
        'rules = getattr(task, "workspace_rules", None)\nif hasattr(sandbox, "write_files"):\n'
    )
    assert len(probes(planted)) == 2  # the check sees a probe
    assert probes("x = sandbox.client  # type: ignore[attr-defined]\n")
    found = {
        str(p.relative_to(ROOT)): probes(p.read_text(encoding="utf-8"))
        for p in sorted((ROOT / "innolab" / "gym").rglob("*.py"))
    }
    assert {path: lines for path, lines in found.items() if lines} == {}


def test_task_schemes_are_registered_from_above():
    assert SCHEME_GROUP == "innolab.task_schemes"
    assert schemes()["expbench"].value == "innolab.expbench.gym_task"
    assert scheme_of("expbench:confA/111/0") == "expbench"
    assert scheme_of("nosuch:x") is None and scheme_of("circle-packing-26") is None
    with pytest.raises(
        TaskError,
        match="unknown task 'nosuch:x'.*no task scheme 'nosuch' is registered"
        r" \(registered: \['expbench'\]; a scheme is an entry point of the group"
        " innolab.task_schemes",
    ):
        get_task("nosuch:x")
    with pytest.raises(TaskError) as unknown:
        get_task("no-such-task")
    assert "scheme" not in str(unknown.value)
    with pytest.raises(TaskError, match="task_options: task 'circle-packing-26' takes none"):
        resolve_task_options("circle-packing-26", {"repo": "x"})
    with pytest.raises(ValueError, match=r"task_options\.repo"):
        get_task("expbench:confA/111/0")  # the registered scheme's own rule


def layers_above(package: str) -> list[str]:
    """The packages import-linter's layers contract puts above `package` (.importlinter)."""
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    layers = [
        line.strip()
        for line in config["importlinter:contract:layers"]["layers"].splitlines()
        if line.strip()
    ]
    index = next(i for i, layer in enumerate(layers) if package in layer.split(" | "))
    return [name.strip() for layer in layers[:index] for name in layer.split("|")]


def string_imports(source: str, above: list[str]) -> list[str]:
    """The string constants of a source text that name a module of a package above.

    Such a constant is an import hidden in a string, which import-linter cannot see.
    """
    names = [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    pattern = re.compile(rf"(?:{'|'.join(re.escape(a) for a in above)})(?:\.\w+)*(?::\w+)?")
    return [name for name in names if pattern.fullmatch(name.strip())]


def test_tasks_hide_no_import_of_a_package_above_them_in_a_string():
    above = layers_above("innolab.tasks")
    assert {"innolab.gym", "innolab.expbench", "innolab.cli"} <= set(above)
    planted = (
        'SCHEMES = {"expbench": "innolab.expbench.gym_task"}\n'
        'importlib.import_module("innolab.gym.run")\n'
    )
    assert string_imports(planted, above) == ["innolab.expbench.gym_task", "innolab.gym.run"]
    sources = sorted((ROOT / "innolab" / "tasks").rglob("*.py"))
    assert sources
    hidden = {
        str(p.relative_to(ROOT)): string_imports(p.read_text(encoding="utf-8"), above)
        for p in sources
    }
    assert {path: names for path, names in hidden.items() if names} == {}
    assert [
        str(p.relative_to(ROOT)) for p in sources if "expbench" in p.read_text(encoding="utf-8")
    ] == []
