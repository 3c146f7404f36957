"""The hidden evaluator's fork server: every evaluation a new process that evaluated nothing before,
as a new worker would run it (its caller's process group, working folder and environment, the
task's limits), killed at its time limit, its exit status reported; a server is replaced when it
dies, falls out of step or the environment changes, and a fork of its owner starts its own."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from innolab.tasks import evaluator_server, load_task
from innolab.tasks.evaluation import evaluate
from innolab.tasks.solutions import solutions

TASKS = Path(__file__).resolve().parent / "data" / "plugin_tasks"
ENV = "INNOLAB_TEST_EVALUATOR_ENV"

# appended to the family module of a copy of ruler-local: its check writes where and how it ran, and
# counts its calls on a module the server loaded (taskkit's core) and on the standard library's json
RECORD = """
import json as _json
import os as _os
import resource as _resource

from . import core as _core

_check = golomb_ruler


def golomb_ruler(data, marks):
    _core.CALLS = getattr(_core, "CALLS", 0) + 1
    _json.CALLS = getattr(_json, "CALLS", 0) + 1
    with open({record!r}, "a") as out:
        out.write(_json.dumps({{
            "pid": _os.getpid(), "ppid": _os.getppid(), "pgid": _os.getpgid(0),
            "core": _core.CALLS, "json": _json.CALLS, "cwd": _os.getcwd(),
            "env": _os.environ.get({env!r}), "memory": _resource.getrlimit(_resource.RLIMIT_AS),
            "cpu": _resource.getrlimit(_resource.RLIMIT_CPU)}}) + "\\n")
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
    module.write_text(module.read_text() + RECORD.format(record=str(record), env=ENV, then=then))
    return folder, record


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def gone(pid: int, within_s: float = 30.0) -> bool:
    """Whether process `pid` has ended and been reaped (waits for it up to `within_s`)."""
    deadline = time.monotonic() + within_s
    while Path(f"/proc/{pid}").exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def ended(pid: int, within_s: float = 30.0) -> bool:
    """Whether process `pid` has ended, reaped or not (waits for it up to `within_s`)."""
    import psutil

    deadline = time.monotonic() + within_s
    while True:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def cold(task, submission, **kwargs):
    """The verdict of a worker started as a new interpreter (where no server answers)."""
    def no_server(*args: object, **kwargs: object) -> None:
        raise evaluator_server.EvaluatorServerError("none here")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluator_server, "evaluate", no_server)
        return evaluate(task, submission, **kwargs)


def test_each_evaluation_is_a_new_process_forked_from_a_server_that_evaluates_nothing(
        tmp_path, monkeypatch):
    folder, record = ruler(tmp_path)
    task = load_task(folder)
    output = solutions(task)[0].output
    monkeypatch.chdir(tmp_path)
    verdicts = [evaluate(task, output) for _ in range(3)]
    assert all(v.valid and v.score == 44.0 for v in verdicts), verdicts
    seen = records(record)
    server = evaluator_server._server
    assert server is not None and server.alive() and server.owner == os.getpid()
    assert len(seen) == 3 and len({r["pid"] for r in seen}) == 3
    assert all(r["ppid"] == server.process.pid != r["pid"] for r in seen)
    # what one evaluation did to a module, its own or the standard library's, the next never sees
    assert [(r["core"], r["json"]) for r in seen] == [(1, 1)] * 3
    # as a worker started by its caller: the caller's process group and working folder, the
    # task's limits (address space in MiB, CPU time of the time limit)
    limits = task.spec.limits
    memory = limits.eval_memory_mb * 1024 * 1024
    cpu = int(limits.eval_timeout_s) + 1
    for ran in seen:
        assert ran["pgid"] == os.getpgid(0) and ran["cwd"] == str(tmp_path)
        assert ran["memory"] == [memory, memory] and ran["cpu"] == [cpu, cpu + 1]
    assert resource.getrlimit(resource.RLIMIT_AS) != (memory, memory)  # not the caller's own


def test_an_evaluation_past_its_time_limit_is_killed_and_reported(tmp_path):
    folder, record = ruler(tmp_path, then="    import time\n    time.sleep(600)")
    task = load_task(folder)
    verdict = evaluate(task, solutions(task)[0].output, timeout_s=2)
    assert not verdict.valid and verdict.errors == ["evaluation exceeded the time limit of 2 s"]
    (ran,) = records(record)
    assert gone(ran["pid"])


