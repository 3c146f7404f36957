"""A kernel fork server: each kernel a new process forked from one that loaded everything once.

A kernel launched as a new interpreter spends seconds of CPU on start-up and imports before it
answers (ipykernel, then what the notebook loads: innolab, openai and scipy for a run,
innolab.sweep.kernel.warm; pandas, matplotlib, seaborn and innolab's analyses for an analysis
notebook, innolab.notebooks.warm); for a short notebook that is as much again as its work. A
sweep worker, or a sequence of notebook executions (innolab.notebooks.forked_kernels), instead
starts one server process (`ForkServer`) that loads all of it once and never executes anything
else; each kernel is forked from it: a new process, holding no state of any run, whose modules
are loaded at birth. The child becomes a kernel as one jupyter_client launches does: a session of
its own (an interrupt or a kill reaches its process group), the environment and working directory
it was given, ipykernel's IPKernelApp on the launcher's arguments, and a normal interpreter exit.
Its parent is the server, which ends when its owner does (end-of-file on its socket): the kernel
watches it (ipykernel's parent poller, and innolab.sweep.kernel.prepare in a sweep's kernel) and
ends with it.

Before each fork the server freezes its heap (gc.freeze): a kernel's garbage collections walk
the kernel's own objects only, not the server's, which they would otherwise copy page by page.

What the server loads is named on its command line: a function `module:name`, called once with
one JSON argument (innolab.sweep.kernel.load: the run's modules and the sweep's tasks). It is
imported by name, so this module imports nothing of the layers that use it.

Protocol, one JSON line each way per kernel: {"args", "env", "cwd"} in, {"pid", "start"} out.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from innolab.gym.leftovers import owner_alive, owner_token

PR_SET_NAME = 15  # prctl's option naming the calling process (Linux)
LAUNCHER = ["-m", "ipykernel_launcher"]  # a kernelspec's command: python -m ipykernel_launcher ARGS
# a forked kernel's server (its parent), as it was when forked: a kernel whose server died while it
# started finds itself reparented by the time it could look (innolab.sweep.kernel.prepare)
PARENT_VAR = "INNOLAB_KERNEL_PARENT"


class ForkServerError(RuntimeError):
    """The fork server is gone or refused a kernel."""


class ForkServer:
    """The owner's side of a fork server: start it, fork kernels from it, close it."""

    def __init__(self, load: str, argument: Any = None,
                 env: dict[str, str] | None = None) -> None:
        """Start the server process (it loads the kernels' modules while its owner goes on).

        Args:
            load: What it loads before its first fork: a function, `module:name`, called with
                `argument` (innolab.sweep.kernel.load, innolab.notebooks.warm).
            argument: Its one argument (JSON).
            env: The server's environment (None: this process's): what the kernels' imports see.
        """
        ours, theirs = socket.socketpair()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-P", "-m", "innolab.forkserver", str(theirs.fileno()), load,
                 json.dumps(argument)],
                pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env, cwd="/")
        finally:
            theirs.close()
        self._socket = ours
        self._replies = ours.makefile("rb")
        self._lock = threading.Lock()

    def fork(self, args: list[str], env: dict[str, str], cwd: str) -> ForkedKernel:
        """A new kernel, forked.

        Args:
            args: The kernel launcher's arguments (`-f CONNECTION_FILE ...`).
            env: The kernel's environment.
            cwd: Its working directory.

        Returns:
            The kernel's process.

        Raises:
            ForkServerError: The server is gone.
        """
        request = json.dumps({"args": args, "env": env, "cwd": cwd}).encode() + b"\n"
        with self._lock:
            try:
                self._socket.sendall(request)
                line = self._replies.readline()
            except OSError as error:
                raise ForkServerError(f"the kernel fork server is gone: {error}") from error
        if not line:
            raise ForkServerError(f"the kernel fork server is gone (exit {self.process.poll()})")
        reply = json.loads(line)
        return ForkedKernel(reply["pid"], reply["start"])

    def alive(self) -> bool:
        """Whether the server still runs."""
        return self.process.poll() is None

    def close(self, timeout_s: float = 10.0) -> None:
        """End the server (its kernels end with it)."""
        with contextlib.suppress(OSError):
            self._replies.close()
            self._socket.close()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class ForkedKernel:
    """A forked kernel's process, as jupyter_client's provisioner handles a Popen.

    Not this process's child: it is known by its pid and start time (a reused pid is not taken for
    it); its exit status is not known (None while it runs, -1 after).

    Attributes:
        pid: Its process id (and its process group's: it leads a session of its own).
        returncode: None while it runs.
    """

    stdin = stdout = stderr = None

    def __init__(self, pid: int, start: dict[str, Any]) -> None:
        self.pid = pid
        self._start = start
        self.returncode: int | None = None

    def poll(self) -> int | None:
        """None while the kernel runs, else -1."""
        if self.returncode is None and not owner_alive(self._start):
            self.returncode = -1
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the kernel to end.

        Raises:
            subprocess.TimeoutExpired: It still runs after `timeout` seconds.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout or 0)
            time.sleep(0.05)
        return -1

    def send_signal(self, signum: int) -> None:
        """Signal the kernel (nothing once it has ended)."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    def kill(self) -> None:
        """SIGKILL."""
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        """SIGTERM."""
        self.send_signal(signal.SIGTERM)


def provisioner_class() -> type:
    """jupyter_client's local provisioner, launching ipykernel kernels from a `ForkServer`.

    Set its `server` before the kernel starts; a kernelspec whose command is not ipykernel's
    launcher is launched as usual.
    """
    from jupyter_client.provisioning.local_provisioner import LocalProvisioner

    class ForkingProvisioner(LocalProvisioner):  # type: ignore[misc]
        """Launches its kernel as a fork of the server."""

        server: ForkServer | None = None

        async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
            if self.server is None or cmd[1:3] != LAUNCHER:
                return await super().launch_kernel(cmd, **kwargs)
            self.cwd = str(kwargs.get("cwd") or Path.cwd())
            self.process = self.server.fork(cmd[3:], dict(kwargs.get("env") or os.environ),
                                            self.cwd)
            self.pid = self.pgid = self.process.pid
            return self.connection_info

    return ForkingProvisioner


# ------------------------------------------------------------------------------------- the server


def main(argv: list[str]) -> None:
    """The server: load the kernels' modules, then fork one kernel per request until end-of-file.

    A forked child becomes a kernel and exits when it ends (`_exit`), never returning here.

    Args:
        argv: The socket's file descriptor, what to load (`module:name`) and its argument (JSON).
    """
    import importlib

    channel = socket.socket(fileno=int(argv[0]))
    # the kernel itself, loaded before any fork, with what its start resolves by name: the kernel
    # class and its debugger (debugpy's modules: about 0.14 s of CPU in each kernel otherwise).
    # debugpy's note that frozen modules may hide breakpoints, which a kernel prints before its
    # output reaches anyone, is not printed here either.
    quiet = "PYDEVD_DISABLE_FILE_VALIDATION"
    given = os.environ.get(quiet)
    os.environ[quiet] = "1"
    try:
        from ipykernel import debugger, ipkernel, kernelapp  # noqa: F401
    finally:
        if given is None:
            del os.environ[quiet]
        else:
            os.environ[quiet] = given

    try:
        module, _, name = argv[1].partition(":")
        getattr(importlib.import_module(module), name)(json.loads(argv[2]))
    except Exception:  # a kernel says it where a notebook imports it; the server still forks
        traceback.print_exc()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernels are reaped as they end
    requests = channel.makefile("rb")
    for line in requests:
        request = json.loads(line)
        # what the server holds is out of its kernels' garbage collections: a collection in a
        # kernel (IPython's at its exit, about 0.1 s of CPU) walks its own objects only, and
        # copies no page of the server's heap by walking it
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            requests.close()
            channel.close()
            code = 1
            try:
                _become_kernel(request)
                code = 0
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
            except BaseException:
                traceback.print_exc()
            finally:
                _exit(code)
        channel.sendall(json.dumps({"pid": pid, "start": owner_token(pid)}).encode() + b"\n")


def _exit(code: int) -> None:
    """End a forked kernel as an interpreter ends, less the teardown of every module and object.

    Its threads are waited for, its exit functions run and its output flushed; the teardown of
    the heap it inherited would cost about half a second of CPU (and copy each page it touches).
    """
    for thread in threading.enumerate():
        if not thread.daemon and thread is not threading.current_thread():
            with contextlib.suppress(RuntimeError):
                thread.join()
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(BaseException):
            stream.flush()
    os._exit(code)


def _path_as_a_kernels() -> None:
    """Put the working folder on the import path where IPython puts it in a kernel.

    IPython's shell puts `''` before the first site-packages folder (else first), unless the
    interpreter runs with -P, as the server does (nothing of `/`, where it starts, is importable):
    the kernel's notebook then imports the modules beside it, as in a kernel started as usual.
    """
    if "" in sys.path:
        return
    where = next((i for i, path in enumerate(sys.path)
                  if os.path.basename(path) in ("site-packages", "dist-packages")), 0)
    sys.path.insert(where, "")


def _become_kernel(request: dict[str, Any]) -> None:
    """In a forked child: become the kernel jupyter_client asked for, as its launcher would."""
    os.setsid()  # as jupyter_client's launcher does: the kernel's process group is its own
    with contextlib.suppress(Exception):  # its name in ps and top (its command line is ours)
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_NAME, b"innolab-kernel", 0, 0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.chdir(request["cwd"])
    _path_as_a_kernels()
    os.environ.clear()
    os.environ.update(request["env"])
    parent = str(os.getppid())  # the server: the kernel ends with it
    os.environ["JPY_PARENT_PID"] = os.environ[PARENT_VAR] = parent
    if "numpy" in sys.modules:  # a fresh interpreter's own random state (random reseeds itself)
        sys.modules["numpy"].random.seed()
    # the app read JPY_PARENT_PID as it was imported, in the server: its parent is said again
    args = [*request["args"], f"--IPKernelApp.parent_handle={parent}"]
    sys.argv = ["ipykernel_launcher", *args]
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(argv=args)


if __name__ == "__main__":
    main(sys.argv[1:])
