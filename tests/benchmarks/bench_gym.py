"""Benchmark: tool-call overhead (local, Docker), the validate tool's cost against the checker's own
compute (pooled checkers and none, their held memory), 8 concurrent 1-second calls, and resuming a
killed run."""

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
from typing import Any

from innolab.gym.checker_pool import pool_size
from innolab.gym.dispatcher import dispatch_sync
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.policy import RunConfig
from innolab.gym.run import create_run
from innolab.gym.sandbox import SandboxError
from innolab.gym.tools import Toolbox, ToolCall
from innolab.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]


def overhead_ms(runtime: str, calls: int = 30, tool: str = "bash",
                pool_size: int | None = None) -> float | None:
    """Median milliseconds of one tool call: `bash true`, or `validate` of a valid packing (pristine
    checker; before each call the checker pool has refilled, as it does while an agent thinks)."""
    opened = open_toolbox(runtime, pool_size)
    if opened is None:
        return None
    toolbox, pool = opened
    arguments = {"command": "true"} if tool == "bash" else {"path": "packing.json"}
    try:
        times = []
        for i in range(calls):
            if tool == "validate":
                pool.wait_full(120)
            times.append(timed_call(toolbox, ToolCall(str(i), tool, arguments)))
    finally:
        toolbox.sandbox.close()
        toolbox.validator.close()
    return statistics.median(times)


def open_toolbox(runtime: str, pool_size: int | None = None) -> tuple[Toolbox, Any] | None:
    """A toolbox over a fresh sandbox of circle-packing-26 holding packing.json (a valid packing),
    and its validator's checker pool; None (said why) where the runtime cannot start."""
    from tests.gym_policies import GRID

    task = get_task("circle-packing-26")
    try:
        sandbox = open_sandbox(task, runtime)  # type: ignore[arg-type]
    except SandboxError as error:
        print(f"  {runtime}: skipped ({error})")
        return None
    validator = open_validator(task, sandbox, pool_size=pool_size)
    sandbox.write_file("packing.json", json.dumps({"circles": GRID}).encode())
    return Toolbox(sandbox, validator), validator.pool  # type: ignore[attr-defined]


def timed_call(toolbox: Toolbox, call: ToolCall) -> float:
    """Milliseconds of one tool call, which must succeed."""
    start = time.perf_counter()
    result = toolbox.run(call, 30)
    elapsed = (time.perf_counter() - start) * 1000
    assert result.ok, result.output
    return elapsed


# the checker's own compute: a started interpreter runs validate.py on the candidate, from a fresh
# copy as each check has (its imports, its modules compiled anew, its check), timed inside; the
# interpreter's start and end are not counted
COMPUTE = """
import contextlib, io, os, runpy, sys, time
folder = sys.argv[1]
os.chdir(folder)
sys.argv = [folder + "/checker/validate.py", folder + "/candidate.json"]
start = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit:
        pass
print((time.perf_counter() - start) * 1000)
"""


def checker_copy(folder: Path) -> None:
    """The checker of circle-packing-26 and a valid packing, as a check's folder holds them."""
    from tests.gym_policies import GRID

    for name, content in get_task("circle-packing-26").validator_files().items():
        (folder / "checker" / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / "checker" / name).write_bytes(content)
    (folder / "candidate.json").write_text(json.dumps({"circles": GRID}))


