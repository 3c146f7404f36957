"""innolab's end of a sandbox's executor (images/executor_server.py): calls over its stream.

A sandbox starts the executor once and sends every command to it, so that a command costs a fork in
a small process instead of a `docker exec` (or a fork of innolab's own large process). Calls from
several threads share the one stream: each has an id, a reader thread routes the executor's frames
to the call that waits for them. The executor that stops (killed, its stream broken) fails every
call in flight with a SandboxError at once and is started afresh for the next call; an executor
that does not answer within the call's time limit and a grace fails the call the same way. Nothing
waits without a bound.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from innolab.gym.sandbox import ExecResult, SandboxError

SERVER_FILE = Path(__file__).resolve().parent / "images" / "executor_server.py"
FRAME = struct.Struct(">II")
# past a command's time limit: the executor's kill and drain (1 s) and the reply's way back
ANSWER_GRACE_S = 15.0
START_TIMEOUT_S = 60.0
DIAGNOSTIC_CHARS = 2000


def server_source() -> str:
    """The executor's source, run by the sandbox's own Python as `python3 -I -S -c SOURCE`."""
    return SERVER_FILE.read_text(encoding="utf-8")


def server_argv(python: str, config: dict[str, Any]) -> list[str]:
    """The command that starts the executor.

    Args:
        python: The interpreter (the sandbox's own `python3`, or innolab's for a local sandbox).
        config: The executor's settings (see executor_server.py: uid, gid, cwd, env, timeout_code,
            signal_codes, capture_log).

    Returns:
        The argument list.
    """
    return [python, "-I", "-S", "-c", server_source(), json.dumps(config)]


class Stream(Protocol):
    """A started executor's stream, as a transport provides it."""

    def send(self, data: bytes) -> None:
        """Write bytes to the executor's standard input.

        Raises:
            OSError: The stream is broken.
        """
        ...

    def receive(self) -> bytes:
        """The next bytes of the executor's standard output; b"" at its end (or a broken stream)."""
        ...

    def diagnostics(self) -> str:
        """What the executor wrote on its standard error, its end (why it stopped)."""
        ...

    def close(self) -> None:
        """End the stream; the executor stops."""
        ...


@dataclass
class Reply:
    """What an executor answered to one request.

    Attributes:
        header: The `done` frame's header (code, timed_out, or error).
        body: The `done` frame's body.
        out: The command's standard output.
        err: The command's standard error.
    """

    header: dict[str, Any] = field(default_factory=dict)
    body: bytes = b""
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)


class _Call:
    """One request in flight: its reply as it arrives, and whether it ended."""

    def __init__(self) -> None:
        self.reply = Reply()
        self.done = threading.Event()
        self.failure: str | None = None


class _Connection:
    """One started executor: its stream, the calls in flight and the thread that reads replies."""

    def __init__(self, stream: Stream, name: str) -> None:
        self.stream = stream
        self.calls: dict[int, _Call] = {}
        self.lock = threading.Lock()  # guards calls and alive
        self.send_lock = threading.Lock()  # one frame at a time on the stream
        self.alive = True
        self.reason = ""
        self.reader = threading.Thread(target=self._read, name=f"innolab-{name}-executor",
                                       daemon=True)
        self.reader.start()

    def _read(self) -> None:
        """Route frames to their calls until the stream ends; then fail every call left."""
        buffer = bytearray()
        try:
            while True:
                while len(buffer) >= FRAME.size:
                    header_size, body_size = FRAME.unpack_from(buffer)
                    end = FRAME.size + header_size + body_size
                    if len(buffer) < end:
                        break
                    header = json.loads(bytes(buffer[FRAME.size:FRAME.size + header_size]))
                    body = bytes(buffer[FRAME.size + header_size:end])
                    del buffer[:end]
                    self._route(header, body)
                data = self.stream.receive()
                if not data:
                    break
                buffer += data
        except Exception as error:  # a broken stream or a frame that cannot be read
            self.reason = f"{type(error).__name__}: {error}"
        self._stop(self.reason or "its stream ended")

    def _route(self, header: dict[str, Any], body: bytes) -> None:
        """Hand one frame to the call it belongs to."""
        with self.lock:
            call = self.calls.get(header.get("id"))  # type: ignore[arg-type]
        if call is None:
            return
        kind = header.get("kind")
        if kind == "out":
            call.reply.out += body
        elif kind == "err":
            call.reply.err += body
        elif kind == "done":
            call.reply.header, call.reply.body = header, body
            with self.lock:
                self.calls.pop(header["id"], None)
            call.done.set()

    def _stop(self, reason: str) -> None:
        """Mark the executor stopped and fail every call in flight with the reason."""
        with self.lock:
            self.alive = False
            calls, self.calls = self.calls, {}
        detail = self.stream.diagnostics().strip()[-DIAGNOSTIC_CHARS:]
        for call in calls.values():
            call.failure = reason + (f"; it said: {detail}" if detail else "")
            call.done.set()

    def request(self, request_id: int, header: dict[str, Any], wait_s: float) -> Reply:
        """Send one request and wait for its answer.

        Raises:
            SandboxError: The executor stopped, or did not answer within `wait_s`.
        """
        call = _Call()
        encoded = json.dumps({**header, "id": request_id}).encode("utf-8")
        with self.lock:
            if not self.alive:
                raise SandboxError(f"the sandbox's executor stopped ({self.reason})")
            self.calls[request_id] = call
        try:
            with self.send_lock:
                self.stream.send(FRAME.pack(len(encoded), 0) + encoded)
        except OSError as error:
            with self.lock:
                self.calls.pop(request_id, None)
            self.close()
            raise SandboxError(f"the sandbox's executor stopped ({error}); it starts afresh "
                               "with the next command") from None
        if not call.done.wait(wait_s):
            with self.lock:
                self.calls.pop(request_id, None)
            self.close()
            raise SandboxError(f"the sandbox's executor did not answer within {wait_s:g} s; "
                               "it was stopped and starts afresh with the next command")
        if call.failure is not None:
            raise SandboxError(f"the sandbox's executor stopped during the command "
                               f"({call.failure}); it starts afresh with the next command")
        return call.reply

    def close(self) -> None:
        """End the stream (the executor stops; the reader fails what is left)."""
        with self.lock:
            self.alive = False
        with contextlib.suppress(OSError):
            self.stream.close()


