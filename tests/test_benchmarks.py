"""The benchmarks run, and their two implementations agree (no timing is asserted here)."""

from tests.benchmarks import bench_bootstrap


def test_bootstrap_benchmark_implementations_agree(capsys):
    figures = bench_bootstrap.main(n_resamples=2000, repeats=1)
    assert figures["max_ci_difference"] < 0.15  # share of the interval width
    assert "ratio loop/vectorised" in capsys.readouterr().out


def test_gym_benchmark_runs_its_real_path():
    from tests.benchmarks import bench_gym

    assert bench_gym.overhead_ms("local", calls=2) > 0
    assert bench_gym.overhead_ms("local", calls=2, tool="validate") > 0


def test_sweep_benchmark_runs_its_real_path(capsys):
    from tests.benchmarks import bench_sweep

    figures = bench_sweep.main(runs=2, program_s=0.5, overhead_runs=1)
    assert figures["swept_s"] > 0 and figures["cli_s"] > 0 and figures["serial_s"] > 0
    out = capsys.readouterr().out
    assert "overhead" in out and "ratio" in out


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
