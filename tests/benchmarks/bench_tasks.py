"""Benchmark: the new task kinds and what a step's checkpoint costs.

* MNIST-1D: one `innolab run --agent baseline --task mnist1d --budget 300s` (seed 0, local
  runtime, no novelty): the hidden evaluator's test accuracy, the gain over V* and whether it beats
  V* beyond the tie margin (the metric's sampling error), with the number of improving candidates.
* Checkpoints (local runtime, the run loop's own `checkpoint_sandbox`): a sandbox with a 1 GB data
  folder mounted beside its workspace, checkpointed after a step that changed nothing; then a
  500 MB file written once, then small files in later steps. For each step, the bytes the
  checkpoint wrote and its wall time, beside the bytes the workspace's tar (the earlier checkpoint
  form, `Sandbox.snapshot`) would have written. `--quick`: 100 MB and 50 MB, a 20 s MNIST-1D run.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INNOLAB = [sys.executable, "-m", "innolab.cli"]
QUICK = {"budget": 20, "data_mb": 100, "file_mb": 50}
MB = 1 << 20


def mnist1d_baseline(budget: int, scratch: Path) -> dict:
    """One baseline run on MNIST-1D; its scored figures."""
    run_dir = scratch / "mnist1d-run"
    command = [*INNOLAB, "run", "--agent", "baseline", "--task", "mnist1d", "--budget",
               f"{budget}s", "--run-dir", str(run_dir), "--novelty", "none", "--seed", "0",
               "--runtime", "local"]
    began = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=budget + 900)
    wall = time.perf_counter() - began
    if done.returncode != 0 or not (run_dir / "score.json").is_file():
        return {"valid": False, "accuracy": math.nan, "error": done.stderr.strip()[-300:]}
    score = json.loads((run_dir / "score.json").read_text())
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    improving = [e for e in events if e["type"] == "submission" and e.get("dev_valid")]
    from innolab.tasks import get_task

    task = get_task("mnist1d")
    return {"budget_s": budget, "valid": bool(score["valid"]), "accuracy": score["score"],
            "v_star": score.get("v_star"), "gain": score.get("gain"), "ratio": score["ratio"],
            "beats_v_star": bool(score.get("beats_v_star")), "tie_margin": task.tie_margin(),
            "improving": len(improving), "wall_s": round(wall, 1)}


def checkpoints(data_mb: int, file_mb: int, scratch: Path) -> dict:
    """What each step's checkpoint writes, with a data folder mounted and one large file."""
    from innolab.gym.budget import Budget
    from innolab.gym.local import LocalSandbox
    from innolab.gym.run import checkpoint_sandbox
    from innolab.gym.runstate import RunState

    data = scratch / "data"
    data.mkdir()
    with (data / "features.bin").open("wb") as handle:
        for _ in range(data_mb):
            handle.write(os.urandom(MB))
    (data / "features.bin").chmod(0o444)
    run_dir = scratch / "run"
    (run_dir / "checkpoint").mkdir(parents=True)
    sandbox = LocalSandbox(data=data)
    steps = [("nothing changed (data mounted beside)", "true"),
             (f"a {file_mb} MB file written", f"head -c {file_mb * MB} /dev/urandom > big.bin"),
             ("a small file written", "echo 1 > a.txt"),
             ("a small file written", "echo 2 > b.txt"),
             ("nothing changed", "true")]
    rows = []
    try:
        for step, (what, command) in enumerate(steps):
            sandbox.exec(command, timeout_s=300)
            state = RunState(Budget(None, None, None, None), step=step + 1)
            began = time.perf_counter()
            saved = checkpoint_sandbox(run_dir, state, sandbox)
            seconds = time.perf_counter() - began
            began = time.perf_counter()
            tar_bytes = len(sandbox.snapshot())
            tar_seconds = time.perf_counter() - began
            rows.append({"step": step + 1, "what": what, "written_bytes": saved.new_bytes,
                         "files_read": saved.read_files, "seconds": round(seconds, 4),
                         "tar_bytes": tar_bytes, "tar_seconds": round(tar_seconds, 4)})
        mounted = sandbox.exec("du -sb ../data | cut -f1").stdout.strip()
    finally:
        sandbox.close()
    store = sum(p.stat().st_size for p in (run_dir / "checkpoint").rglob("*") if p.is_file())
    later = rows[2:]
    return {"data_mb": data_mb, "file_mb": file_mb, "data_bytes_mounted": int(mounted),
            "steps": rows, "first_step_written_bytes": rows[0]["written_bytes"],
            "big_file_step_written_mb": round(rows[1]["written_bytes"] / MB, 1),
            "later_steps_max_written_bytes": max(r["written_bytes"] for r in later),
            "later_steps_max_seconds": max(r["seconds"] for r in later),
            "later_steps_tar_mb": round(max(r["tar_bytes"] for r in later) / MB, 1),
            "later_steps_max_tar_seconds": max(r["tar_seconds"] for r in later),
            "checkpoint_folder_mb": round(store / MB, 1)}


def main(budget: int = 300, data_mb: int = 1024, file_mb: int = 500) -> dict:
    """The MNIST-1D baseline run and the checkpoint measurement; prints both.

    Args:
        budget: The MNIST-1D run's budget in seconds.
        data_mb: The data folder's size in MB.
        file_mb: The large file's size in MB.

    Returns:
        `mnist1d_baseline` (accuracy, gain, beats_v_star, tie_margin, improving, wall_s) and
        `checkpoints` (per step the bytes written and seconds, beside the workspace tar's).
    """
    with tempfile.TemporaryDirectory() as scratch:
        cost = checkpoints(data_mb, file_mb, Path(scratch))
    print(f"  checkpoints, local runtime, a {data_mb} MB data folder mounted beside the "
          f"workspace ({cost['data_bytes_mounted']} bytes there):")
    for row in cost["steps"]:
        print(f"    step {row['step']} ({row['what']}): wrote {row['written_bytes']} bytes, "
              f"read {row['files_read']} file(s), {row['seconds']:.3f} s; the workspace's tar: "
              f"{row['tar_bytes']} bytes, {row['tar_seconds']:.3f} s")
    with tempfile.TemporaryDirectory() as scratch:
        run = mnist1d_baseline(budget, Path(scratch))
    print(f"  MNIST-1D baseline, {budget} s, seed 0, local: accuracy {run['accuracy']}, gain "
          f"{run.get('gain')}, beats V* {run.get('beats_v_star')} (tie margin "
          f"{run.get('tie_margin', math.nan):.4f}), {run.get('improving')} improving "
          f"candidate(s), {run.get('wall_s')} s")
    return {"mnist1d_baseline": run, "checkpoints": cost}


if __name__ == "__main__":
    print(json.dumps(main(**QUICK), indent=1))
