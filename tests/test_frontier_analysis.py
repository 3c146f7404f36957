"""The frontier over time (innolab.analysis.frontier) on ledgers whose answers are known."""

from __future__ import annotations

import datetime
import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from innolab.analysis import frontier as fr

matplotlib.use("Agg")


def entry(value, date, status="reported", kind="record", holder="h", source="s"):
    return {"value": value, "date": date, "status": status, "kind": kind, "holder": holder,
            "source": source}


# A minimisation task: a year-only entry, a refuted better value, a later tie, two entries on one
# day, a bound that tightens, a refuted bound.
MIN_LEDGER = pd.DataFrame([
    entry(0.5, "2024-03-10", holder="later tie"),  # ties 0.5 of 2020: does not take the record
    entry(0.5, "2020", holder="first"),  # a year alone: from 2020-01-01
    entry(0.3, "2022-06", status="refuted", holder="refuted"),  # never counts
    entry(0.45, datetime.date(2023, 5, 2), status="verified", holder="A"),
    entry(0.47, "2023-05-02", holder="B"),  # same day, worse than A
    entry(0.4, "2025-01-15", holder="C"),
    entry(0.2, "2019", kind="lower_bound", holder="L1"),
    entry(0.35, "2024-01-01", kind="lower_bound", status="refuted", holder="Lx"),
    entry(0.25, "2024-07", kind="lower_bound", holder="L2"),
])


def test_record_over_time_is_the_best_non_refuted_record_as_of_each_entry_date():
    record = fr.record_over_time(MIN_LEDGER, "min")
    assert list(record.columns) == fr.RECORD_COLUMNS
    assert [d.date().isoformat() for d in record["date"]] == [
        "2020-01-01", "2023-05-02", "2024-03-10", "2025-01-15"]
    assert record["record"].tolist() == [0.5, 0.45, 0.45, 0.4]
    assert record["holder"].tolist() == ["first", "A", "A", "C"]
    assert record["status"].tolist() == ["reported", "verified", "verified", "reported"]
    assert record["new"].tolist() == [True, True, False, True]
    assert [d.date().isoformat() for d in record["held_since"]] == [
        "2020-01-01", "2023-05-02", "2023-05-02", "2025-01-15"]


def test_record_over_time_when_maximising_and_a_tie_keeps_the_first_holder():
    ledger = pd.DataFrame([entry(1.0, "2021", holder="x"), entry(2.0, "2022-02-02", holder="y"),
                           entry(2.0, "2023", holder="copy"), entry(1.5, "2024", holder="z")])
    record = fr.record_over_time(ledger, "max")
    assert record["record"].tolist() == [1.0, 2.0, 2.0, 2.0]
    assert record["holder"].tolist() == ["x", "y", "y", "y"]
    assert record["new"].tolist() == [True, True, False, False]
    assert fr.record_over_time(ledger, "min")["record"].tolist() == [1.0, 1.0, 1.0, 1.0]


def test_bounds_over_time_keeps_the_tightest_bound_of_each_kind():
    bounds = fr.bounds_over_time(MIN_LEDGER)
    assert list(bounds.columns) == fr.BOUND_COLUMNS
    assert bounds["kind"].tolist() == ["lower_bound", "lower_bound"]
    assert bounds["bound"].tolist() == [0.2, 0.25] and bounds["holder"].tolist() == ["L1", "L2"]
    upper = pd.DataFrame([entry(5.0, "2020"), entry(9.0, "2010", kind="upper_bound"),
                          entry(8.0, "2015", kind="upper_bound"),
                          entry(8.5, "2016", kind="upper_bound")])  # looser: does not count
    table = fr.bounds_over_time(upper)
    assert table["bound"].tolist() == [9.0, 8.0, 8.0] and table["new"].tolist() == [
        True, True, False]
    assert fr.bounds_over_time(upper[upper["kind"] == "record"]).empty


def test_value_at_reads_the_last_step_on_or_before_each_day():
    record = fr.record_over_time(MIN_LEDGER, "min")
    got = fr.value_at(record, "record", [
        "2019-12-31", "2020-01-01", datetime.date(2023, 5, 1),
        pd.Timestamp("2023-05-02 23:59"), "2025-01-14", "2030"])
    assert math.isnan(got[0])
    assert got[1:].tolist() == [0.5, 0.5, 0.45, 0.45, 0.4]


