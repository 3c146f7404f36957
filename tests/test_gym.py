"""The execution environment on the local runtime: sandbox, tools, dispatcher, budgets, traces, kill
and resume."""

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from innolab import runner, traces
from innolab.gym.budget import Budget, BudgetError, parse_duration
from innolab.gym.dispatcher import dispatch_sync
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.leftovers import MARKER_VARIABLE, OWNER_FILE, mark, owner_token, reap, sandbox_pids
from innolab.gym.local import LocalSandbox
from innolab.gym.policy import RunConfig
from innolab.gym.run import create_run
from innolab.gym.sandbox import SandboxError
from innolab.gym.tools import TOOL_NAMES, TOOL_SPECS, Toolbox, ToolCall, truncate
from innolab.scoring import score_run
from innolab.tasks import get_task
from tests.gym_policies import pythonpath

ROOT = Path(__file__).resolve().parent.parent
# the scripted policies are registered agents of the tests' own (the gym builds only those)
pytestmark = pytest.mark.usefixtures("test_agents")


@pytest.fixture
def sandbox():
    box = open_sandbox(get_task("circle-packing-26"), "local")
    yield box
    box.close()


@pytest.fixture
def toolbox(sandbox):
    validator = open_validator(get_task("circle-packing-26"), sandbox)
    yield Toolbox(sandbox, validator)
    validator.close()


def test_local_sandbox_exec_files_and_timeout(sandbox):
    assert sandbox.exec("echo hi && echo err >&2").stdout == "hi\n"
    sandbox.write_file("a/b.txt", b"content")
    assert sandbox.read_file("a/b.txt") == b"content"
    slow = sandbox.exec("sleep 5", timeout_s=0.5)
    assert slow.timed_out and slow.returncode == 124


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", ""])
def test_paths_outside_the_workspace_are_refused(sandbox, path):
    with pytest.raises(SandboxError):
        sandbox.read_file(path)


def test_symlinks_out_of_the_workspace_are_refused(sandbox):
    sandbox.exec("ln -s /etc/passwd link")
    with pytest.raises(SandboxError, match="outside"):
        sandbox.read_file("link")


def test_snapshot_restore_round_trip(sandbox):
    sandbox.write_file("keep.txt", b"1")
    snap = sandbox.snapshot()
    sandbox.write_file("later.txt", b"2")
    sandbox.exec("rm keep.txt")
    sandbox.restore(snap)
    assert sandbox.read_file("keep.txt") == b"1"
    assert sandbox.exec("test -e later.txt").returncode == 1


def test_tool_specs_are_openai_function_schemas():
    assert set(TOOL_NAMES) == {
        "bash",
        "python",
        "python_session",
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "validate",
        "submit",
    }
    for spec in TOOL_SPECS:
        assert spec["type"] == "function"
        assert spec["function"]["parameters"]["type"] == "object"
    json.dumps(TOOL_SPECS)


def test_tools_run_against_the_sandbox(toolbox):
    submitted = []
    box = toolbox
    box.on_submit = lambda content, verdict, call_id=None: submitted.append(verdict)
    run = box.run
    assert run(
        ToolCall("1", "write_file", {"path": "x.py", "content": "print(1)\nprint(2)\n"}), 10
    ).ok
    assert run(
        ToolCall("2", "edit_file", {"path": "x.py", "old": "print(2)", "new": "print(3)"}), 10
    ).ok
    assert "1\n3" in run(ToolCall("3", "bash", {"command": "python3 x.py"}), 10).output
    assert not run(ToolCall("4", "edit_file", {"path": "x.py", "old": "print", "new": "p"}), 10).ok
    assert "x.py" in run(ToolCall("5", "list_files", {}), 10).output
    assert "42" in run(ToolCall("6", "python", {"code": "print(6*7)"}), 10).output
    bad = run(ToolCall("7", "validate", {"path": "x.py"}), 10)
    assert not bad.ok and "not valid JSON" in bad.output
    assert not run(ToolCall("8", "rm_rf", {}), 10).ok
    assert (
        "unknown arguments"
        in run(ToolCall("9", "bash", {"command": "ls", "sudo": True}), 10).output
    )
    run(ToolCall("10", "submit", {"path": "x.py"}), 10)
    assert submitted and submitted[0]["valid"] is False


def test_long_outputs_are_truncated_with_a_marker():
    text = "x" * 20_000
    cut = truncate(text, 1000)
    assert len(cut) < 1100 and "[... truncated 19000 characters ...]" in cut


