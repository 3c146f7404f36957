"""An ASGI application served on 127.0.0.1 at a free port, from a thread of this process."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any


class LoopbackServer:
    """Serve an ASGI app with uvicorn on loopback until `close()`.

    Attributes:
        port: The port it listens on (bound before the thread starts, so no race for it).
        url: `http://127.0.0.1:<port>`.
    """

    def __init__(self, app: Any, name: str) -> None:
        """Bind a free port and start serving in a daemon thread.

        Args:
            app: The ASGI application.
            name: The thread's name.

        Raises:
            RuntimeError: The server did not start within 30 s.
        """
        import uvicorn

        # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on such sockets (no 40 ms Nagle stalls)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, log_level="critical", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._socket]}, name=name,
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"{name}: the loopback server did not start")
            time.sleep(0.01)

    def close(self) -> None:
        """Stop serving (open connections are closed) and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
