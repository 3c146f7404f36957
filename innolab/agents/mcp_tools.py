"""A run's tools over the Model Context Protocol, for agents that own their loop.

`ToolServer` serves the run's tools (shell command, Python in the run's persistent session, read /
write / list files, validate, submit) with the official `mcp` SDK, under the same names, schemas
and descriptions the scaffolds use (innolab.gym.tools.TOOL_SPECS), over streamable HTTP on
127.0.0.1 with a run-scoped bearer token. `python -m innolab.agents.mcp_tools URL` (the token in
the environment variable INNOLAB_MCP_TOKEN, never on the command line, where any user's `ps` reads
it) serves the same tools over stdio (for a framework that starts its MCP servers itself), relaying
each call to the run's HTTP server.

Each call is handed to a `Bridge`, which the run's policy (innolab.agents.bridge) empties into one
step of the run loop: the dispatcher, budgets and time limits, trace events, checkpoints,
provenance capture and the pristine validator are the run's, as for every scaffold's call. A call
with bad arguments, or one after the run's budget is spent, gets a tool error that says so.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from innolab.gym.tools import TOOL_SPECS, ToolCall, ToolError, ToolResult, check_arguments

# the tools served: every scaffold tool but one-shot python (the session keeps its state) and
# edit_file (write_file covers it)
MCP_TOOLS = ("bash", "python_session", "read_file", "write_file", "list_files", "validate",
             "submit")
SERVER_NAME = "innolab-run"
TOKEN_VAR = "INNOLAB_MCP_TOKEN"  # the run's MCP token, for the stdio relay (and the drivers)


def tool_specs() -> list[dict[str, Any]]:
    """The served tools' specifications (OpenAI function format), as the scaffolds see them."""
    return [spec["function"] for spec in TOOL_SPECS if spec["function"]["name"] in MCP_TOOLS]


@dataclass
class Pending:
    """A tool call waiting for the run loop: its call, and its result once the step ran it."""

    call: ToolCall
    done: threading.Event = field(default_factory=threading.Event)
    result: ToolResult | None = None
    error: str | None = None


class Bridge:
    """Tool calls from a framework's threads, taken by the run loop a step at a time.

    Attributes:
        closed: Why no call is taken any more (None while the run goes on).
        calls: How many calls were handed to the run loop.
    """

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._queue: list[Pending] = []
        self._running: dict[str, Pending] = {}
        self.closed: str | None = None
        self.calls = 0  # handed to the run loop (bad or late ones are answered at once)
        self._ids = 0

    def call(self, name: str, arguments: dict[str, Any]) -> Pending:
        """Hand one tool call to the run loop and wait for its result (a caller's thread).

        Args:
            name: The tool.
            arguments: Its arguments.

        Returns:
            The call, with its result, or its error (bad arguments, the run ended).
        """
        with self._ready:
            self._ids += 1
            pending = Pending(ToolCall(f"mcp{self._ids}", name, dict(arguments)))
            try:
                if name not in MCP_TOOLS:
                    raise ToolError(f"unknown tool {name!r}; the tools: {', '.join(MCP_TOOLS)}")
                check_arguments(pending.call)
            except ToolError as error:
                pending.error = f"bad arguments: {error}"
                pending.done.set()
                return pending
            if self.closed is not None:
                pending.error = self.closed
                pending.done.set()
                return pending
            self.calls += 1
            self._queue.append(pending)
            self._ready.notify_all()
        pending.done.wait()
        return pending

    def take(self, timeout: float) -> list[ToolCall]:
        """The calls waiting (each one once), after waiting up to `timeout` s for one.

        Args:
            timeout: Seconds to wait when none is waiting.

        Returns:
            The calls (empty when none came, the bridge was woken, or it is closed).
        """
        with self._ready:
            if not self._queue and self.closed is None:
                self._ready.wait(timeout)
            taken, self._queue = self._queue, []
            for pending in taken:
                self._running[pending.call.id] = pending
            return [p.call for p in taken]

    def deliver(self, results: list[ToolResult]) -> None:
        """Hand the run loop's results to the calls that wait for them.

        Args:
            results: The last step's tool results.
        """
        with self._ready:
            for result in results:
                pending = self._running.pop(result.call_id, None)
                if pending is not None:
                    pending.result = result
                    pending.done.set()

    def wake(self) -> None:
        """Stop a `take` that waits (the framework's process ended)."""
        with self._ready:
            self._ready.notify_all()

    def close(self, why: str) -> None:
        """Refuse every call from now on, and answer those waiting, with `why`.

        Args:
            why: What a call is told (e.g. the run's budget is spent).
        """
        with self._ready:
            self.closed = why
            for pending in [*self._queue, *self._running.values()]:
                pending.error = why
                pending.done.set()
            self._queue, self._running = [], {}
            self._ready.notify_all()


