"""What every framework driver reads from its environment, and a blocking client of the run's tools.

A driver runs in a process of its own (innolab.agents.bridge starts it): the run's model gateway
(`INNOLAB_GATEWAY_URL`, `_KEY`, `_MODEL`), the run's MCP tools (`INNOLAB_MCP_URL`, `_TOKEN`), the
task (`INNOLAB_TASK_FILE`) and the framework's options (`INNOLAB_FRAMEWORK_OPTIONS`, JSON).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VERDICT = "pristine validator: "  # what precedes the submit tool's verdict (JSON) in its output


@dataclass(frozen=True)
class Run:
    """The run as a driver sees it."""

    base_url: str
    key: str
    model: str
    mcp_url: str
    token: str
    task: str
    options: dict[str, Any]

    @property
    def headers(self) -> dict[str, str]:
        """The MCP server's authorization header."""
        return {"Authorization": f"Bearer {self.token}"}


def run_from_environment() -> Run:
    """The run's addresses, task and options, from the driver's environment.

    Raises:
        SystemExit: A variable is missing (the driver was not started by innolab).
    """
    try:
        return Run(os.environ["INNOLAB_GATEWAY_URL"], os.environ["INNOLAB_GATEWAY_KEY"],
                   os.environ["INNOLAB_GATEWAY_MODEL"], os.environ["INNOLAB_MCP_URL"],
                   os.environ["INNOLAB_MCP_TOKEN"],
                   Path(os.environ["INNOLAB_TASK_FILE"]).read_text(encoding="utf-8"),
                   json.loads(os.environ.get("INNOLAB_FRAMEWORK_OPTIONS") or "{}"))
    except KeyError as missing:
        raise SystemExit(f"{missing} is not set: innolab starts this driver for a run") from None


def accepted(text: str) -> bool:
    """Whether a submit tool's output says the submission was accepted (its verdict valid)."""
    _, found, verdict = text.partition(VERDICT)
    if not found:
        return False
    try:
        return json.JSONDecoder().raw_decode(verdict.strip())[0].get("valid") is True
    except (ValueError, AttributeError):
        return False


class Tools:
    """The run's MCP tools from synchronous code: one session, on an event loop of its own."""

    def __init__(self, run: Run) -> None:
        """Connect (in a daemon thread's event loop)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._run = run
        self._session: Any = None
        self._stack: Any = None
        asyncio.run_coroutine_threadsafe(self._connect(), self._loop).result(timeout=60)

    async def _connect(self) -> None:
        from contextlib import AsyncExitStack

        import httpx
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        self._stack = AsyncExitStack()
        http = await self._stack.enter_async_context(httpx.AsyncClient(
            headers=self._run.headers, timeout=httpx.Timeout(30.0, read=3600.0)))
        read, write, _ = await self._stack.enter_async_context(
            streamable_http_client(self._run.mcp_url, http_client=http))
        self._session = await self._stack.enter_async_context(ClientSession(read, write))
        await self._session.initialize()

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """One tool call; its text and whether it was a protocol error (the run ended...)."""
        future = asyncio.run_coroutine_threadsafe(self._session.call_tool(name, arguments),
                                                  self._loop)
        result = future.result()
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        return text, bool(result.isError)

    def close(self) -> None:
        """Disconnect."""
        if self._stack is not None:
            with contextlib.suppress(Exception):  # the run's server is gone already
                asyncio.run_coroutine_threadsafe(self._stack.aclose(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)


COUNTS_FILE = "framework_counts.json"  # what the framework itself counted, written at its end


def write_counts(model_calls: int, **more: Any) -> None:
    """Write the framework's own count of its model calls (and more), beside the run's files.

    Args:
        model_calls: How many model calls the framework says it made.
        **more: Further counts of its own.
    """
    Path(COUNTS_FILE).write_text(json.dumps({"model_calls": model_calls, **more}) + "\n",
                                 encoding="utf-8")
