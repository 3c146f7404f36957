"""Novelty: cosmetic variants, distance back ends, N and Div(T), ensembles, triplet validation, CLI,
scoring runs."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from innolab.novelty.backends import (
    EmbeddingBackend,
    LLMJudge,
    NoveltyError,
    Scorer,
    TfidfBackend,
    cosine_to_distance,
)
from innolab.novelty.cards import MethodCard
from innolab.novelty.scoring import diversity, ensemble, novelty
from innolab.novelty.structure import StructuralBackend
from innolab.novelty.triplets import load_triplets, validate, validation_table
from innolab.novelty.variants import cosmetic_variant
from innolab.paths import data_dir
from innolab.tasks import get_task
from tests.fake_llm import FakeLLM

INNOLAB = str(Path(sys.executable).parent / "innolab")
TRIPLETS = json.loads((data_dir() / "triplets" / "code_triplets.json").read_text())["triplets"]


def _run(source, function, args):
    namespace = {}
    exec(source, namespace)
    return namespace[function](*json.loads(json.dumps(args)))


@pytest.mark.parametrize("triplet", TRIPLETS, ids=[t["problem"] for t in TRIPLETS])
def test_every_variant_computes_what_the_base_computes(triplet):
    assert len(TRIPLETS) >= 20
    for args in triplet["inputs"]:
        expected = _run(triplet["base"], triplet["function"], args)
        for variant in [*triplet["cosmetic"], triplet["algorithmic"]]:
            assert _run(variant, triplet["function"], args) == expected


def test_cosmetic_variant_renames_and_keeps_the_interface():
    source = (
        "def area(width, height):\n    '''doc'''\n    result = width * height  # comment\n"
        "    return result\n"
    )
    variant = cosmetic_variant(source)
    assert "width" not in variant and "doc" not in variant and "comment" not in variant
    assert _run(variant, "area", [3, 4]) == 12


def test_method_triplets_exist():
    assert len(load_triplets("method")) >= 5


def test_tfidf_distance_bounds():
    backend = TfidfBackend()
    assert backend.distance("same text here", "same text here") == pytest.approx(0, abs=1e-9)
    assert 0 < backend.distance("merge sort", "a hash map of complements") <= 100
    with pytest.raises(NoveltyError, match="non-empty"):
        backend.distance("", "x")


def test_embedding_distance_orders_paraphrase_before_unrelated():
    backend = EmbeddingBackend()
    base = "Sort the list by repeatedly merging sorted halves."
    paraphrase = "Merge sort: split the list, sort each half, merge them."
    unrelated = "Forecast sales with a seasonal autoregressive model."
    assert backend.distance(base, paraphrase) < backend.distance(base, unrelated)
    assert cosine_to_distance(1.0) == 0 and cosine_to_distance(0.0) == 100


def test_llm_judge_follows_the_dagent_formula(tmp_path):
    with FakeLLM() as server:
        judge = LLMJudge(
            {"base_url": server.base_url, "model": "fake"}, cache_path=str(tmp_path / "c.sqlite")
        )
        verdict = judge.judge("method one", "method two")
        assert verdict["scores"] == [2] * 6 and verdict["distance"] == pytest.approx(2 / 4 * 100)
        assert judge.distance("same", "same") == 0.0


def test_novelty_and_diversity_of_a_task(tmp_path):
    task = get_task("circle-packing-26")
    with (
        FakeLLM() as server
    ):  # like with like: the same extractor makes the run's card and the known ones
        settings = {"base_url": server.base_url, "model": "fake"}
        scorer = Scorer(TfidfBackend(), tmp_path / "d.sqlite")
        card = MethodCard("Place equal circles on a grid.", "for each cell: put a circle")
        result = novelty(card, True, task, scorer, settings, str(tmp_path / "llm.sqlite"))
    assert set(result.distances) == {
        "baseline-grid",
        "ils-slsqp",
        "lp-hex-pattern",
    }  # baselines are known too
    assert result.novelty == min(result.distances.values()) and 0 <= result.novelty <= 100
    assert novelty(card, False, task, scorer, settings, str(tmp_path / "llm.sqlite")).novelty == 0
    div = diversity(task, Scorer(StructuralBackend()))
    assert div.pairs == 3 and 0 < div.value <= 100


def test_cached_rerun_makes_no_model_call(tmp_path):
    with FakeLLM() as server:
        settings = {"base_url": server.base_url, "model": "fake"}
        first = validation_table(["llm", "tfidf"], tmp_path, llm_limit=3, llm_settings=settings)
        requests = len(server.requests)
        second = validation_table(["llm", "tfidf"], tmp_path, llm_limit=3, llm_settings=settings)
    assert first["model_calls"].sum() == requests == 12  # 3 triplets x 2 pairs x 2 kinds
    assert second["model_calls"].sum() == 0 and second["pairs_computed"].sum() == 0
    assert first[["mean_closer", "mean_farther", "agreement"]].equals(
        second[["mean_closer", "mean_farther", "agreement"]]
    )


def test_validation_reports_agreement_and_ensemble_alpha(tmp_path):
    triplets = load_triplets("method")
    tfidf = validate(Scorer(TfidfBackend()), triplets)
    assert tfidf.n == len(triplets) and 0 <= tfidf.agreement <= 1 and tfidf.failed == 0
    pairs = [(t.base, t.closer) for t in triplets] + [(t.base, t.farther) for t in triplets]
    result = ensemble([Scorer(TfidfBackend()), Scorer(EmbeddingBackend())], pairs)
    assert len(result.mean) == len(pairs) and result.alpha is not None and -1 <= result.alpha <= 1


def test_cli_distance(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("merge sort on a list")
    b.write_text("binary search on a sorted list")
    done = subprocess.run(
        [INNOLAB, "novelty", "distance", "--backend", "tfidf", str(a), str(b)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and 0 < float(done.stdout) <= 100


def test_run_is_scored_once_with_n_in_its_trace_and_table(tmp_path):
    from innolab import runner, traces
    from innolab.rundir import RunDir
    from innolab.scoring import score_run

    with FakeLLM() as server:
        settings = {"base_url": server.base_url, "model": "fake"}
        config = runner.agent_config(
            "codeact", "circle-packing-26", budget_s=120, max_steps=6, settings=settings
        )
        outcome = runner.start(
            config, tmp_path / "runs" / "r1", novelty="tfidf", show_progress=False
        )
        run_dir = RunDir(outcome["run_dir"])
        again = score_run(run_dir.root, novelty_backend="embedding")
    row = run_dir.read_score()
    assert (
        row["valid"]
        and 0 < row["novelty"] <= 100
        and math.isclose(row["score"], 26 / 12, rel_tol=1e-9)
    )
    assert (
        row["novelty_backend"] == "tfidf"
        and again["already_scored"]
        and again["novelty"] == row["novelty"]
    )
    scores = [e for e in traces.read_events(run_dir.root) if e.type == "score"]
    assert len(scores) == 1 and scores[0].novelty == row["novelty"]
    table = run_dir.scores_table.read_text().splitlines()
    assert len(table) == 2 and "novelty" in table[0]
