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
