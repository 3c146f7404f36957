"""The frontier as a dated ledger: V* as of a date, the proven bounds, headroom, the CLI views."""

import datetime
import json
import math
import shutil
from decimal import Decimal, getcontext

import pytest

from innolab import paper
from innolab.tasks import PAPER_DATE, LedgerEntry, TaskError, get_task, load_task
from innolab.tasks.checks import headroom
from innolab.tasks.evaluation import evaluate
from innolab.tasks.frontier import (
    FrontierError,
    as_date,
    ledger_hash,
    parse_date,
    record_steps,
)
from tests.test_tasks import EXPECTED, GOOD_YAML, _write_task, cli

# V* as of the paper's date and as of today, read by hand from the reference's tables (tasks.md §2
# and §7), not from the ledger: the best record dated on or before each date.
AT_PAPER = {
    "circle-packing-26": 2.6359830849176076,  # AE V2 notebook, 2025-11
    "circle-packing-32": 2.9395727712063233,
    "circles-in-rectangle-21": 2.365832375910811,
    "min-max-distance-ratio-16": 12.88926611203463,  # Together AI's 12.8892299 is of 2026-03
    "heilbronn-triangle-11": 0.036529889880030156,
    "heilbronn-convex-13": 0.030936889034895654,
    "erdos-minimum-overlap": 0.38092303510845016,  # TTT-Discover is of 2026-01
    "first-autocorrelation": 1.503133,  # ThetaEvolve, 2025-11, below AE V2's 1.50316
    "second-autocorrelation": 0.9610210777840541,
    "kissing-number-11": 593,
    "job-shop-taillard-41-50": 19478,  # 19481 with ta45 optimal at 1997 (arXiv 2504.16106)
    "mnist1d": 0.988,  # the TCN of michael-beebe/mnist1d, 2024-11
    "colouring-queen15-15": 15,  # Vasquez 2006
    "colouring-queen16-16": 16,
    "colouring-queen27-27": 28,  # chi(Q28) = 28 (Vasquez 2006), restricted
}
TODAY = {
    **AT_PAPER,
    "min-max-distance-ratio-16": 12.889229907717521,
    "erdos-minimum-overlap": 0.380859,
    "first-autocorrelation": 1.502744,
    "second-autocorrelation": 0.963588,
    "kissing-number-11": 604,
    "job-shop-taillard-41-50": 19474,
}


def test_the_paper_date_is_innogym_v1():
    assert datetime.date(2025, 12, 1) == PAPER_DATE
    assert set(AT_PAPER) == EXPECTED


@pytest.mark.parametrize("task_id", sorted(EXPECTED))
def test_v_star_as_of_the_paper_and_as_of_today(task_id):
    task = get_task(task_id)
    then, now = task.v_star_as_of(PAPER_DATE), task.v_star_as_of("today")
    assert then.value == AT_PAPER[task_id] and then.as_of == PAPER_DATE
    assert then.entry.date <= PAPER_DATE and then.entry.status != "refuted"
    assert now.value == TODAY[task_id] == task.v_star and now.as_of == datetime.date.today()
    assert task.v_star_as_of(str(PAPER_DATE)).value == then.value


def test_the_paper_date_gives_the_papers_v_star_held_against_data_paper():
    """The paper's CirclePacking (26 circles) prints V* = 2.635 to three decimals.

    On 2025-12-01 the ledger's V* is the AE V2 notebook's 2.63598…; the paper printed AlphaEvolve's
    record cut to three decimals as AlphaEvolve did (2.6358… as 2.635). Both cut to 2.635; rounding
    would give 2.636, so the match holds for the paper's cut, and at three decimals only.
    """
    printed = paper.load("table2")
    circle = set(printed[printed.task == "CirclePacking"].v_star)
    task = get_task("circle-packing-26")
    assert circle == {task.spec.paper_v_star} == {2.635}
    at_paper = task.v_star_as_of(PAPER_DATE).value
    assert math.floor(at_paper * 1000) / 1000 == 2.635
    assert math.floor(task.v_star_as_of("2025-05-14").value * 1000) / 1000 == 2.635


