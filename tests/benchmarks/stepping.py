"""Does each scaffold keep stepping on the embedded model? `scaffold × seed` runs of `innolab run`
(60 s, local runtime, circle-packing-26 by default), each counted from its trace: model calls, tool
calls, how the run ended.

    .venv/bin/python tests/benchmarks/stepping.py  # aide, mlab, codeact × seeds 0-9, 60 s
    .venv/bin/python tests/benchmarks/stepping.py --agents mlab --seeds 5 --budget 60

Runs go one after another (each starts its own embedded model server: one thread unless
INNOLAB_LOCAL_MODEL_THREADS says otherwise, see innolab.llm.local.default_threads), so the 30
default runs take about 35 minutes. Counts depend on the machine's load: run it on a quiet machine
(the table shows the load average at the start and end). Exit status 0 when every run made at least
`--min-tool-calls` tool calls, 1 otherwise. `make bench` runs seeds 0-2 through bench_stepping.py
(its figures in results/bench/bench_stepping.json); tests/test_agents.py runs one seed per scaffold
through `measure`, bounded by steps rather than by the clock.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ("aide", "mlab", "codeact")
TASK = "circle-packing-26"


@dataclass
class Stepping:
    agent: str
    seed: int
    model_calls: int  # llm_call events answered by the model (failed calls are counted apart)
    failed_calls: int
    tool_calls: int
    completion_tokens: float  # median per answered call
    reason: (
        str  # how the run ended (run_finished's reason), or "error: ..." when the command failed
    )
    run_dir: Path

    def row(self) -> str:
        return (
            f"{self.agent:<8} {self.seed:>4} {self.model_calls:>11} {self.failed_calls:>6} "
            f"{self.tool_calls:>10} "
            f"{self.completion_tokens:>10.0f}  {self.reason}"
        )


HEADER = (
    f"{'scaffold':<8} {'seed':>4} {'model calls':>11} {'failed':>6} {'tool calls':>10} "
    f"{'tokens/call':>10}  status"
)


def measure(
    agent: str,
    seed: int,
    folder: Path,
    budget_s: int = 60,
    task: str = TASK,
    max_tokens: int | None = None,
    max_steps: int | None = None,
    runtime: str = "local",
) -> Stepping:
    """One `innolab run` on the embedded model (every INNOLAB_LLM_* variable unset but the reply
    cap, when given), counted from its trace; with max_steps, the run also ends after that many
    steps."""
    from innolab import traces

    run_dir = Path(folder) / f"{agent}-{runtime}-seed{seed}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("INNOLAB_LLM_")}
    if max_tokens is not None:
        env["INNOLAB_LLM_MAX_TOKENS"] = str(max_tokens)
    command = [
        sys.executable,
        "-m",
        "innolab.cli",
        "run",
        "--agent",
        agent,
        "--task",
        task,
        "--seed",
        str(seed),
        "--budget",
        f"{budget_s}s",
        "--runtime",
        runtime,
        "--novelty",
        "none",
        "--run-dir",
        str(run_dir),
        *(["--max-steps", str(max_steps)] if max_steps is not None else []),
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=budget_s * 5 + 300
    )
    if done.returncode != 0 or not (run_dir / "trace.jsonl").exists():
        reason = "error: " + (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return Stepping(agent, seed, 0, 0, 0, 0.0, reason, run_dir)
    events = traces.read_events(run_dir)
    answered = [e for e in events if e.type == "llm_call" and not e.failed]
    finished = traces.Trace(events).end_reason
    tokens = [e.completion_tokens or 0 for e in answered]
    return Stepping(
        agent,
        seed,
        len(answered),
        sum(1 for e in events if e.type == "llm_call" and e.failed),
        sum(1 for e in events if e.type == "tool_call"),
        statistics.median(tokens) if tokens else 0.0,
        finished or "unfinished",
        run_dir,
    )


def seeds_of(text: str) -> list[int]:
    """'0-9' or '0,3,5' or '5'."""
    seeds: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        try:
            seeds.extend(range(int(low), int(high or low) + 1))
        except ValueError:
            raise SystemExit(
                f"--seeds: {text!r} is not a list of seeds or ranges like 0-9,12"
            ) from None
    return seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--agents", default=",".join(AGENTS), help="comma-separated scaffolds (default: all three)"
    )
    parser.add_argument("--seeds", default="0-9", help="e.g. 0-9, or 0,5 (default 0-9)")
    parser.add_argument(
        "--budget", type=int, default=60, help="seconds of wall clock per run (default 60)"
    )
    parser.add_argument("--task", default=TASK)
    parser.add_argument("--min-tool-calls", type=int, default=3)
    parser.add_argument(
        "--max-tokens", type=int, help="the model's reply cap (default: the settings' default)"
    )
    parser.add_argument(
        "--keep", type=Path, help="keep the run folders here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    unknown = sorted(set(agents) - set(AGENTS))
    if unknown:
        raise SystemExit(f"--agents: {unknown} are not scaffolds (choose from {list(AGENTS)})")
    seeds = seeds_of(args.seeds)
    load = os.getloadavg()[0]
    cap = f", replies capped at {args.max_tokens} tokens" if args.max_tokens else ""
    print(
        f"{len(agents) * len(seeds)} runs of {args.budget} s on {args.task}, embedded model{cap}, "
        f"{os.cpu_count()} CPUs, load average {load:.2f} at start"
    )
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory(prefix="innolab-stepping-") as scratch:
        folder = args.keep or Path(scratch)
        rows = []
        for agent in agents:
            for seed in seeds:
                rows.append(measure(agent, seed, folder, args.budget, args.task, args.max_tokens))
                print(rows[-1].row(), flush=True)
    short = [r for r in rows if r.tool_calls < args.min_tool_calls]
    print(
        f"load average {os.getloadavg()[0]:.2f} at the end; "
        f"fewest tool calls {min(r.tool_calls for r in rows)}; "
        f"runs under {args.min_tool_calls} tool calls: {len(short)} of {len(rows)}"
        + "".join(f"\n  {r.agent} seed {r.seed}: {r.tool_calls}" for r in short)
    )
    return 1 if short else 0


if __name__ == "__main__":
    raise SystemExit(main())
