"""Runs know their frontier: a score records its V*, that V*'s date and the ledger's hash, and is
read again against V* as of any date (`innolab score --as-of`, `results.runs(as_of=...)`,
`sweep collect --as-of`) without being rewritten.

The runs are real: a scripted policy writes a known Erdős solution file and submits it, the run is
scored by the hidden evaluator, then its start is moved to a chosen day (every event of its trace
shifted alike). No construction between the old and the new Erdős record is available offline
(the best known solution shipped with the task scores 0.38110, above both), so the must-show run's
recorded final value is set to one that lies between them; everything read from it is computed.
"""

from __future__ import annotations

import datetime
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from innolab import metrics, results, runner
from innolab.cli import main
from innolab.gym.policy import RunConfig
from innolab.scoring import ScoringError, read_score
from innolab.tasks import get_task

# the scripted policies are registered agents of the tests' own (the gym builds only those)
pytestmark = pytest.mark.usefixtures("test_agents")

ERDOS = "erdos-minimum-overlap"
OLD_V_STAR = 0.3808703105862199  # Together AI (EinsteinArena), dated 2026-03 in the ledger
NEW_V_STAR = 0.380859  # lnzwz_AI4M_Agent (EinsteinArena), first seen 2026-07-12
BETWEEN = 0.380865  # better than the old record, worse than the new one (minimise)
START = datetime.date(2026, 5, 15)  # the run's start: after the old record, before July 2026
DATA = Path(__file__).parent / "data" / "run_tables"


def erdos_run(run_dir: Path, task: str = ERDOS) -> Path:
    """A scripted run that submits the task's baseline-constant solution file, scored."""
    solution = get_task(ERDOS).solutions_dir / "baseline-constant" / "solution.json"
    calls = [
        ["write_file", {"path": "heights.json", "content": solution.read_text(encoding="utf-8")}],
        ["submit", {"path": "heights.json"}],
    ]
    config = RunConfig(task=task, policy="tests.gym_policies:CallPolicy", agent="scripted-calls",
                       policy_args={"calls": calls}, max_steps=5, wall_clock_s=300)
    outcome = runner.start(config, run_dir, novelty=None, show_progress=False)
    assert outcome["valid"], outcome
    return Path(outcome["run_dir"])


def start_on(run_dir: Path, day: datetime.date) -> None:
    """Move a run's start to noon UTC of `day`: every event's time shifted by one amount."""
    trace = run_dir / "trace.jsonl"
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    started = next(e["time"] for e in events if e["type"] == "run_started")
    noon = datetime.datetime.combine(day, datetime.time(12), tzinfo=datetime.UTC)
    shift = noon.timestamp() - started
    for event in events:
        if event.get("time") is not None:
            event["time"] += shift
    trace.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")


