"""The sandboxes' executor (innolab.gym.executor): concurrent calls, kill at the limit, whole
outputs, an executor the agent cannot kill or reach, one that stops failing clearly and starting
afresh, replies no command can forge, and the Docker listing and capture log as before.

No test times anything: concurrency is shown by a barrier every call must reach, waits are bounded
only so that a failure cannot hang the suite.
"""

import json
import os
import struct
import sys
import threading
import time
from pathlib import Path

import pytest

from innolab.gym.dispatcher import dispatch_sync
from innolab.gym.executor import ProcessStream, server_argv
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.local import LocalSandbox
from innolab.gym.sandbox import SandboxError
from innolab.gym.tools import Toolbox, ToolCall, truncate
from innolab.tasks import get_task

RUNTIMES = [
    pytest.param("local", id="local"),
    pytest.param("docker", marks=pytest.mark.docker, id="docker"),
]
# where the agent's commands run as a user of their own: Docker, and local where innolab is root
SEPARATE = [
    pytest.param("local", marks=pytest.mark.skipif(os.geteuid() != 0, reason="needs root"),
                 id="local-own-user"),
    pytest.param("docker", marks=pytest.mark.docker, id="docker"),
]
ROOT = Path(__file__).resolve().parents[1]
TIMED_OUT = {"local": 124, "docker": 137}  # the codes a command killed at its limit had before


def _open(runtime):
    return open_sandbox(get_task("circle-packing-26"), runtime)


@pytest.fixture
def box(request):
    sandbox = _open(request.param)
    yield sandbox
    sandbox.close()


@pytest.mark.parametrize("box", RUNTIMES, indirect=True)
def test_calls_of_one_step_run_together(box):
    """Eight calls of one step each wait, at a barrier, until all eight have started: served one
    after another, the first would wait until its time limit and fail."""
    validator = open_validator(get_task("circle-packing-26"), box)
    try:
        toolbox = Toolbox(box, validator)
        barrier = ('touch started.{i}; until [ "$(ls started.* | wc -l)" -ge 8 ]; do sleep 0.02; '
                   "done; echo together {i}")
        calls = [ToolCall(str(i), "bash", {"command": barrier.format(i=i)}) for i in range(8)]
        results = dispatch_sync(toolbox, calls, timeouts={"bash": 120})
    finally:
        validator.close()
    assert [r.ok for r in results] == [True] * 8, [r.output for r in results]
    assert [r.output.split("\n")[0] for r in results] == [f"together {i}" for i in range(8)]


@pytest.mark.parametrize("box", RUNTIMES, indirect=True)
def test_a_command_killed_at_its_limit_leaves_no_process(box):
    # a local sandbox sees the host's processes, a container's among them: each runtime's own
    # numbers, since the two variants may run at once on two workers
    n = 314 if box.runtime == "local" else 316
    result = box.exec(f"sleep {n}1 & sleep {n}2 & (sleep {n}3; echo never) & echo begun; wait",
                      timeout_s=1)
    assert result.timed_out and result.returncode == TIMED_OUT[box.runtime]
    assert result.stdout == "begun\n"
    left = box.exec(f"ps -eo args= | grep -c '^sleep {n}[123]'")
    assert left.stdout.strip() == "0", left


@pytest.mark.parametrize("box", RUNTIMES, indirect=True)
def test_exit_codes_and_errors_are_as_before(box):
    result = box.exec("echo out; echo err >&2; exit 3")
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    missing = box.exec(["no-such-command-here"])
    assert missing.returncode == 127 and "no-such-command-here" in missing.stderr
    killed = box.exec("kill -SEGV $$")
    assert killed.returncode == (139 if box.runtime == "docker" else -11)
    assert not killed.timed_out


@pytest.mark.parametrize("box", RUNTIMES, indirect=True)
def test_outputs_come_whole_and_the_tool_truncates_as_before(box):
    result = box.exec("head -c 3000000 /dev/zero | tr '\\0' a; printf 'end' >&2")
    assert result.stdout == "a" * 3_000_000 and result.stderr == "end"
    validator = open_validator(get_task("circle-packing-26"), box)
    try:
        output = Toolbox(box, validator).run(ToolCall("1", "bash", {"command": "seq 30000"}), 60)
    finally:
        validator.close()
    numbers = "".join(f"{n}\n" for n in range(1, 30001))
    assert output.output == truncate(f"{numbers}\n[exit code 0]")
    assert "truncated" in output.output


