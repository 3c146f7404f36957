"""A sweep at scale against a flaky, rate-limited endpoint: 300 configurations of short CodeAct runs
against the scripted OpenAI-compatible server with latency, 429s with Retry-After, 500s and dropped
connections injected (and a 30-second outage a third of the way through), on 2 workers that share a
cap of 1 request in flight (below their demand of 2). It reports the configurations done exactly
once (scored, and every reply the server gave them recorded once in a trace: no run executed
twice), the most requests the server saw in flight at once (never above the cap), the failed runs
before and after `--retry-failed`, the per-run overhead of the sweep machinery against a direct run
in this process, and the wall time."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from innolab import results, runner, sweep
from innolab.llm.client import call_seed
from innolab.sweep import state
from innolab.traces import read_events
from tests.fake_llm import FakeLLM

CAP = 1  # max_concurrent_requests, for both workers together
WORKERS = 2
PRICE = 1.0  # USD per million tokens in and out
FAULTS = {"429": 0.05, "500": 0.04, "drop": 0.03}
LATENCY_S = (0.02, 0.2)
OUTAGE_S = 30.0  # the endpoint answers 500 to everything this long (beyond 4 retries with backoff)
QUICK = {"configurations": 12, "direct_runs": 2}  # `run.py --quick`


def spec(server: FakeLLM, configurations: int) -> dict:
    return {
        "name": "scale",
        "base": {
            "task": "circle-packing-26",
            "agent": "codeact",
            "budget": "60s",
            "runtime": "local",
            "base_url": server.base_url,
            "model": "fake",
            "novelty": "none",
            "max_concurrent_requests": CAP,  # the endpoint's cap, stated in the spec
        },
        "seeds": list(range(configurations)),
    }


def outage(server: FakeLLM, folder: Path, after: int, stop: threading.Event) -> None:
    """Once `after` configurations are scored, every request fails (500) for OUTAGE_S seconds."""
    while not stop.is_set():
        runs = folder / "runs"
        if runs.is_dir() and sum(state.scored(p) for p in runs.iterdir()) >= after:
            break
        time.sleep(0.5)
    if stop.is_set():
        return
    rates = server.fault_rates
    server.fault_rates = {"500": 1.0}
    stop.wait(OUTAGE_S)
    server.fault_rates = rates


def recorded_calls(run_dir: Path) -> int:
    """The calls a run folder's traces (every attempt) record as answered by the endpoint."""
    folders = [*state.archived(run_dir), run_dir]
    return sum(
        sum(e.type == "llm_call" and not e.cached and not e.failed for e in read_events(f))
        for f in folders
        if (f / "trace.jsonl").is_file()
    )


def exactly_once(folder: Path, server: FakeLLM) -> int:
    """Configurations scored (not failed) whose replies from the server are each in a trace once.

    A configuration executed twice would have more replies than its traces record, or two ends.
    """
    table = results.runs(folder)
    owner = {call_seed(int(seed), index): identifier
             for identifier, seed in zip(table["config_id"], table["seed"], strict=True)
             for index in range(40)}
    served = Counter(e["run"] or owner.get(e["seed"]) for e in server.served())
    done = 0
    for identifier in table["config_id"]:
        run_dir = folder / "runs" / identifier
        if not state.scored(run_dir) or state.failed(run_dir, None):
            continue
        events = read_events(run_dir)
        ends = sum(e.type == "run_finished" for e in events), sum(e.type == "score" for e in events)
        done += ends == (1, 1) and served[identifier] == recorded_calls(run_dir)
    return done


def notebook_durations(folder: Path) -> list[float]:
    """Each scored run's papermill execution time, as papermill recorded it in its run.ipynb."""
    return [
        json.loads(notebook.read_text())["metadata"]["papermill"]["duration"]
        for notebook in sorted(folder.glob("runs/*/run.ipynb"))
    ]


