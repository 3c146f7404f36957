"""The hidden evaluator's fork server: each evaluation a new process forked from one that loaded it.

An evaluation started as a new interpreter (`python -I -m innolab.tasks.evaluator_worker`) spends
most of its CPU on start-up and imports (NumPy, pydantic, innolab.tasks) before it reads the
submission; `tasks check`, a run's scoring and the novelty of many runs evaluate again and again.
A process that evaluates instead starts one server the first time (`python -I -m
innolab.tasks.evaluator_server`, with the environment an evaluation gets): it imports the worker's
modules once, runs nothing else, and forks one child per evaluation. The child is what a new
worker is: a process of its own that has evaluated nothing before (the server never evaluates),
in a session of its own, its standard input /dev/null, its outputs the caller's pipes, its
working folder the caller's, under the same limits (address space and CPU time,
`limit_resources`), running the worker's `main` on the worker's arguments; it ends after that one
evaluation. A child that outlives its time limit is killed by its caller (through a pidfd, which
names that process and no later one with its pid). The server ends when its owner closes it or
ends (end-of-file on its socket); a server whose environment is not what an evaluation would get
now (its caller's environment changed) is replaced.

Protocol: one SOCK_SEQPACKET message each way per evaluation. In: {"argv", "cwd", "memory_mb",
"cpu_s"} with the write ends of two pipes (the child's standard output and error); out: {"pid"}
with a pidfd of the child.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass

MESSAGE_BYTES = 65536  # the longest request or reply


class EvaluatorServerError(RuntimeError):
    """The server is gone or could not fork an evaluation."""


@dataclass(frozen=True)
class Outcome:
    """What one forked evaluation wrote, and whether it ran past its time limit."""

    stdout: str
    stderr: str
    timed_out: bool


def limit_resources(memory_mb: int, cpu_s: float) -> None:
    """Limit this process's address space to `memory_mb` MiB and its CPU time to about `cpu_s`."""
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_s) + 1, int(cpu_s) + 2))


class EvaluatorServer:
    """The owner's side of a fork server of evaluations: start it, evaluate through it, close it."""

    def __init__(self, env: dict[str, str]) -> None:
        """Start the server (it imports the worker's modules while its owner goes on).

        Args:
            env: Its environment, every evaluation's (innolab.tasks.numerics.numeric_env).
        """
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-m", "innolab.tasks.evaluator_server",
                 str(theirs.fileno())],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env, cwd="/")
        finally:
            theirs.close()
        self.env = dict(env)
        self.owner = os.getpid()
        self._socket = ours
        self._lock = threading.Lock()

    def alive(self) -> bool:
        """Whether the server still runs."""
        return self.process.poll() is None

    def evaluate(self, argv: list[str], cwd: str, memory_mb: int,
                 timeout_s: float) -> Outcome:
        """Fork one evaluation and wait for it to end, or kill it at its time limit.

        Args:
            argv: The worker's arguments (task folder, submission file, family module).
            cwd: Its working folder.
            memory_mb: Its address space, in MiB.
            timeout_s: Its time limit (wall clock here, CPU time in the child).

        Returns:
            Its outputs, and whether it was killed at its time limit.

        Raises:
            EvaluatorServerError: The server is gone.
        """
        request = json.dumps({"argv": argv, "cwd": cwd, "memory_mb": memory_mb,
                              "cpu_s": timeout_s}).encode()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            with self._lock:
                try:
                    socket.send_fds(self._socket, [request], [out_w, err_w])
                    os.close(out_w)
                    os.close(err_w)
                    out_w = err_w = -1
                    reply, fds, _, _ = socket.recv_fds(self._socket, MESSAGE_BYTES, 1)
                except OSError as error:
                    raise EvaluatorServerError(f"the evaluator server is gone: {error}") from error
            if not reply or not fds:
                for fd in fds:
                    os.close(fd)
                raise EvaluatorServerError(
                    f"the evaluator server is gone (exit {self.process.poll()})")
            pidfd = fds[0]
            try:
                stdout, stderr, timed_out = _read_until(out_r, err_r, timeout_s)
                if timed_out:
                    with contextlib.suppress(OSError):  # it has ended meanwhile
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            finally:
                os.close(pidfd)
        finally:
            for fd in (out_r, err_r, out_w, err_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        return Outcome(stdout.decode("utf-8", errors="replace"),
                       stderr.decode("utf-8", errors="replace"), timed_out)

    def close(self, timeout_s: float = 10.0) -> None:
        """End the server (an evaluation under way goes on to its end)."""
        with contextlib.suppress(OSError):
            self._socket.close()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _read_until(out_fd: int, err_fd: int, timeout_s: float) -> tuple[bytes, bytes, bool]:
    """Read two pipes to their ends, or until `timeout_s` has passed: (out, err, timed out)."""
    deadline = time.monotonic() + timeout_s
    chunks: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    with selectors.DefaultSelector() as selector:
        for fd in chunks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), True
            for key, _ in selector.select(left):
                data = os.read(key.fd, 65536)
                if data:
                    chunks[key.fd].append(data)
                else:
                    selector.unregister(key.fd)
    return b"".join(chunks[out_fd]), b"".join(chunks[err_fd]), False