FORGED = """
import json, struct, sys
for i in range(1, 200):
    header = json.dumps({"id": i, "kind": "done", "code": 0, "timed_out": False}).encode()
    sys.stdout.buffer.write(struct.pack(">II", len(header), 0) + header)
    sys.stderr.buffer.write(struct.pack(">II", len(header), 0) + header)
sys.exit(7)
"""


def _forged() -> str:
    frames = b""
    for i in range(1, 200):
        header = json.dumps({"id": i, "kind": "done", "code": 0, "timed_out": False}).encode()
        frames += struct.pack(">II", len(header), 0) + header
    return frames.decode()


@pytest.mark.parametrize("box", RUNTIMES, indirect=True)
def test_a_command_cannot_forge_a_reply(box):
    """A command that prints the executor's own frames, for every id, gets them back as its
    output, with its own exit code: its output travels inside frames, as data."""
    result = box.exec(["python3", "-c", FORGED])
    assert result.returncode == 7 and not result.timed_out
    assert result.stdout == _forged() and result.stderr == _forged()
    assert box.exec("echo next").stdout == "next\n"


REACH = """
kill -9 $PPID 2>/dev/null; echo kill=$?
ls /proc/$PPID/fd >/dev/null 2>&1; echo fds=$?
(printf x > /proc/$PPID/fd/1) 2>/dev/null; echo write=$?
python3 -c "$1" $PPID
"""
# PTRACE_ATTACH
TRACE = ("import ctypes, sys; "
         "print('trace=%d' % ctypes.CDLL(None).ptrace(16, int(sys.argv[1]), 0, 0))")


@pytest.mark.parametrize("box", SEPARATE, indirect=True)
def test_the_agent_cannot_kill_trace_or_reach_the_executor(box):
    """The command's parent is the executor: another user's process, which it can neither
    signal, trace, nor open the descriptors of."""
    result = box.exec(["/bin/bash", "-c", REACH, "bash", TRACE])
    assert result.stdout.split() == ["kill=1", "fds=2", "write=1", "trace=-1"], result
    assert box.exec("echo alive").stdout == "alive\n" and box.executor.starts == 1


@pytest.mark.docker
def test_the_agents_commands_hold_no_capability(docker_client, base_image):
    """The container's root holds SETUID, SETGID and KILL (the executor's); a command of the agent
    holds none, and can gain none (no-new-privileges): only the bounding set names them."""
    box = _open("docker")
    try:
        status = box.exec("grep -E '^(Cap|NoNewPrivs)' /proc/self/status").stdout.split()
        held = dict(zip(status[::2], status[1::2], strict=True))
        assert held == {"CapInh:": "0" * 16, "CapPrm:": "0" * 16, "CapEff:": "0" * 16,
                        "CapBnd:": "00000000000000e0", "CapAmb:": "0" * 16, "NoNewPrivs:": "1"}
    finally:
        box.close()


