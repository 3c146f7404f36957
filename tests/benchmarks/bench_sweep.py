"""Sweep figures: the per-run overhead of a sweep (papermill + Dask) over the same scripted
configuration run in an already-warm Python process (runner.start, imports done), both measured in
this one run, and the speed-up of 2 workers over serial runs (targets: median overhead <= 3 s; 8
runs of about 10 s on 2 workers in <= 0.6x the serial time). A cold `innolab run` (a fresh
interpreter: start-up and imports) is printed beside them for reference only: it is slower than the
notebook, so an overhead quoted against it would come out negative."""

from __future__ import annotations

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


def notebook_durations(folder: Path) -> list[float]:
    """Each run's papermill execution time, as papermill recorded it in the run's run.ipynb."""
    return [
        json.loads(notebook.read_text())["metadata"]["papermill"]["duration"]
        for notebook in sorted(folder.glob("runs/*/run.ipynb"))
    ]


QUICK = {
    "runs": 0,
    "overhead_runs": 1,
}  # `run.py --quick`: one run through a 1-worker LocalCluster, no speed-up
TARGET_OVERHEAD_S = 3.0
TARGET_RATIO = 0.6


def main(runs: int = 8, program_s: float = 9.0, overhead_runs: int = 4) -> dict[str, float]:
    """The overhead from `overhead_runs` runs, the speed-up from `runs` runs of about program_s + 1
    s (0: none)."""
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with (
            FakeLLM() as server
        ):  # overhead: a fast scripted run, in this warm process and through a sweep
            seeds = list(range(overhead_runs))
            direct_runs(
                server, [10_000], root / "warm-up"
            )  # first-use imports of the run's own modules, untimed
            warm = statistics.median(direct_runs(server, seeds, root / "direct"))
            began = time.perf_counter()
            folder = sweep.run(
                spec(server, "overhead", seeds),
                output=root / "overhead",
                workers=1,
                show_progress=False,
            )
            whole = (time.perf_counter() - began) / overhead_runs
            swept = statistics.median(notebook_durations(folder))
            cli = statistics.median(cli_runs(server, seeds, root / "cli"))
        overhead = swept - warm
        figures.update(
            warm_s=warm,
            swept_s=swept,
            overhead_s=overhead,
            overhead_ratio=swept / warm,
            overhead_with_cluster_s=whole - warm,
            cli_s=cli,
        )
        print(
            f"per-run overhead of a sweep (median of {overhead_runs} scripted runs, all measured "
            f"here): the run in a warm process (runner.start) {warm:.2f} s, the run notebook under "
            f"papermill in a sweep {swept:.2f} s -> overhead {overhead:.2f} s per run, ratio "
            f"sweep/warm {swept / warm:.2f} (target <= {TARGET_OVERHEAD_S:g} s: "
            f"{'met' if overhead <= TARGET_OVERHEAD_S else 'MISSED'})"
        )
        print(
            f"  with the LocalCluster's start-up shared over {overhead_runs} runs: "
            f"{whole - warm:.2f} s per run; "
            f"for reference, a cold `innolab run` (fresh interpreter) {cli:.2f} s"
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
