"""The hand-written triplet set: manifest, programs, outputs, per-family agreement, the CLI."""

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from innolab import pyparse
from innolab.novelty.triplets import CIRCULAR_KIND
from innolab.novelty.validation import (
    FAMILIES,
    TripletSetError,
    agreement,
    agreement_table,
    distance_table,
    load_code_triplets,
    load_manifest,
    markdown_report,
    outcome_distances,
    run_program,
    triplet_folder,
)
from innolab.tasks.evaluation import evaluate
from innolab.tasks.registry import get_task

INNOLAB = str(Path(sys.executable).parent / "innolab")
TRIPLETS = load_code_triplets()


def test_manifest_is_well_formed():
    assert len(TRIPLETS) >= 30
    tasks = {t.task for t in TRIPLETS}
    assert len(tasks) >= 5
    for task in tasks:
        assert get_task(task).id == task  # every task is a built-in task
    assert {t.family for t in TRIPLETS} == set(FAMILIES)  # every family labelled and used
    assert len({t.id for t in TRIPLETS}) == len(TRIPLETS)
    manifest = load_manifest()
    for t in TRIPLETS:
        assert t.change.strip()
        assert t.anchor.split("/")[0] == t.near.split("/")[0] == t.far.split("/")[0] == t.task
        assert manifest["methods"][t.anchor] != manifest["methods"][t.far]  # a different method
    for family in FAMILIES:
        assert len({t.task for t in TRIPLETS if t.family == family}) >= 5  # spread over tasks


def test_every_program_parses_and_writes_a_submission():
    files = {t.path(role) for t in TRIPLETS for role in ("anchor", "near", "far")}
    assert len(files) >= 40
    for path in files:
        source = path.read_text()
        pyparse.parse(source)
        assert "submission.json" in source, path
        assert "v0" not in source.split()  # nothing here renames the normaliser's way


def _triplet(triplet_id):
    return next(t for t in TRIPLETS if t.id == triplet_id)


@pytest.mark.parametrize("task", sorted({t.task for t in TRIPLETS}))
def test_anchor_programs_run_and_write_a_valid_submission(task, tmp_path):
    triplet = next(t for t in TRIPLETS if t.task == task)
    output = run_program(task, triplet.path("anchor"), tmp_path, timeout_s=60)
    assert output.error == "" and output.submission is not None and not output.cached
    verdict = evaluate(get_task(task), output.submission)
    assert verdict.valid, verdict.errors
    again = run_program(task, triplet.path("anchor"), tmp_path, timeout_s=60)
    assert again.cached and again.submission == output.submission


def test_near_writes_the_anchors_submission_and_far_a_valid_other_one(tmp_path):
    triplet = _triplet("job-shop-taillard-41-50/rename")
    runs = {role: run_program(triplet.task, triplet.path(role), tmp_path, timeout_s=60)
            for role in ("anchor", "near", "far")}
    anchor, near, far = (runs[r].submission.read_bytes() for r in ("anchor", "near", "far"))
    assert near == anchor and far != anchor
    assert evaluate(get_task(triplet.task), runs["far"].submission).valid


