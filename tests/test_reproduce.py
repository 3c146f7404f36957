"""A submission's stored program, re-run alone in a fresh sandbox of its task, reproduces it or
says how it does not (differs, timeout, error); scores carry that status, outcome novelty and how
N came about, and the run tables say NaN, not 0, for N not computed on a valid run.

The runs are real: a scripted policy writes a program, runs it and submits what it wrote; each case
then stores another program beside the submission's source (innolab.gym.provenance) and checks it.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from innolab import results, runner
from innolab.gym.policy import RunConfig
from innolab.gym.provenance import Program, save_program
from innolab.gym.reproduce import check_source, exec_time_limit, submitted_path
from innolab.rundir import RunDir
from innolab.scoring import novelty_status, score_run
from innolab.tasks import get_task
from innolab.tasks.evaluation import evaluate
from innolab.traces import Trace

# the scripted policies are registered agents of the tests' own (the gym builds only those)
pytestmark = pytest.mark.usefixtures("test_agents")

TASK = "circle-packing-26"
# 26 equal circles on a 6 x 5 grid (tests.gym_policies.GRID), written by a program
GRID = ("GRID = [[(2 * c + 1) / 12, (2 * k + 1) / 12, 1 / 12 * (1 - 1e-12)] "
        "for k in range(5) for c in range(6)][:26]\n")
WRITER = "import json\n" + GRID + "open('{path}', 'w').write(json.dumps({{'circles': GRID}}))\n"


def program_run(run_dir: Path, novelty: str | None = None) -> Path:
    """A scored run whose one submission, packing.json, was written by make.py."""
    calls = [
        ["write_file", {"path": "make.py", "content": WRITER.format(path="packing.json")}],
        ["bash", {"command": "python3 make.py"}],
        ["submit", {"path": "packing.json"}],
    ]
    config = RunConfig(task=TASK, policy="tests.gym_policies:CallPolicy", agent="scripted-calls",
                       policy_args={"calls": calls}, max_steps=5, wall_clock_s=300)
    outcome = runner.start(config, run_dir, novelty=novelty, show_progress=False)
    assert outcome["valid"], outcome
    return Path(outcome["run_dir"])


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    return program_run(tmp_path_factory.mktemp("runs") / "recorded")


def with_program(recorded: Path, tmp_path: Path, program: Program | None) -> tuple[Path, str, str]:
    """A copy of the recorded run with `program` stored as its submission's program."""
    run_dir = tmp_path / "run"
    shutil.copytree(recorded, run_dir)
    submission = Trace.read(run_dir).submissions[-1]
    if program is not None:
        save_program(run_dir / submission.source, program)
    return run_dir, submission.file, submission.source


def one_file(code: str) -> Program:
    return Program(files={"make.py": code}, entry="make.py")


def test_the_submitted_path_is_read_from_the_trace(recorded):
    trace = Trace.read(recorded)
    assert submitted_path(trace, trace.submissions[-1].file) == "packing.json"
    assert submitted_path(trace, "submission/submission.json") == "packing.json"  # the final copy
    assert submitted_path(trace, "submission/nothing.json") is None
    assert exec_time_limit(RunConfig(task=TASK, policy="x:y")) == 120.0
    limits = {"bash": 30.0, "python": 20.0, "python_session": 10.0}
    assert exec_time_limit(RunConfig(task=TASK, policy="x:y", tool_timeouts=limits)) == 30.0


def test_a_program_that_writes_the_submission_reproduces_it(recorded, tmp_path):
    run_dir, file, source = with_program(recorded, tmp_path,
                                         one_file(WRITER.format(path="packing.json")))
    check = check_source(run_dir, file, source, time_limit_s=60)
    assert check.status == "reproduces", check
    assert "identical" in check.detail and "no network" in check.detail
    assert check.time_limit_s == 60 and 0 < check.seconds < 60


