"""innolab.metrics: the paper's worked example, conventions, errors, and property-based
invariants."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from innolab import metrics as m

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
nonzero = finite.filter(lambda x: abs(x) > 1e-3)
distance = st.floats(min_value=0, max_value=100, allow_nan=False)
direction = st.sampled_from(["max", "min"])


def test_oag_worked_example():
    score = m.score_solution(True, 54.86, 83.45, "max", distances=[70.83, 91.0])
    assert score.v == 54.86
    assert round(score.gain, 2) == -28.59
    assert round(score.ratio, 2) == -0.34
    assert score.novelty == 70.83


def test_invalid_submission_is_pessimistic_in_both_directions():
    for d in ("max", "min"):
        score = m.score_solution(False, 12.0, 3.0, d, distances=[80.0])
        assert score.v == 0.0
        assert score.ratio == -1.0
        assert score.gain == -3.0
        assert score.novelty == 0.0


def test_minimisation_better_is_positive():
    assert m.gain(12.0, 12.889, "min") > 0
    assert m.ratio(13.0, 12.889, "min") < 0


def test_novelty_of_exploratory_task_is_infinite():
    assert m.novelty(True, []) == math.inf
    assert m.novelty(False, []) == 0.0


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: m.gain(1.0, 2.0, "maximise"), "direction"),
        (lambda: m.ratio(1.0, 0.0), "v_star"),
        (lambda: m.performance(True, float("nan")), "score"),
        (lambda: m.performance(True, None), "score"),
        (lambda: m.novelty(True, [10, 101]), "distances[1]"),
        (lambda: m.novelty(True, [float("nan")]), "distances[0]"),
        (lambda: m.gain(float("inf"), 1.0), "v"),
        (lambda: m.innovation_region(0.1, 50, novelty_threshold=150), "novelty_threshold"),
        (lambda: m.to_complex(0.1, 120), "novelty"),
        (lambda: m.success_rate([]), "success_rate"),
        (lambda: m.best_valid([1.0, float("nan")], [True, True]), "valid run"),
        (lambda: m.impute_failed([0.1, np.nan], [10, 20], [True, True]), "positions [1]"),
    ],
)
def test_bad_input_names_the_field(call, field):
    with pytest.raises(m.MetricError, match=field.replace("[", r"\[").replace("]", r"\]")):
        call()


def test_regions_with_default_thresholds():
    assert m.innovation_region(0.2, 80) is m.Region.BREAKTHROUGH
    assert m.innovation_region(0.2, 10) is m.Region.PERFORMANCE
    assert m.innovation_region(0.0, 80) is m.Region.CONCEPTUAL
    assert m.innovation_region(-0.5, 90) is m.Region.UNSUCCESSFUL
    assert m.innovation_region(0.0, 10) is m.Region.UNSUCCESSFUL
    assert m.innovation_region(0.2, 80, gain_tolerance=0.3) is m.Region.CONCEPTUAL


def test_best_valid_and_success_rate():
    assert m.best_valid([2.4, 2.6, 2.5], [True, False, True], "max") == 2
    assert m.best_valid([2.4, 2.6, 2.5], [True, False, True], "min") == 0
    assert m.best_valid([1.0, 2.0], [False, False]) is None
    assert m.success_rate([True, False, False]) == pytest.approx(1 / 3)


@given(v=finite, v_star=nonzero, d=direction, delta=st.floats(min_value=1e-3, max_value=1e3))
def test_better_value_has_larger_gain_and_ratio(v, v_star, d, delta):
    better = v + delta if d == "max" else v - delta
    assert m.gain(better, v_star, d) > m.gain(v, v_star, d)
    assert m.ratio(better, v_star, d) > m.ratio(v, v_star, d)


@given(v_star=nonzero, d=direction)
def test_ratio_is_zero_at_v_star(v_star, d):
    assert m.ratio(v_star, v_star, d) == 0.0


@given(v=finite, v_star=nonzero, d=direction)
def test_ratio_is_gain_over_abs_v_star(v, v_star, d):
    assert m.ratio(v, v_star, d) == pytest.approx(m.gain(v, v_star, d) / abs(v_star))


@given(v_star=st.floats(min_value=1e-3, max_value=1e6), score=finite)
def test_invalid_maximisation_matches_v_equal_zero(v_star, score):
    s = m.score_solution(False, score, v_star, "max")
    assert s.ratio == pytest.approx(m.ratio(0.0, v_star, "max"))


@given(ds=st.lists(distance, min_size=1, max_size=8), extra=distance, valid=st.booleans())
def test_novelty_is_bounded_and_falls_as_known_solutions_grow(ds, extra, valid):
    n = m.novelty(valid, ds)
    assert 0 <= n <= min(ds)
    assert m.novelty(valid, [*ds, extra]) <= n
    if not valid:
        assert n == 0


@given(r=st.floats(min_value=-5, max_value=5), n=st.floats(min_value=0, max_value=1e9))
def test_regions_partition_the_plane(r, n):
    region = m.innovation_region(r, n)
    assert region in set(m.Region)
    if r < -m.DEFAULT_GAIN_TOLERANCE:
        assert region is m.Region.UNSUCCESSFUL
    if region is m.Region.BREAKTHROUGH:
        assert m.innovation_region(r, 0.0) is m.Region.PERFORMANCE


@given(
    r=st.floats(min_value=-0.999, max_value=10),
    n=distance,
    max_angle=st.floats(min_value=0.1, max_value=math.pi),
)
def test_complex_plane_round_trip(r, n, max_angle):
    z = m.to_complex(r, n, max_angle)
    assert abs(z) == pytest.approx(1 + r, rel=1e-9, abs=1e-12)
    r2, n2 = m.from_complex(z, max_angle)
    assert r2 == pytest.approx(r, rel=1e-9, abs=1e-9)
    assert n2 == pytest.approx(n, rel=1e-9, abs=1e-7)


def test_complex_plane_failed_solution_maps_to_origin_and_back():
    assert m.to_complex(-1.0, 0.0) == 0
    assert m.from_complex(0j) == (-1.0, 0.0)


@given(
    rows=st.lists(
        st.tuples(st.floats(min_value=-1, max_value=1), distance, st.booleans()),
        min_size=1,
        max_size=20,
    )
)
def test_imputation_keeps_valid_and_pins_failed(rows):
    r, n, ok = (np.array(col) for col in zip(*rows, strict=True))
    r = np.where(ok, r, np.nan)
    ri, ni = m.impute_failed(r, n, ok)
    assert np.isfinite(ri).all() and np.isfinite(ni).all()
    assert (ri[~ok] == -1).all() and (ni[~ok] == 0).all()
    assert (ri[ok] == r[ok]).all() and (ni[ok] == n[ok]).all()


@given(
    runs=st.lists(st.tuples(finite, st.booleans()), min_size=1, max_size=10),
    d=direction,
    seed=st.integers(0, 1000),
)
def test_best_valid_is_best_and_permutation_invariant(runs, d, seed):
    values = np.array([v for v, _ in runs])
    ok = np.array([o for _, o in runs])
    best = m.best_valid(values, ok, d)
    if not ok.any():
        assert best is None
        return
    assume(best is not None)
    chosen = values[best]
    assert ok[best]
    assert all(chosen >= v if d == "max" else chosen <= v for v in values[ok])
    perm = np.random.default_rng(seed).permutation(len(values))
    best_perm = m.best_valid(values[perm], ok[perm], d)
    assert values[perm][best_perm] == chosen