def test_a_failing_program_reports_why(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit('no idea')\n")
    silent = tmp_path / "silent.py"
    silent.write_text("print('nothing written')\n")
    failed = run_program("kissing-number-11", broken, tmp_path / "cache")
    assert failed.submission is None and "exit status 1" in failed.error
    empty = run_program("kissing-number-11", silent, tmp_path / "cache")
    assert empty.submission is None and "no submission.json" in empty.error


def test_validate_reports_agreement_per_family_and_back_end(tmp_path):
    distances = distance_table(["ast", "tfidf"], tmp_path, axes=("method",))
    assert len(distances) == 2 * len(TRIPLETS) and distances["d_near"].notna().all()
    table = agreement(distances)
    assert set(table["backend"]) == {"ast", "tfidf"} and set(table["axis"]) == {"method"}
    for backend in ("ast", "tfidf"):
        rows = table[table["backend"] == backend].set_index("family")
        assert list(rows.index) == [*FAMILIES, "all"]
        assert rows.loc["all", "n"] == len(TRIPLETS) == rows.loc[list(FAMILIES), "n"].sum()
        assert (rows["scored"] == rows["n"]).all()
        assert rows["agreement"].between(0, 1).all()
        assert (rows["mean_near"] < rows["mean_far"]).loc["all"]
    # the ast back end sees through unused code (dead-code removal) and renames
    ast_rows = table[table["backend"] == "ast"].set_index("family")
    assert ast_rows.loc["unused_code", "agreement"] == 1.0
    assert ast_rows.loc["rename", "mean_near"] < 2.0


def test_outcome_axis_runs_the_programs(tmp_path):
    chosen = [_triplet("job-shop-taillard-41-50/rename"), _triplet("kissing-number-11/rename")]
    rows, outputs = outcome_distances(chosen, tmp_path, timeout_s=60)
    assert [row["triplet"] for row in rows] == [t.id for t in chosen]
    assert all(row["d_near"] < 1 < row["d_far"] and row["note"] == "" for row in rows)
    by_family = agreement(pd.DataFrame(rows)).set_index("family").to_dict("index")
    assert set(by_family) == {"rename", "all"}
    assert by_family["all"]["scored"] == 2 and by_family["all"]["agreement"] == 1.0
    assert by_family["all"]["mean_near"] < 1 < by_family["all"]["mean_far"]
    assert len(outputs) == 6 and all(o.submission is not None for o in outputs.values())


def _copy_set(tmp_path):
    folder = tmp_path / "set"
    shutil.copytree(triplet_folder(), folder)
    return folder, json.loads((folder / "manifest.json").read_text())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m["triplets"][0].update(family="cosmetic"), "triplets[0].family"),
        (lambda m: m["triplets"][1].update(near="nowhere/missing.py"), "triplets[1].near"),
        (lambda m: m["triplets"][2].update(far="../manifest.json"), "triplets[2].far"),
        (lambda m: m["triplets"][3].pop("change"), "triplets[3].change"),
        (lambda m: m["triplets"][4].update(id=m["triplets"][0]["id"]), "triplets[4].id"),
        (lambda m: m["families"].pop("rename"), "families"),
    ],
)
def test_a_bad_manifest_names_the_field_and_rule(tmp_path, change, message):
    folder, manifest = _copy_set(tmp_path)
    change(manifest)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(TripletSetError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_code_triplets(folder)


def test_markdown_report_keeps_the_circular_check_apart(tmp_path):
    chosen = [t for t in TRIPLETS if t.task == "kissing-number-11"]
    table = agreement_table(["ast"], tmp_path, axes=("method",), triplets=chosen)
    regression = pd.DataFrame([{"backend": "ast", "kind": CIRCULAR_KIND, "n": 22,
                                "mean_closer": 0.0, "mean_farther": 33.5, "agreement": 1.0}])
    distances = pd.DataFrame([{"axis": "method", "backend": "ast", "triplet": "x/rename",
                               "d_near": 5.0, "d_far": 4.0}])
    text = markdown_report(table, regression, ["llm judge: not run"], distances)
    assert "ast (method) orders wrongly (near vs far): x/rename (5.0 vs 4.0)" in text
    assert "| rename | 1 |" in text and "ast (method)" in text
    assert "circular" in text.split("## Normaliser regression check")[1]
    assert "llm judge: not run" in text
    assert not math.isnan(table.set_index(["backend", "family"]).loc[("ast", "all"), "agreement"])


def test_cli_validate_writes_the_table_and_report(tmp_path):
    output = tmp_path / "novelty" / "triplet_validation.csv"
    done = subprocess.run(
        [INNOLAB, "novelty", "validate", "--backend", "ast", "--no-outcome", "--no-regression",
         "--output", str(output)], capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    table = pd.read_csv(output)
    assert set(table["family"]) == {*FAMILIES, "all"}
    report = output.with_suffix(".md").read_text()
    assert "extract_inline" in report and "llm judge" in report
    assert done.stdout.strip().splitlines()[-1] == str(output)


def test_the_llm_judge_is_validated_through_a_configured_endpoint(tmp_path):
    from tests.fake_llm import FakeLLM

    chosen = TRIPLETS[:2]
    with FakeLLM() as server:
        settings = {"base_url": server.base_url, "model": "fake"}
        distances = distance_table(["llm"], tmp_path, axes=("method",), triplets=chosen,
                                   llm_settings=settings)
        calls = len(server.requests)
    pairs = {(t.anchor, getattr(t, role)) for t in chosen for role in ("near", "far")}
    assert calls == len(pairs) == 3  # one judge call per distinct pair (the far is shared)
    assert set(distances["backend"]) == {"llm:fake"}
    assert distances[["d_near", "d_far"]].apply(lambda c: c.between(0, 100)).all().all()