def _server(bridge: Bridge) -> Any:
    """The MCP server of a bridge: its tools listed, each call handed to the run loop."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    server = Server(SERVER_NAME)

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=spec["name"], description=spec["description"],
                           inputSchema=spec["parameters"]) for spec in tool_specs()]

    # the arguments are checked once, by the bridge (innolab.gym.tools.check_arguments: the same
    # schemas), so that a bad call is answered without a second validation per call
    @server.call_tool(validate_input=False)
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        pending = await anyio.to_thread.run_sync(bridge.call, name, arguments)
        if pending.error is not None or pending.result is None:
            text = pending.error or "the run ended before the call ran"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                        isError=True)
        # what the run loop did with the call (a failed command, an invalid candidate included)
        # is a result the agent reads, not a protocol error
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=pending.result.output)], isError=False)

    return server


def _closed_stream(record: logging.LogRecord) -> bool:
    """Leave out the SDK's report of a client that closed its event stream (a normal end)."""
    closed = record.exc_info and type(record.exc_info[1]).__name__ == "ClosedResourceError"
    return not (closed and "standalone SSE writer" in record.getMessage())


class ToolServer:
    """The run's tools served over MCP's streamable HTTP on loopback, behind a bearer token.

    Attributes:
        bridge: Where each call goes.
        token: The run-scoped token a client sends as `Authorization: Bearer <token>`.
        url: The endpoint (`http://127.0.0.1:<port>/mcp`) once started.
    """

    def __init__(self, bridge: Bridge) -> None:
        """Make the server; `start()` serves it."""
        self.bridge = bridge
        self.token = "innolab-mcp-" + secrets.token_urlsafe(24)
        self.url: str | None = None
        self._server: Any = None

    def start(self) -> str:
        """Serve; return the endpoint's URL."""
        logging.getLogger("mcp.server.streamable_http").addFilter(_closed_stream)
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Mount

        from innolab.llm.loopback import LoopbackServer

        manager = StreamableHTTPSessionManager(app=_server(self.bridge), stateless=False,
                                               json_response=True)
        expected = f"Bearer {self.token}".encode()

        async def endpoint(scope: Any, receive: Any, send: Any) -> None:
            headers = dict(scope.get("headers") or [])
            if not secrets.compare_digest(headers.get(b"authorization", b""), expected):
                response = JSONResponse({"error": "the run's MCP token is required "
                                                  "(Authorization: Bearer ...)"}, status_code=401)
                await response(scope, receive, send)
                return
            await manager.handle_request(scope, receive, send)

        @contextlib.asynccontextmanager
        async def lifespan(app: Any) -> AsyncIterator[None]:
            async with manager.run():
                yield

        app = Starlette(routes=[Mount("/mcp", app=endpoint)], lifespan=lifespan)
        self._server = LoopbackServer(app, "innolab MCP tools")
        self.url = f"{self._server.url}/mcp/"
        return self.url

    def close(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.close()
            self._server = None


async def _relay(url: str, token: str) -> None:
    """Serve the tools over stdio, each call relayed to the run's HTTP server."""
    import httpx
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0, read=3600.0)) \
            as http, streamable_http_client(url, http_client=http) as (read, write, _), \
            ClientSession(read, write) as upstream:
        await upstream.initialize()
        server = Server(SERVER_NAME)

        @server.list_tools()
        async def list_tools() -> list[types.Tool]:
            return (await upstream.list_tools()).tools

        @server.call_tool(validate_input=False)
        async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            return await upstream.call_tool(name, arguments)

        async with stdio_server() as (stdin, stdout):
            await server.run(stdin, stdout, server.create_initialization_options())


USAGE = (f"usage: {TOKEN_VAR}=TOKEN python -m innolab.agents.mcp_tools URL (the run's MCP "
         "token in the environment, not on the command line)")


def main(argv: list[str] | None = None) -> None:
    """`python -m innolab.agents.mcp_tools URL`: the run's tools over stdio.

    The run's token is read from INNOLAB_MCP_TOKEN.
    """
    import os

    import anyio

    args = sys.argv[1:] if argv is None else argv
    token = os.environ.get(TOKEN_VAR)
    if len(args) != 1 or not token:
        raise SystemExit(USAGE)
    anyio.run(_relay, args[0], token)


if __name__ == "__main__":
    main()

