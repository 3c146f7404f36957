"""taskkit, the strict checks behind every validator and the hidden evaluator: named exploits and
fuzzing."""

import json
import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from innolab.tasks import taskkit
from innolab.tasks.registry import get_task


def grid_circles(n=26, columns=6, rows=5):
    r = 1 / 12 * (1 - 1e-12)
    return [[(2 * c + 1) / 12, (2 * k + 1) / 12, r] for k in range(rows) for c in range(columns)][
        :n
    ]


def check(problem, data, **params):
    return taskkit.check(problem, params, json.loads(json.dumps(data)))


def test_valid_circle_packing_scores_its_sum():
    errors, score = check("circles:circles_in_square", {"circles": grid_circles()}, n=26)
    assert errors == [] and score == pytest.approx(26 / 12)


# ----------------------------------------------------------------------------------- named exploits


def test_nan_centre_is_rejected():
    circles = grid_circles()
    circles[3][0] = float("nan")
    raw = json.dumps({"circles": circles})  # Python writes NaN as a bare token
    with pytest.raises(taskkit.Invalid, match="NaN"):
        taskkit.parse_submission(raw)
    errors, score = taskkit.check("circles:circles_in_square", {"n": 26}, {"circles": circles})
    assert score is None and "finite" in errors[0]


def test_overlap_of_1e_12_is_rejected():
    circles = [[0.25, 0.5, 0.25], [0.75, 0.5, 0.25 + 1e-12]] + [
        [0.05 + 0.04 * k, 0.02, 0.01] for k in range(24)
    ]
    errors, _ = check("circles:circles_in_square", {"circles": circles}, n=26)
    assert errors and ("overlap" in errors[0] or "leaves" in errors[0])
    circles[1][2] = 0.25 - 1e-12
    circles[1][0] = 0.75 - 1e-12 / 2
    assert check("circles:circles_in_square", {"circles": circles}, n=26)[0] == []


def test_circle_outside_by_1e_15_is_rejected():
    circles = grid_circles()
    circles[0] = [circles[0][2] - 1e-15, circles[0][1], circles[0][2]]
    errors, _ = check("circles:circles_in_square", {"circles": circles}, n=26)
    assert errors and "containment" in errors[0]


def test_touching_circles_that_overlap_only_in_exact_arithmetic_are_rejected():
    from fractions import Fraction

    rng = np.random.default_rng(0)
    for _ in range(
        10_000
    ):  # find a pair that float64 calls touching but exact arithmetic calls overlapping
        x1, r1, r2 = 0.3 + 0.1 * rng.random(), 0.1 * rng.random(), 0.1 * rng.random()
        x2 = x1 + r1 + r2
        if (x2 - x1) ** 2 >= (r1 + r2) ** 2 and (Fraction(x2) - Fraction(x1)) < Fraction(
            r1
        ) + Fraction(r2):
            break
    else:
        pytest.fail("no float-touching, exactly-overlapping pair found")
    others = [[0.02 + 0.038 * k, 0.95, 0.01] for k in range(24)]
    errors, _ = check(
        "circles:circles_in_square", {"circles": [[x1, 0.5, r1], [x2, 0.5, r2], *others]}, n=26
    )
    assert errors and "overlap" in errors[0]


def test_negative_radius_is_rejected():
    circles = grid_circles()
    circles[5][2] = -0.01
    errors, _ = check("circles:circles_in_square", {"circles": circles}, n=26)
    assert "radius" in errors[0]


def test_reported_sum_is_never_read():
    errors, score = check(
        "circles:circles_in_square", {"circles": grid_circles(), "score": 4.01}, n=26
    )
    assert score is None and "unknown field" in errors[0] and "recomputed" in errors[0]


@pytest.mark.parametrize("bad", ["0.5", True, None, [0.5], {"x": 1}])
def test_wrong_types_are_rejected(bad):
    circles = grid_circles()
    circles[2][1] = bad
    errors, score = check("circles:circles_in_square", {"circles": circles}, n=26)
    assert score is None and "circles[2][1]" in errors[0]


def test_wrong_shape_is_rejected():
    assert (
        "exactly 26 rows"
        in check("circles:circles_in_square", {"circles": grid_circles()[:25]}, n=26)[0][0]
    )
    rows = grid_circles()
    rows[0] = rows[0][:2]
    assert "circles[0]" in check("circles:circles_in_square", {"circles": rows}, n=26)[0][0]


