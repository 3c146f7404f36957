"""The benchmarks run, and their two implementations agree (no timing is asserted here)."""

from tests.benchmarks import bench_bootstrap


def test_bootstrap_benchmark_implementations_agree(capsys):
    figures = bench_bootstrap.main(n_resamples=2000, repeats=1)
    assert figures["max_ci_difference"] < 0.15  # share of the interval width
    assert "ratio loop/vectorised" in capsys.readouterr().out