class Executor:
    """A sandbox's executor, started on first use and again after it stopped.

    Args:
        start: Starts an executor and returns its stream.
        name: The sandbox's runtime, for thread names.
    """

    def __init__(self, start: Callable[[], Stream], name: str) -> None:
        self._start = start
        self._name = name
        self._lock = threading.Lock()
        self._connection: _Connection | None = None
        self._ids = itertools.count(1)
        self.starts = 0
        self.closed = False

    def _connected(self) -> _Connection:
        """The running executor, started (and checked with a ping) where none runs.

        Raises:
            SandboxError: The sandbox is closed, or the executor could not be started.
        """
        with self._lock:
            if self.closed:
                raise SandboxError("the sandbox is closed")
            if self._connection is not None and self._connection.alive:
                return self._connection
            if self._connection is not None:
                self._connection.close()
            try:
                stream = self._start()
            except SandboxError:
                raise
            except Exception as error:
                raise SandboxError(f"the sandbox's executor could not be started: "
                                   f"{type(error).__name__}: {error}") from None
            connection = _Connection(stream, self._name)
            self.starts += 1
            try:
                reply = connection.request(next(self._ids), {"op": "ping"}, START_TIMEOUT_S)
            except SandboxError as error:
                connection.close()
                raise SandboxError(f"the sandbox's executor did not start: {error}") from None
            if "error" in reply.header:
                connection.close()
                raise SandboxError(f"the sandbox's executor did not start: "
                                   f"{reply.header['error']}")
            self._connection = connection
            return connection

    def start(self) -> None:
        """Start the executor now (else the first call starts it).

        Raises:
            SandboxError: It could not be started.
        """
        self._connected()

    def call(self, header: dict[str, Any], wait_s: float) -> Reply:
        """One request and its answer.

        Args:
            header: The request (op and its fields; the id is added).
            wait_s: The longest wait for the answer.

        Returns:
            The answer; a request that failed in the executor says so in `header["error"]`.

        Raises:
            SandboxError: The executor stopped, or did not answer in time, or cannot start.
        """
        return self._connected().request(next(self._ids), header, wait_s)

    def close(self) -> None:
        """Stop the executor; later calls fail."""
        with self._lock:
            self.closed = True
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def exec(self, argv: list[str], timeout_s: float, **fields: Any) -> ExecResult:
        """Run a command through the executor (see Sandbox.exec).

        Args:
            argv: The argument list.
            timeout_s: Its time limit (its process group is killed past it).
            **fields: Further fields of the request (env, cwd).

        Returns:
            Its exit status, outputs, whether it timed out and its wall time.

        Raises:
            SandboxError: The executor stopped, did not answer, or could not run the request.
        """
        start = time.monotonic()
        reply = self.call({"op": "exec", "argv": argv, "timeout": timeout_s, **fields},
                          timeout_s + ANSWER_GRACE_S)
        if "error" in reply.header:
            raise SandboxError(f"the sandbox's executor could not run the command: "
                               f"{reply.header['error']}")
        return ExecResult(int(reply.header["code"]), reply.out.decode(errors="replace"),
                          reply.err.decode(errors="replace"), bool(reply.header["timed_out"]),
                          time.monotonic() - start)


class ProcessStream:
    """An executor run as innolab's child process, over its pipes (a local sandbox's).

    It runs in a process group of its own (a terminal's Ctrl-C is not its) in innolab's session:
    where the kernel groups sessions for scheduling (autogroup), a session of its own would make
    every command wait as a newcomer on a loaded machine; it leaves innolab's terminal at its
    start (`detach_terminal`), so that no command has one. It stops at the end of its input: when
    innolab closes it or exits, however.

    Args:
        argv: The executor's command (`server_argv`).
    """

    def __init__(self, argv: list[str]) -> None:
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._errors, process_group=0)
        self.pid = self.process.pid

    def send(self, data: bytes) -> None:
        """Write to the executor's input (see Stream.send)."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def receive(self) -> bytes:
        """The executor's next output bytes (see Stream.receive)."""
        assert self.process.stdout is not None
        try:
            return os.read(self.process.stdout.fileno(), 1 << 16)
        except (OSError, ValueError):
            return b""

    def diagnostics(self) -> str:
        """The end of what the executor wrote on its standard error."""
        try:
            self._errors.seek(0)
            return self._errors.read()[-DIAGNOSTIC_CHARS:].decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        """Close its input; kill it where it does not stop at once."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(2.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._errors.close()
