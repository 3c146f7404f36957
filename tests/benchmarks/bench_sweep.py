"""Sweep figures: a run in a sweep against the same scripted run in an already-warm Python process
(runner.start, imports done), both measured in this one run, and the speed-up of 2 workers over
serial runs.

A sweep run is the time its worker spends on it: the interval between one run's end and the next's
on a worker that runs them back to back (Dask, the kernel's handover, papermill, the run notebook
and its record; the kernels started ahead for the next runs run beside it). Targets: sweep run /
warm run <= 1.5, that is <= 0.5 s of per-run machinery at the warm run's 0.7 s on an idle machine;
8 runs of about 10 s on 2 workers in <= 0.6x the serial time. The notebook's own duration
(papermill's, kernel handover excluded) and a cold `innolab run` (a fresh interpreter: start-up
and imports) are printed beside them for reference.
"""

from __future__ import annotations

import datetime
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from innolab import runner, sweep
from tests.fake_llm import FakeLLM


def spec(server: FakeLLM, name: str, seeds: list[int]) -> dict:
    return {
        "name": name,
        "base": {
            "task": "circle-packing-26",
            "agent": "codeact",
            "budget": "120s",
            "runtime": "local",
            "base_url": server.base_url,
            "model": "fake",
            "novelty": "ast",
        },
        "seeds": seeds,
    }


def direct_runs(server: FakeLLM, seeds: list[int], root: Path) -> list[float]:
    """The same configurations started directly in this process (runner.start, imports warm): wall
    seconds."""
    walls = []
    for seed in seeds:
        parameters = {k: v for k, v in spec(server, "x", [])["base"].items() if k != "novelty"}
        config = runner.config_from_parameters({**parameters, "seed": seed})
        began = time.perf_counter()
        runner.start(config, root / f"direct-{seed}", novelty="ast", show_progress=False)
        walls.append(time.perf_counter() - began)
    return walls


def cli_runs(server: FakeLLM, seeds: list[int], root: Path) -> list[float]:
    """The same configurations as a user starts one directly: `innolab run`, a fresh process
    each."""
    environment = {
        **os.environ,
        "INNOLAB_LLM_BASE_URL": server.base_url,
        "INNOLAB_LLM_MODEL": "fake",
    }
    walls = []
    for seed in seeds:
        began = time.perf_counter()
        subprocess.run(
            [
                str(Path(sys.executable).parent / "innolab"),
                "run",
                "--agent",
                "codeact",
                "--task",
                "circle-packing-26",
                "--budget",
                "120s",
                "--seed",
                str(seed),
                "--novelty",
                "ast",
                "--run-dir",
                str(root / f"cli-{seed}"),
            ],
            env=environment,
            check=True,
            capture_output=True,
        )
        walls.append(time.perf_counter() - began)
    return walls


def papermill_records(folder: Path) -> list[dict]:
    """Each run's papermill record (its run.ipynb's metadata), in the order the runs ended."""
    records = [
        json.loads(notebook.read_text())["metadata"]["papermill"]
        for notebook in folder.glob("runs/*/run.ipynb")
    ]
    return sorted(records, key=lambda record: record["end_time"])


def sweep_runs(records: list[dict]) -> list[float]:
    """The intervals between consecutive runs' ends on one worker: each run's whole cost to it."""
    ends = [datetime.datetime.fromisoformat(r["end_time"]).timestamp() for r in records]
    return [later - earlier for earlier, later in itertools.pairwise(ends)]


QUICK = {
    "runs": 0,
    "overhead_runs": 3,
}  # `run.py --quick`: three runs through a 1-worker LocalCluster (two intervals), no speed-up
TARGET_RUN_RATIO = 1.5
TARGET_MACHINERY_S = 0.5
TARGET_RATIO = 0.6


def main(runs: int = 8, program_s: float = 9.0, overhead_runs: int = 6) -> dict[str, float]:
    """The sweep run against the warm run from `overhead_runs` runs (at least 2), the speed-up from
    `runs` runs of about program_s + 1 s (0: none)."""
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with (
            FakeLLM() as server
        ):  # a fast scripted run, in this warm process (before and after) and through a sweep
            seeds = list(range(overhead_runs))
            direct_runs(
                server, [10_000], root / "warm-up"
            )  # first-use imports of the run's own modules, untimed
            half = len(seeds) // 2
            warm_runs = direct_runs(server, seeds[:half], root / "direct")
            began = time.perf_counter()
            folder = sweep.run(
                spec(server, "overhead", seeds),
                output=root / "overhead",
                workers=1,
                show_progress=False,
            )
            whole = (time.perf_counter() - began) / overhead_runs
            warm_runs += direct_runs(server, seeds[half:], root / "direct")
            warm = statistics.median(warm_runs)
            records = papermill_records(folder)
            swept = statistics.median(r["duration"] for r in records)
            per_run = statistics.median(sweep_runs(records))
            cli = statistics.median(cli_runs(server, seeds[:2], root / "cli"))
        machinery = per_run - warm
        figures.update(
            warm_s=warm,
            sweep_run_s=per_run,
            machinery_s=machinery,
            sweep_warm_run_ratio=per_run / warm,
            swept_s=swept,
            overhead_s=swept - warm,
            overhead_ratio=swept / warm,
            overhead_with_cluster_s=whole - warm,
            cli_s=cli,
        )
        print(
            f"a sweep run against the same scripted run in a warm process (medians of "
            f"{overhead_runs} runs each, all measured here): the run in a warm process "
            f"(runner.start) {warm:.2f} s, a sweep run (one run's end to the next's on its worker) "
            f"{per_run:.2f} s -> ratio sweep/warm {per_run / warm:.2f} (target <= "
            f"{TARGET_RUN_RATIO:g}: {'met' if per_run / warm <= TARGET_RUN_RATIO else 'MISSED'}), "
            f"per-run machinery {machinery:.2f} s (target <= {TARGET_MACHINERY_S:g} s: "
            f"{'met' if machinery <= TARGET_MACHINERY_S else 'MISSED'})"
        )
        print(
            f"  for reference: the run notebook under papermill {swept:.2f} s (ratio "
            f"{swept / warm:.2f}); with the LocalCluster's start-up shared over {overhead_runs} "
            f"runs {whole - warm:.2f} s more per run than the warm run; a cold `innolab run` "
            f"(fresh interpreter) {cli:.2f} s"
        )
        if runs == 0:
            return figures
        with FakeLLM(
            program_sleep_s=program_s
        ) as server:  # speed-up: runs of about program_s + 1 seconds
            seeds = list(range(runs))
            timings = {}
            for workers in (1, 2):
                began = time.perf_counter()
                sweep.run(
                    spec(server, f"workers-{workers}", seeds),
                    output=root / f"workers-{workers}",
                    workers=workers,
                    show_progress=False,
                )
                timings[workers] = time.perf_counter() - began
        serial, parallel = timings[1], timings[2]
        figures.update(serial_s=serial, parallel_s=parallel, ratio=parallel / serial)
        print(
            f"{runs} runs of about {program_s + 1:.0f} s: the sweep on 1 worker (serial) "
            f"{serial:.1f} s, on 2 workers {parallel:.1f} s -> ratio {parallel / serial:.2f} "
            f"(target <= {TARGET_RATIO:g}: "
            f"{'met' if parallel / serial <= TARGET_RATIO else 'MISSED'})"
        )
    return figures


if __name__ == "__main__":
    main()