def test_calls_of_one_step_run_concurrently_and_return_in_order(toolbox):
    # Each call waits until all eight have started: only concurrent execution can finish before the
    # timeout.
    barrier = (
        "touch started-$ID; for i in $(seq 100); do [ $(ls started-* | wc -l) -ge 8 ] && exit 0; "
        "sleep 0.1; done; exit 1"
    )
    calls = [
        ToolCall(f"id{i}", "bash", {"command": barrier.replace("$ID", str(i))}) for i in range(8)
    ]
    results = dispatch_sync(toolbox, calls, {"bash": 30})
    assert [r.call_id for r in results] == [f"id{i}" for i in range(8)]
    assert all(r.ok for r in results), [r.output for r in results]


def test_per_call_timeout_and_cancellation_at_the_deadline(toolbox):
    results = dispatch_sync(
        toolbox, [ToolCall("a", "bash", {"command": "sleep 10"})], {"bash": 0.5}
    )
    assert not results[0].ok and "killed after" in results[0].output
    results = dispatch_sync(
        toolbox,
        [
            ToolCall("b", "bash", {"command": "sleep 5"}),
            ToolCall("c", "bash", {"command": "echo quick"}),
        ],
        {"bash": 30},
        deadline_s=0.5,
    )
    assert "cancelled" in results[0].output and results[1].ok


def test_budgets():
    assert (
        parse_duration("10m") == 600 and parse_duration("1.5h") == 5400 and parse_duration(90) == 90
    )
    with pytest.raises(BudgetError, match="duration"):
        parse_duration("ten minutes")
    budget = Budget(max_steps=2, max_tokens=100)
    budget.spend(steps=1, tokens=50)
    assert budget.exhausted() is None
    budget.spend(tokens=60)
    assert budget.exhausted() == "tokens"
    with pytest.raises(BudgetError, match="max_steps"):
        Budget(max_steps=0)


def scripted_config(**changes):
    args = {
        "task": "circle-packing-26",
        "policy": "tests.gym_policies:ScriptedPolicy",
        "policy_args": {"steps": 6},
        "max_steps": 50,
        "wall_clock_s": 300,
    }
    return RunConfig(**{**args, **changes})


def test_scripted_run_is_traced_and_scored(tmp_path):
    outcome = runner.start(scripted_config(), tmp_path / "run", show_progress=False)
    run_dir = Path(outcome["run_dir"])
    assert outcome["valid"] and outcome["score"] == pytest.approx(26 / 12, rel=1e-9)
    frame = traces.load(run_dir)
    types = set(frame["type"])
    assert {
        "run_started",
        "tool_call",
        "tool_result",
        "checkpoint",
        "submission",
        "validation",
        "score",
        "run_finished",
    } <= types
    assert frame["seq"].tolist() == list(range(len(frame)))
    line = traces.summary(run_dir)
    assert "circle-packing-26" in line and "6 steps" in line and "agent_finished" in line
    assert (run_dir / "submission" / "submission.json").is_file()
    again = runner.resume(run_dir, show_progress=False)
    assert again["already_finished"] and again["score"] == outcome["score"]
    assert len(traces.load(run_dir)) == len(frame)


def test_step_budget_ends_the_run_and_keeps_the_best_submission(tmp_path):
    outcome = runner.start(
        scripted_config(max_steps=6, policy_args={"steps": 20}),
        tmp_path / "run",
        show_progress=False,
    )
    run_dir = Path(outcome["run_dir"])
    assert outcome["reason"] == "steps" and not outcome["valid"]
    frame = traces.load(run_dir)
    score = frame[frame["type"] == "score"].iloc[0]
    assert score["ratio"] == -1.0


def test_trace_schema_is_checked(tmp_path):
    (tmp_path / "trace.jsonl").write_text('{"v": 99, "seq": 0, "type": "run_started"}\n')
    with pytest.raises(traces.TraceError, match="schema version"):
        traces.load(tmp_path)


def _steps_are_complete(run_dir: Path, steps: int) -> None:
    events = traces.read_events(run_dir)
    calls = [e for e in events if e.type == "tool_call"]
    per_step = {}
    for event in calls:
        per_step.setdefault(event.step, []).append(event.call_id)
    assert sorted(per_step) == list(range(steps)), f"missing or extra steps: {sorted(per_step)}"
    for step, ids in per_step.items():
        assert len(ids) == len(set(ids)), f"step {step} has duplicated tool calls {ids}"
    checkpoints = [e.step for e in events if e.type == "checkpoint"]
    assert checkpoints == list(range(1, steps + 1))
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(e.type == "run_started" for e in events) == 1
    assert sum(e.type == "run_finished" for e in events) == 1
    assert next(e.type for e in events if e.type in ("run_finished", "score")) == "run_finished"
    assert sum(e.type == "score" for e in events) <= 1


