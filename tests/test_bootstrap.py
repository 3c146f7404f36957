"""innolab.analysis.bootstrap, the one bootstrap engine: cross-checks against scipy.stats.bootstrap,
paired tests, imputation, errors, and the property that every interval innolab reports contains its
estimate by its method, or is NaN with a reason (never widened)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from innolab.analysis import bootstrap as b
from innolab.analysis import sweeps as sw


@pytest.fixture
def ratios():
    return np.random.default_rng(7).normal(-0.5, 0.3, size=40)


def test_interval_matches_scipy_percentile_bootstrap(ratios):
    ours = b.bootstrap_ci(ratios, n_resamples=20_000, rng=1)
    ref = stats.bootstrap(
        (ratios,),
        np.mean,
        n_resamples=20_000,
        method="percentile",
        confidence_level=0.95,
        random_state=np.random.default_rng(2),
    )
    assert ours.mean == pytest.approx(ratios.mean())
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.01)
    assert ours.ci_low < ours.mean < ours.ci_high


def test_matrix_columns_match_single_columns(ratios):
    matrix = np.column_stack([ratios, ratios * 2])
    both = b.bootstrap_ci(matrix, rng=3)
    single = b.bootstrap_ci(ratios, rng=3)
    assert both[0].ci_low == pytest.approx(single.ci_low) and both[0].ci_high == pytest.approx(
        single.ci_high
    )
    assert both[1].ci_low == pytest.approx(2 * both[0].ci_low)


def test_seeded_and_reproducible(ratios):
    assert b.bootstrap_ci(ratios, rng=5) == b.bootstrap_ci(ratios, rng=5)
    assert b.bootstrap_ci(ratios, rng=5) != b.bootstrap_ci(ratios, rng=6)
    generator = np.random.default_rng(5)  # a Generator is used as it is, as scipy.stats takes it
    assert b.bootstrap_ci(ratios, rng=generator) == b.bootstrap_ci(ratios, rng=5)
    assert b.bootstrap_ci(ratios, rng=generator) != b.bootstrap_ci(ratios, rng=5)


def test_paired_interval_matches_scipy_on_differences(ratios):
    other = ratios - 0.2 + np.random.default_rng(9).normal(0, 0.05, size=ratios.size)
    ours = b.paired_bootstrap(ratios, other, n_resamples=20_000, rng=1)
    ref = stats.bootstrap(
        (ratios - other,),
        np.mean,
        n_resamples=20_000,
        method="percentile",
        random_state=np.random.default_rng(4),
    )
    assert ours.mean == pytest.approx(0.2, abs=0.03) and ours.n == ratios.size
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
    assert same.mean == 0 and same.p_value == 1.0


def test_paired_is_antisymmetric(ratios):
    other = ratios[::-1]
    ab = b.paired_bootstrap(ratios, other, rng=2)
    ba = b.paired_bootstrap(other, ratios, rng=2)
    assert ab.mean == pytest.approx(-ba.mean)
    assert ab.ci_low == pytest.approx(-ba.ci_high)
    assert ab.p_value == pytest.approx(ba.p_value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: b.bootstrap_ci([0.1, np.nan, 0.3]), "finite"),
        (
            lambda: b.bootstrap_ci([0.1, 0.2], n_resamples=10),
            "n_resamples must be an integer >= 100",
        ),
        (lambda: b.bootstrap_ci([0.1, 0.2], n_resamples=1000.0), "n_resamples must be an integer"),
        (lambda: b.bootstrap_ci([0.1, 0.2], confidence_level=1.5), "confidence_level must lie in"),
        (lambda: b.bootstrap_ci([0.1, 0.2], rng=-1), "rng must be"),
        (lambda: b.bootstrap_ci([[[0.1]]]), "1-D"),
        (lambda: b.bootstrap_ci([0.1, 0.2], mask=[True]), "mask must have the shape"),
        (lambda: b.paired_bootstrap([0.1, 0.2], [0.1, 0.2, 0.3]), "one value per unit"),
        (lambda: b.paired_bootstrap([0.1], [0.2]), "at least 2 units"),
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
    scores = pd.DataFrame(
        {
            "framework": ["A", "A"],
            "task": ["t1", "t2"],
            "valid": [True, True],
            "ratio": [0.1, np.nan],
            "novelty": [1.0, 2.0],
        }
    )
    with pytest.raises(b.BootstrapError, match="rows \\[1\\]"):
        b.macro_average(scores)


def test_settings_are_keyword_only(ratios):
    with pytest.raises(TypeError):
        b.bootstrap_ci(ratios, 0.9)  # type: ignore[misc]
    with pytest.raises(TypeError):
        b.paired_bootstrap(ratios, ratios, 0.9)  # type: ignore[misc]


def test_fewer_than_min_units_give_nan_bounds_and_masks_leave_cells_out():
    one = b.bootstrap_ci([0.4])
    assert (one.mean, one.n) == (0.4, 1) and np.isnan(one.ci_low) and np.isnan(one.ci_high)
    none = b.bootstrap_ci(np.array([]))
    assert none.n == 0 and np.isnan(none.mean)
    # 9 units: the mean, no interval, and why; 10: an interval
    nine = b.bootstrap_ci(np.arange(9.0), n_resamples=500)
    assert nine.mean == 4.0 and np.isnan(nine.ci_low) and np.isnan(nine.ci_high)
    assert nine.note.startswith("9 unit(s): a percentile bootstrap interval needs at least 10")
    ten = b.bootstrap_ci(np.arange(10.0), n_resamples=500)
    assert ten.ci_low < 4.5 < ten.ci_high and ten.note == "" and b.MIN_UNITS == 10
    matrix = np.column_stack([np.arange(1.0, 13.0), np.r_[5.0, np.full(11, np.nan)]])
    first, second = b.bootstrap_ci(matrix, mask=~np.isnan(matrix), n_resamples=500)
    assert (first.n, first.mean, second.n, second.mean) == (12, 6.5, 1, 5.0)
    assert first.ci_low < 6.5 < first.ci_high and np.isnan(second.ci_low)
    full = b.bootstrap_ci(matrix[:, :1], mask=np.ones((12, 1), dtype=bool), n_resamples=500)[0]
    assert (
        full == b.bootstrap_ci(matrix[:, :1], n_resamples=500)[0]
    )  # an all-true mask changes nothing
    with pytest.raises(b.BootstrapError, match="finite where counted"):
        b.bootstrap_ci(matrix)


def test_resampled_means_are_double_precision():
    # Single-precision gathers put both of these on 2.1666667461 (ci_low above the mean
    # 2.1666666645, as results/22_backbone once showed); in float64 every resampled mean stays
    # inside the data's range.
    values = np.tile([2.1666666645, 2.1666666645 + 2e-10, 2.1666666645 - 1e-10], 4)
    interval = b.bootstrap_ci(values, n_resamples=1000)
    assert values.min() <= interval.ci_low <= interval.mean <= interval.ci_high <= values.max()
    assert interval.ci_low < interval.ci_high
    constant = b.bootstrap_ci([2.1666666645] * 10)
    assert constant.ci_low == constant.mean == constant.ci_high == 2.1666666645


def test_percentile_bounds_are_not_widened_and_an_interval_that_misses_its_mean_is_nan_with_why():
    # the bounds are the resamples' quantiles as they are: 2.0 lies outside them and stays outside
    low, high = b.percentile_bounds(np.array([[1.0], [1.1], [1.2]]), 0.95)
    assert low[0] == pytest.approx(1.005) and high[0] == pytest.approx(1.195)
    assert not hasattr(b, "hold_estimate")
    # a skewed column at a confidence level near 0: the central 1 % of the resampled means lies
    # below the mean, so there is no percentile interval that contains it: NaN, and the note says so
    skewed = [0.46, 1.04, 0.0, 0.0, 0.3, 2.66, 0.45, 0.57, 7.93, 36.7]
    missed = b.bootstrap_ci(skewed, confidence_level=0.01, n_resamples=2000, rng=1)
    assert missed.mean == pytest.approx(5.011)
    assert np.isnan(missed.ci_low) and np.isnan(missed.ci_high)
    assert "miss the mean 5.011" in missed.note
    # the same column at 0.95: an interval, which contains its mean by the method, and no note
    given = b.bootstrap_ci(skewed, n_resamples=2000, rng=1)
    assert given.ci_low < given.mean < given.ci_high and given.note == ""
    assert "at least 10" in b.bootstrap_ci([0.4]).note


def test_min_units_is_where_the_percentile_interval_stops_saying_more_than_the_data():
    # the reason for MIN_UNITS: the nominal 95 % interval of a normal mean, over 400 seeded
    # samples each, covers about half the time from 2 units and about 0.91 from 10
    rng = np.random.default_rng(0)
    samples = 400

    def coverage(n: int) -> float:
        data = rng.normal(size=(samples, n))
        means = np.stack([d[rng.integers(0, n, (1000, n))].mean(axis=1) for d in data], axis=1)
        low, high = b.percentile_bounds(means, 0.95)
        return float(np.mean((low <= 0) & (high >= 0)))

    assert coverage(2) < 0.6
    assert 0.86 <= coverage(b.MIN_UNITS) <= 0.97
    # the engine gives none below it, paired tests included: no interval and no p
    test = b.paired_bootstrap(np.arange(9.0), np.zeros(9), n_resamples=500)
    assert test.mean == 4.0 and np.isnan(test.ci_low) and np.isnan(test.p_value)
    assert test.note.startswith("9 unit(s)") and "no p-value either" in test.note


def test_cluster_bootstrap_resamples_whole_clusters():
    rng = np.random.default_rng(1)
    effect = rng.normal(0, 1.0, 12)
    clusters = np.repeat([f"t{i}" for i in range(12)], 5)
    values = np.repeat(effect, 5) + rng.normal(0, 0.01, clusters.size)
    ours = b.cluster_bootstrap_ci(values, clusters, n_resamples=4000, rng=2)
    assert ours.mean == pytest.approx(values.mean()) and ours.n == 60 and ours.note == ""
    # equal clusters: the mean over units is the mean of the cluster means, so the interval is
    # about the percentile bootstrap of the 12 cluster means
    per_cluster = b.bootstrap_ci(values.reshape(12, 5).mean(axis=1), n_resamples=4000, rng=3)
    assert ours.ci_low == pytest.approx(per_cluster.ci_low, abs=0.05)
    assert ours.ci_high == pytest.approx(per_cluster.ci_high, abs=0.05)
    # resampling the 60 units as if independent gives an interval far too narrow
    naive = b.bootstrap_ci(values, n_resamples=4000, rng=2)
    assert naive.ci_high - naive.ci_low < 0.6 * (ours.ci_high - ours.ci_low)
    constant = b.cluster_bootstrap_ci(np.full(20, 0.3), np.arange(20) % 10, n_resamples=200)
    assert constant.ci_low == constant.mean == constant.ci_high == 0.3
    few = b.cluster_bootstrap_ci(values[:45], clusters[:45], n_resamples=200,
                                 cluster_name="task")
    assert np.isnan(few.ci_low) and few.note.startswith("9 task(s)") and few.n == 45
    with pytest.raises(b.BootstrapError, match="clusters must name the cluster"):
        b.cluster_bootstrap_ci(values, clusters[:3])


# ------------------------------------------------------ property: every interval holds its estimate

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)
levels = st.floats(0.01, 0.99)
resamples = st.integers(b.MIN_RESAMPLES, 300)
seeds = st.integers(0, 2**32 - 1)
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def holds(estimate, low, high) -> bool:
    """low <= estimate <= high wherever the interval is defined (NaN bounds only where it is
    not)."""
    estimate, low, high = (np.asarray(v, dtype=float) for v in (estimate, low, high))
    defined = ~np.isnan(low)
    assert np.array_equal(defined, ~np.isnan(high))
    return bool(
        (low[defined] <= estimate[defined]).all() and (estimate[defined] <= high[defined]).all()
    )


@PROPERTY
@given(
    st.integers(1, 5).flatmap(
        lambda columns: st.lists(
            st.lists(finite, min_size=columns, max_size=columns), min_size=1, max_size=30
        )
    ),
    st.data(),
    levels,
    resamples,
    seeds,
)
def test_bootstrap_intervals_hold_their_estimate(rows, data, confidence_level, n_resamples, rng):
    matrix = np.array(rows)
    mask = np.array(
        data.draw(
            st.lists(
                st.lists(st.booleans(), min_size=matrix.shape[1], max_size=matrix.shape[1]),
                min_size=len(rows),
                max_size=len(rows),
            )
        )
    )
    for given_mask in (None, mask):
        intervals = b.bootstrap_ci(
            matrix,
            confidence_level=confidence_level,
            n_resamples=n_resamples,
            rng=rng,
            mask=given_mask,
        )
        for interval in intervals:
            assert holds(interval.mean, interval.ci_low, interval.ci_high), interval
            # NaN bounds only with a reason: fewer than MIN_UNITS, or bounds that miss the mean
            assert np.isnan(interval.ci_low) == bool(interval.note)
            assert (interval.n < b.MIN_UNITS) <= bool(interval.note)
    single = b.bootstrap_ci(
        matrix[:, 0], confidence_level=confidence_level, n_resamples=n_resamples, rng=rng
    )
    assert single.mean == np.mean(matrix[:, 0]) or np.isclose(single.mean, np.mean(matrix[:, 0]))
    assert holds(single.mean, single.ci_low, single.ci_high), single


@PROPERTY
@given(
    st.lists(st.tuples(finite, finite), min_size=2, max_size=30),
    levels,
    resamples,
    seeds,
    st.sampled_from(["percentile", "shift"]),
)
def test_paired_intervals_hold_their_estimate(pairs, confidence_level, n_resamples, rng, p_method):
    a, c = np.array(pairs).T
    test = b.paired_bootstrap(
        a, c, confidence_level=confidence_level, n_resamples=n_resamples, rng=rng, p_method=p_method
    )
    assert holds(test.mean, test.ci_low, test.ci_high), test
    assert np.isnan(test.ci_low) == bool(test.note)
    # a p from 10 pairs on; below, NaN as the interval, with the note
    assert 0 < test.p_value <= 1 if len(pairs) >= b.MIN_UNITS else np.isnan(test.p_value)


def run_rows(draw, columns: dict) -> pd.DataFrame:
    n = draw(st.integers(1, 60))
    frame = pd.DataFrame(
        {
            name: draw(st.lists(strategy, min_size=n, max_size=n))
            for name, strategy in columns.items()
        }
    )
    frame["config_id"] = [f"c{i}" for i in range(n)]
    return frame


@st.composite
def sweep_runs(draw) -> pd.DataFrame:
    runs = run_rows(
        draw,
        {
            # up to 12 tasks: intervals over tasks need 10 (MIN_UNITS)
            "task": st.sampled_from([f"t{i}" for i in range(12)] if draw(st.booleans())
                                    else ["t1", "t2", "t3"]),
            "agent": st.sampled_from(["aide", "mlab"]),
            "temperature": st.sampled_from([0.25, 0.75]),
            "seed": st.integers(0, 3),
            "innovation_prompt": st.booleans(),
            "valid": st.booleans(),
            "ratio": st.floats(-1, 1, allow_subnormal=False),
            "novelty": st.floats(0, 100),
            "budget_s": st.sampled_from([10.0, 20.0]),
        },
    )
    runs.loc[~runs["valid"], ["ratio", "novelty"]] = [-1.0, 0.0]
    return runs.drop_duplicates(["task", "agent", "seed", "innovation_prompt", "temperature"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sweep_runs(), levels, resamples, seeds, st.sampled_from([None, 1, 2]))
def test_sweep_intervals_hold_their_estimate(runs, confidence_level, n_resamples, rng, best_of):
    settings_ = {"confidence_level": confidence_level}
    rates = sw.success_rates(runs, ["agent", "temperature"], **settings_)
    assert holds(rates["rate"], rates["ci_low"], rates["ci_high"])
    settings_ |= {"n_resamples": n_resamples, "rng": rng}
    for metric in ("ratio", "novelty"):
        effect = sw.factor_effect(runs, "temperature", metric, best_of=best_of, **settings_)
        assert holds(effect["mean"], effect["ci_low"], effect["ci_high"]), effect
        if runs["innovation_prompt"].nunique() == 2:
            try:
                paired = sw.paired_effect(
                    runs,
                    "innovation_prompt",
                    metric,
                    pair_on=("task", "agent", "seed"),
                    **settings_,
                )
            except sw.AnalysisError as error:
                assert "pair up" in str(error)  # no run has a partner: refused, not reported
            else:
                assert holds(paired["mean_diff"], paired["ci_low"], paired["ci_high"]), paired
    trajectory = pd.DataFrame(
        {
            "config_id": runs["config_id"],
            "t_s": 5.0 + runs["seed"],
            "valid": runs["valid"],
            "ratio": runs["ratio"],
            "novelty": runs["novelty"],
        }
    )
    curve = sw.anytime(trajectory, runs, "agent", [0.0, 6.0, 15.0, 20.0], **settings_)
    assert holds(curve["mean_ratio"], curve["ci_low"], curve["ci_high"]), curve
    if not runs.groupby("task")["agent"].nunique().eq(runs["agent"].nunique()).all():
        return  # Tables 2/4/5 need every framework on every task
    main = sw.main_results(runs, **settings_)
    if len(main.intervals):
        assert holds(main.intervals["mean"], main.intervals["ci_low"], main.intervals["ci_high"])
    if len(main.paired):
        assert holds(main.paired["mean_diff"], main.paired["ci_low"], main.paired["ci_high"])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), finite), min_size=6, max_size=30), levels)
def test_regression_intervals_hold_their_estimate(points, confidence_level):
    runs = pd.DataFrame(points, columns=["temperature", "ratio"]).assign(task="t")
    assume(runs["temperature"].nunique() >= 3)  # a slope needs distinct temperatures
    table = sw.regression(runs, "ratio ~ temperature", confidence_level=confidence_level)
    assert holds(table["estimate"], table["ci_low"], table["ci_high"]), table