def checker_compute_ms(runtime: str, client: Any = None) -> float:
    """Milliseconds of the checker's own compute, once, on a fresh copy in a fresh interpreter:
    locally with innolab's Python, or in a container of the sandbox image under the checker's
    limits (`client`: the engine's)."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o755)
        checker_copy(Path(tmp))
        if runtime == "local":
            return float(subprocess.run([sys.executable, "-I", "-c", COMPUTE, tmp],
                                        capture_output=True, text=True, check=True).stdout)
        from innolab.gym.docker_sandbox import DEFAULT_IMAGE

        fresh = 'cp -r /pristine /tmp/copy && exec python3 -I -c "$0" /tmp/copy'
        return float(client.containers.run(
            DEFAULT_IMAGE, ["sh", "-c", fresh, COMPUTE], user="1000:1000", network_mode="none",
            mem_limit="1024m", nano_cpus=int(1e9), pids_limit=64, cap_drop=["ALL"],
            volumes={tmp: {"bind": "/pristine", "mode": "ro"}}, remove=True))


def validate_figures(calls: int = 10) -> dict[str, float | None]:
    """The validate tool in both runtimes, and the checker's own compute in each, all interleaved
    (local call, Docker call, local compute, Docker compute, ...) so that the machine's load weighs
    on all alike: with the default pool (refilled before each call, as while an agent thinks) and
    with none (each check starts its own checker, as before the pool); the pool's held memory."""
    figures: dict[str, float | None] = {"checker_pool_size": pool_size()}
    runtimes = ["local", "docker"]
    computed: dict[str, list[float]] = {runtime: [] for runtime in runtimes}
    for label, size in (("", None), ("_pool0", 0)):
        boxes = {runtime: open_toolbox(runtime, size) for runtime in runtimes}
        runtimes = [runtime for runtime in runtimes if boxes[runtime] is not None]
        times: dict[str, list[float]] = {runtime: [] for runtime in runtimes}
        try:
            for i in range(calls):
                for runtime in runtimes:
                    toolbox, pool = boxes[runtime]  # type: ignore[misc]
                    pool.wait_full(120)
                    call = ToolCall(f"{runtime}-{i}", "validate", {"path": "packing.json"})
                    times[runtime].append(timed_call(toolbox, call))
                for runtime in runtimes if not label else []:
                    for box in boxes.values():
                        box[1].wait_full(120)  # type: ignore[index]
                    client = getattr(boxes[runtime][0].sandbox, "client", None)  # type: ignore[index]
                    computed[runtime].append(checker_compute_ms(runtime, client))
            if not label:
                for runtime in runtimes:
                    toolbox, pool = boxes[runtime]  # type: ignore[misc]
                    pool.wait_full(120)
                    held = toolbox.validator.held_memory_bytes()  # type: ignore[attr-defined]
                    figures[f"{runtime}_pool_memory_mb"] = held / 2**20
                    if runtime == "docker":
                        figures["docker_pool_shim_mb"] = shim_rss(pool.ready()) / 2**20
        finally:
            for box in boxes.values():
                if box is not None:
                    box[0].sandbox.close()
                    box[0].validator.close()
        for runtime in runtimes:
            figures[f"{runtime}_validate{label}_ms"] = statistics.median(times[runtime])
    for runtime in runtimes:
        ms = figures[f"{runtime}_checker_compute_ms"] = statistics.median(computed[runtime])
        figures[f"{runtime}_validate_above_compute_ms"] = figures[f"{runtime}_validate_ms"] - ms
    if "docker" in runtimes:
        figures["docker_local_validate_ratio"] = (figures["docker_validate_ms"]
                                                  / figures["local_validate_ms"])
        figures["docker_local_validate_pool0_ratio"] = (figures["docker_validate_pool0_ms"]
                                                        / figures["local_validate_pool0_ms"])
    return figures


def shim_rss(ready: list[Any]) -> int:
    """The resident memory of the engine's shim processes of these containers, where the engine
    runs on this machine (containerd-shim-runc-v2 -id ID); 0 where none is found."""
    ids = {pooled.container.id for pooled in ready}
    total = 0
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"-id" in argv and argv[argv.index(b"-id") + 1].decode() in ids:
                status = (entry / "status").read_text()
                total += next(int(line.split()[1]) * 1024 for line in status.splitlines()
                              if line.startswith("VmRSS:"))
        except (OSError, IndexError, StopIteration, ValueError):
            continue
    return total