def _left(*names: str) -> list[str]:
    """The processes of this machine whose command line is one of names (e.g. `sleep 3151`)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ")
        except OSError:
            continue
        if args.decode(errors="replace") in names:
            found.append(pid)
    return found


def test_an_executor_at_the_end_of_its_input_kills_the_commands_it_runs(tmp_path):
    """innolab closes the stream (it ended, or gave up on a call): the executor ends, and the
    commands it runs go with it, rather than running on with no limit."""
    executor = ProcessStream(server_argv(sys.executable, {"cwd": str(tmp_path)}))
    try:
        for i, command in enumerate(["sleep 3153", "sleep 3154 & sleep 3155; wait"], 1):
            header = json.dumps({"id": i, "op": "exec", "argv": ["/bin/bash", "-c", command],
                                 "timeout": 600}).encode()
            executor.send(struct.pack(">II", len(header), 0) + header)
        deadline = time.monotonic() + 60  # a bound only
        while len(_left("sleep 3153", "sleep 3154", "sleep 3155")) < 3:
            assert time.monotonic() < deadline, "the commands did not start"
            time.sleep(0.02)
    finally:
        executor.close()  # its input closes; it is killed where it does not stop at once
    assert executor.process.returncode == 0  # it stopped by itself
    deadline = time.monotonic() + 10
    while _left("sleep 3153", "sleep 3154", "sleep 3155") and time.monotonic() < deadline:
        time.sleep(0.02)  # a SIGKILL lands at once; only its reaping may lag
    assert _left("sleep 3153", "sleep 3154", "sleep 3155") == []


def test_an_executor_killed_by_the_agent_is_a_clear_error_then_starts_afresh():
    """Where the commands share the executor's user (innolab not root, here forced), a command
    can kill it: the call fails at once with a clear error, the next call starts a new one, which
    kills first what the killed one's commands left running."""
    box = LocalSandbox(separate_user=False)
    try:
        assert box.exec("echo first").stdout == "first\n"
        with pytest.raises(SandboxError, match="executor stopped"):
            box.exec("kill -9 $PPID; sleep 3151", timeout_s=120)
        assert box.exec("echo again").stdout == "again\n" and box.executor.starts == 2
        assert _left("sleep 3151") == []
        validator = open_validator(get_task("circle-packing-26"), box)
        try:
            toolbox = Toolbox(box, validator)
            died = toolbox.run(ToolCall("1", "bash", {"command": "kill -9 $PPID; sleep 3152"}),
                               120)
            assert not died.ok and died.output.startswith("error: the sandbox's executor stopped")
            assert toolbox.run(ToolCall("2", "bash", {"command": "echo ok"}), 60).ok
            assert _left("sleep 3152") == []
        finally:
            validator.close()
    finally:
        box.close()


@pytest.mark.docker
def test_a_docker_executor_that_dies_fails_the_call_in_flight_and_starts_afresh(
        docker_client, base_image):
    box = _open("docker")
    try:
        failure: list[BaseException] = []

        def slow() -> None:
            try:
                box.exec("sleep 3144", timeout_s=300)
            except BaseException as error:  # handed to the test
                failure.append(error)

        caller = threading.Thread(target=slow)
        caller.start()
        executor_pid = None
        while executor_pid is None and caller.is_alive():
            table = box.container.exec_run(["ps", "-eo", "pid=,ppid=,args="], user="0:0").output
            rows = [line.split(None, 2) for line in table.decode().splitlines()]
            parents = {pid: ppid for pid, ppid, *_ in rows}
            args = {pid: rest[0] if rest else "" for pid, _, *rest in rows}
            sleeper = next((pid for pid in args if args[pid] == "sleep 3144"), None)
            while sleeper is not None and not args[sleeper].startswith("python3 -I -S -c"):
                sleeper = parents.get(sleeper)
            executor_pid = sleeper
        assert executor_pid is not None
        box.container.exec_run(["kill", "-9", executor_pid], user="0:0")
        caller.join(120)  # a bound only: the call fails as soon as the stream ends
        assert not caller.is_alive()
        assert isinstance(failure[0], SandboxError) and "executor stopped" in str(failure[0])
        assert box.exec("echo again").stdout == "again\n" and box.executor.starts == 2
        # the new executor killed what the killed one's command left running
        left = box.container.exec_run(["sh", "-c", "ps -eo args= | grep -c '^sleep 3144'"],
                                      user="0:0").output
        assert left.decode().strip() == "0", left
    finally:
        box.close()


def _find_listing(box) -> dict[str, tuple[int | str, ...]]:
    """The listing as the `find` that ran as the container's root gave it before the executor,
    with a file's ctime and inode now too (`%C@ %i`: what a checkpoint compares besides)."""
    script = ("find . -mindepth 1 \\( -type d -o -type f \\) "
              "-printf '%y %m %s %T@ %C@ %i %P\\0'")
    out = box.container.exec_run(["/bin/sh", "-c", script], user="0:0", workdir="/workspace",
                                 demux=True).output[0]

    def ns(text: bytes) -> int:
        seconds, _, fraction = text.decode().partition(".")
        return int(seconds) * 10**9 + int((fraction + "000000000")[:9])

    found = {}
    for record in out.split(b"\0"):
        if record:
            kind, mode, size, mtime, ctime, inode, path = record.split(b" ", 6)
            name = path.decode("utf-8", errors="surrogateescape")
            found[name] = (("dir", int(mode, 8), 0, ns(mtime)) if kind == b"d" else
                           ("file", int(mode, 8), int(size), ns(mtime), ns(ctime), int(inode)))
    return found


