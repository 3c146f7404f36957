"""Sweep figures: the per-run overhead of a sweep (papermill + Dask) over a direct run of the same scripted
configuration, and the speed-up of 2 workers over serial direct runs (targets: median overhead <= 3 s; 8 runs of
about 10 s on 2 workers in <= 0.6x the serial time)."""

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
    return {"name": name, "base": {"task": "circle-packing-26", "agent": "codeact", "budget": "120s",
                                   "runtime": "local", "base_url": server.base_url, "model": "fake",
                                   "novelty": "ast"}, "seeds": seeds}


def direct_runs(server: FakeLLM, seeds: list[int], root: Path) -> list[float]:
    """The same configurations started directly in this process (runner.start, imports warm): wall seconds."""
    walls = []
    for seed in seeds:
        parameters = {k: v for k, v in spec(server, "x", [])["base"].items() if k != "novelty"}
        config = runner.config_from_parameters({**parameters, "seed": seed})
        began = time.perf_counter()
        runner.start(config, root / f"direct-{seed}", novelty="ast", show_progress=False)
        walls.append(time.perf_counter() - began)
    return walls


def cli_runs(server: FakeLLM, seeds: list[int], root: Path) -> list[float]:
    """The same configurations as a user starts one directly: `innolab run`, a fresh process each."""
    environment = {**os.environ, "INNOLAB_LLM_BASE_URL": server.base_url, "INNOLAB_LLM_MODEL": "fake"}
    walls = []
    for seed in seeds:
        began = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "innolab"), "run", "--agent", "codeact", "--task",
                        "circle-packing-26", "--budget", "120s", "--seed", str(seed), "--novelty", "ast",
                        "--run-dir", str(root / f"cli-{seed}")], env=environment, check=True, capture_output=True)
        walls.append(time.perf_counter() - began)
    return walls


def notebook_durations(folder: Path) -> list[float]:
    """Each run's papermill execution time, as papermill recorded it in the run's run.ipynb."""
    return [json.loads(notebook.read_text())["metadata"]["papermill"]["duration"]
            for notebook in sorted(folder.glob("runs/*/run.ipynb"))]


def main(runs: int = 8, program_s: float = 9.0, overhead_runs: int = 4) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with FakeLLM() as server:  # overhead: a fast scripted run, directly and through a sweep
            seeds = list(range(overhead_runs))
            warm = statistics.median(direct_runs(server, seeds, root / "direct"))
            cli = statistics.median(cli_runs(server, seeds, root / "cli"))
            began = time.perf_counter()
            folder = sweep.run(spec(server, "overhead", seeds), output=root / "overhead", workers=1,
                               show_progress=False)
            whole = (time.perf_counter() - began) / overhead_runs
            swept = statistics.median(notebook_durations(folder))
        figures.update(warm_s=warm, cli_s=cli, swept_s=swept, overhead_s=swept - cli, overhead_warm_s=swept - warm,
                       overhead_with_cluster_s=whole - cli)
        print(f"per-run overhead of a sweep (median of {overhead_runs} scripted runs): direct `innolab run` "
              f"{cli:.2f} s, the run notebook under papermill {swept:.2f} s -> overhead {swept - cli:.2f} s per run "
              f"(target <= 3 s); against a run started in an already-warm process ({warm:.2f} s): "
              f"{swept - warm:.2f} s; with the LocalCluster's start-up shared over {overhead_runs} runs: "
              f"{whole - cli:.2f} s")
        with FakeLLM(program_sleep_s=program_s) as server:  # speed-up: runs of about program_s + 1 seconds
            seeds = list(range(runs))
            timings = {}
            for workers in (1, 2):
                began = time.perf_counter()
                sweep.run(spec(server, f"workers-{workers}", seeds), output=root / f"workers-{workers}",
                          workers=workers, show_progress=False)
                timings[workers] = time.perf_counter() - began
        serial, parallel = timings[1], timings[2]
        figures.update(serial_s=serial, parallel_s=parallel, ratio=parallel / serial)
        print(f"{runs} runs of about {program_s + 1:.0f} s: the sweep on 1 worker (serial) {serial:.1f} s, on 2 "
              f"workers {parallel:.1f} s -> ratio {parallel / serial:.2f} (target <= 0.6)")
    return figures


if __name__ == "__main__":
    main()
