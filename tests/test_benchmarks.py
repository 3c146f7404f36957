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