def tool_call_figures(calls: int = 30, warm_up: int = 3) -> dict[str, float | None]:
    """Median milliseconds of `bash true` through the tool, local and Docker, and of spawning the
    command itself (a plain subprocess, no sandbox): `bash -c true` and the tool's own `bash -lc
    true`; one of each in turn, so that the machine's load weighs on all alike."""
    task = get_task("circle-packing-26")
    toolboxes: dict[str, Toolbox] = {}
    for runtime in ("local", "docker"):
        try:
            sandbox = open_sandbox(task, runtime)  # type: ignore[arg-type]
        except SandboxError as error:
            print(f"  {runtime}: skipped ({error})")
            continue
        toolboxes[runtime] = Toolbox(sandbox, open_validator(task, sandbox))
    spawns = {"spawn": ["bash", "-c", "true"], "login_spawn": ["/bin/bash", "-lc", "true"]}
    times: dict[str, list[float]] = {name: [] for name in [*toolboxes, *spawns]}
    # the spawns see what the tool's command sees: a few variables, a home folder of no profile
    home = tempfile.TemporaryDirectory()
    environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home.name, "LANG": "C.UTF-8"}
    try:
        for i in range(warm_up + calls):
            for runtime, toolbox in toolboxes.items():
                start = time.perf_counter()
                result = toolbox.run(ToolCall(str(i), "bash", {"command": "true"}), 30)
                times[runtime].append((time.perf_counter() - start) * 1000)
                assert result.ok, result.output
            for name, argv in spawns.items():
                start = time.perf_counter()
                subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, check=True,
                               env=environment, cwd=home.name)
                times[name].append((time.perf_counter() - start) * 1000)
    finally:
        home.cleanup()
        for toolbox in toolboxes.values():
            toolbox.sandbox.close()
            toolbox.validator.close()
    median = {name: statistics.median(values[warm_up:]) for name, values in times.items()}
    local, docker = median["local"], median.get("docker")
    return {"local_tool_call_ms": local, "docker_tool_call_ms": docker,
            "docker_local_tool_call_ratio": docker / local if docker is not None else None,
            "local_spawn_baseline_ms": median["spawn"],
            "local_spawn_login_ms": median["login_spawn"],
            "local_above_spawn_ms": local - median["spawn"],
            "local_above_login_spawn_ms": local - median["login_spawn"]}


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
        from tests.gym_policies import pythonpath  # the scripted policy, a registered agent

        env = {**os.environ, "PYTHONPATH": pythonpath()}
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
    print("tool-call overhead (`bash true`, median of 30; local, Docker and the plain spawns "
          "interleaved)")
    calls = tool_call_figures()
    figures.update(calls)
    local, docker = calls["local_tool_call_ms"], calls["docker_tool_call_ms"]
    assert local is not None
    print(f"  local   {local:7.1f} ms   (target <= 10 ms: {'met' if local <= 10 else 'MISSED'})")
    above, above_login = calls["local_above_spawn_ms"], calls["local_above_login_spawn_ms"]
    assert above is not None and above_login is not None
    print(f"  the command itself, spawned plainly: bash -c true "
          f"{calls['local_spawn_baseline_ms']:.1f} ms, bash -lc true (what the tool runs) "
          f"{calls['local_spawn_login_ms']:.1f} ms; the local call above them {above:.1f} ms, "
          f"{above_login:.1f} ms (target <= 2 ms: {'met' if above_login <= 2 else 'MISSED'})")
    if docker is not None:
        ratio = calls["docker_local_tool_call_ratio"]
        print(
            f"  docker  {docker:7.1f} ms   "
            f"(target <= 100 ms: {'met' if docker <= 100 else 'MISSED'}); "
            f"ratio docker/local {ratio:.2f}x (target <= 2x: {'met' if ratio <= 2 else 'MISSED'})"
        )
    print("validate tool (pristine checker on a copy of the candidate, circle-packing-26, median "
          "of 10; local and Docker calls and the checker's own compute interleaved)")
    found = validate_figures()
    figures.update(found)
    print(f"  checker pool: {found['checker_pool_size']} started ahead per validator, refilled "
          "before each call (as while an agent thinks); the checker's own compute: validate.py "
          "run on a fresh copy in a started interpreter")
    for runtime in ("local", "docker"):
        if found.get(f"{runtime}_validate_ms") is None:
            continue
        print(f"  {runtime:7} {found[f'{runtime}_validate_ms']:7.1f} ms   checker's own compute "
              f"{found[f'{runtime}_checker_compute_ms']:6.1f} ms, above it "
              f"{found[f'{runtime}_validate_above_compute_ms']:6.1f} ms"
              + (f" (target <= 30 ms: "
                 f"{'met' if found['local_validate_above_compute_ms'] <= 30 else 'MISSED'})"
                 if runtime == "local" else "")
              + f"; no pool {found[f'{runtime}_validate_pool0_ms']:7.1f} ms")
    if found.get("docker_local_validate_ratio") is not None:
        ratio = found["docker_local_validate_ratio"]
        print(f"  ratio docker/local {ratio:.2f}x (target <= 1.5x: "
              f"{'met' if ratio <= 1.5 else 'MISSED'}); "
              f"no pool {found['docker_local_validate_pool0_ratio']:.2f}x")
    held = f"  memory the ready checkers hold: local {found['local_pool_memory_mb']:.1f} MB"
    if found.get("docker_pool_memory_mb") is not None:
        held += (f", docker {found['docker_pool_memory_mb']:.1f} MB in its containers "
                 f"+ {found['docker_pool_shim_mb']:.1f} MB of the engine's shims")
    print(held)
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