def test_place_runs_puts_each_run_at_its_start_with_the_record_of_that_day():
    record = fr.record_over_time(MIN_LEDGER, "min")
    runs = pd.DataFrame({
        "config_id": ["a", "b", "c", "d", "e"],
        "task": ["t", "t", "t", "other", "t"],
        "agent": ["aide", "codeact", "aide", "aide", "aide"],
        "started": ["2025-01-15T23:30:00+02:00", "2024-01-01T00:00:00Z", None,
                    "2024-01-01", "2023-05-02T08:00:00"],
        "score": [0.39, 0.1, 0.3, 0.3, 0.6],
        "valid": [True, False, True, True, True],
    })
    placed = fr.place_runs(runs, record, task="t", start="started")
    assert placed["config_id"].tolist() == ["e", "b", "a"]  # in start order; c has no start
    assert placed["value"].tolist()[::2] == [0.6, 0.39] and math.isnan(placed["value"].iloc[1])
    assert placed["valid"].tolist() == [True, False, True]
    # a started 2025-01-15 21:30 UTC: the record of that day is C's 0.4
    assert placed["record"].tolist() == [0.45, 0.45, 0.4]
    assert placed["date"].iloc[2] == pd.Timestamp("2025-01-15 21:30")
    seconds = runs.assign(started=[pd.Timestamp("2020-06-01", tz="UTC").timestamp()] * 5)
    by_seconds = fr.place_runs(seconds, record, start="started", label=None)
    assert by_seconds["record"].tolist() == [0.5] * 5
    with pytest.raises(fr.FrontierAnalysisError, match=r"lacks the columns \['started'\]"):
        fr.place_runs(runs.drop(columns="started"), record, start="started")
    with pytest.raises(fr.FrontierAnalysisError, match="column 'started': not a date"):
        fr.place_runs(runs.assign(started="yesterday"), record, start="started")


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.drop(columns="kind"), r"ledger lacks the columns \['kind'\]"),
        (lambda d: d.assign(status="guessed"), r"column 'status': \['guessed'\]"),
        (lambda d: d.assign(kind="bound"), r"column 'kind': \['bound'\]"),
        (lambda d: d.assign(value=[math.nan] + [1.0] * (len(d) - 1)),
         "column 'value': every entry needs a finite number"),
        (lambda d: d.assign(date=["last spring", *list(d["date"][1:])]), "column 'date'"),
        (lambda d: d[d["kind"] != "record"], "needs at least one record that is not refuted"),
    ],
)
def test_a_ledger_that_breaks_a_rule_is_named(change, message):
    with pytest.raises(fr.FrontierAnalysisError, match=message):
        fr.record_over_time(change(MIN_LEDGER), "min")


def test_direction_must_be_max_or_min():
    with pytest.raises(fr.FrontierAnalysisError, match="direction must be 'max' or 'min'"):
        fr.record_over_time(MIN_LEDGER, "up")


def test_the_record_as_of_a_date_is_the_tasks_v_star_as_of_it_on_every_builtin_task():
    from innolab.tasks import PAPER_DATE, builtin_ids, get_task
    from innolab.tasks.frontier import record_steps

    for task_id in builtin_ids():
        task = get_task(task_id)
        ledger = pd.DataFrame([e.model_dump() for e in task.ledger])
        record = fr.record_over_time(ledger, task.direction)
        days = {PAPER_DATE, datetime.date.today()}
        for e in task.ledger:
            days |= {e.date, e.date - datetime.timedelta(days=1)}
        first = record["date"].iloc[0].date()
        days = sorted(d for d in days if d >= first)
        got = fr.value_at(record, "record", days)
        assert got.tolist() == [task.v_star_as_of(d).value for d in days], task_id
        moved = record[record["new"]]
        # the tasks' own steps agree, the last of each day (one row per date here)
        steps = {e.date: e.value for e in record_steps(task.ledger, task.direction)}
        assert [(d.date(), v) for d, v in zip(moved["date"], moved["record"], strict=True)] == [
            *steps.items()], task_id
        bound = task.bound
        bounds = fr.bounds_over_time(ledger)
        if bound is None:
            assert bounds.empty, task_id
        else:
            assert bounds["bound"].iloc[-1] == bound.value, task_id


def test_the_chart_draws_the_record_as_steps_and_a_zoom_when_bounds_or_runs_lie_off_it():
    record = fr.record_over_time(MIN_LEDGER, "min")
    runs = pd.DataFrame({"task": ["t"], "agent": ["aide"], "started": ["2025-02-01"],
                         "score": [0.42], "valid": [True]})
    placed = fr.place_runs(runs, record, start="started")
    fig = fr.frontier_chart(MIN_LEDGER, "min", placed=placed, paper_date="2023-06-01",
                            end="2026-01-01")
    assert len(fig.axes) == 2  # everything, then the record zoomed
    top = fig.axes[0]
    steps = next(line for line in top.lines if line.get_label().startswith("record"))
    assert steps.get_drawstyle() == "steps-post"
    assert list(steps.get_ydata()) == [0.5, 0.45, 0.45, 0.4, 0.4]
    assert pd.Timestamp(steps.get_xdata()[-1]) == pd.Timestamp("2026-01-01")
    bound = next(line for line in top.lines if "lower bound" in line.get_label())
    assert list(bound.get_ydata()) == [0.2, 0.25, 0.25]
    labels = top.get_legend_handles_labels()[1]
    assert "the paper's V* (0.45)" in labels and "runs: aide" in labels
    lo, hi = fig.axes[1].get_ylim()
    assert lo > 0.25 and hi < 0.6  # the zoom fits the record alone
    no_extras = fr.frontier_chart(MIN_LEDGER[MIN_LEDGER["kind"] == "record"], "min")
    assert len(no_extras.axes) == 1
    np.testing.assert_allclose(no_extras.axes[0].get_ylim(), fig.axes[1].get_ylim())
    import matplotlib.pyplot as plt

    plt.close(fig)
    plt.close(no_extras)
