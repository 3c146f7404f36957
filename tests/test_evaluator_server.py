"""The hidden evaluator's fork server: every evaluation a new process that evaluated nothing before,
under its limits, killed at its time limit; a server is replaced when it dies or the environment
changes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from innolab.tasks import evaluator_server, load_task
from innolab.tasks.evaluation import evaluate
from innolab.tasks.solutions import solutions

TASKS = Path(__file__).resolve().parent / "data" / "plugin_tasks"

# appended to the family module of a copy of ruler-local: its check writes where it ran, and
# counts its calls on a module the server loaded (taskkit's core) and on the standard library's json
RECORD = """
import json as _json
import os as _os

from . import core as _core

_check = golomb_ruler


def golomb_ruler(data, marks):
    _core.CALLS = getattr(_core, "CALLS", 0) + 1
    _json.CALLS = getattr(_json, "CALLS", 0) + 1
    with open({record!r}, "a") as out:
        out.write(_json.dumps({{"pid": _os.getpid(), "ppid": _os.getppid(), "core": _core.CALLS,
                                "json": _json.CALLS, "sid": _os.getsid(0)}}) + "\\n")
        out.flush()
{then}
    return _check(data, marks)


CHECKS = ("golomb_ruler",)
"""


def ruler(tmp_path: Path, then: str = "") -> tuple[Path, Path]:
    """A copy of ruler-local whose check records itself (then runs `then`), and its record file."""
    folder = tmp_path / "ruler-local"
    shutil.copytree(TASKS / "ruler-local", folder)
    record = tmp_path / "record.jsonl"
    module = folder / "ruler.py"
    module.write_text(module.read_text() + RECORD.format(record=str(record), then=then))
    return folder, record


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def gone(pid: int, within_s: float = 30.0) -> bool:
    """Whether process `pid` has ended (waits for it up to `within_s`)."""
    deadline = time.monotonic() + within_s
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_each_evaluation_is_a_new_process_forked_from_a_server_that_evaluates_nothing(tmp_path):
    folder, record = ruler(tmp_path)
    task = load_task(folder)
    output = solutions(task)[0].output
    verdicts = [evaluate(task, output) for _ in range(3)]
    assert all(v.valid and v.score == 44.0 for v in verdicts), verdicts
    seen = records(record)
    server = evaluator_server._server
    assert server is not None and server.alive() and server.owner == os.getpid()
    assert len(seen) == 3 and len({r["pid"] for r in seen}) == 3
    assert all(r["ppid"] == server.process.pid != r["pid"] for r in seen)
    assert all(r["sid"] == r["pid"] for r in seen)  # each leads a session of its own
    # what one evaluation did to a module, its own or the standard library's, the next never sees
    assert [(r["core"], r["json"]) for r in seen] == [(1, 1)] * 3


def test_an_evaluation_past_its_time_limit_is_killed_and_reported(tmp_path):
    folder, record = ruler(tmp_path, then="    import time\n    time.sleep(600)")
    task = load_task(folder)
    verdict = evaluate(task, solutions(task)[0].output, timeout_s=2)
    assert not verdict.valid and verdict.errors == ["evaluation exceeded the time limit of 2 s"]
    (ran,) = records(record)
    assert gone(ran["pid"])


def test_an_evaluation_has_the_tasks_memory_limit(tmp_path):
    folder, record = ruler(tmp_path, then="    _hold = bytearray(8 * 1024 ** 3)")
    task = load_task(folder)
    verdict = evaluate(task, solutions(task)[0].output)
    assert not verdict.valid and verdict.errors == ["evaluator failed: MemoryError"], verdict
    (ran,) = records(record)
    assert ran["ppid"] == evaluator_server._server.process.pid


def test_a_dead_server_or_a_changed_environment_gets_a_new_server(tmp_path, monkeypatch):
    folder, record = ruler(tmp_path)
    task = load_task(folder)
    output = solutions(task)[0].output
    assert evaluate(task, output).valid
    first = evaluator_server._server
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait()
    assert evaluate(task, output).valid
    second = evaluator_server._server
    assert second is not first and second.alive()
    # an evaluation's environment is its caller's: a server started before a change is replaced
    monkeypatch.setenv("INNOLAB_TEST_EVALUATOR_ENV", "changed")
    assert evaluate(task, output).valid
    third = evaluator_server._server
    assert third is not second and third.env["INNOLAB_TEST_EVALUATOR_ENV"] == "changed"
    assert second.process.poll() is not None  # closed when replaced
    assert [r["ppid"] for r in records(record)] == [
        first.process.pid, second.process.pid, third.process.pid]


@pytest.mark.parametrize("task_id", ["circle-packing-26", "kissing-number-11", "mnist1d"])
def test_a_forked_evaluation_gives_a_new_workers_verdict(task_id):
    """Each known output of a task, forked and started as a new interpreter: the same verdict."""
    from innolab.tasks import get_task

    task = get_task(task_id)
    for solution in solutions(task):
        forked = evaluate(task, solution.output)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(evaluator_server, "evaluate", _no_server)
            cold = evaluate(task, solution.output)
        assert (forked.valid, forked.score, forked.errors) == (cold.valid, cold.score, cold.errors)


def _no_server(*args: object, **kwargs: object) -> None:
    raise evaluator_server.EvaluatorServerError("none here")