def test_a_program_in_a_folder_with_arguments_reproduces(recorded, tmp_path):
    code = "import json, sys\n" + GRID + \
        "open(sys.argv[1], 'w').write(json.dumps({'circles': GRID}))\n"
    program = Program(files={"tools/make.py": code}, entry="tools/make.py",
                      args=["../packing.json"], cwd="tools")
    run_dir, file, source = with_program(recorded, tmp_path, program)
    assert check_source(run_dir, file, source, time_limit_s=60).status == "reproduces"


def test_the_recorded_program_has_no_network(recorded, tmp_path):
    code = ("import socket\ns = socket.socket()\ns.settimeout(3)\n"
            "s.connect(('1.1.1.1', 53))\n" + WRITER.format(path="packing.json"))
    run_dir, file, source = with_program(recorded, tmp_path, one_file(code))
    check = check_source(run_dir, file, source, time_limit_s=60)
    if "network not isolated" in check.detail:  # said in the record; nothing more to test here
        pytest.skip("this machine refuses a network namespace (unshare -rn)")
    assert check.status == "error" and "OSError" in check.detail, check


def test_a_different_valid_file_differs_and_the_same_score_reproduces(recorded, tmp_path):
    task = get_task(TASK)
    smaller = WRITER.replace("1 / 12 * (1 - 1e-12)", "1 / 12 * 0.99").format(path="packing.json")
    run_dir, file, source = with_program(recorded, tmp_path, one_file(smaller))
    assert check_source(run_dir, file, source, time_limit_s=60).status == "differs"
    # the hidden evaluator decides where the bytes differ: a smaller packing scores lower
    verdict = evaluate(task, run_dir / file)

    def same(a: Path, b: Path) -> tuple[bool, str]:
        again = evaluate(task, b)
        assert again.valid and again.score < verdict.score
        return again.score == verdict.score, f"{verdict.score} vs {again.score}"

    check = check_source(run_dir, file, source, time_limit_s=60, same_outcome=same)
    assert check.status == "differs" and "hidden evaluator" in check.detail
    # other bytes (indented JSON), the same packing: the hidden evaluator scores it identically
    indented = WRITER.replace("json.dumps({{'circles': GRID}})",
                              "json.dumps({{'circles': GRID}}, indent=1)")
    shutil.rmtree(run_dir)
    run_dir, file, source = with_program(recorded, tmp_path,
                                         one_file(indented.format(path="packing.json")))
    assert check_source(run_dir, file, source, time_limit_s=60).status == "differs"
    scored = score_run(_unscored(run_dir), novelty_backend=None, source_time_limit_s=60)
    assert scored["source_status"] == "reproduces", scored["source_detail"]
    assert "hidden evaluator" in scored["source_detail"]


def _unscored(run_dir: Path) -> Path:
    """The run folder with its score removed (so that it is scored again): score.json and the
    trace's score event (from which scoring would otherwise complete score.json as recorded)."""
    folder = RunDir(run_dir)
    folder.score.unlink()
    lines = folder.trace.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "score"
    folder.trace.write_text("".join(lines[:-1]))
    return run_dir


def test_a_program_past_its_time_limit_times_out(recorded, tmp_path):
    code = "import time\ntime.sleep(30)\n" + WRITER.format(path="packing.json")
    run_dir, file, source = with_program(recorded, tmp_path, one_file(code))
    check = check_source(run_dir, file, source, time_limit_s=2)
    assert check.status == "timeout" and check.time_limit_s == 2
    assert 2 <= check.seconds < 10 and "killed after 2 s" in check.detail


def test_a_crashing_program_is_an_error_with_its_traceback(recorded, tmp_path):
    run_dir, file, source = with_program(recorded, tmp_path, one_file("print(1 / 0)\n"))
    check = check_source(run_dir, file, source, time_limit_s=60)
    assert check.status == "error" and "ZeroDivisionError" in check.detail
    assert "exit code 1" in check.detail