def test_an_entry_dated_later_does_not_change_v_star_before_its_date():
    erdos = get_task("erdos-minimum-overlap")
    assert erdos.v_star_as_of("2026-07-11").value == 0.380862
    assert erdos.v_star_as_of("2026-07-12").value == 0.380859
    assert erdos.v_star_as_of("2026-06-30").value == 0.3808703105862199
    # a month-only date counts from the month's first day
    assert erdos.v_star_as_of("2026-02-28").value == 0.3808753232177187
    assert erdos.v_star_as_of("2025-12-31").value == 0.38092303510845016
    with pytest.raises(TaskError, match="no record is dated on or before 2015-01-01"):
        erdos.v_star_as_of("2015")
    with pytest.raises(TaskError, match=r"'as_of'.*not a date"):
        erdos.v_star_as_of("last July")


def test_refuted_entries_never_hold_v_star_and_ties_go_to_the_earliest():
    rect = get_task("circles-in-rectangle-21")
    refuted = [e for e in rect.ledger if e.status == "refuted"]
    assert refuted and refuted[0].value > rect.v_star
    assert rect.v_star_as_of("2026-08-03").value == 2.365832375910811
    circles = get_task("circle-packing-26")
    assert circles.v_star_as_of("2025-10-01").value == 2.63591551  # ShinkaEvolve's is refuted
    tied = [e for e in circles.ledger if e.value == 2.635983]
    assert len(tied) == 2 and circles.v_star_as_of("today").entry.holder.startswith("AlphaEvolve")


def test_dates_are_read_to_their_precision():
    assert parse_date("2026-07-12") == (datetime.date(2026, 7, 12), "day")
    assert parse_date("2025-11") == (datetime.date(2025, 11, 1), "month")
    assert parse_date(2016) == (datetime.date(2016, 1, 1), "year")
    assert as_date("2026-08-12T09:30:00+00:00") == datetime.date(2026, 8, 12)
    for bad in ("2025-13", "25-11", "July 2026", "2026-02-30", True):
        with pytest.raises(FrontierError, match="'date'"):
            parse_date(bad)
    entry = get_task("kissing-number-11").ledger[0]
    assert entry.date_text == "2022" and entry.date_precision == "year"


def test_digits_give_the_tie_margin():
    erdos = get_task("erdos-minimum-overlap")
    held = erdos.v_star_as_of("today").entry
    assert held.digits == 6 and held.tie_margin == pytest.approx(5e-7)
    assert erdos.tie_margin() == pytest.approx(5e-7 + 1e-9 * 0.380859)
    assert erdos.tie_margin(PAPER_DATE) == pytest.approx(1e-9 * 0.38092303510845016, rel=1e-6)
    assert get_task("kissing-number-11").tie_margin() == pytest.approx(0.5 + 1e-9 * 604)
    for task_id in EXPECTED:
        for entry in get_task(task_id).ledger:
            assert entry.digits is not None and round(entry.value, entry.digits) == entry.value


def test_the_ledger_hash_is_canonical():
    task = get_task("second-autocorrelation")
    digest = task.ledger_hash
    assert len(digest) == 12 and int(digest, 16) >= 0
    assert ledger_hash(list(reversed(task.ledger))) == digest
    changed = [task.ledger[0].model_copy(update={"value": 0.88923}), *task.ledger[1:]]
    assert ledger_hash(changed) != digest
    assert len({get_task(t).ledger_hash for t in EXPECTED}) == len(EXPECTED)


def test_bounds_and_headroom_closed():
    erdos = get_task("erdos-minimum-overlap")
    assert erdos.bound.kind == "lower_bound" and erdos.bound.value == 0.379005
    assert erdos.headroom_closed(0.380859) == 0.0
    assert erdos.headroom_closed(0.379005) == 1.0
    assert erdos.headroom_closed(0.381) < 0
    kissing = get_task("kissing-number-11")
    assert kissing.bound.kind == "upper_bound" and kissing.bound.value == 869
    assert kissing.headroom_closed(593) == pytest.approx((593 - 604) / (869 - 604))
    job = get_task("job-shop-taillard-41-50")
    assert job.bound.value == 19103 and job.headroom_closed((19474 + 19103) / 2) == 0.5
    assert job.bound_as_of(PAPER_DATE).value == 18984
    assert math.isnan(get_task("circle-packing-26").headroom_closed(2.6))
    assert get_task("second-autocorrelation").bound is None  # C2 <= 1 is trivial: a note only


