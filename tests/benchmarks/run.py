"""Runs every benchmark (`make bench`): each prints its figures as ratios measured in one run, under
one header, and writes its figures as JSON under results/bench/ (tests/benchmarks/record.py: with
the commit, date and machine), the files README cites.

    python tests/benchmarks/run.py                    every benchmark, at full size
    python tests/benchmarks/run.py --list             the benchmarks' names, nothing run
    python tests/benchmarks/run.py --only bench_sweep --quick
                                                      one benchmark, at the small size its QUICK
                                                      settings give
    python tests/benchmarks/run.py --only bench_sweep_scale --quick
                                                      the sweep at scale (300 configurations against
                                                      a flaky, rate-limited scripted endpoint) at 12
                                                      (bench_sweep_scale.main(configurations=N): N)

Everything happens under the `__main__` guard: a Dask LocalCluster (bench_sweep) spawns worker
processes that import the main module again (as `__mp_main__`), and without the guard each worker
ran every benchmark anew.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADER = "== "
sys.path.insert(0, str(HERE.parent.parent))
from tests.benchmarks import record  # noqa: E402  (the checkout's root on the path first)


def benchmarks() -> list[Path]:
    return sorted(HERE.glob("bench_*.py"))


def run(names: list[str] | None = None, quick: bool = False,
        output: Path | None = None) -> None:
    """Each selected benchmark's main(), under its header (its QUICK keyword arguments with
    quick); with an output folder, each one's figures go to `<output>/<name>.json` (record.py)."""
    known = [path.stem for path in benchmarks()]
    unknown = sorted(set(names or []) - set(known))
    if unknown:
        raise SystemExit(
            f"--only: no benchmark named {', '.join(unknown)}; known: {', '.join(known)}"
        )
    sys.path.insert(0, str(HERE.parent.parent))
    began = time.perf_counter()
    failed: list[str] = []
    for path in benchmarks():
        if names and path.stem not in names:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(f"{HEADER}{path.stem}", flush=True)
        settings = getattr(module, "QUICK", {}) if quick else {}
        started, load_start, clock = datetime.datetime.now(datetime.UTC), record.load(), \
            time.perf_counter()
        try:
            figures = module.main(**settings)
        except Exception as error:  # the others still run; the run fails at the end
            failed.append(path.stem)
            print(f"  FAILED: {type(error).__name__}: {error}", flush=True)
            continue
        sys.stdout.flush()
        if output is not None:
            written = record.write(path.stem, figures, output, settings=settings, started=started,
                                   wall_s=time.perf_counter() - clock, load_start=load_start)
            print(f"  written: {written}", flush=True)
    print(f"all benchmarks: {time.perf_counter() - began:.0f} s wall time", flush=True)
    if failed:
        raise SystemExit(f"benchmarks that failed: {', '.join(failed)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Run innolab's benchmarks, each printing its figures once."
    )
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="run this benchmark only (repeatable)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (each benchmark's QUICK settings)"
    )
    parser.add_argument(
        "--list", action="store_true", help="print the benchmarks' names and run nothing"
    )
    parser.add_argument(
        "--output", metavar="DIR", type=Path,
        help="where each benchmark's figures go as JSON (default: results/bench for a full run, "
        "none with --quick)",
    )
    options = parser.parse_args(argv)
    if options.list:
        print("\n".join(path.stem for path in benchmarks()))
        return
    output = options.output or (None if options.quick else record.BENCH_DIR)
    run(options.only, options.quick, output)


if __name__ == "__main__":
    main()