_lock = threading.Lock()
_server: EvaluatorServer | None = None


def evaluate(argv: list[str], env: dict[str, str], memory_mb: int,
             timeout_s: float) -> Outcome:
    """One evaluation, forked from this process's server (started, or replaced, as needed).

    The server is replaced when it has died, when this process is a fork of its owner, or when
    `env` is not its environment.

    Args:
        argv: The worker's arguments.
        env: The environment the evaluation must have.
        memory_mb: Its address space, in MiB.
        timeout_s: Its time limit.

    Returns:
        Its outputs.

    Raises:
        EvaluatorServerError: The server could not evaluate (the caller starts a worker itself).
    """
    global _server
    with _lock:
        server = _server
        if server is None or server.owner != os.getpid() or server.env != env \
                or not server.alive():
            if server is not None and server.owner == os.getpid():
                server.close()
            server = _server = EvaluatorServer(env)
    return server.evaluate(argv, os.getcwd(), memory_mb, timeout_s)


@atexit.register
def _close() -> None:
    if _server is not None and _server.owner == os.getpid():
        _server.close()


# ------------------------------------------------------------------------------------- the server


def main(argv: list[str]) -> None:
    """The server: import the worker, then fork one evaluation per request until end-of-file.

    Args:
        argv: The socket's file descriptor.
    """
    channel = socket.socket(fileno=int(argv[0]))
    from innolab.tasks import evaluator_worker  # noqa: F401  (loaded once, before any fork)

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the evaluations are reaped as they end
    while True:
        message, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, 2)
        if not message:
            return
        pid = os.fork()
        if pid == 0:
            _child(json.loads(message), fds, channel)
        for fd in fds:
            os.close(fd)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:  # the child has ended and been reaped already: nothing left to kill
            pidfd = os.open(os.devnull, os.O_RDONLY)
        try:
            socket.send_fds(channel, [json.dumps({"pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)


def _child(request: dict, fds: list[int], channel: socket.socket) -> None:
    """In a forked child: become the worker on the request's arguments, then exit."""
    code = 1
    try:
        channel.close()
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (stdin, *fds):
            os.close(fd)
        os.chdir(request["cwd"])
        limit_resources(int(request["memory_mb"]), float(request["cpu_s"]))
        from innolab.tasks import evaluator_worker

        sys.argv = [evaluator_worker.__file__, *request["argv"]]
        if "numpy" in sys.modules:  # a new interpreter's own random state
            sys.modules["numpy"].random.seed()
        evaluator_worker.main()
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    except BaseException:
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