def test_job_shop_v_star_and_bound_are_sums_and_ta45_has_no_headroom():
    job = get_task("job-shop-taillard-41-50")
    now, bound = job.v_star_as_of("today"), job.bound
    assert sum(now.entry.parts.values()) == now.value == 19474
    assert sum(bound.parts.values()) == bound.value == 19103
    assert now.entry.parts["ta45"] == bound.parts["ta45"] == 1997
    assert job.no_headroom() == ["ta45"] and job.no_headroom(PAPER_DATE) == ["ta45"]
    assert get_task("erdos-minimum-overlap").no_headroom() == []
    result = headroom(job)
    assert result.passed and "no headroom on ta45" in result.detail and "sums" in result.detail


def test_a_task_with_no_headroom_fails_its_check(tmp_path):
    text = GOOD_YAML.replace(
        "status: reported}]}",
        "status: reported}, {kind: upper_bound, value: 1.0, holder: proof, source: a paper, "
        "date: 2020, status: reported}]}",
    )
    task = load_task(_write_task(tmp_path, text))
    assert task.no_headroom() == ["my-task"] and math.isnan(task.headroom_closed(0.9))
    result = headroom(task)
    assert not result.passed and "no headroom" in result.detail


def test_record_steps_are_the_record_over_time():
    steps = record_steps(get_task("erdos-minimum-overlap").ledger, "min")
    assert [s.value for s in steps] == [
        0.380927, 0.38092303510845016, 0.3808753232177187, 0.3808703105862199, 0.380867,
        0.380862, 0.380859,
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("date: 2025-03-04", "date: 2999-01-01"), r"entries\.0\.date.*future"),
        (("date: 2025-03-04", "date: March 2025"), r"entries\.0.*not a date"),
        (("value: 1.0, holder", "value: 1.25, digits: 1, holder"), "more decimals than its digits"),
        (("status: reported}]", "status: reported, kind: lower_bound}, "
          "{value: 0.5, holder: x, source: y, date: 2020, status: reported}]"),
         r"entries\.0\.kind.*near side"),
        (("status: reported}]", "status: reported}, {kind: upper_bound, value: 0.9, holder: x, "
          "source: y, date: 2020, status: reported}]"), r"entries\.0\.value.*beyond the proven"),
        (("status: reported}]", "status: refuted}]"), "at least one record that is not refuted"),
        (("holder: me,", "holder: me, parts: {a: 0.5, b: 0.25},"), "parts sum to 0.75"),
        (("holder: me,", "who: you, holder: me,"), "'who' .* and 'holder' both"),
    ],
)
def test_a_broken_ledger_names_the_field_and_the_rule(tmp_path, change, message):
    folder = _write_task(tmp_path, GOOD_YAML.replace(*change))
    with pytest.raises(TaskError, match=message):
        load_task(folder)


def test_the_old_form_still_loads_or_names_the_field(tmp_path):
    old = GOOD_YAML.replace("holder: me, source: here, date: 2025-03-04",
                            "who: me, year: 2024, source: here")
    task = load_task(_write_task(tmp_path, old))
    entry = task.ledger[0]
    assert (entry.holder, entry.date, entry.date_precision) == ("me", datetime.date(2024, 1, 1),
                                                                "year")
    undated = GOOD_YAML.replace("holder: me, source: here, date: 2025-03-04",
                                "who: me, source: here")
    with pytest.raises(TaskError, match=r"field 'v_star'.*entries\.0\.date: required"):
        load_task(_write_task(tmp_path, undated))
    bounds = GOOD_YAML + "bounds: {upper: 2.0, note: trivial}\n"
    with pytest.raises(TaskError, match=r"bounds\.upper: a proven bound is a ledger entry now"):
        load_task(_write_task(tmp_path, bounds))


def test_a_ledger_entry_round_trips_through_json():
    for entry in get_task("job-shop-taillard-41-50").ledger:
        again = LedgerEntry.model_validate(entry.as_json())
        assert again == entry


