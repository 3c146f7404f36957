"""A process started by `docker exec` with its standard streams attached: the engine's raw socket.

The Docker sandbox's executor (innolab.gym.executor) runs so: one exec at the sandbox's start, its
standard input written and its output read over the exec's hijacked connection to the engine (a
Unix socket on the host, never a network of the container's). Without a terminal the engine
multiplexes the output: each frame is a byte naming the stream (1 out, 2 err), three zero bytes, a
big-endian 32-bit length and the payload.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from typing import Any

DOCKER_FRAME = struct.Struct(">BxxxL")
DIAGNOSTIC_BYTES = 8000


class DockerExecStream:
    """One exec's attached streams (see innolab.gym.executor.Stream).

    Args:
        client: The Docker SDK's client.
        container: The container the command runs in.
        argv: The command.
        user: The user it runs as.
    """

    def __init__(self, client: Any, container: Any, argv: list[str], user: str = "0:0") -> None:
        api = client.api
        self.exec_id = api.exec_create(container.id, argv, stdin=True, stdout=True, stderr=True,
                                       user=user, workdir="/")["Id"]
        self._response = api.exec_start(self.exec_id, socket=True)
        self.socket: socket.socket = getattr(self._response, "_sock", self._response)
        self.socket.settimeout(None)  # the SDK's request timeout would end an idle stream
        self._raw = bytearray()
        self._errors = bytearray()
        self._errors_lock = threading.Lock()

    def send(self, data: bytes) -> None:
        """Write to the command's standard input (see Stream.send)."""
        self.socket.sendall(data)

    def receive(self) -> bytes:
        """The command's next standard output bytes; its standard error is kept aside."""
        out = bytearray()
        while not out:
            while len(self._raw) >= DOCKER_FRAME.size:
                kind, size = DOCKER_FRAME.unpack_from(self._raw)
                if len(self._raw) < DOCKER_FRAME.size + size:
                    break
                payload = self._raw[DOCKER_FRAME.size:DOCKER_FRAME.size + size]
                del self._raw[:DOCKER_FRAME.size + size]
                if kind == 2:
                    with self._errors_lock:
                        self._errors += payload
                        del self._errors[:-DIAGNOSTIC_BYTES]
                else:
                    out += payload
            if out:
                break
            try:
                data = self.socket.recv(1 << 16)
            except OSError:
                return b""
            if not data:
                return b""
            self._raw += data
        return bytes(out)

    def diagnostics(self) -> str:
        """The end of what the command wrote on its standard error."""
        with self._errors_lock:
            return self._errors.decode(errors="replace")

    def close(self) -> None:
        """End the connection: the engine closes the command's input, and it stops."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