def direct_walls(server: FakeLLM, seeds: list[int], root: Path) -> list[float]:
    """The same configuration started directly in this process (runner.start): wall seconds."""
    walls = []
    for seed in seeds:
        parameters = {k: v for k, v in spec(server, 0)["base"].items() if k != "novelty"}
        config = runner.config_from_parameters({**parameters, "seed": seed})
        began = time.perf_counter()
        runner.start(config, root / f"direct-{seed}", novelty=None, show_progress=False)
        walls.append(time.perf_counter() - began)
    return walls


def main(configurations: int = 300, direct_runs: int = 5) -> dict[str, float]:
    """The sweep's figures at `configurations` runs, and `direct_runs` direct runs for overhead."""
    figures: dict[str, float] = {}
    saved = dict(os.environ)
    os.environ.update(INNOLAB_LLM_PRICE_IN=str(PRICE), INNOLAB_LLM_PRICE_OUT=str(PRICE))
    try:
        with tempfile.TemporaryDirectory() as scratch, FakeLLM(
            latency_s=LATENCY_S, fault_rates=FAULTS, retry_after=1, seed=0
        ) as server:
            root = Path(scratch)
            folder = root / "scale"
            stop = threading.Event()
            watcher = threading.Thread(
                target=outage, args=(server, folder, max(1, configurations // 3), stop)
            )
            watcher.start()
            began = time.perf_counter()
            try:
                sweep.run(spec(server, configurations), output=folder, workers=WORKERS,
                          show_progress=False)
            finally:
                stop.set()
                watcher.join()
            first_wall = time.perf_counter() - began
            failed_before = sweep.status(folder)["counts"]["failed"]
            notebook = statistics.median(notebook_durations(folder) or [float("nan")])
            began = time.perf_counter()
            sweep.run(spec(server, configurations), output=folder, workers=WORKERS,
                      show_progress=False, retry_failed=True, retry_attempts=2)
            retry_wall = time.perf_counter() - began
            after = sweep.status(folder)
            done = exactly_once(folder, server)
            requests, peak, refused = len(server.log), server.max_in_flight, server.over_cap
            # seeds outside the sweep's, in this process once warm (its first run untimed)
            direct_walls(server, [20_000], root / "warm-up")
            seeds = list(range(10_000, 10_000 + direct_runs))
            direct = statistics.median(direct_walls(server, seeds, root))
        per_run = first_wall * WORKERS / configurations
        figures.update(
            configurations=configurations, done_exactly_once=done, max_in_flight=peak,
            cap=CAP, failed_before=failed_before, failed_after=after["counts"]["failed"],
            wall_s=first_wall, retry_wall_s=retry_wall, per_run_s=per_run, direct_s=direct,
            notebook_s=notebook, overhead_s=notebook - direct,
            overhead_with_cluster_s=per_run - direct, cost_usd=after["cost_usd"],
            requests=requests,
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)
    print(f"{configurations} configurations of short CodeAct runs on {WORKERS} workers sharing a "
          f"cap of {CAP} request in flight; faults {FAULTS}, latency {LATENCY_S} s, a "
          f"{OUTAGE_S:g} s outage (all 500) a third of the way through")
    print(f"  done exactly once: {done}/{configurations} "
          f"(scored, every reply of the server recorded once in a trace)")
    print(f"  most requests in flight at the server: {peak} (cap {CAP}: "
          f"{'held' if peak <= CAP else 'EXCEEDED'}); {requests} requests, {refused} refused "
          f"by the server's own cap")
    print(f"  failed runs: {failed_before} before --retry-failed, {after['counts']['failed']} "
          f"after ({retry_wall:.0f} s)")
    print(f"  per-run overhead: the run notebook in the sweep {notebook:.2f} s (median papermill "
          f"duration) against the same run started directly in this warm process {direct:.2f} s "
          f"(median of {direct_runs}) -> {notebook - direct:.2f} s per run; with the cluster's "
          f"start-up, the outage and the shared cap: {per_run:.1f} s of worker time per run "
          f"({per_run - direct:.1f} s over a direct run)")
    print(f"  wall time {first_wall:.0f} s for the sweep, {retry_wall:.0f} s for --retry-failed; "
          f"spend ${after['cost_usd']:.4f}")
    return figures


if __name__ == "__main__":
    main()
