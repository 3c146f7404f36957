"""The benchmarks run, and their two implementations agree (no timing is asserted here)."""

import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks import bench_bootstrap, run

RUN = Path(run.__file__).resolve()


def test_bootstrap_benchmark_implementations_agree(capsys):
    figures = bench_bootstrap.main(n_resamples=2000, repeats=1)
    assert figures["max_ci_difference"] < 0.15  # share of the interval width
    assert "ratio loop/vectorised" in capsys.readouterr().out


def test_gym_benchmark_runs_its_real_path():
    from tests.benchmarks import bench_gym

    assert bench_gym.overhead_ms("local", calls=2) > 0
    assert bench_gym.overhead_ms("local", calls=2, tool="validate") > 0


def headers(output: str) -> list[str]:
    return [
        line.removeprefix(run.HEADER) for line in output.splitlines() if line.startswith(run.HEADER)
    ]


def test_make_bench_prints_each_benchmark_once_though_dask_workers_import_it_again():
    """bench_sweep starts a LocalCluster whose spawned workers import run.py again (as __mp_main__,
    with the same argv, printing into the same output): under its __main__ guard they run nothing,
    so its header appears once."""
    done = subprocess.run(
        [sys.executable, str(RUN), "--only", "bench_sweep", "--quick"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=RUN.parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert headers(done.stdout) == ["bench_sweep"], done.stdout
    assert "ratio sweep/warm" in done.stdout and "in a warm process" in done.stdout
    assert "all benchmarks:" in done.stdout


def test_run_py_imported_by_a_spawned_process_runs_nothing(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(RUN), "--only", "bench_viewer", "--quick"])
    runpy.run_path(
        str(RUN), run_name="__mp_main__"
    )  # what multiprocessing's spawn does in each child
    assert capsys.readouterr().out == ""


def test_every_benchmark_is_listed_once(capsys):
    run.main(["--list"])
    listed = capsys.readouterr().out.split()
    assert listed == sorted(p.stem for p in RUN.parent.glob("bench_*.py")) and len(listed) == len(
        set(listed)
    )
    with pytest.raises(SystemExit, match="no benchmark named bench_nothing"):
        run.main(["--only", "bench_nothing"])


def test_analysis_benchmark_runs_every_function(capsys):
    from tests.benchmarks import bench_analysis

    figures = bench_analysis.main(runs=400, rows=20_000)
    assert figures["total_s"] > 0 and {"anytime", "paired_effect", "main_results"} <= set(figures)
    assert "target <= 5 s" in capsys.readouterr().out


def test_viewer_benchmark_renders_a_synthetic_run(capsys):
    from tests.benchmarks import bench_viewer

    figures = bench_viewer.main(steps=200)
    assert figures["steps"] == 200 and figures["svg_mb"] > 0 and figures["html_mb"] > 0
    assert "target <= 2 s" in capsys.readouterr().out


def test_a_benchmarks_output_written_before_it_leaves_the_checkout_clean(tmp_path, monkeypatch):
    """`make bench` writes its outputs one after another into the checkout: the next benchmark's
    file must still say the code it measured is the commit's (dirty only for other changes)."""
    from tests.benchmarks import record

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "results" / "bench").mkdir(parents=True)
    (tmp_path / "results" / "bench" / "bench_a.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    monkeypatch.setattr(record, "ROOT", tmp_path)
    monkeypatch.setattr(record, "BENCH_DIR", tmp_path / "results" / "bench")
    (tmp_path / "results" / "bench" / "bench_a.json").write_text('{"figures": 1}')
    assert record.commit()["dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")
    assert record.commit()["dirty"] is True
