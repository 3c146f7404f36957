"""The asynchronous tool dispatcher: one step's calls run concurrently, each with its timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from innolab.gym.tools import DEFAULT_TIMEOUTS, Toolbox, ToolCall, ToolResult

DEFAULT_TIMEOUT_S = 30.0
CANCELLED = "error: cancelled, the run's budget ran out"


async def _run_one(toolbox: Toolbox, call: ToolCall, timeout_s: float,
                   pool: ThreadPoolExecutor) -> ToolResult:
    start = time.monotonic()
    # The sandbox enforces the timeout on the command itself; the extra second bounds the wait for
    # it here.
    task = asyncio.get_running_loop().run_in_executor(pool, toolbox.run, call, timeout_s)
    try:
        result = await asyncio.wait_for(task, timeout_s + 1.0)
    except TimeoutError:
        message = f"error: {call.name} timed out after {timeout_s:g} s"
        result = ToolResult(call.id, call.name, message, False)
    result.duration_s = time.monotonic() - start
    return result


async def dispatch(toolbox: Toolbox, calls: Sequence[ToolCall],
                   timeouts: dict[str, float] | None = None,
                   deadline_s: float | None = None) -> list[ToolResult]:
    """Run the calls concurrently, each with its tool's timeout.

    Args:
        toolbox: the tools, bound to the run's sandbox and validator.
        calls: the step's tool calls.
        timeouts: per-tool timeouts in seconds, over DEFAULT_TIMEOUTS.
        deadline_s: seconds from now (the remaining budget); calls still running then are cancelled.

    Returns:
        One result per call, in call order (a cancelled or timed-out call's result says so).
    """
    limits = {**DEFAULT_TIMEOUTS, **(timeouts or {})}
    if not calls:
        return []
    # One thread per call: asyncio's default pool has only cpu_count + 4 threads, which would
    # serialise a step.
    pool = ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="innolab-tool")
    tasks = [asyncio.ensure_future(_run_one(toolbox, c, limits.get(c.name, DEFAULT_TIMEOUT_S),
                                            pool)) for c in calls]
    done, pending = await asyncio.wait(tasks, timeout=deadline_s)
    for task in pending:
        task.cancel()
    pool.shutdown(wait=False, cancel_futures=True)
    results = []
    for call, task in zip(calls, tasks, strict=True):
        if task in done and not task.cancelled():
            results.append(task.result())
        else:
            results.append(ToolResult(call.id, call.name, CANCELLED, False))
    return results


def dispatch_sync(toolbox: Toolbox, calls: Sequence[ToolCall],
                  timeouts: dict[str, float] | None = None,
                  deadline_s: float | None = None) -> list[ToolResult]:
    """`dispatch` from synchronous code.

    Inside a running loop (a Jupyter kernel) it uses a helper thread. Takes and returns what
    `dispatch` does.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(dispatch(toolbox, calls, timeouts, deadline_s))
    with ThreadPoolExecutor(max_workers=1) as helper:
        return helper.submit(asyncio.run, dispatch(toolbox, calls, timeouts, deadline_s)).result()
