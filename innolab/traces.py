"""Run traces: append-only JSON lines, flushed per event, with a schema version; load them as DataFrames."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from innolab import rundir

SCHEMA_VERSION = 2
TRACE_FILE = rundir.TRACE_FILE


class TraceError(ValueError):
    """A trace file or event that breaks the schema."""


# ------------------------------------------------------------------------------------------ the event types


class Event(BaseModel):
    """Fields every event has; each event type declares its own payload below, once."""

    model_config = ConfigDict(extra="forbid")

    v: int
    seq: int = Field(ge=0)
    time: float
    type: str
    step: int | None = None


class RunStarted(Event):
    config: dict[str, Any]


class RunResumed(Event):
    from_checkpoint: int


class LLMCall(Event):
    purpose: str | None = None
    failed: bool = False
    error: str | None = None
    response: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    key: str | None = None
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    latency_s: float = 0.0
    temperature: float | None = None  # as sent
    seed: int | None = None  # as sent: derived from (run seed, call index)
    call_index: int | None = None


class ToolCallEvent(Event):
    call_id: str
    tool: str
    arguments: dict[str, Any]


class ToolResultEvent(Event):
    call_id: str
    tool: str
    ok: bool
    output: str
    duration_s: float


class ResearchLog(Event):
    """One entry of MLAB's research log (the gym also keeps the log as research_log.md in the run folder)."""

    entry: str


class Node(Event):
    """One node of AIDE's journal."""

    id: int
    parent: int | None
    stage: str
    plan: str
    code: str
    debug_depth: int
    ran: bool
    valid: bool
    metric: float | None
    buggy: bool


class Checkpoint(Event):
    pass


class Submission(Event):
    file: str
    source: str | None = None  # the code that wrote it (innolab.rundir: <name>.source.py)
    dev_valid: bool
    dev_score: float | None
    dev_errors: list[str] = Field(default_factory=list)


class Validation(Event):
    """A verdict of the pristine validator (the dev score the agent sees)."""

    call_id: str
    valid: bool
    score: float | None
    errors: list[str]


class Score(Event):
    """V, G, ratio (hidden evaluator) and N, once per run, from innolab.scoring."""

    valid: bool
    score: float | None
    v_star: float
    direction: str
    gain: float | None
    ratio: float
    beats_v_star: bool
    errors: list[str]
    final_submission: str | None
    dev_score: float | None
    novelty: float | None
    novelty_backend: str | None
    nearest_known: str | None
    distances: dict[str, float]
    novelty_note: str | None = None
    candidates: list[dict[str, Any]] = Field(default_factory=list)  # every improving candidate: V, G, ratio, N


class RunFinished(Event):
    reason: str
    budget: dict[str, Any]
    final_submission: str | None
    dev_valid: bool
    dev_score: float | None
    artefacts: list[str] = Field(default_factory=list)  # what the task kept from the final workspace (run-relative)


EVENTS: dict[str, type[Event]] = {
    "run_started": RunStarted, "run_resumed": RunResumed, "llm_call": LLMCall, "tool_call": ToolCallEvent,
    "tool_result": ToolResultEvent, "node": Node, "checkpoint": Checkpoint, "submission": Submission,
    "validation": Validation, "score": Score, "run_finished": RunFinished, "research_log": ResearchLog,
}
EVENT_TYPES = tuple(EVENTS)


def validate_event(event: dict[str, Any], where: str = "event") -> dict[str, Any]:
    """Check one event against its type's declared fields; the error names the type, the field and the rule."""
    kind = event.get("type")
    if kind not in EVENTS:
        raise TraceError(f"{where}: unknown event type {kind!r}; known: {EVENT_TYPES}")
    try:
        EVENTS[kind].model_validate(event)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(event)"
        raise TraceError(f"{where}: {kind} event, field '{field}': {first['msg']}") from None
    return event