def test_an_evaluation_has_the_tasks_memory_limit(tmp_path):
    task = load_task(TASKS / "ruler-local")
    beyond = task.spec.limits.eval_memory_mb + 1024  # MiB: within this machine's memory
    folder, record = ruler(tmp_path, then=f"    _hold = bytearray({beyond} * 1024 * 1024)")
    task = load_task(folder)
    verdict = evaluate(task, solutions(task)[0].output)
    assert not verdict.valid and verdict.errors == ["evaluator failed: MemoryError"], verdict
    (ran,) = records(record)
    assert ran["ppid"] == evaluator_server._server.process.pid


@pytest.mark.parametrize(("then", "error"), [
    ("    _os.kill(_os.getpid(), 9)", "evaluator failed: exit status -9"),
    ("    raise SystemExit('the check gave up')", "evaluator failed: the check gave up"),
    ("    _os._exit(3)", "evaluator failed: exit status 3"),
])
def test_an_evaluation_that_ends_without_a_verdict_says_how_as_a_new_worker_does(
        tmp_path, then, error):
    folder, record = ruler(tmp_path, then=then)
    task = load_task(folder)
    output = solutions(task)[0].output
    forked, new = evaluate(task, output), cold(task, output)
    assert forked.errors == new.errors == [error] and not forked.valid
    assert records(record)[0]["ppid"] == evaluator_server._server.process.pid


def test_an_interrupted_caller_kills_its_evaluation_and_the_server_stays_in_step(
        tmp_path, monkeypatch):
    folder, record = ruler(tmp_path, then="    import time\n    time.sleep(600)")
    task = load_task(folder)
    reading = evaluator_server._read_until

    def interrupted(*args: object) -> None:
        while not records(record):  # the check runs
            time.sleep(0.01)
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluator_server, "_read_until", interrupted)
    with pytest.raises(KeyboardInterrupt):
        evaluate(task, solutions(task)[0].output)
    (ran,) = records(record)
    assert gone(ran["pid"])
    server = evaluator_server._server
    monkeypatch.setattr(evaluator_server, "_read_until", reading)
    plain = load_task(TASKS / "ruler-local")
    assert evaluate(plain, solutions(plain)[0].output).valid
    assert evaluator_server._server is server and server.alive()


def test_a_dead_server_or_a_changed_environment_gets_a_new_server(tmp_path, monkeypatch):
    folder, record = ruler(tmp_path)
    task = load_task(folder)
    output = solutions(task)[0].output
    monkeypatch.delenv(ENV, raising=False)
    assert evaluate(task, output).valid
    first = evaluator_server._server
    os.kill(first.process.pid, signal.SIGKILL)
    first.process.wait()
    assert evaluate(task, output).valid
    second = evaluator_server._server
    assert second is not first and second.alive()
    # an evaluation's environment is its caller's: a server started before a change is replaced
    monkeypatch.setenv(ENV, "changed")
    assert evaluate(task, output).valid
    third = evaluator_server._server
    assert third is not second and second.process.poll() is not None  # closed when replaced
    seen = records(record)
    assert [r["ppid"] for r in seen] == [first.process.pid, second.process.pid, third.process.pid]
    assert [r["env"] for r in seen] == [None, None, "changed"]


FORKED_OWNER = """
import json, os, sys
from innolab.tasks import evaluator_server, load_task
from innolab.tasks.evaluation import evaluate
from innolab.tasks.solutions import solutions

task = load_task(sys.argv[1])
output = solutions(task)[0].output
assert evaluate(task, output).valid
server = evaluator_server._server.process.pid
child = os.fork()
if child == 0:
    ok = evaluate(task, output).valid
    print(json.dumps({"child": evaluator_server._server.process.pid, "ok": ok}), flush=True)
    os._exit(0)
os.waitpid(child, 0)
assert evaluate(task, output).valid
print(json.dumps({"owner": server, "after": evaluator_server._server.process.pid}))
"""


