"""innolab.analysis.bootstrap: cross-checks against scipy.stats.bootstrap, paired tests, imputation, errors."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from innolab.analysis import bootstrap as b


@pytest.fixture
def ratios():
    return np.random.default_rng(7).normal(-0.5, 0.3, size=40)


def test_interval_matches_scipy_percentile_bootstrap(ratios):
    ours = b.bootstrap_ci(ratios, n_resamples=20_000, seed=1)
    ref = stats.bootstrap((ratios,), np.mean, n_resamples=20_000, method="percentile",
                          confidence_level=0.95, random_state=np.random.default_rng(2))
    assert ours.mean == pytest.approx(ratios.mean())
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.01)
    assert ours.ci_low < ours.mean < ours.ci_high


def test_matrix_columns_match_single_columns(ratios):
    matrix = np.column_stack([ratios, ratios * 2])
    both = b.bootstrap_ci(matrix, seed=3)
    single = b.bootstrap_ci(ratios, seed=3)
    assert both[0].ci_low == pytest.approx(single.ci_low) and both[0].ci_high == pytest.approx(single.ci_high)
    assert both[1].ci_low == pytest.approx(2 * both[0].ci_low)


def test_seeded_and_reproducible(ratios):
    assert b.bootstrap_ci(ratios, seed=5) == b.bootstrap_ci(ratios, seed=5)
    assert b.bootstrap_ci(ratios, seed=5) != b.bootstrap_ci(ratios, seed=6)


def test_paired_interval_matches_scipy_on_differences(ratios):
    other = ratios - 0.2 + np.random.default_rng(9).normal(0, 0.05, size=ratios.size)
    ours = b.paired_bootstrap(ratios, other, n_resamples=20_000, seed=1)
    ref = stats.bootstrap((ratios - other,), np.mean, n_resamples=20_000, method="percentile",
                          random_state=np.random.default_rng(4))
    assert ours.mean_diff == pytest.approx(0.2, abs=0.03)
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.005)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.005)
    assert ours.p_value < 0.001


@pytest.mark.parametrize("method", ["percentile", "shift"])
def test_p_value_large_without_difference(method):
    rng = np.random.default_rng(0)
    a = rng.normal(size=30)
    noise = rng.normal(0, 0.01, size=30)
    test = b.paired_bootstrap(a, a + noise - noise.mean(), p_method=method)
    assert 0.05 < test.p_value <= 1
    same = b.paired_bootstrap(a, a, p_method=method)
    assert same.mean_diff == 0 and same.p_value == 1.0


def test_paired_is_antisymmetric(ratios):
    other = ratios[::-1]
    ab = b.paired_bootstrap(ratios, other, seed=2)
    ba = b.paired_bootstrap(other, ratios, seed=2)
    assert ab.mean_diff == pytest.approx(-ba.mean_diff)
    assert ab.ci_low == pytest.approx(-ba.ci_high)
    assert ab.p_value == pytest.approx(ba.p_value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: b.bootstrap_ci([0.1, np.nan, 0.3]), "finite"),
        (lambda: b.bootstrap_ci([0.1]), "at least 2 tasks"),
        (lambda: b.bootstrap_ci([0.1, 0.2], n_resamples=10), "n_resamples"),
        (lambda: b.bootstrap_ci([0.1, 0.2], confidence=1.5), "confidence"),
        (lambda: b.paired_bootstrap([0.1, 0.2], [0.1, 0.2, 0.3]), "one value per task"),
        (lambda: b.paired_bootstrap([0.1, 0.2], [0.1, 0.3], p_method="exact"), "p_method"),
    ],
)
def test_bad_input(call, message):
    with pytest.raises(b.BootstrapError, match=message):
        call()


def test_macro_average_imputes_failures():
    scores = pd.DataFrame(
        {
            "framework": ["A", "A", "A", "B", "B", "B"],
            "task": ["t1", "t2", "t3", "t1", "t2", "t3"],
            "valid": [True, False, True, True, True, False],
            "ratio": [-0.5, np.nan, 0.1, -0.2, -0.4, np.nan],
            "novelty": [50.0, np.nan, 20.0, 10.0, 30.0, np.nan],
        }
    )
    out = b.macro_average(scores).set_index("framework")
    assert out.at["A", "ratio"] == pytest.approx((-0.5 - 1 + 0.1) / 3)
    assert out.at["A", "novelty"] == pytest.approx(70 / 3)
    assert out.at["B", "n_valid"] == 2 and out.at["B", "n_tasks"] == 3


def test_macro_average_refuses_valid_rows_without_values():
    scores = pd.DataFrame({"framework": ["A", "A"], "task": ["t1", "t2"], "valid": [True, True],
                           "ratio": [0.1, np.nan], "novelty": [1.0, 2.0]})
    with pytest.raises(b.BootstrapError, match="rows \\[1\\]"):
        b.macro_average(scores)