def upgrade(event: dict[str, Any]) -> dict[str, Any]:
    """An event of an older schema version, in today's shape (version 1: submissions said `valid`; the gym's
    own score event had no novelty; run_finished named no final submission)."""
    version = event.get("v")
    if version == SCHEMA_VERSION:
        return event
    if version != 1:
        raise TraceError(f"schema version {version!r} is not known (this innolab reads 1 and {SCHEMA_VERSION})")
    event = {**event, "v": SCHEMA_VERSION}
    kind = event.get("type")
    if kind == "submission":
        event["dev_valid"] = bool(event.pop("valid", False))
        event.setdefault("dev_errors", [])
    elif kind == "run_finished":
        for key in ("valid", "score", "ratio"):
            event.pop(key, None)
        event.setdefault("final_submission", None)
        event.setdefault("dev_valid", False)
        event.setdefault("dev_score", None)
    elif kind == "score":
        event.pop("file", None)
        event.pop("rescored", None)
        event.pop("backend", None)
        for key, default in (("direction", "max"), ("beats_v_star", False), ("final_submission", None),
                             ("dev_score", None), ("novelty", None), ("novelty_backend", None),
                             ("nearest_known", None), ("distances", {})):
            event.setdefault(key, default)
        event["distances"] = {k[2:]: event.pop(k) for k in list(event) if k.startswith("d_")} or event["distances"]
    return event


class TraceWriter:
    """Appends events to run_dir/trace.jsonl; each event is flushed and fsynced before `emit` returns."""

    def __init__(self, run_dir: Path, next_seq: int = 0) -> None:
        self.path = Path(run_dir) / TRACE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.seq = next_seq
        self._handle = self.path.open("ab")

    def emit(self, event_type: str, step: int | None = None, **payload: Any) -> dict[str, Any]:
        event = {"v": SCHEMA_VERSION, "seq": self.seq, "time": time.time(), "type": event_type, "step": step,
                 **payload}
        event = json.loads(json.dumps(event, default=str))
        validate_event(event, f"{self.path.name}: event {self.seq}")
        self._handle.write((json.dumps(event) + "\n").encode())
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.seq += 1
        return event

    def position(self) -> dict[str, int]:
        """Where the trace stands: the next sequence number and the byte length (for truncation on resume)."""
        return {"seq": self.seq, "bytes": self._handle.tell()}

    def close(self) -> None:
        self._handle.close()


def truncate_to(run_dir: Path, position: dict[str, int]) -> None:
    """Drop events written after a checkpoint (a step interrupted by a kill is redone in full on resume)."""
    path = Path(run_dir) / TRACE_FILE
    with path.open("r+b") as handle:
        handle.truncate(position["bytes"])


def read_events(run_dir: Path) -> list[dict[str, Any]]:
    """The events of a trace; a torn last line (a kill during a write) is ignored, any other bad line is an error."""
    path = Path(run_dir) / TRACE_FILE
    if not path.is_file():
        raise TraceError(f"{run_dir} has no {TRACE_FILE}")
    lines = path.read_bytes().split(b"\n")
    events = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise TraceError(f"{path.name}: line {number} is not JSON") from None
        try:
            event = validate_event(upgrade(event), f"{path.name}: line {number}")
        except TraceError as error:
            raise TraceError(str(error) if str(error).startswith(path.name) else f"{path.name}: line {number}: "
                             f"{error}") from None
        events.append(event)
    return events


def load(run_dir: str | Path) -> pd.DataFrame:
    """One row per event: seq, time, type, step and the payload's fields as columns."""
    events = read_events(Path(run_dir))
    frame = pd.json_normalize(events, max_level=0)
    if not frame.empty:
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
    return frame


def summary(run_dir: str | Path) -> str:
    """One line: agent, task, steps, tool calls, submissions, final score and why the run ended."""
    events = read_events(Path(run_dir))
    started = next((e for e in events if e["type"] == "run_started"), {})
    finished = next((e for e in reversed(events) if e["type"] == "run_finished"), None)
    score = next((e for e in reversed(events) if e["type"] == "score"), None)
    steps = {e["step"] for e in events if e["type"] == "tool_call"}
    calls = sum(e["type"] == "tool_call" for e in events)
    submissions = sum(e["type"] == "submission" for e in events)
    config = started.get("config", {})
    scored = (f"score {score['score']!r} (ratio {score['ratio']:.4g})" if score and score.get("valid")
              else "no valid submission" if score else "not scored")
    end = f"ended: {finished['reason']}" if finished else "not finished"
    return (f"{config.get('agent', '?')} on {config.get('task', '?')}: {len(steps)} steps, {calls} tool calls, "
            f"{submissions} submissions, {scored}, {end}")
