"""Typed trace events (a union discriminated by `type`), the writer's stamps, the Trace view."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter

from innolab import traces
from innolab.traces import (
    AnyEvent,
    Checkpoint,
    LLMCall,
    RunFinished,
    RunStarted,
    Submission,
    ToolCallEvent,
    Trace,
    TraceWriter,
)


def test_an_event_is_built_without_stamps_and_the_writer_stamps_it(tmp_path):
    writer = TraceWriter(tmp_path, next_seq=3)
    event = Submission(step=1, file="submission/a.json", dev_valid=True, dev_score=2)
    assert event.seq is None and event.time is None
    stamped = writer.emit(event)
    writer.close()
    assert isinstance(stamped, Submission) and stamped.seq == 3 and stamped.time is not None
    line = json.loads((tmp_path / "trace.jsonl").read_text())
    assert list(line)[:5] == ["v", "seq", "time", "type", "step"]
    # defaults are not written; an integer score stays an integer
    assert line["dev_score"] == 2 and "dev_errors" not in line
    # a trace that starts at 3 has lost its head: refused, naming the line and the rule
    with pytest.raises(traces.TraceError, match="line 1: the first event has sequence number 3"):
        traces.read_events(tmp_path)
    (tmp_path / "trace.jsonl").write_text(json.dumps({**line, "seq": 0}) + "\n")
    (read,) = traces.read_events(tmp_path)
    assert read == stamped.model_copy(update={"seq": 0}) and isinstance(read.dev_score, int)
    assert read.payload() == {**line, "seq": 0}


def test_the_union_is_discriminated_by_type():
    adapter = TypeAdapter(AnyEvent)
    assert isinstance(adapter.validate_python({"type": "checkpoint", "step": 2}), Checkpoint)
    call = {"type": "tool_call", "call_id": "a", "tool": "bash", "arguments": {}}
    assert isinstance(adapter.validate_python(call), ToolCallEvent)
    with pytest.raises(ValueError):
        adapter.validate_python({"type": "party"})


def test_a_bad_event_is_refused_naming_the_field(tmp_path):
    with pytest.raises(traces.TraceError, match="checkpoint event, field 'seq'"):
        traces.parse_event({"type": "checkpoint", "step": 1, "time": 1.0}, "line 1")
    writer = TraceWriter(tmp_path)
    with pytest.raises(TypeError, match="emit takes an event"):
        writer.emit("checkpoint")  # type: ignore[arg-type]
    writer.close()


def test_the_trace_view_reads_the_facts_once(tmp_path):
    writer = TraceWriter(tmp_path)
    writer.emit(RunStarted(step=0, config={"agent": "codeact", "task": "t"}))
    writer.emit(LLMCall(step=0, latency_s=1.5, cached=True))
    writer.emit(ToolCallEvent(step=0, call_id="a", tool="bash", arguments={"command": "ls"}))
    writer.emit(ToolCallEvent(step=1, call_id="b", tool="submit", arguments={}))
    verdicts = ((True, 3.0), (False, 1.0), (True, 3.0), (True, 2.0), (True, None), (True, 1.0))
    for dev_valid, dev_score in verdicts:
        writer.emit(
            Submission(
                step=1,
                file=f"submission/{dev_score}-{dev_valid}.json",
                source="s.py",
                dev_valid=dev_valid,
                dev_score=dev_score,
            )
        )
    writer.emit(
        RunFinished(
            reason="steps",
            budget={"used_s": 9.5, "used_steps": 2},
            final_submission=None,
            dev_valid=False,
            dev_score=None,
        )
    )
    writer.close()
    trace = Trace.read(tmp_path)
    assert trace.config["agent"] == "codeact" and trace.started_at == trace.events[0].time
    assert trace.finished is not None and trace.end_reason == "steps" and trace.wall_s == 9.5
    assert trace.used_steps == 2 and trace.tool_steps == {0, 1} and len(trace.tool_calls) == 2
    assert trace.model_s == 1.5 and len(trace.llm_calls) == 1 and len(trace.submissions) == 6
    # a tie is no improvement, an invalid or unscored submission never one; by the direction
    assert [e.dev_score for e in trace.best_so_far("max")] == [3.0]
    assert [e.dev_score for e in trace.best_so_far("min")] == [3.0, 2.0, 1.0]
    assert trace.source_of("submission/2.0-True.json") == "s.py" and trace.source_of("x") is None
    line = "codeact on t: 2 steps, 2 tool calls, 6 submissions, not scored, ended: steps"
    assert traces.summary(tmp_path) == line


def test_an_empty_or_unfinished_trace_has_no_end():
    trace = Trace([])
    assert trace.finished is None and trace.started_at == 0.0 and trace.wall_s is None
    assert trace.used_steps == 0 and trace.config == {} and trace.span_s == 0.0
    assert trace.best_so_far("max") == []
