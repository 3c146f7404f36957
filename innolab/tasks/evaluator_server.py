"""The hidden evaluator's fork server: each evaluation a new process forked from one that loaded it.

An evaluation started as a new interpreter (`python -I -m innolab.tasks.evaluator_worker`) spends
most of its CPU on start-up and imports (NumPy, pydantic, innolab.tasks) before it reads the
submission; `tasks check`, a run's scoring and the novelty of many runs evaluate again and again.
A process that evaluates instead starts one server the first time (`python -I -m
innolab.tasks.evaluator_server`, with the environment an evaluation gets): it imports the worker's
modules once (not the families' checks: each evaluation imports its task's family itself), runs
nothing else, and forks one child per evaluation. The child has evaluated nothing before (the
server never evaluates) and runs as the worker ran: in its caller's process group and session (a
terminal's Ctrl-C reaches it, and the scheduler groups it with its caller), its outputs the
caller's pipes, its working folder the caller's (where that still exists), under the same limits
(address space and CPU time, `limit_resources`), the worker's `main` on the worker's arguments,
ending after that one evaluation. Where it differs from a new interpreter: its standard input is
/dev/null (the worker reads none), its string hashing is the server's (one seed per server; per
spawner for spawned servers), and
its modules are those the server loaded when it started (a server outlives an edit of innolab's
code; it is replaced when its environment is not what an evaluation would get now, VOLATILE
variables aside, when it has died, or in a fork of its owner). A sweep's kernel starts its server
as it starts (`start_ahead`), before its run; it asks its fork server's spawner for it (`Spawner`:
a server forked from one that imported the worker once, not a new interpreter), where the
spawner's environment is the kernel's but for the kernel's PLUMBING. A spawned server and its
evaluations are in the spawner's session, not the kernel's (which is its own as well): a terminal's
Ctrl-C reaches neither, and they end with the kernel (end-of-file on the server's socket).

The server keeps each child unreaped until its caller asks for its exit status, so that its pid
names it and no later process: a caller kills a child that outlives its time limit by that pid.
It ends when its owner closes it or ends (end-of-file on its socket), and kills the evaluations
its owner has not waited for as it ends. Its owner reaps it as it ends (a thread waits for it), so
that no zombie of it counts as a running child (ipykernel's shutdown waits for a kernel's children
to end).

Protocol: one SOCK_SEQPACKET message each way. {"argv", "cwd", "memory_mb", "cpu_s", "env": the
VOLATILE variables' values, null for unset} with the write ends of two pipes (the child's standard
output and error) in, {"pid"} out; then {"wait": pid, "within_s"} in (the child is killed if it has
not ended within that time), {"status": its exit status, negative for a signal} out. A spawner
(`--spawner`) gets {"env"} with the server's end of a new socket pair, and answers on that pair,
from the new server: {"pid"} with a pidfd of it.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import resource
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

MESSAGE_BYTES = 65536  # the longest request or reply
# variables that change between the evaluations of one process and that no import reads (pytest's
# current test, a sweep run's id and model settings, set as its kernel takes the run): a server is
# not replaced for them; each evaluation gets their values of the moment (innolab.sweep.kernel
# names the last two)
VOLATILE = ("PYTEST_CURRENT_TEST", "INNOLAB_RUN_ID", "INNOLAB_SWEEP_LLM")
# a kernel's plumbing, set between its fork server's start and its own (by debugpy as the server
# loads it, IPython's shell, Jupyter, innolab.forkserver and innolab.sweep), which no import of the
# worker reads: a spawned server, which imported under its spawner's environment, serves one that
# differs in these (and the VOLATILE) only
PLUMBING = ("PYDEVD_USE_FRAME_EVAL", "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR", "GIT_PAGER",
            "PAGER", "TERM", "IPYTHONDIR", "JPY_PARENT_PID", "INNOLAB_KERNEL_PARENT",
            "DASK_SCHEDULER_ADDRESS")
SPAWN_BYTES = 1 << 20  # the longest spawn request the spawner reads (an environment; the asker's
# socket buffer, about 200 KiB, bounds it lower: a longer one fails, and the asker starts its own)
REPLY_TIMEOUT_S = 60.0  # the longest the server may take to answer (its first answer waits for
# its imports, on a loaded machine too)
EXIT_WAIT_S = 5.0  # after its outputs have ended, the longest a child may take to exit


class EvaluatorServerError(RuntimeError):
    """The server is gone, or could not start or fork an evaluation."""


@dataclass(frozen=True)
class Outcome:
    """What one forked evaluation wrote, its exit status, and whether it ran past its time limit.

    Attributes:
        stdout: Its standard output.
        stderr: Its standard error.
        status: Its exit status (negative: the signal that ended it); None if not known.
        timed_out: Whether it was killed at its time limit.
    """

    stdout: str
    stderr: str
    status: int | None
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

        Raises:
            EvaluatorServerError: It cannot start.
        """
        ours, process = _start([], env)
        self._adopt(ours, process, env)
        # reaped as it ends: a zombie would count as a child still running for whoever waits
        # for this process's children to end (ipykernel's shutdown, up to seconds)
        threading.Thread(target=self._reap, name="innolab-evaluator-reaper", daemon=True).start()

    @classmethod
    def spawned(cls, spawner: Spawner, env: dict[str, str]) -> EvaluatorServer:
        """A server forked by a spawner for this process (no interpreter started, nothing imported).

        Args:
            spawner: The spawner, started by this process or the one it was forked from.
            env: Its environment, every evaluation's: the spawner's, PLUMBING and VOLATILE aside.

        Raises:
            EvaluatorServerError: The spawner is gone, or its environment differs in more.
        """
        server = cls.__new__(cls)
        ours, process = spawner.spawn(env)
        server._adopt(ours, process, env)
        return server

    def _adopt(self, ours: socket.socket, process: Any, env: dict[str, str]) -> None:
        ours.settimeout(REPLY_TIMEOUT_S)
        self.process = process
        self.env = _stable(env)
        self.owner = os.getpid()
        self.broken = False  # a request went unanswered: its replies cannot be matched any more
        self._socket = ours
        self._lock = threading.Lock()

    def _reap(self) -> None:
        with contextlib.suppress(Exception):
            self.process.wait()

    def alive(self) -> bool:
        """Whether the server still runs and answers in step."""
        return not self.broken and self.process.poll() is None

    def _ask(self, request: dict, fds: list[int] | None = None) -> dict:
        """Send one request and read its reply, under the lock; a failure breaks the server."""
        with self._lock:
            if self.broken:
                raise EvaluatorServerError("the evaluator server is out of step")
            try:
                socket.send_fds(self._socket, [json.dumps(request).encode()], fds or [])
                reply = self._socket.recv(MESSAGE_BYTES)
                if not reply:
                    raise EvaluatorServerError(
                        f"the evaluator server is gone (exit {self.process.poll()})")
                return json.loads(reply)
            except BaseException as error:
                self.broken = True
                if isinstance(error, OSError | ValueError):
                    raise EvaluatorServerError(
                        f"the evaluator server is gone: {error}") from error
                raise

    def evaluate(self, argv: list[str], cwd: str | None, memory_mb: int, timeout_s: float,
                 volatile: dict[str, str | None] | None = None) -> Outcome:
        """Fork one evaluation and wait for it to end, or kill it at its time limit.

        Args:
            argv: The worker's arguments (task folder, submission file, family module).
            cwd: Its working folder (None: the server's, `/`).
            memory_mb: Its address space, in MiB.
            timeout_s: Its time limit (wall clock here from its fork, CPU time in the child).
            volatile: The values of the VOLATILE variables it gets (None: unset).

        Returns:
            Its outputs and exit status, and whether it was killed at its time limit.

        Raises:
            EvaluatorServerError: The server is gone (nothing was evaluated).
        """
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            try:
                pid = self._ask({"argv": argv, "cwd": cwd, "memory_mb": memory_mb,
                                 "cpu_s": timeout_s, "env": volatile or {}},
                                [out_w, err_w])["pid"]
            finally:
                os.close(out_w)
                os.close(err_w)
            try:
                stdout, stderr, timed_out = _read_until(out_r, err_r, timeout_s)
            except BaseException:  # its caller interrupted: it goes too, and the error stands
                self._kill(pid)
                with contextlib.suppress(EvaluatorServerError):
                    self._ask({"wait": pid, "within_s": 0})
                raise
        finally:
            os.close(out_r)
            os.close(err_r)
        if timed_out:
            self._kill(pid)
        try:
            status = self._ask({"wait": pid, "within_s": 0 if timed_out else EXIT_WAIT_S})
        except EvaluatorServerError:  # the evaluation ran: its output stands, its status unknown
            status = {}
        return Outcome(stdout.decode("utf-8", errors="replace"),
                       stderr.decode("utf-8", errors="replace"), status.get("status"), timed_out)

    @staticmethod
    def _kill(pid: int) -> None:
        """Kill an evaluation (unreaped until its `wait`: that pid is no other process)."""
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)

    def close(self, timeout_s: float = 10.0) -> None:
        """End the server (it kills an evaluation under way as it ends)."""
        with contextlib.suppress(OSError):
            self._socket.close()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if isinstance(self.process, Spawned):
            self.process.close()