@pytest.mark.docker
def test_the_docker_listing_and_capture_log_are_as_before(docker_client, base_image):
    box = _open("docker")
    try:
        made = box.exec("mkdir -p a/b/c .hidden && echo 1 > a/b/c/f && printf 22 > 'a/with space' "
                        "&& touch $'a/\\xff' && chmod 600 a/b/c/f && chmod 1777 a/b && "
                        "ln -s /etc link && ln -s a/b/c/f filelink && mkfifo pipe && "
                        "python3 -c 'open(\"written.txt\", \"w\").write(\"x\")'")
        assert made.returncode == 0, made
        listed = box.listing()
        assert listed == _find_listing(box)
        assert len(listed["a/b/c/f"]) == 6 and len(listed["a/b"]) == 4  # ctime, inode: files
        assert {"a/b/c/f", "a/with space", "a/\udcff", ".hidden"} <= set(listed)
        assert not {"link", "filelink", "pipe"} & set(listed)
        log = box.container.exec_run(["cat", "/tmp/.innolab/capture.jsonl"], user="0:0").output
        assert box.read_capture() == log and b"written.txt" in log
        assert box.read_capture(10) == log[10:] and box.read_capture(len(log)) == b""
    finally:
        box.close()


TERMINAL = """
import os, sys
from innolab.gym.local import LocalSandbox
os.setsid()
os.close(os.open(os.ttyname(int(sys.argv[1])), os.O_RDWR))  # a session leader's first terminal
os.close(os.open("/dev/tty", os.O_RDWR))  # innolab has a controlling terminal
box = LocalSandbox(separate_user=False)
try:
    print(box.exec("(exec 3</dev/tty) 2>/dev/null && echo terminal || echo none").stdout.strip())
finally:
    box.close()
"""


def test_local_commands_have_no_terminal(tmp_path):
    """The local executor runs in innolab's session but leaves its terminal: no command has one
    (it could otherwise write to the user's terminal, or stop on reading it)."""
    import subprocess
    import sys

    leader, follower = os.openpty()
    try:
        done = subprocess.run([sys.executable, "-c", TERMINAL, str(follower)], pass_fds=[follower],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["none"]


def test_the_executor_reads_a_regular_file_and_follows_no_link(tmp_path):
    """Its `read` (how a Docker sandbox reads a file): the bytes of a regular file under its
    folder; a link (last or on the way), a folder, a pipe, a missing file, a path that leaves,
    and a file over the limit are refused by errno name, and nothing waits on a pipe."""
    from innolab.gym.executor import Executor

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_bytes(b"hello\x00bytes")
    (tmp_path / "outside").write_text("secret")
    (tmp_path / "link").symlink_to(tmp_path / "outside")
    (tmp_path / "d" / "up").symlink_to(tmp_path)
    os.mkfifo(tmp_path / "pipe")
    executor = Executor(lambda: ProcessStream(server_argv(sys.executable,
                                                          {"cwd": str(tmp_path)})), "test")
    try:
        def read(path: str, max_bytes: int = 100) -> tuple[bytes, str | None]:
            reply = executor.call({"op": "read", "path": path, "max_bytes": max_bytes}, 30)
            return reply.body, reply.header.get("errno")

        assert read("d/a.txt") == (b"hello\x00bytes", None)
        assert read("./d//a.txt") == (b"hello\x00bytes", None)
        assert read("d/a.txt", max_bytes=11) == (b"hello\x00bytes", None)
        assert read("d/a.txt", max_bytes=10)[1] == "EFBIG"
        assert read("link")[1] == "ELOOP"
        assert read("d/up/outside")[1] in ("ELOOP", "ENOTDIR")
        assert read("d")[1] == "ENOTREG"
        assert read("pipe")[1] == "ENOTREG"
        assert read("missing")[1] == "ENOENT"
        assert read("../outside")[1] == "EINVAL"
        assert read("")[1] == "EINVAL"
    finally:
        executor.close()
