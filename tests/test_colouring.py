"""Graph colouring (iBench's own task family): the queen graphs generated exactly, the strict check,
the outcome distance up to colour permutation, the ledgers of the three instances."""

import json
import shutil

import numpy as np
import pytest

from innolab.novelty.outcome import outcome_distance, outcome_novelty
from innolab.tasks import get_task, taskkit
from innolab.tasks.checks import fuzz
from innolab.tasks.evaluation import evaluate
from innolab.tasks.taskkit.colouring import queen_edge_count, queen_edges

TASKS = ("colouring-queen15-15", "colouring-queen16-16", "colouring-queen27-27")


@pytest.mark.parametrize("n", range(1, 31))
def test_queen_graphs_have_n_n_minus_1_5n_minus_1_over_3_edges(n):
    edges = queen_edges(n)
    assert len(edges) == n * (n - 1) * (5 * n - 1) // 3 == queen_edge_count(n)
    assert len({tuple(e) for e in edges.tolist()}) == len(edges)
    assert (edges[:, 0] < edges[:, 1]).all()


def test_the_dimacs_files_list_each_edge_twice():
    # DIMACS queen15_15.col: "p edge 225 10360"; queen16_16.col: "p edge 256 12640"
    assert 2 * len(queen_edges(15)) == 10360 and 2 * len(queen_edges(16)) == 12640