def _start(run_dir: Path, resume: bool) -> subprocess.Popen:
    command = [sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"] + (
        ["--resume"] if resume else []
    )
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.mark.parametrize("trial", range(5))
def test_sigkill_and_resume_leaves_no_missing_or_duplicated_step(tmp_path, trial):
    rng = random.Random(trial)
    steps = 8
    run_dir = create_run(
        scripted_config(policy_args={"steps": steps, "sleep_s": 0.3}), tmp_path / "run"
    )
    kills, process = 0, _start(run_dir, resume=False)
    while True:
        try:
            process.wait(timeout=rng.uniform(0.5, 2.5))
            break
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills += 1
            process = _start(run_dir, resume=True)
    assert process.returncode == 0, process.stderr.read().decode()[-2000:]
    assert kills >= 1
    _steps_are_complete(run_dir, steps)
    finished = next(e for e in traces.read_events(run_dir) if e.type == "run_finished")
    assert finished.dev_valid and finished.dev_score == pytest.approx(26 / 12, rel=1e-9)
    score = score_run(run_dir, novelty_backend=None)
    assert score["valid"] and score["score"] == pytest.approx(26 / 12, rel=1e-9)


def test_budget_end_keeps_the_best_submission(tmp_path):
    from tests.gym_policies import GRID

    calls = [
        ["write_file", {"path": "p.json", "content": json.dumps({"circles": GRID})}],
        ["submit", {"path": "p.json"}],
    ] + [["bash", {"command": "true"}]] * 20
    config = scripted_config(
        policy="tests.gym_policies:CallPolicy", agent="scripted-calls",
        policy_args={"calls": calls}, max_steps=5
    )
    outcome = runner.start(config, tmp_path / "run", show_progress=False)
    assert outcome["reason"] == "steps" and outcome["valid"]


INNOLAB = str(Path(sys.executable).parent / "innolab")