def test_cli_show_names_the_bound_and_ta45():
    shown = cli("tasks", "show", "job-shop-taillard-41-50")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "proven bound beyond V*: B = 19103.0 (lower_bound" in out
    assert "V* and B are sums over 10 instances" in out
    ta45 = next(line for line in out.splitlines() if line.strip().startswith("ta45"))
    assert "NO HEADROOM" in ta45 and "no headroom on: ta45" in out
    assert f"as of the paper's date ({PAPER_DATE}): 19478.0" in out
    erdos = cli("tasks", "show", "erdos-minimum-overlap").stdout
    assert "B = 0.379005 (lower_bound" in erdos and "2026-07-12 record" in erdos


def test_cli_frontier_prints_the_dated_ledger(tmp_path):
    task = get_task("second-autocorrelation")
    done = cli("tasks", "frontier", task.id, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["ledger_hash"] == task.ledger_hash and data["v_star"] == 0.963588
    assert data["v_star_paper"] == 0.9610210777840541 and data["bound"] is None
    assert len(data["entries"]) == len(task.ledger)
    setting = [e["value"] for e in data["entries"] if e["sets_v_star"]]
    assert setting == [s.value for s in record_steps(task.ledger, "max")]
    assert [e["date"] for e in data["entries"]][-1] == "2026-07-22"
    text = cli("tasks", "frontier", "kissing-number-11").stdout
    assert "2026-06-09 record" in text and "B = 869.0 (upper_bound" in text
    missing = cli("tasks", "frontier", "no-such-task")
    assert missing.returncode != 0


def test_every_builtin_ledger_cites_a_source_and_a_date():
    for task_id in EXPECTED:
        for entry in get_task(task_id).ledger:
            assert entry.source.strip() and entry.holder.strip()
            assert entry.date <= datetime.date.today()



def test_cli_check_names_ta45_as_having_no_headroom():
    done = cli("tasks", "check", "job-shop-taillard-41-50")
    line = next(x for x in done.stdout.splitlines() if "headroom left" in x)
    assert line.startswith("ok   job-shop-taillard-41-50") and "no headroom on ta45" in line
    assert "V* and the bound are sums over the instances" in line


# ------------------------------------------------------------ the ledger says what innolab checks

HEILBRONN_VIOLATION = "points[8] lies outside the triangle (left of the side y = √3·x by 9.24e-18)"


def _copy_task(tmp_path, task_id):
    copy = tmp_path / task_id
    shutil.copytree(get_task(task_id).root, copy)
    return copy


def _edit_yaml(folder, *pairs):
    spec = folder / "task.yaml"
    text = spec.read_text(encoding="utf-8")
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    spec.write_text(text, encoding="utf-8")


def test_heilbronn_triangle_ledger_states_the_violation_innolab_measures():
    """AlphaEvolve's published 11 points: point 8 lies 9.24e-18 beyond the side y = √3·x.

    The distance is recomputed here in 50-digit decimals from the file's float64 values, apart from
    the evaluator: (y − √3·x) / 2.
    """
    task = get_task("heilbronn-triangle-11")
    entry = next(e for e in task.ledger if e.holder == "AlphaEvolve")
    assert entry.status == "reported" and HEILBRONN_VIOLATION in entry.note
    assert entry.value == task.v_star == 0.036529889880030156  # V* stays the best published
    assert task.spec.v_star_reproduced is None  # no construction innolab accepts
    file = task.construction_file(entry)
    x, y = json.loads(file.read_text())["points"][8]
    getcontext().prec = 50
    assert f"{float((Decimal(y) - Decimal(3).sqrt() * Decimal(x)) / 2):.3g}" == "9.24e-18"
    verdict = evaluate(task, file)
    assert not verdict.valid and verdict.errors == [f"containment: 1 violation(s): "
                                                    f"{HEILBRONN_VIOLATION}"]


def test_a_verified_entry_names_a_construction_of_a_record_inside_the_task():
    base = {"value": 1.0, "holder": "h", "source": "s", "date": "2025-01"}
    with pytest.raises(ValueError, match="'construction': required with status 'verified'"):
        LedgerEntry(**base, status="verified")
    assert LedgerEntry(**base, status="verified", construction="constructions/c.json").construction
    for path in ("../c.json", "/tmp/c.json", "constructions\\c.json", ""):
        with pytest.raises(ValueError, match="relative path inside the task's folder"):
            LedgerEntry(**base, status="reported", construction=path)
    with pytest.raises(ValueError, match="only a record names a construction"):
        LedgerEntry(**base, status="reported", kind="upper_bound", construction="c.json")


def test_a_construction_that_is_not_a_file_in_the_task_is_refused_on_load(tmp_path):
    copy = _copy_task(tmp_path, "heilbronn-triangle-11")
    _edit_yaml(copy, ("constructions/alphaevolve.json", "constructions/missing.json"))
    with pytest.raises(TaskError, match=r"field 'v_star.entries.1.construction': "
                                        r"'constructions/missing.json' is not a regular file"):
        load_task(copy)


def test_tasks_check_fails_a_verified_entry_whose_construction_innolab_rejects(tmp_path):
    copy = _copy_task(tmp_path, "heilbronn-triangle-11")
    _edit_yaml(copy, ("status: reported, construction: constructions/alphaevolve.json",
                      "status: verified, construction: constructions/alphaevolve.json"),
               ("default_budget_s:", "v_star_reproduced: 0.036529889880030156\ndefault_budget_s:"))
    assert load_task(copy).spec.v_star_reproduced == 0.036529889880030156  # loads: the rule is
    for args in (("--ledger",), ()):  # tasks check's, by running the evaluator
        done = cli("tasks", "check", str(copy), *args)
        assert done.returncode == 1, done.stdout
        failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
        assert failed[0].startswith(
            "FAIL heilbronn-triangle-11: ledger entries.1 (AlphaEvolve, 0.036529889880030156, "
            "verified): construction constructions/alphaevolve.json — innolab's exact check "
            f"rejects it: {HEILBRONN_VIOLATION}; mark the entry 'reported'")
        assert failed[1].startswith("FAIL heilbronn-triangle-11: v_star_reproduced is the best "
                                    "value of a construction innolab accepts — v_star_reproduced "
                                    "0.036529889880030156; best accepted construction None")
        assert len(failed) == 2


def test_tasks_check_fails_a_note_that_does_not_state_the_measured_violation(tmp_path):
    copy = _copy_task(tmp_path, "circle-packing-32")
    _edit_yaml(copy, ("circles[5] crosses the top wall by 1.39e-17; ", ""))
    done = cli("tasks", "check", str(copy), "--ledger")
    assert done.returncode == 1
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and failed[0].endswith(
        "rejected, as its status says, but the note does not state the measured violation(s): "
        "circles[5] crosses the top wall by 1.39e-17")


def test_tasks_check_fails_an_accepted_construction_left_unverified(tmp_path):
    copy = _copy_task(tmp_path, "circle-packing-26")
    _edit_yaml(copy, ("status: verified, construction: constructions/alphaevolve-v1.json",
                      "status: reported, construction: constructions/alphaevolve-v1.json"),
               ("v_star_reproduced: 2.6358627564136983\n", ""))
    done = cli("tasks", "check", str(copy), "--ledger")
    assert done.returncode == 1
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 2
    assert failed[0].endswith("score 2.6358627564136983; an accepted construction at the "
                              "published value makes the entry 'verified'")
    assert "v_star_reproduced None; best accepted construction 2.6358627564136983" in failed[1]


def test_tasks_check_all_holds_every_builtin_ledger_to_innolabs_checks():
    done = cli("tasks", "check", "--all", "--ledger")
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert lines[-1] == "all checks passed"
    checked = [line for line in lines if ": ledger entries." in line]
    # every verified entry names a construction, and every construction is re-checked
    held = [(t, e) for t in EXPECTED for e in get_task(t).ledger if e.construction]
    assert len(checked) == len(held) == 12
    assert all(e.construction for t in EXPECTED for e in get_task(t).ledger
               if e.status == "verified")
    rejected = {line.split(":")[0].removeprefix("ok   ") for line in checked if "rejected" in line}
    assert rejected == {"circle-packing-26", "circle-packing-32", "heilbronn-triangle-11"}
    assert sum(line.startswith("ok   ") and "v_star_reproduced is" in line
               for line in lines) == len(EXPECTED)
