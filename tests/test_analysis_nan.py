"""Analyses with N = NaN (a valid run whose N was not computed): left out and counted, never 0."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from innolab.analysis import bootstrap as b
from innolab.analysis import main_results as mr
from innolab.analysis import plots
from innolab.analysis import sweeps as sw

NAN = float("nan")


def scores_table() -> pd.DataFrame:
    """Two frameworks on four tasks; A's N on t2 was not computed, B failed t4 (N imputed 0)."""
    return pd.DataFrame({
        "task": ["t1", "t2", "t3", "t4"] * 2,
        "framework": ["A"] * 4 + ["B"] * 4,
        "valid": [True, True, True, True, True, True, True, False],
        "ratio": [-0.1, -0.2, -0.3, -0.4, -0.5, -0.2, -0.1, NAN],
        "novelty": [10.0, NAN, 30.0, 50.0, 20.0, 40.0, 60.0, NAN],
    })


def test_impute_keeps_a_valid_nan_and_zeroes_a_failure():
    out = b.impute_scores(scores_table()).set_index(["framework", "task"])
    assert math.isnan(out.at[("A", "t2"), "novelty"])
    assert out.at[("B", "t4"), "novelty"] == 0.0 and out.at[("B", "t4"), "ratio"] == -1.0
    with pytest.raises(b.BootstrapError, match="need a ratio"):
        b.impute_scores(scores_table().assign(ratio=[NAN] + [-0.1] * 7))


def test_table4_and_macro_average_leave_nan_out_and_count():
    means = b.macro_average(scores_table()).set_index("framework")
    assert means.at["A", "novelty"] == pytest.approx((10 + 30 + 50) / 3)  # not (10+0+30+50)/4
    assert means.at["A", "n_novelty"] == 3 and means.at["B", "n_novelty"] == 4
    assert means.at["B", "novelty"] == pytest.approx((20 + 40 + 60 + 0) / 4)
    t4 = mr.table4_means(scores_table()).set_index("framework")
    assert t4.at["A", "mean_novelty"] == pytest.approx(30.0) and t4.at["A", "n_valid"] == 4
    assert mr.not_computed(scores_table()) == 1


def test_intervals_and_paired_tests_exclude_nan():
    scores = scores_table()
    ci = mr.framework_intervals(scores, frameworks=("A", "B"), n_resamples=200)
    a = ci[(ci["framework"] == "A") & (ci["metric"] == "novelty")].iloc[0]
    # 3 tasks with N known: the mean over them, no interval (fewer than MIN_UNITS)
    assert a["mean"] == pytest.approx(30.0) and np.isnan(a["ci_low"]) and np.isnan(a["ci_high"])
    tests = mr.paired_tests(scores, n_resamples=200).set_index("metric")
    # t2 is excluded from the N pair (A unknown): diffs t1 -10, t3 -30, t4 +50
    assert tests.at["novelty", "mean_diff"] == pytest.approx((-10 - 30 + 50) / 3)
    assert tests.loc["novelty", ["ci_low", "ci_high", "p_value"]].isna().all()
    # the same tables over 12 tasks (each task thrice over, renamed): A's N known on 9 of them
    # (t2's three copies unknown), so its mean has no interval; B's on all 12, so it has one
    many = pd.concat([scores.assign(task=scores["task"] + f"-{k}") for k in range(3)],
                     ignore_index=True)
    ci = mr.framework_intervals(many, frameworks=("A", "B"), n_resamples=200)
    novelty = ci[ci["metric"] == "novelty"].set_index("framework")
    assert np.isnan(novelty.at["A", "ci_low"])
    assert novelty.at["B", "ci_low"] <= novelty.at["B", "mean"] <= novelty.at["B", "ci_high"]
    tests = mr.paired_tests(many, n_resamples=200).set_index("metric")
    # 9 pairs of N (t2's excluded): no p; 12 of ratio: an interval and a p
    assert np.isnan(tests.at["novelty", "p_value"])
    assert np.isfinite(tests.loc["ratio", ["ci_low", "ci_high", "p_value"]].astype(float)).all()
    # with one pair left: its difference, no interval
    few = scores[scores["task"].isin(["t1", "t2"])]
    single = mr.paired_tests(few, n_resamples=200).set_index("metric").loc["novelty"]
    assert single["mean_diff"] == pytest.approx(-10.0) and math.isnan(single["p_value"])


def sweep_runs() -> pd.DataFrame:
    """Runs of two agents at two temperatures on two tasks; some N not computed."""
    rows = []
    for task in ("t1", "t2"):
        for agent in ("mlab", "aide"):
            for temperature in (0.0, 1.0):
                for seed in range(3):
                    ratio = -0.5 + 0.1 * seed + (0.05 if agent == "aide" else 0.0)
                    novelty = 20.0 + 10 * temperature + seed
                    if agent == "aide" and seed == 2:  # the best run of aide: N not computed
                        novelty = NAN
                    rows.append({"config_id": f"{task}-{agent}-{temperature}-{seed}",
                                 "task": task, "agent": agent, "temperature": temperature,
                                 "seed": seed, "valid": True, "ratio": ratio,
                                 "novelty": novelty, "budget_s": 100.0})
    return pd.DataFrame(rows)