def brute_force_edges(n):
    return {(u, v) for u in range(n * n) for v in range(u + 1, n * n)
            if (u // n == v // n or u % n == v % n
                or abs(u // n - v // n) == abs(u % n - v % n))}


@pytest.mark.parametrize("n", [2, 5, 8])
def test_generated_edges_are_the_queen_moves(n):
    assert {tuple(e) for e in queen_edges(n).tolist()} == brute_force_edges(n)


def polya(n):
    """Pólya's n-colouring of Q_n for n coprime to 6: colour (r, c) -> (c + 2r) mod n."""
    return [(c + 2 * r) % n for r in range(n) for c in range(n)]


def check(n, data):
    return taskkit.check("colouring:graph_colouring", {"graph": {"kind": "queen", "n": n}},
                         json.loads(json.dumps(data)))


def test_a_proper_colouring_scores_its_number_of_colours_and_an_improper_one_is_refused():
    assert check(7, {"colours": polya(7), "num_colours": 7}) == ([], 7.0)
    bad = polya(7)
    bad[1] = bad[0]  # squares 0 and 1 share row 0
    errors, score = check(7, {"colours": bad, "num_colours": len(set(bad))})
    assert score is None and "vertices 0 and 1 are adjacent and share colour" in errors[0]


def test_a_colour_count_the_file_misstates_is_refused():
    errors, score = check(7, {"colours": polya(7), "num_colours": 6})
    assert score is None and errors == ["num_colours states 6, but the colouring uses 7 colours"]


def test_every_hostile_input_is_rejected_and_no_mutation_crashes():
    for task in TASKS:
        results = fuzz(get_task(task), mutations=20)
        assert all(r.passed for r in results), [r.detail for r in results]


@pytest.mark.parametrize("task", TASKS)
def test_the_known_solutions_score_as_recorded_and_the_ledger_holds(task):
    found = get_task(task)
    n = found.spec.problem.params["graph"]["n"]
    assert found.direction == "min" and found.family.name == "colouring"
    for name in found.solution_names():
        recorded = json.loads((found.solutions_dir / name / "score.json").read_text())
        verdict = evaluate(found, found.solutions_dir / name / "solution.json")
        assert verdict.valid and verdict.score == recorded["score"] >= n
        assert not verdict.beats_v_star  # none of them reaches V*
    assert found.v_star == (28 if n == 27 else n)
    if n == 27:
        assert found.bound.value == 27 and found.headroom_closed(27) == 1.0


def test_a_relabelled_known_colouring_is_at_outcome_distance_zero_and_rederived(tmp_path):
    task = get_task("colouring-queen15-15")
    known = json.loads((task.solutions_dir / "dsatur" / "solution.json").read_text())
    rng = np.random.default_rng(0)
    relabel = rng.permutation(225)
    moved = {"colours": [int(relabel[c]) for c in known["colours"]],
             "num_colours": known["num_colours"]}
    assert moved != known and check(15, moved)[0] == []
    assert outcome_distance(task, known, moved) == 0
    file = tmp_path / "relabelled.json"
    file.write_text(json.dumps(moved))
    result = outcome_novelty(task, file, valid=True)
    assert result.novelty_out < 1 and result.rederived_known == "dsatur"
    other = json.loads((task.solutions_dir / "tabu-search" / "solution.json").read_text())
    assert outcome_distance(task, known, other) > 10  # another method's colouring lies apart


def test_a_27_colouring_would_beat_v_star_and_the_evaluator_checks_it_two_ways(tmp_path):
    task = get_task("colouring-queen27-27")
    # Pólya's colouring of Q29 restricted to 27 x 27: a proper 29-colouring of Q27
    restricted = [(c + 2 * r) % 29 for r in range(27) for c in range(27)]
    file = tmp_path / "q27.json"
    file.write_text(json.dumps({"colours": restricted, "num_colours": len(set(restricted))}))
    verdict = evaluate(task, file)
    assert verdict.valid and verdict.score == 29 and verdict.gain == -1 and not verdict.beats_v_star
    assert 0.5 <= task.tie_margin() < 1  # a whole colour fewer than V* is a record, not a tie


def test_a_colouring_the_two_queen_rules_judge_differently_is_refused(monkeypatch):
    from innolab.tasks.taskkit import colouring

    n = 7
    full = queen_edges(n)
    u, v = (int(x) for x in full[0])  # squares 0 and 1: the same row
    dropped = full[1:]
    # one colour per square, but the dropped edge's two ends share one: proper on the damaged
    # edge list, two queens of one colour on a row by the line rule
    colours = [u if w == v else w for w in range(n * n)]
    monkeypatch.setattr(colouring, "queen_edges", lambda side: dropped if side == n else full)
    errors, score = check(n, {"colours": colours, "num_colours": len(set(colours))})
    assert score is None and f"generated {len(dropped)} edges for queen7_7, expected {len(full)}" \
        in errors[0]  # first the generator against the closed form
    monkeypatch.setattr(colouring, "queen_edge_count", lambda side: len(dropped))
    errors, score = check(n, {"colours": colours, "num_colours": len(set(colours))})
    assert score is None and "innolab's two queen-graph checks disagree" in errors[0]
    assert "colour 0 twice on row 0" in errors[0]
    monkeypatch.undo()
    errors, score = check(n, {"colours": colours, "num_colours": len(set(colours))})
    assert score is None and "vertices 0 and 1 are adjacent and share colour 0" in errors[0]


def test_fewer_colours_than_v_star_are_flagged_as_beating_it(tmp_path):
    from innolab.tasks import load_task

    copy = tmp_path / "colouring-queen27-27"
    shutil.copytree(get_task("colouring-queen27-27").root, copy)
    spec = (copy / "task.yaml").read_text()
    assert spec.count("{value: 28, digits: 0,") == 1
    (copy / "task.yaml").write_text(spec.replace("{value: 28, digits: 0,",
                                                 "{value: 30, digits: 0,"))
    task = load_task(copy)
    assert task.v_star == 30
    restricted = [(c + 2 * r) % 29 for r in range(27) for c in range(27)]  # 29 colours
    file = tmp_path / "q27.json"
    file.write_text(json.dumps({"colours": restricted, "num_colours": 29}))
    verdict = evaluate(task, file)
    assert verdict.valid and verdict.score == 29 and verdict.gain == 1 and verdict.beats_v_star