def test_no_program_is_an_error_without_a_sandbox(recorded, tmp_path):
    run_dir, file, _ = with_program(recorded, tmp_path, None)
    check = check_source(run_dir, file, None)
    assert (check.status, check.seconds) == ("error", 0.0) and "no program" in check.detail
    with pytest.raises(ValueError, match="time_limit_s must be a positive number"):
        check_source(run_dir, file, None, time_limit_s=0)


@pytest.mark.docker
def test_the_program_reproduces_in_a_fresh_docker_sandbox(recorded, tmp_path, base_image):
    run_dir, file, source = with_program(recorded, tmp_path,
                                         one_file(WRITER.format(path="packing.json")))
    config = json.loads((run_dir / "config.json").read_text())
    config.update(runtime="docker", image=base_image)
    (run_dir / "config.json").write_text(json.dumps(config))
    check = check_source(run_dir, file, source, time_limit_s=60)
    assert check.status == "reproduces", check
    crashing = with_program(recorded, tmp_path / "crash", one_file("raise SystemExit(3)\n"))
    (crashing[0] / "config.json").write_text(json.dumps(config))
    assert check_source(*crashing, time_limit_s=60).status == "error"
    online = with_program(recorded, tmp_path / "online", one_file(
        "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=3)\n"
        + WRITER.format(path="packing.json")))
    (online[0] / "config.json").write_text(json.dumps(config))
    check = check_source(*online, time_limit_s=60)
    assert check.status == "error" and "OSError" in check.detail, check


# ------------------------------------------------------------------------- scores and run tables


def test_a_valid_run_without_a_back_end_has_n_nan_and_status_not_computed(recorded, tmp_path):
    score = json.loads((recorded / "score.json").read_text())
    assert score["valid"] and score["novelty"] is None
    assert score["novelty_status"] == "not_computed"
    assert score["source_status"] == "reproduces", score["source_detail"]  # make.py, as captured
    candidate = score["candidates"][-1]
    assert candidate["novelty_status"] == "not_computed" and "source_status" in candidate
    event = Trace.read(recorded).score  # the score event carries the same fields
    assert event.novelty_status == "not_computed" and event.source_status == score["source_status"]
    folder = tmp_path / "runs"
    shutil.copytree(recorded, folder / "recorded")
    runs_path, trajectory_path = results.collect(folder)
    row = pd.read_parquet(runs_path).iloc[0]
    assert row["valid"] and math.isnan(row["novelty"]) and row["novelty_status"] == "not_computed"
    assert row["source_status"] == score["source_status"]
    for column in ("novelty_out", "novelty_out_nearest", "rederived_known", "source_seconds"):
        assert column in row.index
    improving = pd.read_parquet(trajectory_path).query("improving").iloc[0]
    assert math.isnan(improving["novelty"]) and improving["novelty_status"] == "not_computed"


def test_an_invalid_run_keeps_n_zero(tmp_path):
    calls = [["write_file", {"path": "packing.json", "content": '{"circles": [[0.5, 0.5, 0.9]]}'}],
             ["submit", {"path": "packing.json"}]]
    config = RunConfig(task=TASK, policy="tests.gym_policies:CallPolicy", agent="scripted-calls",
                       policy_args={"calls": calls}, max_steps=4, wall_clock_s=300)
    outcome = runner.start(config, tmp_path / "runs" / "invalid", novelty=None,
                           show_progress=False)
    assert not outcome["valid"]
    row = results.runs(tmp_path / "runs").iloc[0]
    assert not row["valid"] and row["novelty"] == 0.0 and row["ratio"] == -1.0
    assert row["novelty_out"] == 0.0  # both axes: an invalid run is N = 0


def test_the_stored_program_of_a_scored_run_is_checked_and_its_n_carries_the_status(tmp_path):
    run_dir = program_run(tmp_path / "ast", novelty="ast")
    score = json.loads((run_dir / "score.json").read_text())
    assert score["novelty_backend"] == "ast" and score["novelty"] is not None
    assert (score["source_status"], score["novelty_status"]) == ("reproduces", "ok")
    # a program that does not reproduce is still stored, and its N carries that status
    source = Trace.read(run_dir).submissions[-1].source
    save_program(run_dir / source, one_file("print(1 / 0)\n"))
    again = score_run(_unscored(run_dir), novelty_backend="ast", source_time_limit_s=60)
    assert again["source_status"] == "error" and again["novelty"] is not None
    assert again["novelty_status"] == "not_reproducing"
    assert again["candidates"][-1]["novelty_status"] == "not_reproducing"