def test_huge_file_is_rejected_before_parsing(tmp_path):
    path = tmp_path / "big.json"
    path.write_text('{"circles": [' + "0," * 100_000 + "0]}")
    with pytest.raises(taskkit.Invalid, match="limit"):
        taskkit.load_submission(path, max_bytes=100_000)


def test_symlinked_submission_is_rejected(tmp_path):
    target = tmp_path / "real.json"
    target.write_text(json.dumps({"circles": grid_circles()}))
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(taskkit.Invalid, match="symbolic link"):
        taskkit.load_submission(link)


def test_duplicate_points_are_rejected():
    points = [[float(i % 4), float(i // 4)] for i in range(16)]
    points[7] = points[3]
    errors, _ = check("points:min_max_distance_ratio", {"points": points}, n=16)
    assert "duplicates" in errors[0]
    circles = grid_circles()
    circles[1] = [circles[0][0], circles[0][1], 0.0]
    assert "duplicates" in check("circles:circles_in_square", {"circles": circles}, n=26)[0][0]


@pytest.mark.parametrize("value", [1.0, 1.5, "1", True])
def test_non_integer_kissing_vectors_are_rejected(value):
    vectors = np.vstack([np.eye(11, dtype=int), -np.eye(11, dtype=int)]).tolist()
    vectors[4][4] = value
    errors, _ = check("kissing:kissing_configuration", {"vectors": vectors}, dim=11)
    assert "integer" in errors[0]


def test_kissing_condition_is_exact():
    vectors = np.vstack([np.eye(11, dtype=int), -np.eye(11, dtype=int)]).tolist()
    assert check("kissing:kissing_configuration", {"vectors": vectors}, dim=11) == ([], 22.0)
    vectors.append([1, 1] + [0] * 9)  # norm² 2 > distance² 1 to e_1
    assert (
        "squared distance"
        in check("kissing:kissing_configuration", {"vectors": vectors}, dim=11)[0][0]
    )


def test_heilbronn_triangle_containment_is_exact():
    inside = [
        [0.5, 0.1],
        [0.3, 0.2],
        [0.7, 0.2],
        [0.5, 0.5],
        [0.4, 0.3],
        [0.6, 0.3],
        [0.5, 0.25],
        [0.45, 0.15],
        [0.55, 0.15],
        [0.5, 0.05],
        [0.2, 0.05],
    ]
    assert check("points:heilbronn_triangle", {"points": inside}, n=11)[0] == []
    outside = [*inside[:10], [0.5, math.sqrt(3) / 2 + 1e-16]]
    assert "outside" in check("points:heilbronn_triangle", {"points": outside}, n=11)[0][0]


def test_a_point_outside_the_triangle_is_reported_with_its_distance_from_each_side():
    """The distance from the line y = √3·c is (y − √3·c) / 2, here recomputed in 50 digits."""
    inside = [[0.5, 0.1], [0.3, 0.2], [0.7, 0.2], [0.5, 0.5], [0.4, 0.3], [0.6, 0.3],
              [0.5, 0.25], [0.45, 0.15], [0.55, 0.15]]
    x, y = 0.3612735110422483, 0.6257440765539699  # 9.2e-18 beyond y = √3·x, exactly
    apex = [0.5, 0.9]  # beyond both upper sides
    base = [-0.1, -0.01]  # below the base and beyond y = √3·x

    def beyond(py, c):
        getcontext().prec = 50
        return f"{float((Decimal(py) - Decimal(3).sqrt() * Decimal(c)) / 2):.3g}"

    errors = check("points:heilbronn_triangle", {"points": [*inside, [x, y], apex]}, n=11)[0]
    assert errors == [
        "containment: 2 violation(s): "
        f"points[9] lies outside the triangle (left of the side y = √3·x by {beyond(y, x)}); "
        "points[10] lies outside the triangle (left of the side y = √3·x by "
        f"{beyond(0.9, 0.5)}, right of the side y = √3·(1 − x) by {beyond(0.9, 0.5)})"]
    assert beyond(y, x) == "9.24e-18"
    errors = check("points:heilbronn_triangle", {"points": [*inside, base, [0.5, 0.3]]}, n=11)[0]
    assert errors == ["containment: 1 violation(s): points[9] lies outside the triangle (below "
                      f"the base by 0.01, left of the side y = √3·x by {beyond(-0.01, -0.1)})"]


def test_erdos_rescaling_rule():
    assert check("steps:erdos_minimum_overlap", {"heights": [0.25] * 10}, max_n=100)[
        1
    ] == pytest.approx(0.5)
    errors, _ = check("steps:erdos_minimum_overlap", {"heights": [0.0] * 9 + [1.0]}, max_n=100)
    assert "exceeds 1" in errors[0]


def test_erdos_rescaling_is_exact():
    """The description promises rescaling to sum n/2 exactly: the range is decided in rationals.

    These heights sum to 2 in float64 (so float64 rescaling multiplies by 1.0 and keeps every
    height at or below 1), but their exact sum is 2 - 2^-53 + 1e-17 (as float64 values), below 2:
    rescaled exactly, the first height is 2 / that sum > 1.
    """
    heights = [1.0, 1e-17, 0.0, 0.9999999999999999]
    assert math.fsum(heights) == 2.0 and max(heights) == 1.0
    exact = sum(map(Fraction, heights))
    excess = Fraction(heights[0]) * 2 / exact - 1
    assert exact < 2 and excess > 0
    errors, score = check("steps:erdos_minimum_overlap", {"heights": heights}, max_n=100)
    assert score is None
    assert errors == [
        f"heights[0] exceeds 1 by {float(excess):.3g} after rescaling exactly to sum 2"]
    assert errors[0].startswith("heights[0] exceeds 1 by 5.05e-17")


def test_erdos_rescaled_heights_are_each_the_float_nearest_their_exact_value():
    from innolab.tasks.taskkit.steps import rescaled_exactly

    rng = np.random.default_rng(7)
    h = 0.15 + 0.7 * rng.random(999)  # mean about 1/2: rescaled, all stay below 1
    h[[3, 10, 500]] = [5e-324, 1e-300, 0.0]  # a subnormal, a tiny and a zero height
    exact = sum(map(Fraction, h.tolist()))
    g = rescaled_exactly(h, 999 / 2, "heights")
    assert [float(Fraction(x) * 999 / (2 * exact)) for x in h.tolist()] == g.tolist()
    assert g[500] == 0.0 and abs(math.fsum(g) - 999 / 2) <= 1e-12
    # heights already summing to n/2 exactly are left as they are
    same = np.array([0.5, 0.25, 0.75, 0.5])
    assert rescaled_exactly(same, 2.0, "heights").tolist() == same.tolist()


def test_step_function_caps():
    assert (
        "between 1 and 10"
        in check("steps:first_autocorrelation", {"values": [1.0] * 11}, max_n=10)[0][0]
    )
    assert (
        "negative"
        in check("steps:second_autocorrelation", {"values": [1.0, -1e-300]}, max_n=10)[0][0]
    )
    assert (
        "magnitude"
        in check("steps:first_autocorrelation", {"values": [1e300, 1.0]}, max_n=10)[0][0]
    )


def test_job_shop_overlaps_and_precedence():
    instances = {"toy": {"duration_matrix": [[3, 2], [2, 4]], "machines_matrix": [[0, 1], [1, 0]]}}
    good = {"schedules": {"toy": [[0, 3], [0, 3]]}}
    assert taskkit.check("jobshop:job_shop", {"instances": instances}, good) == ([], 7.0)
    clash = {"schedules": {"toy": [[0, 3], [0, 2]]}}
    assert (
        "overlap on machine 0"
        in taskkit.check("jobshop:job_shop", {"instances": instances}, clash)[0][0]
    )
    early = {"schedules": {"toy": [[0, 2], [0, 5]]}}
    errors = taskkit.check("jobshop:job_shop", {"instances": instances}, early)[0]
    assert "starts 1 before operation 0 ends" in errors[0]
    floats = {"schedules": {"toy": [[0.0, 3], [0, 3]]}}
    assert "integer" in taskkit.check("jobshop:job_shop", {"instances": instances}, floats)[0][0]


# ------------------------------------------------------------------------------------------ fuzzing

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=40,
)

PROBLEM_CASES = {
    task_id: (get_task(task_id).spec.problem.check, get_task(task_id).problem_params)
    for task_id in (
        "circle-packing-26",
        "circles-in-rectangle-21",
        "min-max-distance-ratio-16",
        "heilbronn-triangle-11",
        "heilbronn-convex-13",
        "erdos-minimum-overlap",
        "first-autocorrelation",
        "second-autocorrelation",
        "kissing-number-11",
        "job-shop-taillard-41-50",
    )
}
KEYS = {
    "circles_in_square": "circles",
    "circles_in_rectangle": "circles",
    "min_max_distance_ratio": "points",
    "heilbronn_triangle": "points",
    "heilbronn_convex": "points",
    "erdos_minimum_overlap": "heights",
    "first_autocorrelation": "values",
    "second_autocorrelation": "values",
    "kissing_configuration": "vectors",
    "job_shop": "schedules",
}


def _number(x):
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def well_formed(problem, value):
    """An independent oracle of the *format* (not the constraints): malformed input must always be
    rejected."""
    if problem in ("erdos_minimum_overlap", "first_autocorrelation", "second_autocorrelation"):
        return isinstance(value, list) and bool(value) and all(_number(x) for x in value)
    if problem == "kissing_configuration":
        return isinstance(value, list) and all(
            isinstance(r, list)
            and len(r) == 11
            and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
            for r in value
        )
    if problem == "job_shop":
        return False  # random junk never names all ten instances
    cols = 3 if problem.startswith("circles") else 2
    return isinstance(value, list) and all(
        isinstance(r, list) and len(r) == cols and all(_number(x) for x in r) for r in value
    )


@pytest.mark.parametrize("task_id", sorted(PROBLEM_CASES))
@settings(max_examples=60, deadline=None)
@given(junk=json_values)
def test_fuzzed_values_never_crash_and_malformed_ones_are_never_accepted(task_id, junk):
    problem, params = PROBLEM_CASES[task_id]
    errors, score = taskkit.check(problem, params, {KEYS[problem.partition(":")[2]]: junk})
    if errors:
        assert score is None
    else:
        assert well_formed(problem.partition(":")[2], junk) and math.isfinite(score)


@settings(max_examples=80, deadline=None)
@given(raw=st.binary(max_size=200) | st.text(max_size=200))
def test_fuzzed_bytes_never_crash_the_parser(raw):
    try:
        data = taskkit.parse_submission(raw)
    except taskkit.Invalid:
        return
    errors, score = taskkit.check("circles:circles_in_square", {"n": 26}, data)
    assert errors and score is None


corruptions = st.sampled_from(
    ["nan", "inf", "string", "bool", "null", "drop_row", "add_row", "nest"]
)


@settings(max_examples=80, deadline=None)
@given(corruption=corruptions, row=st.integers(0, 25), col=st.integers(0, 2))
def test_corrupted_valid_packings_are_rejected(corruption, row, col):
    circles = grid_circles()
    value = {
        "nan": float("nan"),
        "inf": float("inf"),
        "string": "1",
        "bool": False,
        "null": None,
        "nest": [0.1],
    }.get(corruption)
    if corruption == "drop_row":
        circles.pop(row)
    elif corruption == "add_row":
        circles.append([0.5, 0.5, 0.0])
    else:
        circles[row][col] = value
    errors, score = taskkit.check("circles:circles_in_square", {"n": 26}, {"circles": circles})
    assert errors and score is None


# --------------------------------------------------------------------------- hostile numbers, sizes


def with_first_entry(text: str) -> str:
    """A valid packing's JSON with its first number replaced by `text` (to write what json.dumps
    cannot)."""
    circles = grid_circles()
    return json.dumps({"circles": circles}).replace(json.dumps(circles[0][0]), text, 1)


def test_integers_beyond_float_range_are_rejected_by_name():
    raw = with_first_entry("1" + "0" * 5000)
    data = taskkit.parse_submission(
        raw
    )  # Python refuses int() of 5001 digits: the parser keeps a marker
    errors, score = taskkit.check("circles:circles_in_square", {"n": 26}, data)
    assert score is None and errors[0].startswith("circles[0][0] is an integer of 5001 digits")
    big = with_first_entry("9" * 320)
    errors, _ = taskkit.check("circles:circles_in_square", {"n": 26}, taskkit.parse_submission(big))
    assert errors[0].startswith("circles[0][0] must lie within float64's range")


def test_cli_scores_a_10_to_5000_integer_as_invalid_never_as_an_evaluator_failure(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    submission = tmp_path / "huge.json"
    submission.write_text(with_first_entry("1" + "0" * 5000))
    innolab = str(Path(sys.executable).parent / "innolab")
    done = subprocess.run(
        [innolab, "tasks", "score", "circle-packing-26", str(submission), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    verdict = json.loads(done.stdout)
    assert done.returncode == 1 and verdict["valid"] is False
    assert (
        "circles[0][0]" in verdict["errors"][0] and "evaluator failed" not in verdict["errors"][0]
    )


def test_ratio_overflow_of_min_max_distance_is_a_named_rejection():
    points = [[1e-300 * (i + 1), 2e-300 * (i % 3)] for i in range(15)] + [[1e300, 1e300]]
    errors, score = taskkit.check(
        "points:min_max_distance_ratio", {"n": 16, "dim": 2}, {"points": points}
    )
    assert score is None and "overflows float64" in errors[0] and errors[0].startswith("points")


@settings(max_examples=60, deadline=None)
@given(
    exponent=st.integers(300, 5000),
    sign=st.sampled_from([1, -1]),
    row=st.integers(0, 25),
    col=st.integers(0, 2),
)
def test_fuzzed_huge_integers_never_crash(exponent, sign, row, col):
    circles = grid_circles()
    text = json.dumps({"circles": circles})
    circles_text = json.dumps(circles[row][col])
    huge = ("-" if sign < 0 else "") + "1" + "0" * exponent
    raw = text.replace(circles_text, huge, 1)
    errors, score = taskkit.check(
        "circles:circles_in_square", {"n": 26}, taskkit.parse_submission(raw)
    )
    assert errors and score is None and "circles[" in errors[0]


@settings(max_examples=60, deadline=None)
@given(
    value=st.sampled_from(
        [1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -5e-324, 1e308, 2.2e-308]
    ),
    row=st.integers(0, 15),
    col=st.integers(0, 1),
)
def test_floats_near_the_limits_never_crash(value, row, col):
    for problem, params in (
        ("points:min_max_distance_ratio", {"n": 16, "dim": 2}),
        ("points:heilbronn_convex", {"n": 16}),
    ):
        points = [[(i % 4) / 3, (i // 4) / 3] for i in range(16)]
        points[row][col] = value
        errors, score = taskkit.check(problem, params, json.loads(json.dumps({"points": points})))
        assert (errors and score is None) or (not errors and math.isfinite(score))


# ----------------------------------------------------------------------- every violation, with size


def test_every_violated_constraint_is_listed_with_its_size():
    circles = grid_circles()
    circles[0][0] = circles[0][2] - 1e-9  # crosses the left wall by 1e-9
    circles[1][0] -= 0.01  # overlaps circles[0]
    circles[13][1] -= 0.02  # overlaps circles[7]
    errors, _ = check("circles:circles_in_square", {"circles": circles}, n=26)
    message = errors[0]
    assert "containment: 1 violation(s): circles[0] crosses the left wall by 1e-09" in message
    assert "disjointness: 2 violation(s)" in message
    assert (
        "circles[0] and circles[1] overlap by" in message
        and "circles[7] and circles[13] overlap by" in message
    )


def test_violation_lists_are_capped():
    circles = [[0.5 + 1e-6 * i, 0.5, 0.01] for i in range(26)]
    errors, _ = check("circles:circles_in_square", {"circles": circles}, n=26)
    assert "disjointness: 325 violation(s)" in errors[0] and "(and 305 more)" in errors[0]


# ---------------------------------------------------------------------- kissing: exact big integers


def d11_roots(scale=1):
    vectors = []
    for i in range(11):
        for j in range(i + 1, 11):
            for si in (1, -1):
                for sj in (1, -1):
                    v = [0] * 11
                    v[i], v[j] = si * scale, sj * scale
                    vectors.append(v)
    return vectors


def test_kissing_check_is_exact_with_entries_near_the_cap():
    params = {"dim": 11, "max_vectors": 5000, "max_bits": 63}
    scale = 2**62  # squares need 125 bits: int64 arithmetic would overflow silently
    assert taskkit.check(
        "kissing:kissing_configuration", params, {"vectors": d11_roots(scale)}
    ) == ([], 220.0)
    nudged = d11_roots(scale)
    nudged[0][nudged[0].index(scale)] += (
        1  # one unit at 2^62: invisible in float64, fatal in exact arithmetic
    )
    errors, score = taskkit.check("kissing:kissing_configuration", params, {"vectors": nudged})
    assert score is None and "separation" in errors[0] and "(short by" in errors[0]
    too_big = d11_roots(1)
    too_big[5][0] = 2**63 + 1
    errors, _ = taskkit.check("kissing:kissing_configuration", params, {"vectors": too_big})
    assert errors[0].startswith("vectors[5][0] must have magnitude below 2^63")