def test_cli_sandbox_exec_local():
    done = subprocess.run(
        [
            INNOLAB,
            "sandbox",
            "exec",
            "--task",
            "circle-packing-26",
            "--",
            "bash",
            "-c",
            "ls; exit 3",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3 and "validate.py" in done.stdout


def test_cli_resume_continues_a_killed_run(tmp_path):
    run_dir = create_run(
        scripted_config(policy_args={"steps": 5, "sleep_s": 0.2}), tmp_path / "run"
    )
    process = _start(run_dir, resume=False)
    while not (run_dir / "checkpoint" / "state.json").exists():
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    done = subprocess.run(
        [INNOLAB, "run", "--resume", str(run_dir)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == str(run_dir)
    _steps_are_complete(run_dir, 5)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    return subprocess.run([INNOLAB, *args], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)


def test_a_run_being_executed_is_not_executed_again_by_a_resume(tmp_path):
    """The resume race: while one executor runs the run (held open by a gate the test controls,
    so no timing decides it), `innolab run --resume` is refused naming it, `innolab score` too,
    and `--resume --wait` waits, then reports the run the first one finished: one run, once."""
    from tests.gym_policies import GRID

    gate = tmp_path / "go"
    calls = [["write_file", {"path": "p.json", "content": json.dumps({"circles": GRID})}],
             ["submit", {"path": "p.json"}]]
    config = scripted_config(policy="tests.gym_policies:GatedPolicy", agent="scripted-gated",
                             policy_args={"calls": calls, "gate": str(gate)})
    run_dir = create_run(config, tmp_path / "runs" / "run")
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    first = subprocess.Popen([sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    waiting = None
    try:
        while not (run_dir / "trace.jsonl").exists():
            assert first.poll() is None, first.stderr.read()[-2000:]
            time.sleep(0.05)
        refused = _cli("run", "--resume", str(run_dir), "--novelty", "none")
        assert refused.returncode == 4, refused.stderr[-2000:]
        assert f"pid {first.pid}" in refused.stderr and "--wait" in refused.stderr
        busy_score = _cli("score", str(run_dir))
        assert busy_score.returncode == 4 and f"pid {first.pid}" in busy_score.stderr
        waiting = subprocess.Popen([INNOLAB, "run", "--resume", str(run_dir), "--novelty", "none",
                                    "--wait"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        time.sleep(2)
        assert waiting.poll() is None  # it waits for the first executor
        gate.touch()
        assert first.wait(timeout=120) == 0
        out, err = waiting.communicate(timeout=300)
        assert waiting.returncode == 0, err[-2000:]
        assert out.strip().splitlines()[-1] == str(run_dir)
    finally:
        gate.touch()
        first.kill()
        if waiting is not None:
            waiting.kill()
    events = traces.read_events(run_dir)
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(e.type == "run_started" for e in events) == 1
    assert sum(e.type == "run_finished" for e in events) == 1
    assert sum(e.type == "score" for e in events) == 1
    rows = (tmp_path / "runs" / "scores.csv").read_text().strip().splitlines()
    assert len(rows) == 2  # the header and the run, once
    again = subprocess.run([sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode != 0 and "never start it again" in again.stderr


def test_a_trace_two_executors_wrote_is_refused_naming_the_line(tmp_path):
    writer = traces.TraceWriter(tmp_path)
    writer.emit(traces.RunStarted(step=0, config={}))
    writer.emit(traces.Checkpoint(step=1))
    writer.close()
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    (tmp_path / "trace.jsonl").write_text("\n".join([*lines, lines[1]]) + "\n")
    with pytest.raises(traces.TraceError, match="line 3: sequence number 1 where 2 comes next"):
        traces.read_events(tmp_path)
    finished = {"v": 2, "time": 1.0, "type": "run_finished", "step": None, "reason": "steps",
                "budget": {}, "final_submission": None, "dev_valid": False, "dev_score": None}
    (tmp_path / "trace.jsonl").write_text("\n".join(
        [*lines, json.dumps({**finished, "seq": 2}), json.dumps({**finished, "seq": 3})]) + "\n")
    with pytest.raises(traces.TraceError,
                       match="line 4: a second run_finished event \\(the first on line 3\\)"):
        traces.read_events(tmp_path)


def test_every_way_into_a_run_takes_its_lock(tmp_path):
    """start, resume and score each refuse (or wait for) a run another executor holds."""
    from innolab.runlock import RunBusy, RunLock

    outcome = runner.start(scripted_config(policy_args={"steps": 2}), tmp_path / "run",
                           novelty=None, show_progress=False)
    run_dir = Path(outcome["run_dir"])
    (run_dir / "score.json").unlink()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from innolab.runlock import RunLock\n"
         "with RunLock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)",
         str(run_dir)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunBusy, match=f"pid {holder.pid}"):
            runner.resume(run_dir, novelty=None, show_progress=False, wait=False)
        with pytest.raises(RunBusy, match=f"pid {holder.pid}"):
            score_run(run_dir, novelty_backend=None, wait=False)
        with pytest.raises(RunBusy):
            from innolab.agents.registry import build_policy
            from innolab.gym.run import execute
            execute(run_dir, build_policy, resume=True, show_progress=False, wait=False)
    finally:
        holder.kill()
        holder.wait()
    # the same thread enters its own lock again (the runner holds it while the gym executes)
    with RunLock(run_dir, wait=False), RunLock(run_dir, wait=False):
        assert score_run(run_dir, novelty_backend=None, wait=False)["valid"] is not None
    assert not (run_dir / "heartbeat.json").exists()  # let go by the outer lock


def test_trace_events_are_typed_on_write_and_on_read(tmp_path):
    writer = traces.TraceWriter(tmp_path)
    writer.emit(traces.Checkpoint(step=1))
    with pytest.raises(ValidationError, match="dev_valid"):
        traces.Submission(step=1, file="submission/x.json", dev_score=1.0)
    with pytest.raises(ValidationError, match="colour"):
        traces.Checkpoint(step=2, colour="red")
    with pytest.raises(traces.TraceError, match="submission event, field 'dev_valid'"):
        traces.parse_event(
            {
                "v": 2,
                "seq": 1,
                "time": 1.0,
                "type": "submission",
                "step": 1,
                "file": "x",
                "dev_score": 1.0,
            }
        )
    with pytest.raises(traces.TraceError, match="unknown event type 'party'"):
        traces.parse_event({"type": "party", "step": 2})
    writer.close()
    with (tmp_path / "trace.jsonl").open("a") as handle:
        handle.write(
            '{"v": 2, "seq": 1, "time": 1.0, "type": "tool_call", "step": 1, "call_id": "a"}\n'
        )
        handle.write('{"v": 2, "seq": 2, "time": 1.0, "type": "checkpoint", "step": 2}\n')
    with pytest.raises(traces.TraceError, match="line 2: tool_call event, field 'tool'"):
        traces.read_events(tmp_path)


V1_TRACE = [
    {
        "v": 1,
        "seq": 0,
        "time": 1.0,
        "type": "run_started",
        "step": 0,
        "config": {"task": "circle-packing-26"},
    },
    {
        "v": 1,
        "seq": 1,
        "time": 2.0,
        "type": "submission",
        "step": 0,
        "file": "submission/step00000-000.json",
        "valid": True,
        "dev_score": 2.1,
    },
    {
        "v": 1,
        "seq": 2,
        "time": 3.0,
        "type": "score",
        "step": None,
        "valid": True,
        "score": 2.1,
        "v_star": 2.6,
        "gain": -0.5,
        "ratio": -0.19,
        "errors": [],
        "file": "submission/step00000-000.json",
    },
    {
        "v": 1,
        "seq": 3,
        "time": 4.0,
        "type": "run_finished",
        "step": None,
        "reason": "steps",
        "budget": {},
        "valid": True,
        "score": 2.1,
        "ratio": -0.19,
    },
    {
        "v": 1,
        "seq": 4,
        "time": 5.0,
        "type": "score",
        "step": None,
        "valid": True,
        "score": 2.1,
        "v_star": 2.6,
        "gain": -0.5,
        "ratio": -0.19,
        "errors": [],
        "backend": "tfidf",
        "novelty": 40.0,
        "nearest_known": "a",
        "d_a": 40.0,
        "d_b": 60.0,
        "rescored": True,
    },
]


def test_a_trace_of_schema_version_1_still_loads(tmp_path):
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in V1_TRACE))
    events = traces.read_events(tmp_path)
    assert [e.v for e in events] == [2] * 5
    assert events[1].dev_valid is True and "valid" not in events[1].payload()
    assert events[3].final_submission is None and "score" not in events[3].payload()
    assert events[4].distances == {"a": 40.0, "b": 60.0} and events[4].novelty == 40.0
    assert "score 2.1" in traces.summary(tmp_path)


# ---------------------------------------------------- the local sandbox's user, links and leftovers

BOTH_MODES = [
    pytest.param(
        True, marks=pytest.mark.skipif(os.geteuid() != 0, reason="needs root"), id="own-user"
    ),
    pytest.param(False, id="innolab-user"),
]


@pytest.mark.parametrize("separate_user", BOTH_MODES)
def test_local_sandbox_user_links_and_close(separate_user):
    box = LocalSandbox(separate_user=separate_user)
    try:
        assert box.exec("id -u").stdout.strip() == str(box.uid if separate_user else os.geteuid())
        box.write_file(
            "d/a.txt", b"1"
        )  # what innolab writes, the agent's commands can change, and back
        assert box.exec("echo 2 >> d/a.txt && echo 3 > d/b.txt").returncode == 0
        assert box.read_file("d/a.txt") == b"12\n" and box.read_file("d/b.txt") == b"3\n"
        box.exec("ln -s /etc e && ln -s /etc/hostname h")  # a link in the path is never followed
        with pytest.raises(SandboxError, match="link"):
            box.write_file("e/innolab-planted", b"x")
        with pytest.raises(SandboxError, match="link"):
            box.read_file("e/hostname")
        box.write_file("h", b"replaced")  # replaces the link itself
        assert box.read_file("h") == b"replaced" and not Path("/etc/innolab-planted").exists()
        if separate_user:  # innolab's own files are out of the commands' reach
            assert box.exec(f"touch {ROOT}/innolab-planted").returncode != 0
            assert not (ROOT / "innolab-planted").exists()
        box.restore(box.snapshot())
        assert (
            box.exec("echo 4 > d/a.txt && test ! -e e").returncode == 0
        )  # still the agent's; links dropped
        assert box.exec("nohup sleep 60 >/dev/null 2>&1 &").returncode == 0
        assert sandbox_pids(box.uid, box.marker)
    finally:
        box.close()
    assert not sandbox_pids(box.uid, box.marker) and not box.root.exists()


def test_cli_sandbox_clean_reaps_what_an_ended_run_left(tmp_path):
    ended = subprocess.Popen(["sleep", "30"])
    token = owner_token(ended.pid)
    ended.kill()
    ended.wait()
    leftover = tmp_path / "innolab-ws-ended"
    (leftover / "workspace").mkdir(parents=True)
    (leftover / OWNER_FILE).write_text(json.dumps({**token, "uid": None, "marker": "feedc0de"}))
    straggler = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, MARKER_VARIABLE: "feedc0de"}, start_new_session=True
    )
    alive = tmp_path / "innolab-validator-alive"  # owned by this test's process: kept
    alive.mkdir()
    mark(alive)
    unmarked = tmp_path / "innolab-ws-unmarked"  # no owner mark: not ours to judge
    unmarked.mkdir()
    done = subprocess.run(
        [INNOLAB, "sandbox", "clean"],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert f"removed {leftover}" in done.stdout and "1 folders, 1 processes" in done.stdout
    assert not leftover.exists() and alive.exists() and unmarked.exists()
    assert straggler.wait(timeout=10) == -signal.SIGKILL


def test_a_killed_sweep_workers_kernel_profile_is_reaped(tmp_path):
    """The folder a sweep worker makes for each kernel it starts (innolab-ipython-*: its IPython
    profile, connection file and sockets) is marked with its owner: a killed worker's is removed by
    the reaper, a live one's kept."""
    script = ("import sys, time\n"
              "from innolab.sweep.pool import kernel_folder\n"
              "kernel_folder()\n"
              "print('made', flush=True); time.sleep(60)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert worker.stdout.readline().strip() == "made"
        (made,) = tmp_path.glob("innolab-ipython-*")
        assert reap(tmp_path).folders == [] and made.exists()  # its worker is alive
    finally:
        worker.kill()
        worker.wait()
    assert reap(tmp_path).folders == [str(made)] and not made.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="a folder of another user needs root to make")
def test_a_planted_mark_kills_nothing(tmp_path):
    """Anyone may make a folder in the temporary folder: a mark in a folder innolab did not make
    names nothing."""
    victim = subprocess.Popen(["sleep", "60"], user=54321, group=54321, extra_groups=[])
    ended = subprocess.Popen(["true"])
    ended.wait()
    planted = tmp_path / "innolab-ws-planted"
    planted.mkdir()
    (planted / OWNER_FILE).write_text(
        json.dumps(
            {
                "pid": ended.pid,
                "start": 1,
                "boot": "",
                "uid": 54321,
                "marker": None,
                "host": owner_token()["host"],
            }
        )
    )
    os.chown(planted, 54321, 54321)
    os.chown(planted / OWNER_FILE, 54321, 54321)
    try:
        assert reap(tmp_path).folders == [] and planted.exists()
        assert victim.poll() is None  # still running
    finally:
        victim.kill()
        victim.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's own user needs root")
def test_a_temporary_folder_the_sandbox_user_cannot_pass_is_a_clear_error(tmp_path, monkeypatch):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    with pytest.raises(SandboxError, match=r"lets no other user pass.*TMPDIR"):
        LocalSandbox()


def test_an_owner_that_ended_unreaped_is_not_alive():
    """A killed run nobody has reaped (a zombie: no init reaps it in a container) owns nothing."""
    from innolab.gym.leftovers import owner_alive

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    token = owner_token(child.pid)
    try:
        assert owner_alive(token)
        child.kill()
        deadline = time.monotonic() + 30
        while Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not owner_alive(token)  # its /proc entry is still there
    finally:
        child.wait()
    assert not owner_alive(token)


def test_a_scoring_cut_after_its_event_is_completed_from_it(tmp_path):
    """score_run writes the score event, then score.json whole, then the table's row: a kill
    after the event leaves a run the next scoring completes, never scores twice."""
    outcome = runner.start(scripted_config(policy_args={"steps": 2}), tmp_path / "run",
                           novelty=None, show_progress=False)
    run_dir = Path(outcome["run_dir"])
    first = json.loads((run_dir / "score.json").read_text())
    (run_dir / "score.json").unlink()  # as a kill between the event and score.json leaves it
    again = score_run(run_dir, novelty_backend=None)
    assert again["already_scored"] and again["score"] == first["score"]
    assert again["v_star"] == first["v_star"] and again["candidates"] == first["candidates"]
    events = traces.read_events(run_dir)
    assert sum(e.type == "score" for e in events) == 1
    assert json.loads((run_dir / "score.json").read_text())["run"] == first["run"]