def test_scores_recorded_before_the_status_read_it_from_their_note():
    assert novelty_status({"valid": True, "novelty": None,
                           "novelty_note": "not computed: no back end asked for"}) == "not_computed"
    assert novelty_status({"valid": True, "novelty": None, "novelty_note":
                           "not computed: no code was recorded with this submission"}) == "no_code"
    assert novelty_status({"valid": True, "novelty": None, "novelty_note":
                           "not computed: the back end failed (timeout)"}) == "judge_failed"
    assert novelty_status({"valid": True, "novelty": 12.5}) == "ok"
    assert novelty_status({"valid": False, "novelty": 0.0}) == "ok"
    assert novelty_status({"valid": True, "novelty": 3.0,
                           "source_status": "differs"}) == "not_reproducing"
    assert novelty_status(None) is None


def test_a_submission_of_a_known_solutions_output_is_named_rederived(tmp_path):
    task = get_task(TASK)
    known = task.solutions_dir / "baseline-grid" / "solution.json"
    calls = [["write_file", {"path": "packing.json", "content": known.read_text()}],
             ["submit", {"path": "packing.json"}]]
    config = RunConfig(task=TASK, policy="tests.gym_policies:CallPolicy", agent="scripted-calls",
                       policy_args={"calls": calls}, max_steps=4, wall_clock_s=300)
    outcome = runner.start(config, tmp_path / "runs" / "known", novelty=None, show_progress=False)
    score = json.loads((Path(outcome["run_dir"]) / "score.json").read_text())
    assert score["valid"] and score["rederived_known"] == "baseline-grid", score
    assert score["novelty_out"] is not None and score["novelty_out"] < 1
    row = results.runs(tmp_path / "runs").iloc[0]
    assert row["rederived_known"] == row["novelty_out_nearest"] == "baseline-grid"
    improving = results.trajectory(tmp_path / "runs").query("improving").iloc[0]
    assert improving["rederived_known"] == "baseline-grid" and improving["novelty_out"] < 1


# ---------------------------------------- at scoring: the code novelty compares is what ran

def _padded_everywhere(source: str) -> str:
    """A program padded by every form of tests.padding, one after the other."""
    from tests.padding import FORMS, RUNTIME_FORMS, applicable, pad

    text = source
    for form in (*FORMS, *RUNTIME_FORMS):
        if applicable(text, form):
            text, _ = pad(text, form)
    return text


def _cosmetic_mean(code: str, backend: str) -> float:
    from tests.test_deadcode import COSMETIC

    return float(sum(_code_distance(code, t(code), backend) for t in COSMETIC.values())
                 / len(COSMETIC))


def _code_distance(a: str, b: str, backend: str) -> float:
    from innolab.novelty.scoring import distance

    return distance(a, b, backend).value


def _kept_at_scoring(task, text: str) -> str:
    """What scoring keeps of a program: re-run traced as scoring re-runs it (its statements one
    a line), pruned to what ran (`keep_executed`), then the static rule (`comparable`'s)."""
    from innolab.gym.factory import open_sandbox
    from innolab.gym.reproduce import one_statement_a_line, run_program
    from innolab.novelty.deadcode import keep_executed, strip_dead_code

    program = one_statement_a_line(Program(
        files={"prog.py": text}, entry="prog.py",
        args=["--seed", "0", "--time", "1", "--out", "out.json"]))
    sandbox = open_sandbox(task, "local")
    try:
        run = run_program(sandbox, program, limit=120)
    finally:
        sandbox.close()
    assert run.result.returncode == 0, run.result.stderr[-2000:]
    assert run.executed is not None, run.coverage_note
    kept = keep_executed(program.text(), program.text_lines(run.executed))
    assert kept is not None
    return strip_dead_code(kept)