def test_sweep_means_leave_nan_out_and_count_it():
    runs = sweep_runs()
    table = sw.trade_off(runs, "temperature").table.set_index("temperature")
    assert table.at[0.0, "n"] == 12 and table.at[0.0, "n_novelty"] == 10
    known = runs[(runs["temperature"] == 0.0)]["novelty"].dropna()
    assert table.at[0.0, "mean_novelty"] == pytest.approx(known.mean())
    effect = sw.factor_effect(runs, "agent", "novelty", n_resamples=200)  # best of all
    aide = effect[effect["agent"] == "aide"].set_index("kind")
    assert aide.at["per_run", "n"] == 8  # 12 runs, 4 with N not computed
    # aide's best run (seed 2) of every task and temperature has N unknown: no task counts
    assert aide.at["best_of_k", "n"] == 0 and math.isnan(aide.at["best_of_k", "mean"])
    mlab = effect[effect["agent"] == "mlab"].set_index("kind")
    assert mlab.at["best_of_k", "n"] == 2 and mlab.at["best_of_k", "mean"] == pytest.approx(22.0)


def test_paired_effect_excludes_pairs_with_nan():
    runs = sweep_runs()
    effect = sw.paired_effect(runs[runs["agent"] == "aide"], "temperature", "novelty",
                              pair_on=("task", "seed"), n_resamples=200)
    everything = effect.set_index("task").loc["all"]
    assert everything["n_pairs"] == 4  # seed 2 has no known N at either level: excluded
    assert everything["mean_diff"] == pytest.approx(10.0)


def test_anytime_leaves_unknown_n_out_of_the_mean():
    runs = pd.DataFrame({"config_id": ["c0", "c1", "c2"], "budget_s": [100.0] * 3})
    trajectory = pd.DataFrame({
        "config_id": ["c0", "c1", "c1"], "t_s": [10.0, 10.0, 20.0], "valid": [True] * 3,
        "ratio": [-0.5, -0.4, -0.1], "novelty": [40.0, 30.0, NAN]})
    curve = sw.anytime(trajectory, runs, None, [15, 30], n_resamples=200).set_index("t_s")
    # at 15: c0 40, c1 30, c2 none yet (0, imputed); at 30: c1's best has N unknown
    assert curve.at[15.0, "mean_novelty"] == pytest.approx(70 / 3)
    assert curve.at[15.0, "n_novelty"] == 3
    assert curve.at[30.0, "mean_novelty"] == pytest.approx(40 / 2)
    assert curve.at[30.0, "n_novelty"] == 2 and curve.at[30.0, "n"] == 3
    rows = sw.anytime_runs(trajectory, runs, [30])
    assert rows["novelty"].isna().sum() == 1


def test_trends_regressions_and_main_results_drop_nan():
    runs = sweep_runs()
    check = sw.trend_holds(runs, "temperature", "novelty", "increasing", unit="config_id",
                           min_levels=2)
    assert check.n == 20  # 24 runs, 4 with N not computed
    table = sw.regression(runs, "novelty ~ temperature")
    assert (table["n"] == 20).all()
    results = sw.main_results(runs, n_resamples=200)  # the best of all seeds: aide's seed 2
    scores = results.scores.set_index(["task", "framework"])
    assert math.isnan(scores.at[("t1", "AIDE"), "novelty"])
    assert "N not computed for 2 valid cell(s) of 4" in results.note
    means = results.means.set_index("framework")
    assert math.isnan(means.at["AIDE", "mean_novelty"])  # no task with a known N
    assert means.at["MLAB", "mean_novelty"] == pytest.approx(22.0)


def test_plots_do_not_draw_nan_as_zero():
    points = pd.DataFrame({"ratio": [-0.2, 0.1, -0.5], "novelty": [40.0, NAN, 10.0],
                           "label": ["a", "b", "c"]})
    for draw in (plots.gain_novelty_plane, plots.complex_plane):
        fig = draw(points)
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert "1 with N not computed: not drawn" in texts
        assert "b" not in texts
        plt.close(fig)
    filled = scores_table().assign(assumed=False)
    fig = plots.table2_heatmaps(filled)
    assert "n/c" in [t.get_text() for t in fig.axes[1].texts]
    plt.close(fig)


def test_filling_the_papers_table_refuses_a_printed_cell_without_n():
    table2 = pd.DataFrame({
        "task": ["t1", "t2", "t3"], "framework": ["A"] * 3,
        "status": ["valid", "valid", "valid_unreported"],
        "gain": [1.0, 2.0, NAN], "ratio": [-0.1, -0.2, NAN], "novelty": [10.0, NAN, NAN]})
    averages = pd.DataFrame({"framework": ["A"], "n_valid": [3], "gain": [2.0],
                             "ratio": [-0.2], "novelty": [20.0]})
    with pytest.raises(mr.MainResultsError, match="printed valid cells need a novelty; missing "
                                                  "for \\['t2'\\]"):
        mr.fill_unreported(table2, averages)


def test_a_level_without_a_known_n_gets_no_bar():
    effect = sw.factor_effect(sweep_runs(), "agent", "novelty", n_resamples=200)
    fig = plots.backbone_bars(effect, "agent", metric_label="mean N (best of k)")
    widths = [patch.get_width() for patch in fig.axes[0].patches]
    assert any(math.isnan(w) for w in widths) and 0.0 not in widths
    plt.close(fig)


def test_paired_effect_with_no_known_pair_says_why():
    runs = sweep_runs()
    unknown = runs[(runs["agent"] == "aide") & (runs["seed"] == 2)]
    with pytest.raises(sw.AnalysisError, match="with novelty known \\(4 of 4 runs have "
                                               "novelty NaN: not computed, left out\\)"):
        sw.paired_effect(unknown, "temperature", "novelty", n_resamples=200)
