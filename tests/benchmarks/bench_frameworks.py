"""Benchmark: three agent frameworks in the gym, and what the MCP server and the gateway cost.

1. Each framework (smolagents, openai-agents, mini-swe-agent) runs 60 s on circle-packing-26 on
   the embedded model, in the local and the Docker runtime, seeds 0, 1 and 2: its tool calls
   (every one through MCP into the run loop) and model calls (every one through the gateway).
2. A tool call through MCP against the same call dispatched directly (`bash true`, local
   runtime, median of 30): the bridge's overhead in ms and as a ratio.
3. A chat request through the gateway against the same request sent to the model directly (the
   scripted server, no latency, median of 30): the gateway's overhead in ms and as a ratio.

`--quick`: one seed, 30 s, local only.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.stepping import measure

FRAMEWORKS = ("smolagents", "openai-agents", "mini-swe-agent")
QUICK = {"seeds": (0,), "budget_s": 30, "runtimes": ("local",), "repeats": 10}


def stepping(seeds: tuple[int, ...], budget_s: int, runtimes: tuple[str, ...]) -> dict:
    """Each framework × runtime × seed: tool and model calls in `budget_s` seconds."""
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="innolab-frameworks-") as scratch:
        for agent in FRAMEWORKS:
            for runtime in runtimes:
                for seed in seeds:
                    found = measure(agent, seed, Path(scratch), budget_s, runtime=runtime)
                    counts = _counts(found.run_dir)
                    print(f"  {runtime:<7}{found.row()}  {counts}", flush=True)
                    runs.setdefault(agent, {}).setdefault(runtime, {})[str(seed)] = {
                        "model_calls": found.model_calls, "tool_calls": found.tool_calls,
                        "failed_calls": found.failed_calls, "reason": found.reason, **counts}
    fewest = {agent: {runtime: min(r["tool_calls"] for r in by_seed.values())
                      for runtime, by_seed in by_runtime.items()}
              for agent, by_runtime in runs.items()}
    return {"runs": runs, "fewest_tool_calls": fewest}


def _counts(run_dir: Path) -> dict[str, Any]:
    """The gateway's and MCP server's counts, the framework's own, and the trace's, of one run."""
    import json

    from innolab import traces

    try:
        bridge = json.loads((run_dir / "framework.json").read_text())
        own = json.loads((run_dir / "framework_counts.json").read_text())["model_calls"] \
            if (run_dir / "framework_counts.json").exists() else None
        trace = traces.Trace.read(run_dir)
    except (OSError, ValueError, traces.TraceError):
        return {}
    events = len(trace.llm_calls)
    return {"gateway_requests": bridge["gateway_requests"], "framework_own_count": own,
            "llm_call_events": events, "mcp_calls": bridge["mcp_calls"],
            "tool_call_events": len(trace.tool_calls),
            "counts_agree": bridge["gateway_requests"] == events
            and bridge["mcp_calls"] == len(trace.tool_calls)}


def mcp_overhead(repeats: int) -> dict[str, float]:
    """`bash true` dispatched directly and through the MCP server (its client in this process)."""
    from innolab.agents.frameworks._driver import Run, Tools
    from innolab.agents.mcp_tools import Bridge, ToolServer
    from innolab.gym.dispatcher import dispatch_sync
    from innolab.gym.factory import open_sandbox, open_validator
    from innolab.gym.tools import Toolbox, ToolCall
    from innolab.tasks import get_task

    task = get_task("circle-packing-26")
    sandbox = open_sandbox(task, "local")
    validator = open_validator(task, sandbox)
    toolbox = Toolbox(sandbox, validator)
    bridge, stop = Bridge(), threading.Event()
    server = ToolServer(bridge)
    url = server.start()

    def run_loop() -> None:  # the run loop's part: take the calls, dispatch them, hand back
        while not stop.is_set():
            calls = bridge.take(0.05)
            if calls:
                bridge.deliver(dispatch_sync(toolbox, calls, {}, None))

    loop = threading.Thread(target=run_loop, daemon=True)
    loop.start()
    tools = Tools(Run("", "", "", url, server.token, "", {}))
    try:
        direct, through = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            dispatch_sync(toolbox, [ToolCall("d", "bash", {"command": "true"})], {}, None)
            direct.append(time.perf_counter() - start)
            start = time.perf_counter()
            tools.call("bash", {"command": "true"})
            through.append(time.perf_counter() - start)
    finally:
        tools.close()
        stop.set()
        loop.join()
        server.close()
        toolbox.close()
        validator.close()
        sandbox.close()
    a, b = statistics.median(direct) * 1000, statistics.median(through) * 1000
    return {"direct_ms": a, "mcp_ms": b, "overhead_ms": b - a, "ratio": b / a}


def gateway_overhead(repeats: int) -> dict[str, float]:
    """A chat request to the scripted server directly, and through the gateway in front of it."""
    import httpx

    from innolab.llm.client import LLMClient
    from innolab.llm.gateway import Gateway
    from innolab.llm.settings import LLMSettings
    from tests.fake_llm import FakeLLM

    body = {"model": "fake", "messages": [{"role": "user", "content": "hello"}],
            "max_tokens": 32}
    with FakeLLM() as server, httpx.Client(timeout=30) as http:
        settings = LLMSettings(base_url=server.base_url, model="fake", max_tokens=32)
        gateway = Gateway(settings, LLMClient(settings))
        gateway.start()
        try:
            direct, through = [], []
            for _ in range(repeats):
                start = time.perf_counter()
                http.post(f"{server.base_url}/chat/completions", json=body).raise_for_status()
                direct.append(time.perf_counter() - start)
                start = time.perf_counter()
                http.post(f"{gateway.url}/chat/completions", json=body,
                          headers={"Authorization": f"Bearer {gateway.key}"}).raise_for_status()
                through.append(time.perf_counter() - start)
        finally:
            gateway.close()
    a, b = statistics.median(direct) * 1000, statistics.median(through) * 1000
    return {"direct_ms": a, "gateway_ms": b, "overhead_ms": b - a, "ratio": b / a}


def main(seeds: tuple[int, ...] = (0, 1, 2), budget_s: int = 60,
         runtimes: tuple[str, ...] = ("local", "docker"), repeats: int = 30) -> dict:
    """The three parts; printed, and returned as the benchmark's figures."""
    mcp = mcp_overhead(repeats)
    print(f"  tool call (`bash true`, local, median of {repeats}): direct {mcp['direct_ms']:.1f} "
          f"ms, through MCP {mcp['mcp_ms']:.1f} ms: +{mcp['overhead_ms']:.1f} ms (goal <= 10 ms),"
          f" ratio {mcp['ratio']:.2f}", flush=True)
    gateway = gateway_overhead(repeats)
    print(f"  chat request (scripted server, median of {repeats}): direct "
          f"{gateway['direct_ms']:.1f} ms, through the gateway {gateway['gateway_ms']:.1f} ms: "
          f"+{gateway['overhead_ms']:.1f} ms (goal <= 5 ms), ratio {gateway['ratio']:.2f}",
          flush=True)
    print(f"  {len(FRAMEWORKS) * len(runtimes) * len(seeds)} runs of {budget_s} s on the "
          "embedded model (circle-packing-26)", flush=True)
    found = stepping(seeds, budget_s, runtimes)
    print("  fewest tool calls: " + "; ".join(
        f"{agent} " + ", ".join(f"{r} {n}" for r, n in by.items())
        for agent, by in found["fewest_tool_calls"].items()), flush=True)
    return {"mcp": mcp, "gateway": gateway, "budget_s": budget_s, "seeds": list(seeds),
            **found}


if __name__ == "__main__":
    asyncio.run(asyncio.sleep(0))
    main()
