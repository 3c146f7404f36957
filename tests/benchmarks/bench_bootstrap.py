"""Benchmark: 10,000-resample intervals and both paired tests over 10 tasks × 3 frameworks, vs a
plain loop."""

from __future__ import annotations

import random
import time

import numpy as np

from innolab import paper
from innolab.analysis import main_results as mr
from innolab.analysis.bootstrap import bootstrap_ci, paired_bootstrap

TARGET_S = 0.1
PAIRS = (("MLAB", "CodeAct"), ("MLAB", "AIDE"))


def vectorised(
    matrices: dict[str, dict[str, np.ndarray]], n_resamples: int
) -> list[tuple[float, float]]:
    """innolab's implementation: one interval per framework and metric, then both paired tests per
    metric."""
    out = []
    for columns in matrices.values():
        intervals = bootstrap_ci(np.column_stack(list(columns.values())), n_resamples=n_resamples)
        out += [(i.ci_low, i.ci_high) for i in intervals]
        for a, b in PAIRS:
            test = paired_bootstrap(columns[a], columns[b], n_resamples=n_resamples)
            out.append((test.ci_low, test.ci_high))
    return out


def _loop_interval(
    values: list[float], n_resamples: int, rng: random.Random
) -> tuple[float, float]:
    n = len(values)
    means = []
    for _ in range(n_resamples):
        total = 0.0
        for _ in range(n):
            total += values[rng.randrange(n)]
        means.append(total / n)
    means.sort()
    return means[int(0.025 * (n_resamples - 1))], means[int(0.975 * (n_resamples - 1))]


def plain_loop(
    matrices: dict[str, dict[str, np.ndarray]], n_resamples: int
) -> list[tuple[float, float]]:
    """The same statistics with Python loops: the baseline the ratio is measured against."""
    rng = random.Random(0)
    out = []
    for columns in matrices.values():
        for values in columns.values():
            out.append(_loop_interval([float(v) for v in values], n_resamples, rng))
        for a, b in PAIRS:
            diffs = [float(x - y) for x, y in zip(columns[a], columns[b], strict=True)]
            out.append(_loop_interval(diffs, n_resamples, rng))
    return out


def inputs() -> dict[str, dict[str, np.ndarray]]:
    filled = mr.fill_unreported(paper.load("table2"), paper.load("table2_averages"))
    return {
        metric: {f: col.to_numpy() for f, col in mr.framework_matrix(filled, metric).items()}
        for metric in mr.METRICS
    }


def best_time(fn, *args, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main(n_resamples: int = 10_000, repeats: int = 5) -> dict[str, float]:
    data = inputs()
    assert all(len(v) == 10 for cols in data.values() for v in cols.values()), "expected 10 tasks"
    fast = best_time(vectorised, data, n_resamples, repeats=repeats)
    slow = best_time(plain_loop, data, n_resamples, repeats=1)
    ours, loop = np.array(vectorised(data, n_resamples)), np.array(plain_loop(data, n_resamples))
    widths = (ours[:, 1] - ours[:, 0])[:, None]
    agreement = float(np.max(np.abs(ours - loop) / widths))  # in units of each interval's width
    print(
        f"bootstrap: 6 intervals + 4 paired tests (2 pairs x 2 metrics), 10 tasks x 3 frameworks, "
        f"{n_resamples} resamples"
    )
    print(
        f"  vectorised  {fast * 1000:8.1f} ms   (target <= {TARGET_S * 1000:.0f} ms: "
        f"{'met' if fast <= TARGET_S else 'MISSED'})"
    )
    print(f"  plain loop  {slow * 1000:8.1f} ms")
    print(f"  ratio loop/vectorised = {slow / fast:.1f}x")
    print(f"  CI bounds of the two agree within {agreement:.1%} of the interval width")
    return {
        "vectorised_s": fast,
        "loop_s": slow,
        "ratio": slow / fast,
        "max_ci_difference": agreement,
    }


if __name__ == "__main__":
    main()