def _simple_statements(text: str) -> set[str]:
    """Every statement of a program that holds no other (its AST, as text)."""
    import ast

    return {ast.dump(node) for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.stmt) and not any(
                isinstance(child, ast.stmt) for child in ast.iter_child_nodes(node))}


@pytest.mark.parametrize("task_id", __import__("innolab.tasks.registry",
                                               fromlist=["builtin_ids"]).builtin_ids())
def test_padding_in_a_rerun_program_is_dropped_by_what_ran(task_id):
    """Each task's baseline program, padded by every form (the five a static rule decides, and
    one-line helpers called on one line under a test only the run decides), re-run as scoring
    re-runs it: nothing of the padding is kept, and every statement kept is one of the program's
    own (a time-bounded search runs other branches each time, so two runs are not compared;
    `test_a_deterministic_program_keeps_exactly_its_own_code_when_padded` compares them)."""
    from innolab.agents.baseline import family_of, template
    from innolab.gym.reproduce import one_statement_a_line

    task = get_task(task_id)
    original = template(family_of(task))
    kept_padded = _kept_at_scoring(task, _padded_everywhere(original))
    assert "pad_" not in kept_padded and "PadModel" not in kept_padded
    assert "PADDING_ON" not in kept_padded
    own = one_statement_a_line(Program(files={"prog.py": original}, entry="prog.py")).text()
    assert _simple_statements(kept_padded) <= _simple_statements(own) | {"Pass()"}


def test_a_deterministic_program_keeps_exactly_its_own_code_when_padded():
    """With no branch left to chance, the code kept of the padded program is the code kept of
    the program itself: the same statements."""
    import ast

    task = get_task(TASK)
    program = ("import json\nimport sys\n\n\n" + GRID + "\n\ndef write(path):\n"
               "    if len(sys.argv) > 50:\n        raise SystemExit('too many arguments')\n"
               "    open(path, 'w').write(json.dumps({'circles': GRID}))\n    return path\n\n\n"
               "def main():\n    return write('out.json')\n\n\nmain()\n")
    kept_padded = _kept_at_scoring(task, _padded_everywhere(program))
    kept_original = _kept_at_scoring(task, program)
    assert "raise SystemExit" not in kept_original  # the branch that never ran goes too
    assert ast.dump(ast.parse(kept_padded)) == ast.dump(ast.parse(kept_original))


def test_a_scored_run_compares_the_code_that_ran_and_says_so(tmp_path):
    """Two runs, one program padded, scored by the structural back end: the same N, the same
    distances, and score.json names the rule (executed lines) and what ran."""
    from tests.padding import pad

    program = ("import json\n" + GRID + "\n\ndef write(path):\n"
               "    open(path, 'w').write(json.dumps({'circles': GRID}))\n    return path\n\n\n"
               "write('packing.json')\n")
    scores = []
    for name, text in (("plain", program), ("padded", pad(program, "after-return")[0])):
        calls = [["write_file", {"path": "make.py", "content": text}],
                 ["bash", {"command": "python3 make.py"}],
                 ["submit", {"path": "packing.json"}]]
        config = RunConfig(task=TASK, policy="tests.gym_policies:CallPolicy",
                           agent="scripted-calls", policy_args={"calls": calls}, max_steps=5,
                           wall_clock_s=300)
        outcome = runner.start(config, tmp_path / name, novelty="ast", show_progress=False)
        scores.append(json.loads((Path(outcome["run_dir"]) / "score.json").read_text()))
    plain, padded = scores
    for score in scores:
        assert score["novelty_code"] == "executed", score["novelty_code_note"]
        assert score["source_status"] == "reproduces" and score["source_executed"]["make.py"]
    assert padded["distances"] == plain["distances"] and padded["novelty"] == plain["novelty"]
    assert padded["candidates"][-1]["novelty_code"] == "executed"
