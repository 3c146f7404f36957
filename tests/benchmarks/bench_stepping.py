"""Benchmark: does each scaffold keep stepping on the embedded model? Tool calls in 60-second runs.

`scaffold × seed` runs of `innolab run` (60 s, local runtime, circle-packing-26, embedded model,
one after another), each counted from its trace (tests/benchmarks/stepping.py, which also runs any
other selection from the command line). These are counts within a wall clock: a timing, so they
live here and in results/bench/bench_stepping.json, not in the tests (which check what is
deterministic: caps, schemas, a complete trace). `--quick`: one seed, 30 s.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tests.benchmarks.stepping import AGENTS, TASK, measure

SEEDS = (0, 1, 2)
QUICK = {"seeds": (0,), "budget_s": 30}


def main(seeds: tuple[int, ...] = SEEDS, budget_s: int = 60,
         agents: tuple[str, ...] = AGENTS) -> dict:
    """Each scaffold on each seed; prints one line per run and the fewest tool calls.

    Returns:
        `runs`: per scaffold and seed (as text) the model calls, failed calls, tool calls, median
        completion tokens and end reason; `fewest_tool_calls` per scaffold; the task and budget.
    """
    print(f"  {len(agents) * len(seeds)} runs of {budget_s} s on {TASK}, embedded model, "
          f"{os.cpu_count()} CPUs, seeds {', '.join(map(str, seeds))}")
    runs: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="innolab-stepping-") as scratch:
        for agent in agents:
            for seed in seeds:
                found = measure(agent, seed, Path(scratch), budget_s)
                print(f"  {found.row()}", flush=True)
                runs.setdefault(agent, {})[str(seed)] = {
                    "model_calls": found.model_calls, "failed_calls": found.failed_calls,
                    "tool_calls": found.tool_calls, "tokens_per_call": found.completion_tokens,
                    "reason": found.reason}
    fewest = {agent: min(r["tool_calls"] for r in by_seed.values())
              for agent, by_seed in runs.items()}
    print("  fewest tool calls: " + ", ".join(f"{a} {n}" for a, n in fewest.items()))
    return {"task": TASK, "budget_s": budget_s, "seeds": list(seeds), "runs": runs,
            "fewest_tool_calls": fewest}
