"""innolab.analysis.main_results: Table 4 reproduced from Table 2, fill assumptions, intervals,
paired tests."""

import numpy as np
import pytest

from innolab import paper
from innolab.analysis import main_results as mr


@pytest.fixture(scope="module")
def filled():
    return mr.fill_unreported(paper.load("table2"), paper.load("table2_averages"))


def test_table4_ratio_means_reproduced(filled):
    t4 = mr.table4_means(filled).set_index("framework")
    printed = mr.round_as_printed(t4["mean_ratio"])
    assert printed.to_dict() == {"MLAB": -0.62, "CodeAct": -0.81, "AIDE": -0.82}
    assert t4["n_valid"].to_dict() == {"MLAB": 7, "CodeAct": 6, "AIDE": 5}
    comparison = mr.compare_with_published(t4.reset_index(), paper.load("table4"))
    assert comparison["ratio_matches"].all() and comparison["novelty_matches"].all()


def test_equal_split_restores_the_printed_averages(filled):
    averages = paper.load("table2_averages").set_index("framework")
    for framework in ("MLAB", "CodeAct"):  # the frameworks with unprinted cells
        rows = filled[filled["valid"] & (filled["framework"] == framework)]
        assert rows["ratio"].mean() == pytest.approx(averages.at[framework, "ratio"], abs=1e-9)
        assert rows["gain"].mean() == pytest.approx(averages.at[framework, "gain"], abs=1e-9)
    mlab = filled[(filled["framework"] == "MLAB") & filled["assumed"]]
    assert mlab["novelty"].tolist() == pytest.approx([50.0, 50.0])


def test_reported_mean_is_another_assumption():
    alt = mr.fill_unreported(
        paper.load("table2"), paper.load("table2_averages"), method="reported_mean"
    )
    cell = alt[(alt["framework"] == "MLAB") & (alt["task"] == "NPR")]
    assert cell["ratio"].iloc[0] == pytest.approx(-1.80 / 5)
    with pytest.raises(mr.MainResultsError, match="method"):
        mr.fill_unreported(paper.load("table2"), paper.load("table2_averages"), method="guess")


def test_round_as_printed_is_half_away_from_zero():
    import pandas as pd

    assert mr.round_as_printed(
        pd.Series([-0.615, 0.125, 39.585, -0.8140000000000001])
    ).tolist() == [-0.62, 0.13, 39.59, -0.81]


def test_intervals_and_paired_tests(filled):
    ci = mr.framework_intervals(filled, n_resamples=2000)
    with pytest.raises(TypeError):
        mr.framework_intervals(filled, mr.FRAMEWORKS, 2000)  # settings are keyword-only
    assert list(ci.columns) == ["framework", "metric", "mean", "ci_low", "ci_high"]
    assert (ci["ci_low"] <= ci["mean"]).all() and (ci["mean"] <= ci["ci_high"]).all()
    tests = mr.paired_tests(filled, pairs=[("MLAB", "CodeAct"), ("MLAB", "AIDE")], n_resamples=2000)
    assert len(tests) == 4 and set(tests["metric"]) == {"ratio", "novelty"}
    ratio = tests[tests["metric"] == "ratio"].set_index("framework_b")
    assert ratio.at["CodeAct", "mean_diff"] == pytest.approx(0.199)
    assert ratio.at["AIDE", "mean_diff"] == pytest.approx(0.205)
    assert ((tests["p_value"] > 0) & (tests["p_value"] <= 1)).all()
    assert np.isfinite(tests[["ci_low", "ci_high"]]).all().all()


def test_unfilled_table_is_refused():
    raw = paper.load("table2")
    raw["valid"] = raw["status"] != "failed"
    with pytest.raises(Exception, match="fill unreported"):
        mr.table4_means(raw)