def _start(args: list[str], env: dict[str, str],
           session: bool = False) -> tuple[socket.socket, subprocess.Popen]:
    """Start `python -I -m innolab.tasks.evaluator_server [args] FD`: our end of its socket, it.

    In its owner's session and process group, or (`session`) in a session of its own.
    """
    try:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except (OSError, AttributeError) as error:  # not on this system
        raise EvaluatorServerError(f"no evaluator server here: {error}") from error
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-m", "innolab.tasks.evaluator_server", *args,
             str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env, cwd="/",
            start_new_session=session)
    except OSError as error:
        ours.close()
        raise EvaluatorServerError(f"the evaluator server cannot start: {error}") from error
    finally:
        theirs.close()
    return ours, process


class Spawned:
    """A spawned server's process: not a child of its owner, watched and killed through a pidfd.

    Attributes:
        pid: Its process id.
        returncode: None while it runs, then -1 (its exit status is its spawner's to read).
    """

    def __init__(self, pid: int, pidfd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._fd = pidfd

    def poll(self) -> int | None:
        """None while it runs, else -1."""
        return self.wait(0) if self.returncode is None and self._ended(0) else self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for it to end.

        Raises:
            subprocess.TimeoutExpired: It still runs after `timeout` seconds.
        """
        if self.returncode is None:
            if not self._ended(timeout):
                raise subprocess.TimeoutExpired(f"evaluator server {self.pid}", timeout or 0)
            self.returncode = -1
        return self.returncode

    def _ended(self, timeout: float | None) -> bool:
        if self._fd < 0:  # closed: nothing is known of it any more
            return True
        watch = select.poll()
        watch.register(self._fd, select.POLLIN)
        return bool(watch.poll(None if timeout is None else max(timeout, 0.0) * 1000))

    def kill(self) -> None:
        """SIGKILL (nothing once it has ended: the pidfd names that process and no other)."""
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self._fd, signal.SIGKILL)

    def close(self) -> None:
        """Close the pidfd (then it counts as ended)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class Spawner:
    """The owner's side of a spawner: a server that forks a server for each process that asks.

    A sweep's kernel fork server (innolab.sweep.kernel.load) starts one; each kernel forked from
    it asks it for its own server (`EvaluatorServer.spawned`) instead of starting an interpreter
    that imports the worker again. The spawned server is a fork of the spawner, which imported the
    worker once and never evaluates: a server as a new one is, in the asker's environment, serving
    the asker alone over a socket pair of the asker's (sent with the request), and ending when
    the asker closes it or ends. Its process is not the asker's child but the spawner's: the asker
    watches and kills it by a pidfd (`Spawned`), and its evaluations are in the spawner's session
    (its own), not the asker's: they end with the asker's end (end-of-file on the server's
    socket), and an interrupted asker kills its evaluation as before.

    Attributes:
        env: The environment the spawner imported the worker under, VOLATILE variables aside.
        owner: The process that started it; it and its direct forks may spawn.
    """

    def __init__(self, env: dict[str, str]) -> None:
        # a session of its own, as a kernel has: no terminal's Ctrl-C reaches its evaluations
        self._socket, self.process = _start(["--spawner"], env, session=True)
        self._socket.settimeout(REPLY_TIMEOUT_S)
        self.env = _stable(env)
        self.owner = os.getpid()
        self._lock = threading.Lock()

    def spawn(self, env: dict[str, str]) -> tuple[socket.socket, Spawned]:
        """Ask for a server: our end of its socket, and its process.

        Raises:
            EvaluatorServerError: The spawner is gone, or its environment differs from `env` in
                more than PLUMBING and VOLATILE.
        """
        wanted = _stable(env)
        differ = sorted(name for name in set(wanted) | set(self.env)
                        if wanted.get(name) != self.env.get(name) and name not in PLUMBING)
        if differ:
            raise EvaluatorServerError(f"the spawner imported under another environment: {differ}")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with self._lock:
                socket.send_fds(self._socket, [json.dumps({"env": env}).encode()],
                                [theirs.fileno()])
            theirs.close()
            ours.settimeout(REPLY_TIMEOUT_S)
            hello, fds, _, _ = socket.recv_fds(ours, MESSAGE_BYTES, 1)
            for fd in fds:  # (recv_fds leaves them inheritable: no command of ours gets them)
                os.set_inheritable(fd, False)
            try:
                if not hello or len(fds) != 1:
                    raise EvaluatorServerError("the spawner is gone")
                pid = int(json.loads(hello)["pid"])
            except (EvaluatorServerError, ValueError, KeyError, TypeError) as error:
                for fd in fds:
                    os.close(fd)
                if isinstance(error, EvaluatorServerError):
                    raise
                raise EvaluatorServerError(f"the spawned server said {hello[:100]!r}") from error
            return ours, Spawned(pid, fds[0])
        except EvaluatorServerError:
            ours.close()
            raise
        except (OSError, ValueError) as error:
            ours.close()
            raise EvaluatorServerError(f"the spawner is gone: {error}") from error
        finally:
            theirs.close()

    def close(self) -> None:
        """Close our end; the spawner ends once every process holding it has (a fork holds it)."""
        with contextlib.suppress(OSError):
            self._socket.close()


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
_spawner: Spawner | None = None


def _stable(env: dict[str, str]) -> dict[str, str]:
    """An environment without its VOLATILE variables (what a server is chosen by)."""
    return {name: value for name, value in env.items() if name not in VOLATILE}


def _server_for(env: dict[str, str]) -> EvaluatorServer:
    """This process's server for an evaluation's environment: started, or replaced, as needed."""
    global _server
    with _lock:
        server = _server
        if server is None or server.env != _stable(env) or not server.alive():
            _server = None
            if server is not None:
                server.close()
            server = _server = _new_server(env)
        return server


def _new_server(env: dict[str, str]) -> EvaluatorServer:
    """A server spawned by this process's spawner, where it has one that can, else a new one."""
    if _spawner is not None:
        with contextlib.suppress(EvaluatorServerError):
            return EvaluatorServer.spawned(_spawner, env)
    return EvaluatorServer(env)


def start_spawner() -> None:
    """Start a spawner in this process, for its forks' servers (`Spawner`).

    A sweep's kernel fork server calls it before its first fork. Where it cannot start, the forks
    start their own servers.
    """
    from innolab.tasks.numerics import numeric_env

    global _spawner
    with _lock, contextlib.suppress(EvaluatorServerError):
        if _spawner is None:
            _spawner = Spawner(numeric_env())


def start_ahead() -> None:
    """Start this process's server now, for the environment an evaluation would get now.

    A sweep's kernel, started ahead of its run, calls it, so that the run's first evaluation does
    not wait for it: a server started as a new interpreter imports while its owner goes on; one
    asked of a spawner is there when this returns (the first kernels wait for the spawner's own
    imports). Where it cannot start, evaluations start it (or a worker) as usual.
    """
    from innolab.tasks.numerics import numeric_env

    with contextlib.suppress(EvaluatorServerError):
        _server_for(numeric_env())


def evaluate(argv: list[str], env: dict[str, str], memory_mb: int,
             timeout_s: float) -> Outcome:
    """One evaluation, forked from this process's server (started, or replaced, as needed).

    The server is replaced when it has died or fallen out of step, or when `env` is not its
    environment (VOLATILE variables aside: the evaluation gets their values from `env`).

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
    server = _server_for(env)
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # removed meanwhile: the worker needs none
        cwd = None
    return server.evaluate(argv, cwd, memory_mb, timeout_s,
                           {name: env.get(name) for name in VOLATILE})


def _forget_in_child() -> None:
    """In a fork of the owner: the owner's server is not this process's (it starts its own).

    The owner's spawner is kept in a direct fork of the process that started it (a kernel of a
    sweep's fork server), not in a fork of that fork.
    """
    global _server, _spawner, _lock
    _lock = threading.Lock()
    if _server is not None:
        with contextlib.suppress(OSError):
            _server._socket.close()
        if isinstance(_server.process, Spawned):
            _server.process.close()
        _server = None
    if _spawner is not None:
        _spawner._lock = threading.Lock()
        # its process is the owner's child, never this one's to wait for (nor, as a Popen left
        # unwaited, for subprocess to reap by its pid later)
        _spawner.process.returncode = -1
        if os.getppid() != _spawner.owner:
            _spawner.close()
            _spawner = None


os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _close() -> None:
    if _server is not None:
        _server.close()
    if _spawner is not None:
        _spawner.close()


# ------------------------------------------------------------------------------------- the server


def main(argv: list[str]) -> None:
    """The server (or, with --spawner first, the spawner): import the worker, then serve.

    Args:
        argv: ["--spawner"] or nothing, then the socket's file descriptor.
    """
    channel = socket.socket(fileno=int(argv[-1]))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C ends the evaluations only
    from innolab.tasks import evaluator_worker  # noqa: F401  (loaded once, before any fork)

    if argv[0] == "--spawner":
        _spawn_servers(channel)
    else:
        _serve(channel)


def _serve(channel: socket.socket) -> None:
    """Fork one evaluation per request until end-of-file; then kill those not yet waited for."""
    children: set[int] = set()
    try:
        while True:
            message, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, 2)
            if not message:
                return
            request = json.loads(message)
            if "wait" in request:
                children.discard(int(request["wait"]))
                reply = {"status": _wait(int(request["wait"]), float(request["within_s"]))}
            else:
                pid = os.fork()
                if pid == 0:
                    _child(request, fds, channel)
                children.add(pid)
                for fd in fds:
                    os.close(fd)
                reply = {"pid": pid}
            try:
                channel.send(json.dumps(reply).encode())
            except OSError:  # its owner has gone
                return
    finally:
        for pid in children:  # its owner has gone: so do the evaluations it left
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _spawn_servers(channel: socket.socket) -> None:
    """The spawner: fork a server per request (on the socket sent with it) until end-of-file."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # its servers are reaped as they end
    while True:
        message, fds, flags, _ = socket.recv_fds(channel, SPAWN_BYTES, 1)
        if not message:
            return
        try:
            child = -1
            if len(fds) == 1 and not flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                child = os.fork()
        except OSError:  # no process to be had: the asker reads end-of-file and starts its own
            child = -1
        if child != 0:
            for fd in fds:
                os.close(fd)
            continue
        code = 1
        try:
            channel.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # its evaluations: reaped on wait
            os.environ.clear()
            os.environ.update(json.loads(message)["env"])
            os.set_inheritable(fds[0], False)  # (recv_fds leaves it inheritable)
            served = socket.socket(fileno=fds[0])
            pidfd = os.pidfd_open(os.getpid())
            socket.send_fds(served, [json.dumps({"pid": os.getpid()}).encode()], [pidfd])
            os.close(pidfd)
            _serve(served)
            code = 0
        except BaseException:
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            os._exit(code)


def _wait(pid: int, within_s: float) -> int | None:
    """Reap a child (killed if it has not ended within `within_s`): its exit status, or None."""
    deadline = time.monotonic() + within_s
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            time.sleep(0.001)
    except ChildProcessError:  # not a child of this server
        return None


def _child(request: dict, fds: list[int], channel: socket.socket) -> None:
    """In a forked child: become the worker on the request's arguments, then exit."""
    code = 1
    try:
        channel.close()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        stdin = os.open(os.devnull, os.O_RDONLY)
        os.dup2(stdin, 0)
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        for fd in (stdin, *fds):
            os.close(fd)
        # its own streams on its descriptors, whatever the server's were
        sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False),
                                                       encoding="utf-8")
        sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False),
                                                       encoding="utf-8", errors="backslashreplace",
                                                       line_buffering=True)
        for name, value in (request.get("env") or {}).items():  # VOLATILE: as its caller's
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if request.get("cwd"):
            with contextlib.suppress(OSError):  # removed meanwhile: the worker needs none
                os.chdir(request["cwd"])
        limit_resources(int(request["memory_mb"]), float(request["cpu_s"]))
        from innolab.tasks import evaluator_worker

        sys.argv = [evaluator_worker.__file__, *request["argv"]]
        for name in ("random", "numpy.random"):  # a new interpreter's own random state
            if name in sys.modules:
                sys.modules[name].seed()
        evaluator_worker.main()
        code = 0
    except SystemExit as stop:  # as the interpreter ends on it
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            with contextlib.suppress(BaseException):
                print(stop.code, file=sys.stderr)
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
