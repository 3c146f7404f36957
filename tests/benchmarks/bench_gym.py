"""Benchmark: tool-call overhead (local, Docker), 8 concurrent 1-second calls, and resuming a killed
run."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from innolab.gym.dispatcher import dispatch_sync
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.policy import RunConfig
from innolab.gym.run import create_run
from innolab.gym.sandbox import SandboxError
from innolab.gym.tools import Toolbox, ToolCall
from innolab.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]


def overhead_ms(runtime: str, calls: int = 30, tool: str = "bash") -> float | None:
    """Median milliseconds of one tool call: `bash true`, or `validate` of a valid packing (pristine
    checker)."""
    task = get_task("circle-packing-26")
    try:
        sandbox = open_sandbox(task, runtime)  # type: ignore[arg-type]
    except SandboxError as error:
        print(f"  {runtime}: skipped ({error})")
        return None
    validator = open_validator(task, sandbox)
    toolbox = Toolbox(sandbox, validator)
    arguments = {"command": "true"} if tool == "bash" else {"path": "packing.json"}
    if tool == "validate":
        from tests.gym_policies import GRID

        sandbox.write_file("packing.json", json.dumps({"circles": GRID}).encode())
    try:
        times = []
        for i in range(calls):
            start = time.perf_counter()
            result = toolbox.run(ToolCall(str(i), tool, arguments), 30)
            times.append((time.perf_counter() - start) * 1000)
            assert result.ok, result.output
    finally:
        sandbox.close()
        validator.close()
    return statistics.median(times)


def concurrency(n: int = 8, seconds: float = 1.0) -> tuple[float, float]:
    task = get_task("circle-packing-26")
    sandbox = open_sandbox(task, "local")
    validator = open_validator(task, sandbox)
    toolbox = Toolbox(sandbox, validator)
    calls = [ToolCall(str(i), "bash", {"command": f"sleep {seconds}"}) for i in range(n)]
    try:
        start = time.perf_counter()
        dispatch_sync(toolbox, calls)
        together = time.perf_counter() - start
        start = time.perf_counter()
        for call in calls:
            toolbox.run(call, 10)
        one_by_one = time.perf_counter() - start
    finally:
        sandbox.close()
        validator.close()
    return together, one_by_one


def resume_seconds() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(
            task="circle-packing-26",
            policy="tests.gym_policies:ScriptedPolicy",
            policy_args={"steps": 40, "sleep_s": 0.05},
            max_steps=100,
        )
        run_dir = create_run(config, Path(tmp) / "run")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"]
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        while not (run_dir / "checkpoint" / "state.json").exists():
            time.sleep(0.05)
        time.sleep(1.0)
        process.send_signal(signal.SIGKILL)
        process.wait()
        # Resume time: from the command to the first event the resumed run writes (run_resumed).
        start = time.perf_counter()
        resumed = subprocess.Popen(
            [*command, "--resume"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        trace = run_dir / "trace.jsonl"
        while b'"run_resumed"' not in trace.read_bytes():
            time.sleep(0.005)
        elapsed = time.perf_counter() - start
        resumed.wait()
        return elapsed


def main() -> dict[str, float | None]:
    """Tool-call overhead in both runtimes, the validate tool, concurrency and resume; printed."""
    figures: dict[str, float | None] = {}
    print("tool-call overhead (`bash true`, median of 30)")
    local = figures["local_tool_call_ms"] = overhead_ms("local")
    print(f"  local   {local:7.1f} ms   (target <= 10 ms: {'met' if local <= 10 else 'MISSED'})")
    docker = figures["docker_tool_call_ms"] = overhead_ms("docker")
    if docker is not None:
        figures["docker_local_tool_call_ratio"] = docker / local
        print(
            f"  docker  {docker:7.1f} ms   "
            f"(target <= 100 ms: {'met' if docker <= 100 else 'MISSED'}); "
            f"ratio docker/local {docker / local:.1f}x"
        )
    print(
        "validate tool (pristine checker on a copy of the candidate, circle-packing-26, "
        "median of 10)"
    )
    for runtime in ("local", "docker"):
        validating = figures[f"{runtime}_validate_ms"] = overhead_ms(runtime, calls=10,
                                                                      tool="validate")
        if validating is not None:
            print(f"  {runtime:7} {validating:7.1f} ms")
    if figures["docker_validate_ms"] is not None and figures["local_validate_ms"]:
        figures["docker_local_validate_ratio"] = (figures["docker_validate_ms"]
                                                  / figures["local_validate_ms"])
        print(f"  ratio docker/local {figures['docker_local_validate_ratio']:.1f}x")
    together, one_by_one = concurrency()
    figures["concurrent_8x1s_s"], figures["sequential_8x1s_s"] = together, one_by_one
    print(
        f"8 concurrent 1-second calls: {together:.2f} s "
        f"(target <= 1.3 s: {'met' if together <= 1.3 else 'MISSED'});"
        f" one after another {one_by_one:.2f} s; ratio {one_by_one / together:.1f}x"
    )
    resumed = figures["resume_s"] = resume_seconds()
    print(f"resume a killed run: {resumed:.2f} s from the resume command to its first event")
    return figures


if __name__ == "__main__":
    main()
