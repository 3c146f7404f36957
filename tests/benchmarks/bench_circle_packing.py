"""Benchmark: the best circle-packing-26 reference (ils-slsqp) from scratch on 2 cores, against V*."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from innolab.tasks import get_task
from innolab.tasks.evaluation import evaluate
from innolab.tasks.solutions import get_solution

TARGET = 2.6359
LIMIT_S = 600.0


def main(time_limit_s: float = 540.0) -> dict[str, float]:
    task = get_task("circle-packing-26")
    solution = get_solution(task, "ils-slsqp")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "packing.json"
        start = time.monotonic()
        run = solution.run(out, time_limit_s=time_limit_s, timeout_s=LIMIT_S + 120)
        elapsed = time.monotonic() - start
        if run.returncode != 0:
            raise SystemExit(f"ils-slsqp failed: {run.stderr[-500:]}")
        verdict = evaluate(task, out)
    value = verdict.score or 0.0
    print(f"circle-packing-26, ils-slsqp from scratch, 2 processes, time limit {time_limit_s:.0f} s")
    print(f"  strictly valid: {verdict.valid}; sum of radii {value!r}")
    print(f"  value / V* = {value / task.v_star:.10f}   (V* = {task.v_star!r})")
    print(f"  wall time {elapsed:.1f} s   (target: >= {TARGET} within {LIMIT_S:.0f} s: "
          f"{'met' if verdict.valid and value >= TARGET and elapsed <= LIMIT_S else 'MISSED'})")
    return {"value": value, "ratio_to_v_star": value / task.v_star, "elapsed_s": elapsed}


if __name__ == "__main__":
    main()