def test_a_fork_of_the_owner_starts_a_server_of_its_own(tmp_path):
    folder, record = ruler(tmp_path)
    done = subprocess.run([sys.executable, "-c", FORKED_OWNER, str(folder)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    child, owner = (json.loads(line) for line in done.stdout.splitlines())
    assert child["ok"] and child["child"] != owner["owner"] == owner["after"]
    assert [r["ppid"] for r in records(record)] == [owner["owner"], child["child"], owner["owner"]]


@pytest.mark.parametrize("task_id", ["circle-packing-26", "mnist1d"])
def test_a_forked_evaluation_gives_a_new_workers_verdict(task_id, tmp_path):
    """Two known outputs of a task and four of the family's hostile inputs, forked and started as
    a new interpreter: the same verdict, errors included."""
    from innolab.tasks import get_task

    task = get_task(task_id)
    submissions = [s.output for s in solutions(task)[:2]]
    hostile = task.family.hostile(task.spec.problem.function, task.problem_params)
    assert len(hostile) >= 4
    for i, text in enumerate(list(hostile.values())[:4]):
        path = tmp_path / f"hostile-{i}.json"
        path.write_text(text)
        submissions.append(path)
    verdicts = [(evaluate(task, s), cold(task, s)) for s in submissions]
    for forked, new in verdicts:
        assert (forked.valid, forked.score, forked.errors) == (new.valid, new.score, new.errors)
    assert [forked.valid for forked, _ in verdicts] == [True, True, False, False, False, False]


def test_a_volatile_variable_keeps_the_server_and_reaches_the_evaluation(tmp_path, monkeypatch):
    """pytest's current test and a sweep run's id change between one process's evaluations: the
    server stays, and each evaluation sees their values of the moment, as its caller has them."""
    folder, record = ruler(tmp_path, then="    _json.dump(dict(_os.environ), open("
                           f"{str(tmp_path / 'env.json')!r}, 'w'))")
    task = load_task(folder)
    output = solutions(task)[0].output
    monkeypatch.setenv("INNOLAB_RUN_ID", "run-0")
    evaluator_server.start_ahead()  # as a sweep's kernel does before its run
    ahead = evaluator_server._server
    monkeypatch.delenv("INNOLAB_RUN_ID")
    assert evaluate(task, output).valid  # unset since the server started: unset in the child
    assert "INNOLAB_RUN_ID" not in json.loads((tmp_path / "env.json").read_text())
    monkeypatch.setenv("INNOLAB_RUN_ID", "run-1")
    assert evaluate(task, output).valid
    seen = json.loads((tmp_path / "env.json").read_text())
    assert evaluator_server._server is ahead and seen["INNOLAB_RUN_ID"] == "run-1"
    assert seen["PYTEST_CURRENT_TEST"] == os.environ["PYTEST_CURRENT_TEST"]
    assert {r["ppid"] for r in records(record)} == {ahead.process.pid}


def test_a_server_that_ends_leaves_its_owner_no_zombie(tmp_path):
    """A server that ends (ipykernel's shutdown sends each child of a kernel SIGTERM, then waits
    until none is left) is reaped as it ends: its owner is left no child that would count as
    running. A zombie would keep a kernel that evaluated from ending on its shutdown request."""
    import psutil

    folder, _ = ruler(tmp_path)
    task = load_task(folder)
    assert evaluate(task, solutions(task)[0].output).valid
    server = evaluator_server._server.process.pid
    assert server in [child.pid for child in psutil.Process().children()]
    os.kill(server, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while server in [child.pid for child in psutil.Process().children()]:
        assert time.monotonic() < deadline, "the ended server is still this process's child"
        time.sleep(0.05)
    assert not evaluator_server._server.alive()
    assert evaluate(task, solutions(task)[0].output).valid  # a new server
    assert evaluator_server._server.process.pid != server


# as a sweep's kernel fork server: a spawner started, then a kernel forked (which evaluates with a
# plumbing variable of its own, then with a variable beyond the plumbing) and a fork of the kernel
SPAWNING_OWNER = """
import json, os, sys
from innolab.tasks import evaluator_server, load_task
from innolab.tasks.evaluation import evaluate
from innolab.tasks.solutions import solutions

task = load_task(sys.argv[1])
output = solutions(task)[0].output
evaluator_server.start_spawner()
spawner = evaluator_server._spawner.process.pid
kernel = os.fork()
if kernel == 0:
    os.setsid()  # as a forked kernel leads a session of its own
    os.environ["IPYTHONDIR"] = "/a-kernels-folder"
    ok = evaluate(task, output).valid
    spawned = evaluator_server._server.process.pid
    deeper = os.fork()
    if deeper == 0:
        print(json.dumps({"deeper_has_spawner": evaluator_server._spawner is not None}), flush=True)
        os._exit(0)
    os.waitpid(deeper, 0)
    os.environ[sys.argv[2]] = "beyond the plumbing"
    ok = evaluate(task, output).valid and ok
    print(json.dumps({"ok": ok, "kernel": os.getpid(), "spawned": spawned,
                      "own": evaluator_server._server.process.pid}), flush=True)
    os._exit(0)
os.waitpid(kernel, 0)
print(json.dumps({"spawner": spawner, "owner_evaluated": evaluator_server._server is not None}))
"""


def test_a_kernel_forked_from_a_spawners_owner_gets_a_spawned_server(tmp_path):
    """The spawner forks the kernel's server: the kernel starts no interpreter, its evaluations are
    children of a server that is the spawner's child, in the kernel's environment (its plumbing
    too); an environment beyond the plumbing gets a server started as before, and a fork of the
    kernel holds no spawner."""
    folder, record = ruler(tmp_path, then="    _json.dump(dict(_os.environ), open("
                           f"{str(tmp_path)!r} + f'/env-{{_os.getpid()}}.json', 'w'))")
    done = subprocess.run([sys.executable, "-c", SPAWNING_OWNER, str(folder), ENV],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    deeper, kernel, owner = (json.loads(line) for line in done.stdout.splitlines())
    assert kernel["ok"] and not deeper["deeper_has_spawner"] and not owner["owner_evaluated"]
    first, second = records(record)
    assert first["ppid"] == kernel["spawned"] != kernel["own"] == second["ppid"]
    # the spawner's session (its own), not the kernel's; a server of the kernel's own is in its
    assert first["pgid"] == owner["spawner"] != kernel["kernel"] == second["pgid"]
    limits = load_task(folder).spec.limits  # a spawned server's evaluation has the task's limits
    memory, cpu = limits.eval_memory_mb * 1024 * 1024, int(limits.eval_timeout_s) + 1
    assert first["memory"] == [memory, memory] and first["cpu"] == [cpu, cpu + 1]
    first_env = json.loads((tmp_path / f"env-{first['pid']}.json").read_text())
    assert first_env["IPYTHONDIR"] == "/a-kernels-folder" and first["env"] is None
    assert second["env"] == "beyond the plumbing"
    assert ended(kernel["spawned"]) and ended(kernel["own"]) and ended(owner["spawner"])


SPAWNED_THEN_KILLED = """
import os, sys, threading, time
from innolab.tasks import evaluator_server, load_task
from innolab.tasks.evaluation import evaluate
from innolab.tasks.solutions import solutions

task = load_task(sys.argv[1])
output = solutions(task)[0].output
evaluator_server.start_spawner()
kernel = os.fork()
if kernel == 0:
    os.setsid()
    evaluate(task, output, timeout_s=600)
    os._exit(0)
print(kernel, flush=True)
time.sleep(600)
"""


def test_an_evaluation_ends_with_the_kernel_that_asked_for_it(tmp_path):
    """A spawned server's evaluation is not in its kernel's process group: when the kernel is
    killed mid-evaluation, its server ends (end-of-file) and kills the evaluation."""
    folder, record = ruler(tmp_path, then="    import time as _time; _time.sleep(600)")
    owner = subprocess.Popen([sys.executable, "-c", SPAWNED_THEN_KILLED, str(folder)],
                             stdout=subprocess.PIPE, text=True)
    try:
        kernel = int(owner.stdout.readline())
        deadline = time.monotonic() + 60
        while not records(record):
            assert time.monotonic() < deadline, "the evaluation did not start"
            time.sleep(0.05)
        (evaluation,) = records(record)
        assert evaluation["pgid"] not in (os.getpgid(kernel), os.getpgrp())  # the spawner's
        os.kill(kernel, signal.SIGKILL)
        assert ended(evaluation["ppid"]) and ended(evaluation["pid"])
    finally:
        owner.kill()
        owner.wait()
