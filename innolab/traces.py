"""Run traces: append-only JSON lines, flushed per event, with a schema version; load them as DataFrames."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pandas as pd

SCHEMA_VERSION = 1
TRACE_FILE = "trace.jsonl"
EVENT_TYPES = (
    "run_started", "llm_call", "tool_call", "tool_result", "node", "checkpoint", "submission", "validation",
    "score", "run_finished", "run_resumed",
)


class TraceError(ValueError):
    """A trace file or event that breaks the schema."""


class TraceWriter:
    """Appends events to run_dir/trace.jsonl; each event is flushed and fsynced before `emit` returns."""

    def __init__(self, run_dir: Path, next_seq: int = 0) -> None:
        self.path = Path(run_dir) / TRACE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.seq = next_seq
        self._handle = self.path.open("ab")

    def emit(self, event_type: str, step: int | None = None, **payload: Any) -> dict[str, Any]:
        if event_type not in EVENT_TYPES:
            raise TraceError(f"unknown event type {event_type!r}; known: {EVENT_TYPES}")
        event = {"v": SCHEMA_VERSION, "seq": self.seq, "time": time.time(), "type": event_type, "step": step,
                 **payload}
        self._handle.write((json.dumps(event, default=str) + "\n").encode())
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
        if event.get("v") != SCHEMA_VERSION:
            raise TraceError(f"{path.name}: line {number} has schema version {event.get('v')!r}, "
                             f"expected {SCHEMA_VERSION}")
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
