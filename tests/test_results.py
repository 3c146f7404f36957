"""Run tables of committed run folders hold the values and columns they held before the tables
were declared as columns (a folder of runs, one of them without a trace, and a sweep folder with a
configuration that has no run folder); failed runs are imputed by metrics.impute. Columns added
since (each with its reason): `novelty_code` (which rule kept the code novelty compared), and the
registered agents' options (innolab.agents.registry: num_drafts ... persistent; then the agent
frameworks' step_limit, max_turns, smol_agent and smol_max_steps of 720a7fd and tool_call_mode of
548b048), None where a run did not set them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from innolab import metrics, results

DATA = Path(__file__).parent / "data" / "run_tables"
EXPECTED = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))


def plain(frame: pd.DataFrame) -> dict:
    values = frame.astype(object).where(frame.notna(), None).values.tolist()
    return {
        "columns": list(frame.columns),
        "dtypes": [t.kind for t in frame.dtypes],
        "rows": json.loads(json.dumps(values)),
    }


@pytest.mark.parametrize("folder", ["runs", "sweep"])
def test_the_tables_of_recorded_run_folders_are_unchanged(folder):
    runs, trajectory = results.build(DATA / folder)
    assert plain(runs) == EXPECTED[folder]["runs"]
    assert plain(trajectory) == EXPECTED[folder]["trajectory"]


def test_each_column_is_declared_once_with_its_source():
    assert [c.name for c in results.RUN_TABLE_COLUMNS] == results.RUN_COLUMNS
    assert len(set(results.RUN_COLUMNS)) == len(results.RUN_COLUMNS)
    assert results.RUN_COLUMNS[:13] == [
        "config_id",
        "run_dir",
        "task",
        "agent",
        "backbone",
        "model",
        "temperature",
        "top_p",
        "seed",
        "budget_s",
        "runtime",
        "innovation_prompt",
        "prior_solution",
    ]
    assert results.TRAJECTORY_COLUMNS == [
        "config_id",
        "t_s",
        "step",
        "file",
        "dev_valid",
        "dev_score",
        "improving",
        "valid",
        "score",
        "gain",
        "ratio",
        "novelty",
        "novelty_vs_prior",
        "v_star",
        "beats_v_star",
        "headroom_closed",
        "novelty_out",
        "novelty_out_nearest",
        "novelty_backend",
        "novelty_status",
        "novelty_code",
        "source_status",
        "source_seconds",
        "rederived_known",
    ]
    frontier = ["score", "v_star", "v_star_as_of", "gain", "ratio", "beats_v_star"]
    at = results.RUN_COLUMNS.index("score")
    assert results.RUN_COLUMNS[at : at + len(frontier)] == frontier
    assert "headroom_closed" in results.RUN_COLUMNS


def test_a_run_without_a_trace_or_a_folder_is_imputed_by_the_metrics_rule():
    runs, _ = results.build(DATA / "runs")
    unstarted = runs.set_index("run_dir").loc["unstarted"]
    assert (unstarted["ratio"], unstarted["novelty"]) == metrics.impute(False, None, None)
    assert not unstarted["complete"] and unstarted["tool_calls"] == 0
    sweep, _ = results.build(DATA / "sweep")
    missing = sweep.set_index("config_id").loc["missing1"]
    assert (missing["ratio"], missing["novelty"]) == (metrics.FAILED_RATIO, metrics.FAILED_NOVELTY)
    assert missing["error"] == "boom" and missing["extra_factor"] == "b" and missing["seed"] == 3


def test_scores_recorded_before_the_two_axes_read_nan_and_an_inferred_status():
    runs, trajectory = results.build(DATA / "runs")
    novelty = ["novelty", "novelty_out", "novelty_out_nearest", "novelty_backend",
               "novelty_status", "source_status", "source_seconds", "rederived_known"]
    assert set(novelty) <= set(runs.columns) and set(novelty) <= set(trajectory.columns)
    scored = runs[runs["complete"]]
    assert (scored["novelty_status"] == "ok").all() and scored["novelty_out"].isna().all()
    assert scored["source_status"].isna().all() and scored["rederived_known"].isna().all()
    assert pd.isna(runs.set_index("run_dir").loc["unstarted", "novelty_status"])
