"""The run loop's typed state: its checkpoint form, checkpoints written before it, a resume."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from innolab import traces
from innolab.agents.registry import build_policy
from innolab.gym.budget import Budget
from innolab.gym.policy import RunConfig
from innolab.gym.run import create_run, execute, load_checkpoint
from innolab.gym.runstate import (
    CheckpointError,
    CodeAction,
    RunState,
    SubmissionRecord,
    best_submission,
    program_text,
)
from innolab.gym.tools import ToolResult

# the scripted policies are registered agents of the tests' own (the gym builds only those)
pytestmark = pytest.mark.usefixtures("test_agents")

DATA = Path(__file__).parent / "data"
LEGACY = json.loads((DATA / "legacy_checkpoints.json").read_text(encoding="utf-8"))

# A checkpoint/state.json as the run loop wrote it before its state was typed, spelled out.
OLD_LAYOUT = {
    "step": 2,
    "policy": {"next": 2, "seen": [0, 1]},
    "budget": {
        "wall_clock_s": 300,
        "max_steps": 50,
        "max_tokens": None,
        "max_cost_usd": None,
        "used_s": 4.5,
        "used_steps": 2,
        "used_tokens": 20,
        "used_cost_usd": 0.0,
    },
    "submissions": [
        {
            "file": "submission/step00001-000.json",
            "source": "submission/step00001-000.source.py",
            "dev_valid": True,
            "dev_score": 2,
            "dev_errors": [],
        }
    ],
    "trace": {"seq": 9, "bytes": 2048},
    "code_log": [
        {"step": 0, "kind": "bash", "code": "ls"},
        {"step": 1, "kind": "script", "file": "solve.py", "code": "print(1)\n"},
        {"step": 1, "kind": "session", "code": "x = 1"},
    ],
    "results": [
        {
            "call_id": "c1-0",
            "name": "submit",
            "output": "recorded",
            "ok": True,
            "duration_s": 0.25,
            "extra": {"verdict": {"valid": True, "score": 2, "errors": []}},
        }
    ],
    "workspace": "workspace-2.tar",
}


def without_workspace(data: dict) -> dict:
    return {k: v for k, v in data.items() if k != "workspace"}


def test_a_checkpoint_of_the_old_layout_loads_and_is_written_back_the_same():
    state = RunState.from_checkpoint(OLD_LAYOUT)
    assert state.step == 2 and state.policy == {"next": 2, "seen": [0, 1]}
    assert state.trace["seq"] == 9
    assert isinstance(state.budget, Budget) and state.budget.used_steps == 2
    assert state.budget.used_s >= 4.5
    assert state.submissions == [
        SubmissionRecord(
            "submission/step00001-000.json", "submission/step00001-000.source.py", True, 2, []
        )
    ]
    assert state.code_log[1] == CodeAction(1, "script", "print(1)\n", file="solve.py")
    assert state.results == [ToolResult(**OLD_LAYOUT["results"][0])]
    assert state.session_code() == ["x = 1"] and not state.pending and state.idle == 0
    written = state.to_checkpoint()
    # the clock ran on while the test ran
    written["budget"]["used_s"] = OLD_LAYOUT["budget"]["used_s"]
    assert written == without_workspace(OLD_LAYOUT)
    assert list(written) == list(without_workspace(OLD_LAYOUT))  # the same keys, in the same order


@pytest.mark.parametrize(
    ("name", "index"), [(n, i) for n, c in LEGACY.items() for i in range(len(c))]
)
def test_checkpoints_written_by_the_untyped_loop_round_trip(name, index):
    saved = LEGACY[name][index]
    state = RunState.from_checkpoint(saved)
    written = state.to_checkpoint()
    written["budget"]["used_s"] = saved["budget"]["used_s"]
    assert written == without_workspace(saved)
    assert json.loads(json.dumps(written)) == written  # plain JSON data


def test_older_checkpoints_without_a_code_log_or_with_the_first_submission_form_load():
    data = without_workspace(OLD_LAYOUT)
    del data["code_log"]
    data["submissions"] = [
        {"file": "submission/step00001-000.json", "valid": True, "dev_score": 2.5}
    ]
    state = RunState.from_checkpoint(data)
    assert state.code_log == [] and state.session_code() == []
    assert state.submissions == [
        SubmissionRecord("submission/step00001-000.json", None, True, 2.5, [])
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"budget": None}, "budget"),
        ({"budget": {"max_steps": 0}}, "budget"),
        ({"step": "two"}, "step"),
        ({"trace": {"seq": 1}}, "trace"),
        ({"submissions": [{"dev_valid": True}]}, "submissions"),
        ({"results": [{"call_id": "x"}]}, "results"),
        ({"code_log": [{"kind": "bash"}]}, "code_log"),
    ],
)
def test_a_malformed_checkpoint_names_the_field(change, field):
    with pytest.raises(CheckpointError, match=f"field '{field}'"):
        RunState.from_checkpoint({**OLD_LAYOUT, **change})
    missing = without_workspace(OLD_LAYOUT)
    del missing[field]
    if field != "code_log":
        with pytest.raises(CheckpointError, match=f"field '{field}' is missing"):
            RunState.from_checkpoint(missing)


def test_best_submission_follows_the_direction_and_keeps_the_first_of_equals():
    records = [
        SubmissionRecord("a", None, True, 2.0),
        SubmissionRecord("b", None, False, 9.0),
        SubmissionRecord("c", None, True, 1.0),
        SubmissionRecord("d", None, True, 2.0),
        SubmissionRecord("e", None, True, None),
    ]
    assert best_submission(records, "max").file == "a"
    assert best_submission(records, "min").file == "c"
    assert best_submission(records[1:2] + records[4:], "max") is None
    assert best_submission([], "min") is None


def test_program_text_keeps_the_code_in_order_with_bash_as_comments():
    log = RunState.from_checkpoint(OLD_LAYOUT).code_log
    assert program_text(log) == (
        "# bash: ls\n\n# --- step 1: script solve.py\nprint(1)\n\n\n# --- step 1: session\nx = 1\n"
    )


def test_a_run_killed_at_an_old_layout_checkpoint_resumes_where_it_stopped(tmp_path):
    """A scripted run stopped by its step budget after 3 steps is turned into a killed one (the
    trace cut back to its last checkpoint, the checkpoint rewritten in the oldest layout, without a
    code log), then resumed: the policy continues at step 3 (it checks the step it is shown) and the
    run completes every step once."""
    config = RunConfig(
        task="circle-packing-26",
        policy="tests.gym_policies:ScriptedPolicy",
        policy_args={"steps": 6},
        max_steps=3,
        wall_clock_s=300,
    )
    run_dir = create_run(config, tmp_path / "run")
    assert execute(run_dir, build_policy, show_progress=False)["reason"] == "steps"
    state_file = run_dir / "checkpoint" / "state.json"
    saved = json.loads(state_file.read_text())
    assert saved["step"] == 3 and saved["policy"] == {"next": 3, "seen": [0, 1, 2]}
    del saved["code_log"]
    saved["budget"]["max_steps"] = 50  # the checkpoint carries the budget's limits and its use
    state_file.write_text(json.dumps(saved))
    traces.truncate_to(run_dir, saved["trace"])
    loaded, workspace = load_checkpoint(run_dir)
    assert loaded.step == 3 and workspace[:100].strip(b"\0")
    outcome = execute(run_dir, build_policy, resume=True, show_progress=False)
    assert outcome["reason"] == "agent_finished" and outcome["dev_valid"]
    events = traces.read_events(run_dir)
    assert sorted({e.step for e in events if e.type == "tool_call"}) == list(range(6))
    assert [e.step for e in events if e.type == "checkpoint"] == list(range(1, 7))
    assert [e.seq for e in events] == list(range(len(events)))
    assert [e.from_checkpoint for e in events if e.type == "run_resumed"] == [3]
    assert [e.type for e in events].count("run_finished") == 1


def test_a_checkpointed_policy_state_the_scaffold_cannot_read_is_a_run_error(tmp_path):
    """A scaffold's state with a key it does not know: the resume stops with the file and the field
    named."""
    from innolab.gym.run import RunError, save_checkpoint
    from innolab.runner import agent_config

    config = agent_config(
        "codeact",
        "circle-packing-26",
        budget_s=60,
        max_steps=3,
        settings={"base_url": "http://127.0.0.1:9/v1", "model": "fake"},
    )
    run_dir = create_run(config, tmp_path / "run")
    state = RunState.from_checkpoint(
        {
            **without_workspace(OLD_LAYOUT),
            "submissions": [],
            "policy": {"turn": 2, "colour": "red"},
            "trace": {"seq": 0, "bytes": 0},
        }
    )
    empty = io.BytesIO()
    tarfile.open(fileobj=empty, mode="w").close()
    save_checkpoint(run_dir, state, empty.getvalue())
    (run_dir / "trace.jsonl").write_bytes(b"")
    expected = r"state.json: field 'policy': .*unknown field\(s\) \['colour'\]"
    with pytest.raises(RunError, match=expected):
        execute(run_dir, build_policy, resume=True, show_progress=False)
