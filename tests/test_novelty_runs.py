"""N of runs that can be trusted: the producing code is recorded, every known solution counts, like
with like, an offline back end that sees through renaming, N over time, and validation from the
command line."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from innolab import runner, traces
from innolab.novelty.backends import Scorer
from innolab.novelty.registry import make_backend
from innolab.novelty.scoring import default_backend, known_code, novelty_of_code
from innolab.novelty.structure import normalise, structural_distance
from innolab.novelty.triplets import CIRCULAR_KIND, load_triplets, validate
from innolab.novelty.variants import cosmetic_variant
from innolab.rundir import RunDir
from innolab.tasks import builtin_ids, get_task
from innolab.tasks.solutions import solutions
from tests.fake_llm import SOLUTION_CODE, FakeLLM

INNOLAB = str(Path(sys.executable).parent / "innolab")


def fake_config(agent, url, **extra):
    return runner.agent_config(
        agent,
        "circle-packing-26",
        budget_s=300,
        max_steps=12,
        settings={"base_url": url, "model": "fake", "backoff_s": 0.0, "timeout_s": 2.0},
        **extra,
    )


@pytest.mark.parametrize("runtime", ["local", pytest.param("docker", marks=pytest.mark.docker)])
@pytest.mark.parametrize("agent", ["aide", "mlab", "codeact"])
def test_the_scored_submission_keeps_the_program_that_wrote_it(agent, runtime, tmp_path,
                                                               monkeypatch, request):
    monkeypatch.delenv("INNOLAB_LLM_BASE_URL", raising=False)
    docker = {"runtime": "docker", "image": request.getfixturevalue("base_image")} \
        if runtime == "docker" else {}
    with FakeLLM() as server:
        outcome = runner.start(
            fake_config(agent, server.base_url, **docker), tmp_path / "run", show_progress=False
        )
    assert json.loads((Path(outcome["run_dir"]) / "config.json").read_text())["runtime"] == runtime
    folder = RunDir(outcome["run_dir"])
    events = traces.read_events(folder.root)
    submissions = [e for e in events if e.type == "submission"]
    assert submissions and all(e.source for e in submissions)
    final = folder.final_source.read_text()
    assert final.strip() and SOLUTION_CODE.strip() in final  # the program the server returned
    score = folder.read_score()
    assert score["valid"] and score["novelty_backend"] == "ast" and score["novelty"] is not None
    assert score["candidates"] and all(c["novelty"] is not None for c in score["candidates"])
    # the stored program, re-run alone in a fresh sandbox of the task, writes the same submission
    assert score["source_status"] == "reproduces", score["source_detail"]
    assert score["novelty_status"] == "ok" and score["source_seconds"] > 0
    assert all(c["source_status"] == "reproduces" for c in score["candidates"])


def baseline_variants(task_id):
    task = get_task(task_id)
    baseline = next(s for s in solutions(task) if s.recorded.kind == "baseline")
    code = baseline.code()
    return task, code, cosmetic_variant(code, style="suffixed", reorder=True)


@pytest.mark.parametrize("task_id", builtin_ids())
@pytest.mark.parametrize("backend", ["ast", "tfidf", "embedding"])
def test_a_run_that_reproduces_a_baseline_is_not_novel(task_id, backend):
    task, copied, cosmetic = baseline_variants(task_id)
    scorer = Scorer(make_backend(backend))
    for code in (copied, cosmetic):
        result = novelty_of_code(code, True, task, scorer)
        assert result.novelty < 10, (backend, result.distances)


def test_known_solutions_are_every_solution_with_their_solver_code():
    known = known_code(get_task("circle-packing-26"))
    assert set(known) == {"baseline-grid", "ils-slsqp", "lp-hex-pattern"}
    assert "def run_ils" in known["ils-slsqp"] and "def iterated_local_search" in known["ils-slsqp"]
    assert "def iterated_local_search" not in known["baseline-grid"]


def test_structural_back_end_sees_through_cosmetic_change():
    triplets = [t for index in (0, 1) for t in load_triplets("code", cosmetic_index=index)]
    result = validate(Scorer(make_backend("ast")), triplets)
    assert result.n == 44 and result.agreement >= 0.9
    assert result.mean_closer <= 10 and result.mean_farther >= 20
    assert validate(Scorer(make_backend("ast")), load_triplets("method")).agreement == 1.0


def test_normalisation_is_canonical():
    source = (
        "def f(x, y):\n    '''doc'''\n    total = x + y  # add\n    return total * 2.5\n\nK = 'a'\n"
    )
    variant = cosmetic_variant(source, style="short", reorder=True)
    assert normalise(source) == normalise(variant)
    assert structural_distance(source, variant) == pytest.approx(0.0, abs=1e-9)
    assert structural_distance("merge sort", "binary search") is None  # prose is not code


def test_cli_distance_uses_the_offline_default(tmp_path, monkeypatch):
    monkeypatch.delenv("INNOLAB_LLM_BASE_URL", raising=False)
    assert default_backend() == "ast"
    base = load_triplets("code")[0]
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(base.base)
    b.write_text(base.closer)
    env = {k: v for k, v in __import__("os").environ.items() if k != "INNOLAB_LLM_BASE_URL"}
    done = subprocess.run(
        [INNOLAB, "novelty", "distance", str(a), str(b)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and "back end: ast" in done.stderr
    assert float(done.stdout.strip().splitlines()[-1]) < 1


def test_cli_validate_writes_the_agreement_table_with_alpha(tmp_path):
    with FakeLLM() as server:
        env = {**__import__("os").environ, "INNOLAB_LLM_BASE_URL": server.base_url}
        output = tmp_path / "validation.csv"
        done = subprocess.run(
            [
                INNOLAB,
                "novelty",
                "validate",
                "--backend",
                "ast",
                "--backend",
                "llm",
                "--models",
                "judge-a,judge-b",
                "--limit",
                "3",
                "--no-outcome",
                "--output",
                str(output),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    import pandas as pd

    table = pd.read_csv(output.parent / "normaliser_regression_circular.csv")
    ast_code = table[(table["backend"] == "ast") & (table["kind"] == CIRCULAR_KIND)].iloc[0]
    assert ast_code["n"] == 22 and ast_code["agreement"] >= 0.9 and ast_code["mean_closer"] <= 10
    judges = table[table["backend"].str.startswith("llm:")]
    assert set(judges["backend"]) == {"llm:judge-a", "llm:judge-b"}
    ensemble = table[table["backend"].str.startswith("llm ensemble")]
    assert len(ensemble) == 2 and "alpha" in table.columns


def test_n_over_time_is_cached_so_a_rescoring_makes_no_model_call(tmp_path):
    from innolab.scoring import score_run

    with FakeLLM() as server:
        settings = {"base_url": server.base_url, "model": "fake"}
        outcome = runner.start(
            fake_config("aide", server.base_url),
            tmp_path / "run",
            novelty="llm",
            show_progress=False,
        )
        folder = RunDir(outcome["run_dir"])
        first = folder.read_score()
    assert first["novelty_backend"] == "llm:fake" and first["candidates"]
    assert all(c["novelty"] is not None for c in first["candidates"])
    # score again with the endpoint gone: every card and distance comes from the caches
    folder.score.unlink()
    again = score_run(folder.root, novelty_backend="llm", settings=settings)
    assert again["novelty"] == first["novelty"]
    assert [c["novelty"] for c in again["candidates"]] == [
        c["novelty"] for c in first["candidates"]
    ]
    assert math.isfinite(again["novelty"]) and not np.isnan(again["novelty"])
    assert json.loads(folder.score.read_text())["novelty"] == first["novelty"]