def set_final_value(run_dir: Path, value: float) -> None:
    """Record `value` as the run's final (and only improving) value in its score.json."""
    path = run_dir / "score.json"
    score = json.loads(path.read_text(encoding="utf-8"))
    assert len(score["candidates"]) == 1 and score["valid"]
    score["score"] = score["candidates"][0]["score"] = value
    path.write_text(json.dumps(score, indent=2) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def between(tmp_path_factory) -> Path:
    """A folder of one Erdős run started on START whose final value lies between the records."""
    folder = tmp_path_factory.mktemp("runs")
    run_dir = erdos_run(folder / "between")
    start_on(run_dir, START)
    set_final_value(run_dir, BETWEEN)
    return folder


def cli_score(run_dir: Path, as_of: str, capsys) -> tuple[int, dict, str]:
    code = main(["score", str(run_dir), "--as-of", as_of])
    out, err = capsys.readouterr()
    return code, json.loads(out) if code == 0 else {}, err


def test_a_score_records_its_v_star_its_date_and_the_ledger_hash(tmp_path):
    run_dir = erdos_run(tmp_path / "run")
    score = json.loads((run_dir / "score.json").read_text(encoding="utf-8"))
    task = get_task(ERDOS)
    today = datetime.date.today()
    assert score["v_star"] == task.v_star_as_of(today).value == NEW_V_STAR
    assert score["v_star_as_of"] == today.isoformat()
    assert score["ledger_hash"] == task.ledger_hash and len(score["ledger_hash"]) == 12
    assert score["score"] == 0.5 and not score["beats_v_star"]
    assert score["gain"] == metrics.gain(0.5, NEW_V_STAR, "min")
    assert score["headroom_closed"] == pytest.approx(task.headroom_closed(0.5, today))
    event = [json.loads(x) for x in (run_dir / "trace.jsonl").read_text().splitlines()][-1]
    assert event["type"] == "score" and event["ledger_hash"] == task.ledger_hash


def test_the_ledger_holds_the_two_records_the_run_lies_between():
    task = get_task(ERDOS)
    assert task.direction == "min"
    assert task.v_star_as_of(START).value == OLD_V_STAR
    assert task.v_star_as_of("2026-07-12").value == NEW_V_STAR
    assert NEW_V_STAR < BETWEEN < OLD_V_STAR


def test_innolab_score_as_of_reads_beats_as_of_the_start_and_not_today(between, capsys):
    run_dir = between / "between"
    record = (run_dir / "score.json").read_bytes()
    code, reading, line = cli_score(run_dir, "run", capsys)
    assert code == 0, line
    assert reading["v_star_as_of"] == START.isoformat() and reading["v_star"] == OLD_V_STAR
    assert reading["beats_v_star"] is True
    assert reading["gain"] == metrics.gain(BETWEEN, OLD_V_STAR, "min") > 0
    assert reading["ratio"] == metrics.ratio(BETWEEN, OLD_V_STAR, "min")
    assert reading["v_star_entry"]["holder"] == "Together AI (EinsteinArena)"
    assert "beats_v_star true" in line and START.isoformat() in line
    code, before_july, _ = cli_score(run_dir, "2026-06-30", capsys)
    assert code == 0 and before_july["beats_v_star"] is True
    code, today, line = cli_score(run_dir, "today", capsys)
    assert code == 0 and today["v_star"] == NEW_V_STAR and today["beats_v_star"] is False
    assert today["gain"] == metrics.gain(BETWEEN, NEW_V_STAR, "min") < 0
    assert today["v_star_as_of"] == datetime.date.today().isoformat()
    assert "beats_v_star false" in line
    assert [c["beats_v_star"] for c in (reading["candidates"] + today["candidates"])] == [
        True, False]
    assert (run_dir / "score.json").read_bytes() == record  # read, never rewritten


def test_results_runs_as_of_the_start_and_as_of_today(between):
    at_start = results.runs(between, as_of="run").iloc[0]
    assert at_start["v_star"] == OLD_V_STAR and at_start["beats_v_star"]
    assert at_start["v_star_as_of"] == START.isoformat()
    assert at_start["gain"] == metrics.gain(BETWEEN, OLD_V_STAR, "min")
    assert at_start["ratio"] == at_start["ratio_raw"] == metrics.ratio(BETWEEN, OLD_V_STAR, "min")
    today = results.runs(between, as_of="today").iloc[0]
    assert today["v_star"] == NEW_V_STAR and not today["beats_v_star"]
    assert today["ratio"] == metrics.ratio(BETWEEN, NEW_V_STAR, "min") < 0
    trajectory = results.trajectory(between, as_of="run")
    improving = trajectory[trajectory["improving"]].iloc[0]
    assert improving["v_star"] == OLD_V_STAR and improving["beats_v_star"]
    assert improving["score"] == BETWEEN


def test_headroom_closed_is_a_column_of_runs_parquet(between):
    runs_path, _ = results.collect(between, as_of="run")
    table = pd.read_parquet(runs_path)
    assert "headroom_closed" in table.columns
    task = get_task(ERDOS)
    bound = task.bound_as_of(START)
    assert bound is not None and bound.kind == "lower_bound" and bound.value == 0.379005
    expected = (BETWEEN - OLD_V_STAR) / (bound.value - OLD_V_STAR)
    assert table.iloc[0]["headroom_closed"] == pytest.approx(expected, rel=1e-12)
    assert 0 < expected < 1  # better than V*, short of the proven bound
    runs_path.unlink()


def test_sweep_collect_as_of_through_the_cli(between, capsys):
    assert main(["sweep", "collect", str(between), "--as-of", "2026-06-30"]) == 0
    table = pd.read_parquet(Path(capsys.readouterr().out.strip()))
    assert table.iloc[0]["v_star_as_of"] == "2026-06-30" and table.iloc[0]["beats_v_star"]
    assert main(["sweep", "collect", str(between), "--as-of", "today"]) == 0
    table = pd.read_parquet(Path(capsys.readouterr().out.strip()))
    assert not table.iloc[0]["beats_v_star"] and table.iloc[0]["v_star"] == NEW_V_STAR
    assert results.runs(between).equals(table)  # as collected
    (between / results.RUNS_TABLE).unlink()
    (between / results.TRAJECTORY_TABLE).unlink()


def test_an_entry_dated_after_the_start_does_not_change_as_of_run(tmp_path):
    task_dir = tmp_path / "tasks" / "erdos-ledger-copy"
    shutil.copytree(get_task(ERDOS).root, task_dir)
    spec_file = task_dir / "task.yaml"
    spec = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
    spec["id"] = task_dir.name
    spec_file.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    folder = tmp_path / "runs"
    run_dir = erdos_run(folder / "copy", task=str(task_dir))
    start_on(run_dir, START)
    set_final_value(run_dir, BETWEEN)
    keys = ["v_star", "v_star_as_of", "gain", "ratio", "beats_v_star", "headroom_closed"]
    before = results.runs(folder, as_of="run")[keys]
    today_before = results.runs(folder, as_of="today")[keys]

    def add_entry(date: str) -> None:
        entry = {"value": 0.3808, "digits": 4, "holder": "a later claim", "source": "test",
                 "date": date, "status": "reported"}
        spec["v_star"]["entries"].append(entry)
        spec_file.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")

    add_entry((START + datetime.timedelta(days=1)).isoformat())
    after = results.runs(folder, as_of="run")[keys]
    pd.testing.assert_frame_equal(after, before)
    today_after = results.runs(folder, as_of="today")[keys]
    assert today_after.iloc[0]["v_star"] == 0.3808 != today_before.iloc[0]["v_star"]
    assert read_score(run_dir, "run")["ledger_hash"] != read_score(run_dir)["ledger_hash"]
    spec["v_star"]["entries"].pop()
    add_entry(START.isoformat())  # dated on the start day: it counts
    on_the_day = results.runs(folder, as_of="run").iloc[0]
    assert on_the_day["v_star"] == 0.3808 and not on_the_day["beats_v_star"]


def test_scores_recorded_before_read_as_recorded_and_as_of_their_start():
    recorded = results.build(DATA / "runs")[0].set_index("run_dir")
    aide = recorded.loc["aide"]
    score = json.loads((DATA / "runs" / "aide" / "score.json").read_text(encoding="utf-8"))
    assert "v_star_as_of" not in score and aide["v_star"] == score["v_star"]
    assert aide["v_star_as_of"] is None and math.isnan(aide["headroom_closed"])
    assert aide["gain"] == score["gain"] and aide["beats_v_star"] == score["beats_v_star"]
    at_start = read_score(DATA / "runs" / "aide", "run")
    task = get_task(score["task"])
    day = datetime.date.fromisoformat(at_start["v_star_as_of"])
    assert at_start["v_star"] == task.v_star_as_of(day).value
    assert at_start["gain"] == metrics.gain(score["score"], at_start["v_star"], "max")
    assert at_start["recorded"] == {"v_star": score["v_star"], "v_star_as_of": None,
                                    "ledger_hash": None}
    unstarted = recorded.loc["unstarted"]
    assert not unstarted["beats_v_star"] and math.isnan(unstarted["headroom_closed"])


def test_an_invalid_run_or_a_task_without_a_bound_has_no_headroom(tmp_path):
    task = get_task("circle-packing-26")
    assert task.bound is None
    row = results.build(DATA / "runs", as_of="today")[0].set_index("run_dir").loc["codeact"]
    assert row["v_star"] == task.v_star and math.isnan(row["headroom_closed"])


@pytest.mark.parametrize(
    ("as_of", "message"),
    [("yesterday", "is not a date"), ("2026-13-01", "not a real date"),
     ("1990-01-01", "no record is dated on or before 1990-01-01")],
)
def test_a_bad_as_of_is_a_clear_error(between, capsys, as_of, message):
    code, _, err = cli_score(between / "between", as_of, capsys)
    assert code == 2 and message in err and "innolab score" in err
    with pytest.raises(ScoringError, match=message):
        results.runs(between, as_of=as_of)


def test_a_scores_table_begun_before_the_new_columns_stays_aligned(tmp_path):
    # the scores.csv of a folder scored before: its header lacks the frontier's columns
    folder = tmp_path / "runs"
    first = erdos_run(folder / "first")
    table = folder / "scores.csv"
    recorded = pd.read_csv(table)
    before = recorded.drop(columns=["v_star_as_of", "ledger_hash", "headroom_closed"])
    table.write_text(before.to_csv(index=False), encoding="utf-8")
    erdos_run(folder / "second")
    both = pd.read_csv(table)
    assert both["run"].tolist() == [first.name, "second"]
    assert both["score"].tolist() == [0.5, 0.5]
    assert both["v_star_as_of"].isna().tolist() == [True, False]
    assert both.loc[1, "ledger_hash"] == get_task(ERDOS).ledger_hash


def test_a_scores_table_of_several_layouts_is_kept_aside_and_begun_again(tmp_path):
    # older code appended rows whose columns varied (an invalid run's extra reason): such a table
    # cannot be read as one; it is kept under another name and the new row starts a new table
    folder = tmp_path / "runs"
    table = folder / "scores.csv"
    folder.mkdir()
    broken = "run,agent,score\na,aide,1.0\nb,aide,,invalid: N = 0\n"
    table.write_text(broken, encoding="utf-8")
    with pytest.warns(UserWarning, match="kept as scores.unreadable-"):
        erdos_run(folder / "second")
    kept = list(folder.glob("scores.unreadable-*.csv"))
    assert len(kept) == 1 and kept[0].read_text(encoding="utf-8") == broken
    assert pd.read_csv(table)["run"].tolist() == ["second"]
