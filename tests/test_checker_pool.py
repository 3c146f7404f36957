"""Checkers started ahead (innolab.gym.checker_pool): one use each, refilled, nothing left behind.

No test here times anything: a wait is for an event, with a generous deadline.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from innolab.gym.checker_pool import (
    READY,
    CheckerPool,
    key_line,
    order_line,
    pool_size,
    split_report,
    waiter_argv,
)
from innolab.gym.docker_validator import POOL_LABEL, DockerValidator
from innolab.gym.sandbox import SandboxError
from innolab.gym.validator import LocalValidator

ROOT = Path(__file__).resolve().parents[1]
# a checker that says which process ran it and whether its interpreter ran a check before
WHO = (
    "import json, os, socket\n"
    "json.CHECKS = getattr(json, 'CHECKS', 0) + 1\n"
    "print(json.dumps({'valid': False, 'score': None, 'errors': "
    "[os.getpid(), socket.gethostname(), json.CHECKS]}))\n"
)
SPIN = "while True:\n    pass\n"


def wait_for(condition, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def alive(pid: int) -> bool:
    """Whether a process runs (a zombie, ended but not collected, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


# --------------------------------------------------------------------------- the size setting


@pytest.mark.parametrize("bad", [-1, 9, "two", 1.5, True, ""])
def test_a_pool_size_out_of_its_rule_is_refused_naming_the_setting(bad):
    with pytest.raises(ValueError, match=r"^pool_size: .*whole number from 0 to 8"):
        pool_size(bad)
    with pytest.raises(ValueError, match="pool_size"):
        LocalValidator({"validate.py": b""}, pool_size=bad)


def test_the_pool_size_from_the_environment_is_checked_naming_the_variable(monkeypatch):
    monkeypatch.setenv("INNOLAB_CHECKER_POOL", "3")
    assert pool_size() == 3 and pool_size(0) == 0
    monkeypatch.setenv("INNOLAB_CHECKER_POOL", "many")
    with pytest.raises(ValueError, match=r"pool_size \(\$INNOLAB_CHECKER_POOL\).*'many'"):
        pool_size()
    monkeypatch.delenv("INNOLAB_CHECKER_POOL")
    assert pool_size() == 1  # the default: small


# ------------------------------------------------------------------------------- the pool itself


class Starts:
    """Numbered checkers, their starts and discards counted; a start may be held at a gate."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.discarded: list[int] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # a start has begun
        self.fail = False

    def start(self) -> int:
        self.entered.set()
        self.gate.wait(60)
        if self.fail:
            raise OSError("no more processes")
        self.started.append(len(self.started))
        return self.started[-1]


def test_each_take_gets_a_checker_of_its_own_and_a_used_one_is_replaced():
    starts = Starts()
    pool = CheckerPool(starts.start, starts.discarded.append, 2)
    try:
        assert pool.wait_full(60) and pool.ready() == [0, 1]
        first, second = pool.take(), pool.take()
        assert (first, second) == (0, 1) and pool.ready() == []
        pool.used()  # one check ended: one replacement, started in the background
        assert wait_for(lambda: pool.ready() == [2])
        pool.used()
        assert pool.wait_full(60) and pool.ready() == [2, 3]
        assert starts.discarded == []  # nothing ready was thrown away, nothing given back
    finally:
        pool.close()
    assert starts.discarded == [2, 3] and starts.started == [0, 1, 2, 3]
    with pytest.raises(SandboxError, match="closed"):
        pool.take()


def test_a_pool_of_none_starts_each_checker_when_its_check_comes():
    starts = Starts()
    pool = CheckerPool(starts.start, starts.discarded.append, 0)
    assert pool.wait_full(1) and starts.started == []  # nothing started ahead, nothing held
    assert [pool.take(), pool.take()] == [0, 1]
    pool.used()
    assert pool.ready() == [] and starts.started == [0, 1]
    pool.close()


def test_a_take_waits_for_the_start_under_way_rather_than_starting_another():
    starts = Starts()
    starts.gate.clear()  # the pool's first start is held
    pool = CheckerPool(starts.start, starts.discarded.append, 1)
    taken: list[int] = []
    taker = threading.Thread(target=lambda: taken.append(pool.take()))
    taker.start()
    starts.gate.set()
    taker.join(60)
    assert taken == [0] and starts.started == [0]
    pool.close()


def test_a_start_that_fails_in_the_background_is_retried_by_the_check_that_needs_it():
    starts = Starts()
    starts.fail = True
    pool = CheckerPool(starts.start, starts.discarded.append, 1)
    assert pool.wait_full(60) is False  # it failed; no retry loop
    with pytest.raises(OSError, match="no more processes"):
        pool.take()  # the check starts its own, and says why it cannot
    starts.fail = False
    assert pool.take() == 0
    pool.close()


def test_a_start_under_way_at_close_is_discarded():
    starts = Starts()
    starts.gate.clear()
    pool = CheckerPool(starts.start, starts.discarded.append, 1)
    assert starts.entered.wait(60)  # the start is under way
    closing = threading.Thread(target=pool.close)
    closing.start()
    starts.gate.set()
    closing.join(60)
    assert not closing.is_alive() and starts.discarded == starts.started == [0]


# ---------------------------------------------------------------------------------- the waiter


def start_waiter(key: str) -> subprocess.Popen:
    process = subprocess.Popen(
        waiter_argv(sys.executable), env={"PATH": "/usr/bin:/bin"},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.read(len(READY)) == READY
    process.stdin.write(key_line(key))
    process.stdin.flush()
    return process


# run as the waiters' own user: what an agent's command can do where innolab is not root
REACH_WAITER = """
import json, subprocess, sys
from innolab.gym.validator import LocalValidator
PROBE = '''
import json, os, sys
pid, key = sys.argv[1], sys.argv[2]
found = {}
try:
    found["environ"] = key in open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
except OSError as error:
    found["environ"] = type(error).__name__
for name, fd, mode in (("stdin", 0, os.O_WRONLY), ("stdout", 1, os.O_RDONLY)):
    try:
        os.close(os.open(f"/proc/{pid}/fd/{fd}", mode | os.O_NONBLOCK))
        found[name] = "opened"
    except OSError as error:
        found[name] = type(error).__name__
print(json.dumps(found))
'''
validator = LocalValidator({"validate.py": sys.argv[1].encode()}, pool_size=1)
try:
    assert validator.pool.wait_full(60)
    (ready,) = validator.pool.ready()
    probe = subprocess.run([sys.executable, "-c", PROBE, str(ready.process.pid), ready.key],
                           capture_output=True, text=True, timeout=60)
    print(json.dumps({"probe": probe.stdout.strip() or probe.stderr,
                      "verdict": validator.check(b"{}", 60)}))
finally:
    validator.close()
"""


def test_a_process_of_the_waiters_user_can_neither_read_its_key_nor_reach_its_input():
    """Where innolab is not root, an agent's command runs as innolab's user: it can find a pooled
    waiter, but neither read its key (in no environment) nor open its input or output under /proc
    (undumpable), so it cannot send an order of its own; the waiter still takes innolab's."""
    # root's capabilities would bypass both: here root runs everything with none, as a user would
    as_user = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"] if os.geteuid() == 0 else []
    done = subprocess.run([*as_user, sys.executable, "-c", REACH_WAITER, WHO], cwd="/tmp",
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                               "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert json.loads(found["probe"]) == {
        "environ": "PermissionError", "stdin": "PermissionError", "stdout": "PermissionError"}
    assert found["verdict"]["valid"] is False and found["verdict"]["errors"][2] == 1


def test_the_waiter_runs_nothing_without_its_key_or_its_order(tmp_path):
    (tmp_path / "validate.py").write_text("open('ran', 'w').write('yes')\n")
    argv = [str(tmp_path / "validate.py")]
    wrong = start_waiter("right")
    out, err = wrong.communicate(order_line("wrong", argv, str(tmp_path), ".", {}))
    assert wrong.returncode != 0 and b"key" in err and not (tmp_path / "ran").exists()
    ended = start_waiter("right")
    out, err = ended.communicate(b"")  # end of input, no order: its run ended
    assert ended.returncode == 0 and out == b"" and not (tmp_path / "ran").exists()


def test_the_waiter_verifies_the_copy_itself_before_it_runs_it(tmp_path):
    (tmp_path / "validate.py").write_text("open('ran', 'w').write('yes')\n")
    argv = [str(tmp_path / "validate.py")]
    process = start_waiter("k")
    out, _ = process.communicate(order_line("k", argv, str(tmp_path), ".",
                                            {"validate.py": "0" * 64}))
    assert split_report(out) == (["validate.py"], b"") and not (tmp_path / "ran").exists()
    written = start_waiter("k")
    content = b"import json\nprint(json.dumps({'valid': True, 'score': 1, 'errors': []}))\n"
    out, _ = written.communicate(order_line(
        "k", [str(tmp_path / "sub" / "v.py")], str(tmp_path), "sub",
        {"v.py": hashlib.sha256(content).hexdigest()}, {"v.py": content}))
    altered, rest = split_report(out)
    assert altered == [] and json.loads(rest)["valid"] is True


def test_a_copy_altered_after_innolabs_check_is_refused_by_the_waiters(monkeypatch):
    """The last check, the moment before the copy runs: the waiter's own."""
    validator = LocalValidator({"validate.py": WHO.encode()}, pool_size=1)
    write = LocalValidator._copy

    def copy_then_alter(self, folder: Path) -> None:
        write(self, folder)
        (folder / "checker" / "validate.py").write_text("print('forged')\n")

    monkeypatch.setattr(LocalValidator, "_copy", copy_then_alter)
    monkeypatch.setattr(LocalValidator, "_altered", lambda self, folder: [])  # innolab's misses it
    try:
        verdict = validator.check(b"{}", 60)
    finally:
        validator.close()
    assert verdict["valid"] is False and "altered" in verdict["errors"][0]
    assert "validate.py" in verdict["errors"][0]


# -------------------------------------------------------------------------- the local validator


def test_local_checks_each_run_in_a_started_interpreter_of_their_own():
    validator = LocalValidator({"validate.py": WHO.encode()}, pool_size=1)
    try:
        seen = []
        for _ in range(3):
            assert validator.pool.wait_full(60)
            (ready,) = validator.pool.ready()
            pid, _, checks = validator.check(b"{}", 60)["errors"]
            assert pid == ready.process.pid  # started before the check came
            assert checks == 1  # a fresh interpreter: nothing of an earlier check in it
            assert not alive(pid)  # used once, then gone
            seen.append(pid)
        assert len(set(seen)) == 3
        assert validator.pool.wait_full(60) and validator.held_memory_bytes() > 0
    finally:
        validator.close()


def test_a_local_check_that_runs_past_its_limit_is_killed():
    validator = LocalValidator({"validate.py": SPIN.encode()}, pool_size=1)
    try:
        assert validator.pool.wait_full(60)
        (ready,) = validator.pool.ready()
        verdict = validator.check(b"{}", 1)
        assert verdict["valid"] is False and "exceeded 1 s" in verdict["errors"][0]
        assert not alive(ready.process.pid)
    finally:
        validator.close()


def test_closing_a_local_validator_leaves_no_checker_and_no_folder():
    validator = LocalValidator({"validate.py": WHO.encode()}, pool_size=3)
    assert validator.pool.wait_full(60)
    validator.check(b"{}", 60)
    pids = [waiter.process.pid for waiter in validator.pool.ready()]
    validator.close()
    assert pids and not [pid for pid in pids if alive(pid)]
    assert not validator.root.exists()
    with pytest.raises(SandboxError, match="closed"):
        validator.check(b"{}", 60)


def test_a_killed_runs_local_checkers_end_with_it(tmp_path):
    code = (
        "import sys, time\nfrom innolab.gym.validator import LocalValidator\n"
        "v = LocalValidator({'validate.py': b'print(1)'}, pool_size=2)\n"
        "assert v.pool.wait_full(60)\n"
        "print(v.root, *[w.process.pid for w in v.pool.ready()], flush=True)\ntime.sleep(300)"
    )
    run = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                           text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    root, *pids = run.stdout.readline().split()
    assert len(pids) == 2 and all(alive(int(pid)) for pid in pids)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert wait_for(lambda: not any(alive(int(pid)) for pid in pids))
    assert wait_for(lambda: not Path(root).exists())  # the warden's work


# ------------------------------------------------------------------------- the Docker validator


def pool_containers(docker_client, token: str) -> list:
    return docker_client.containers.list(all=True, sparse=True,  # none inspected: one may go
                                         filters={"label": f"{POOL_LABEL}={token}"})


@pytest.mark.docker
def test_docker_checks_each_run_in_a_started_container_of_their_own(docker_client, base_image):
    validator = DockerValidator({"validate.py": WHO.encode()}, base_image, docker_client,
                                pool_size=1)
    try:
        seen = []
        for _ in range(3):
            assert validator.pool.wait_full(120)
            (ready,) = validator.pool.ready()
            assert ready.container.reload() is None and ready.container.status == "running"
            _, host, checks = validator.check(b"{}", 60)["errors"]
            assert ready.container.id.startswith(host)  # started before the check came
            assert checks == 1
            seen.append(host)
        assert len(set(seen)) == 3
        # used once, then gone: only the replacement is left
        assert wait_for(lambda: {c.id for c in pool_containers(docker_client, validator.token)}
                        == {p.container.id for p in validator.pool.ready()})
        assert validator.pool.wait_full(120) and validator.held_memory_bytes() > 0
    finally:
        validator.close()
    assert pool_containers(docker_client, validator.token) == []


@pytest.mark.docker
def test_a_docker_check_that_runs_past_its_limit_is_killed(docker_client, base_image):
    import docker

    validator = DockerValidator({"validate.py": SPIN.encode()}, base_image, docker_client,
                                pool_size=1)
    try:
        assert validator.pool.wait_full(120)
        (ready,) = validator.pool.ready()
        verdict = validator.check(b"{}", 2)
        assert verdict["valid"] is False and "exceeded 2 s" in verdict["errors"][0]

        def gone() -> bool:
            try:
                docker_client.containers.get(ready.container.id)
            except docker.errors.NotFound:
                return True
            return False

        assert wait_for(gone)
    finally:
        validator.close()


@pytest.mark.docker
def test_closing_a_docker_validator_leaves_no_container(docker_client, base_image):
    validator = DockerValidator({"validate.py": WHO.encode()}, base_image, docker_client,
                                pool_size=2)
    assert validator.pool.wait_full(120)
    validator.check(b"{}", 60)
    validator.close()
    assert pool_containers(docker_client, validator.token) == []
    with pytest.raises(SandboxError, match="closed"):
        validator.check(b"{}", 60)


@pytest.mark.docker
def test_a_killed_runs_checker_containers_end_with_it(docker_client, base_image):
    """Their input closes with the killed run: each ends without running anything and the engine
    removes it; no reaper needed."""
    code = (
        "import sys, time\nimport docker\n"
        "from innolab.gym.docker_validator import DockerValidator\n"
        "v = DockerValidator({'validate.py': b'print(1)'}, sys.argv[1], docker.from_env(),"
        " pool_size=2)\n"
        "assert v.pool.wait_full(120)\nprint(v.token, flush=True)\ntime.sleep(300)"
    )
    run = subprocess.Popen([sys.executable, "-c", code, base_image], cwd=ROOT,
                           stdout=subprocess.PIPE, text=True)
    token = run.stdout.readline().strip()
    assert len(pool_containers(docker_client, token)) == 2
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert wait_for(lambda: pool_containers(docker_client, token) == [], 120)
