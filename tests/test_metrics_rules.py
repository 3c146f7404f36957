"""innolab.metrics' shared rules: better by direction, the best index, the pessimistic
imputation."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from innolab import metrics as m

NAN = float("nan")
maybe = st.one_of(
    st.none(), st.just(NAN), st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
)


@pytest.mark.parametrize(
    ("a", "b", "direction", "expected"),
    [
        (2.0, 1.0, "max", True),
        (1.0, 2.0, "max", False),
        (1.0, 2.0, "min", True),
        (2.0, 1.0, "min", False),
        (1.0, 1.0, "max", False),
        (1.0, 1.0, "min", False),  # a tie is not better
        (1.0, None, "max", True),
        (1.0, None, "min", True),
        (-5.0, NAN, "max", True),  # nothing to beat
        (None, 1.0, "max", False),
        (NAN, 1.0, "min", False),
        (None, None, "max", False),
        (NAN, None, "min", False),
        (np.float64(0.3), 0.2, "max", True),
        (3, 2.5, "min", False),
    ],
)
def test_better_known_answers(a, b, direction, expected):
    assert m.better(a, b, direction) is expected


@pytest.mark.parametrize(
    ("values", "direction", "expected"),
    [
        ([0.3, 0.7, 0.5], "max", 1),
        ([0.3, 0.7, 0.5], "min", 0),
        ([0.7, 0.2, 0.7, 0.2], "max", 0),
        ([0.7, 0.2, 0.7, 0.2], "min", 1),  # ties: the first wins
        # None and NaN are never best
        ([None, 0.4, NAN, 0.9], "max", 3),
        ([NAN, 0.4, None, 0.9], "min", 1),
        ([None, NAN], "max", None),
        ([], "min", None),
        (np.array([2.0, -1.0, np.nan]), "min", 1),
        ((-math.inf, -3.0), "max", 1),
    ],
)
def test_best_index_known_answers(values, direction, expected):
    assert m.best_index(values, direction) == expected


@given(values=st.lists(maybe, max_size=12), direction=st.sampled_from(["max", "min"]))
def test_best_index_agrees_with_better(values, direction):
    best = m.best_index(values, direction)
    present = [i for i, v in enumerate(values) if v is not None and not math.isnan(v)]
    if not present:
        assert best is None
        return
    assert best in present
    # nothing beats it, and nothing equal comes before it
    assert not any(m.better(values[i], values[best], direction) for i in present)
    assert all(values[i] != values[best] for i in present if i < best)


@pytest.mark.parametrize(
    "call", [lambda: m.better(1.0, 2.0, "up"), lambda: m.best_index([1.0], "maximum")]
)
def test_rules_name_a_bad_direction(call):
    with pytest.raises(m.MetricError, match="direction must be 'max' or 'min'"):
        call()


def test_impute_known_answers():
    assert (m.FAILED_RATIO, m.FAILED_NOVELTY) == (-1.0, 0.0)
    assert m.impute(True, 0.25, 61.5) == (0.25, 61.5)
    assert m.impute(True, -0.4, 0.0) == (-0.4, 0.0)
    assert m.impute(False, 0.25, 61.5) == (-1.0, 0.0)  # invalid: pessimistic whatever was measured
    assert m.impute(False, None, None) == (-1.0, 0.0)
    # a missing value on a valid run, each on its own
    assert m.impute(True, None, 40.0) == (-1.0, 40.0)
    ratio, novelty = m.impute(True, 0.1, None)  # N not computed on a valid run: NaN, never 0
    assert ratio == 0.1 and math.isnan(novelty)
    ratio, novelty = m.impute(True, np.float64(0.5), 12)
    assert type(ratio) is float and type(novelty) is float and (ratio, novelty) == (0.5, 12.0)


def test_impute_failed_uses_the_rule_in_any_shape():
    ratios = np.array([[0.2, np.nan], [-0.3, 0.1]])
    novelties = np.array([[50.0, np.nan], [20.0, 70.0]])
    valid = np.array([[True, False], [True, False]])
    r, n = m.impute_failed(ratios, novelties, valid)
    assert r.shape == n.shape == (2, 2)
    assert r.tolist() == [[0.2, -1.0], [-0.3, -1.0]]
    assert n.tolist() == [[50.0, 0.0], [20.0, 0.0]]
    empty_r, empty_n = m.impute_failed([], [], [])
    assert empty_r.shape == empty_n.shape == (0,)


def test_best_valid_ties_go_to_the_first_valid_run():
    assert m.best_valid([0.5, 0.9, 0.9, 0.1], [True, True, True, True], "max") == 1
    assert m.best_valid([0.5, 0.1, 0.9, 0.1], [True, False, True, True], "min") == 3
