"""Benchmark: the baseline's ratio on every built-in task at 10 s and 60 s (one run each).

Each run is `innolab run --agent baseline --task T --budget Bs --novelty none` (local runtime), two
at a time (the benchmarks' 2 cores). Per task and budget it prints the run's ratio G/|V*| as
scored (the hidden evaluator, V* as of today; -1 for a run without a valid submission) and the
number of improving candidates (the baseline submits only improvements). `--quick`: 10 s only.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = (10, 60)  # `main(budgets=(10, 60, 300))` adds the long column (about 45 min more)
QUICK = {"budgets": (10,)}
INNOLAB = [sys.executable, "-m", "innolab.cli"]


def builtin_tasks() -> list[str]:
    """The built-in tasks' ids."""
    folder = ROOT / "innolab" / "tasks" / "builtin"
    return sorted(p.name for p in folder.iterdir() if (p / "task.yaml").is_file())


def one_run(task: str, budget: int, run_dir: Path) -> dict:
    """One baseline run through the command line; its score, ratio and improving candidates."""
    command = [*INNOLAB, "run", "--agent", "baseline", "--task", task, "--budget", f"{budget}s",
               "--run-dir", str(run_dir), "--novelty", "none", "--seed", "0"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          timeout=budget + 600)
    if done.returncode != 0 or not (run_dir / "score.json").is_file():
        return {"task": task, "budget": budget, "valid": False, "ratio": math.nan,
                "improving": 0, "error": done.stderr.strip().splitlines()[-1:]}
    score = json.loads((run_dir / "score.json").read_text())
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    scores = [e["dev_score"] for e in events if e["type"] == "submission" and e.get("dev_valid")]
    marked = [a for a, b in zip([None, *scores], scores, strict=False)
              if a is None or abs(b - a) > 1e-9 * max(abs(a), 1.0)]
    return {"task": task, "budget": budget, "valid": bool(score["valid"]),
            "ratio": score["ratio"], "score": score["score"], "improving": len(scores),
            "marked": len(marked)}


def main(budgets: tuple[int, ...] = BUDGETS, tasks: list[str] | None = None,
         workers: int = 2, out: Path | None = None) -> dict:
    """Every task at every budget, `workers` runs at a time; prints one line per task.

    Args:
        budgets: The wall-clock budgets in seconds.
        tasks: The tasks (None: every built-in task).
        workers: How many runs at a time.
        out: Where the run folders go (None: a temporary folder, removed).

    Returns:
        `by_task`: for each task and budget (seconds, as text) its run's record: valid, ratio,
        score, improving (submissions, each an improvement), marked (those better than the last
        by more than 1e-9 relative); `valid_runs` and `runs`.
    """
    tasks = tasks or builtin_tasks()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(out) if out is not None else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        jobs = [(t, b, root / f"{t}-{b}s") for b in budgets for t in tasks]
        with ThreadPoolExecutor(workers) as pool:
            records = list(pool.map(lambda job: one_run(*job), jobs))
    by = {(r["task"], r["budget"]): r for r in records}
    shown = ", ".join(f"{b} s" for b in budgets)
    print(f"  baseline ratio G/|V*| (improving candidates / of them by more than 1e-9 relative) "
          f"at {shown}; one run each, seed 0, local, {workers} at a time")
    for task in tasks:
        cells = []
        for budget in budgets:
            r = by[(task, budget)]
            cells.append(f"{r['ratio']:+.6f} ({r['improving']}/{r['marked']})" if r["valid"]
                         else f"invalid {r.get('error', '')}")
        print(f"  {task:<28} " + "  ".join(f"{c:>22}" for c in cells), flush=True)
    valid = sum(r["valid"] for r in records)
    print(f"  valid runs: {valid}/{len(records)}")
    by_task = {task: {str(b): {k: v for k, v in by[(task, b)].items()
                               if k not in ("task", "budget")} for b in budgets}
               for task in tasks}
    return {"by_task": by_task, "valid_runs": valid, "runs": len(records)}


if __name__ == "__main__":
    main()
