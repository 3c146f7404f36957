"""Run traces: typed events in versioned, append-only JSON lines; writer, readers, Trace view."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from innolab import rundir
from innolab.metrics import better

if TYPE_CHECKING:  # pandas loads where a frame is made: the CLI's start-up does without it
    import pandas as pd

SCHEMA_VERSION = 2
TRACE_FILE = rundir.TRACE_FILE


class TraceError(ValueError):
    """A trace file or event that breaks the schema."""


# ------------------------------------------------------------------------------- the event types

Number = int | float  # a JSON number as written (an integer score read back stays an integer)


class Event(BaseModel):
    """Fields every event has; each event type declares its own payload below, once.

    `v`, `seq` and `time` are stamped by the `TraceWriter`: an event is built without them, and
    the writer returns the stamped event. Every event read from a trace has them.
    """

    model_config = ConfigDict(extra="forbid")

    v: int = SCHEMA_VERSION
    seq: int | None = Field(default=None, ge=0)
    time: float | None = None
    type: str
    step: int | None = None

    def payload(self) -> dict[str, Any]:
        """The event as the trace holds it.

        Returns:
            The stamps, type and step, then the fields the event was given (defaults left out),
            as plain data.
        """
        data = self.model_dump(exclude_unset=True)
        return {"v": self.v, "seq": self.seq, "time": self.time, "type": self.type,
                "step": self.step, **data}


class RunStarted(Event):
    """The run started, with the configuration it runs with."""

    type: Literal["run_started"] = "run_started"
    config: dict[str, Any]


class RunResumed(Event):
    """The run resumed from a checkpoint (the step it was taken at).

    `note`: what the agent could not restore (an external framework's own memory), in words.
    """

    type: Literal["run_resumed"] = "run_resumed"
    from_checkpoint: int
    note: str | None = None


class AgentError(Event):
    """The agent failed: an external framework raised, or exited with an error.

    Why, and its traceback; the run ends with reason `agent_error`, its workspace and
    submissions kept.
    """

    type: Literal["agent_error"] = "agent_error"
    error: str
    traceback: str | None = None


class LLMCall(Event):
    """One model call: its purpose, tokens, cost, cache key, latency, sampling and reply."""

    type: Literal["llm_call"] = "llm_call"
    # declared in the order the agents write them (a trace's columns in `load` keep that order)
    purpose: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False
    key: str | None = None
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    latency_s: float = 0.0
    wait_s: float = 0.0  # of latency_s: waiting for the endpoint's limits, Retry-After, back-off
    temperature: float | None = None  # as sent
    seed: int | None = None  # as sent: derived from (run seed, call index)
    call_index: int | None = None
    sampling: dict[str, Any] = Field(default_factory=dict)  # added sampling settings, as sent
    stop: str | list[str] | None = None  # the stop sequence(s), as sent (where any was)
    response: str | None = None
    failed: bool = False
    error: str | None = None
    # its client went away first: the request was closed mid-reply (its usage so far recorded)
    cancelled: bool = False


class ToolCallEvent(Event):
    """A tool call the policy made: its id, the tool and the arguments."""

    type: Literal["tool_call"] = "tool_call"
    call_id: str
    tool: str
    arguments: dict[str, Any]


class ToolResultEvent(Event):
    """A tool call's result: whether it succeeded, its output and its duration."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str
    ok: bool
    output: str
    duration_s: float


class ResearchLog(Event):
    """One entry of MLAB's research log (the gym also keeps it as research_log.md in the run)."""

    type: Literal["research_log"] = "research_log"
    entry: str


class Node(Event):
    """One node of AIDE's journal."""

    type: Literal["node"] = "node"
    id: int
    parent: int | None
    stage: str
    plan: str
    code: str
    ran: bool
    valid: bool
    metric: Number | None
    buggy: bool
    debug_depth: int


class Checkpoint(Event):
    """The run's state was checkpointed (state.json and the workspace)."""

    type: Literal["checkpoint"] = "checkpoint"


class Submission(Event):
    """A recorded submission with the pristine validator's verdict (the dev score)."""

    type: Literal["submission"] = "submission"
    file: str
    source: str | None = None  # the code that wrote it (innolab.rundir: <name>.source.py)
    dev_valid: bool
    dev_score: Number | None
    dev_errors: list[str] = Field(default_factory=list)


class Validation(Event):
    """A verdict of the pristine validator (the dev score the agent sees)."""

    type: Literal["validation"] = "validation"
    call_id: str
    valid: bool
    score: Number | None
    errors: list[str]


class Score(Event):
    """V, G, ratio (hidden evaluator) and N, once per run, from innolab.scoring."""

    type: Literal["score"] = "score"
    valid: bool
    score: Number | None
    v_star: Number
    direction: str
    gain: Number | None
    ratio: Number
    beats_v_star: bool
    errors: list[str]
    final_submission: str | None
    dev_score: Number | None
    novelty: Number | None
    novelty_backend: str | None
    nearest_known: str | None
    distances: dict[str, Number]
    novelty_note: str | None = None
    # every improving candidate: V, G, ratio, N
    candidates: list[dict[str, Any]] = Field(default_factory=list)
    # the frontier the score was read against (absent in scores recorded before runs knew it)
    v_star_as_of: str | None = None
    ledger_hash: str | None = None
    headroom_closed: Number | None = None
    # how N came about, the program's re-run, and outcome novelty (absent in older scores)
    novelty_status: str | None = None
    source_status: str | None = None
    source_seconds: Number | None = None
    source_detail: str | None = None
    source_time_limit_s: Number | None = None
    source_executed: dict[str, list[int]] | None = None
    # the code novelty compared: what ran in the re-run ("executed") or static reachability
    novelty_code: str | None = None
    novelty_code_note: str | None = None
    novelty_out: Number | None = None
    novelty_out_nearest: str | None = None
    novelty_out_note: str | None = None
    rederived_known: str | None = None


class RunFinished(Event):
    """The run ended: why, the budget spent, and its final submission with its dev verdict.

    `artefacts` are what the task kept from the final workspace (run-relative paths).
    """

    type: Literal["run_finished"] = "run_finished"
    reason: str
    budget: dict[str, Any]
    # what the task kept from the final workspace (run-relative paths)
    artefacts: list[str] = Field(default_factory=list)
    final_submission: str | None
    dev_valid: bool
    dev_score: Number | None


AnyEvent = Annotated[
    RunStarted | RunResumed | LLMCall | ToolCallEvent | ToolResultEvent | ResearchLog | Node
    | Checkpoint | Submission | Validation | Score | RunFinished | AgentError,
    Field(discriminator="type"),
]
EVENTS: dict[str, type[Event]] = {
    cls.model_fields["type"].default: cls
    for cls in (RunStarted, RunResumed, LLMCall, ToolCallEvent, ToolResultEvent, Node, Checkpoint,
                Submission, Validation, Score, RunFinished, ResearchLog, AgentError)
}
EVENT_TYPES = tuple(EVENTS)


def parse_event(data: dict[str, Any], where: str = "event", stamped: bool = True) -> AnyEvent:
    """One event from its JSON fields, checked against its type's declared fields.

    Args:
        data: the event's fields, `type` among them.
        where: where the event comes from, for the error (e.g. "trace.jsonl: line 3").
        stamped: whether the event must carry the writer's stamps (`seq`, `time`).

    Returns:
        The event, of the class its `type` names.

    Raises:
        TraceError: an unknown type, or a field that breaks its rule (the message names the
            type, the field and the rule).
    """
    kind = data.get("type")
    if kind not in EVENTS:
        raise TraceError(f"{where}: unknown event type {kind!r}; known: {EVENT_TYPES}")
    try:
        event = EVENTS[kind].model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(event)"
        raise TraceError(f"{where}: {kind} event, field '{field}': {first['msg']}") from None
    if stamped:
        for field in ("seq", "time"):
            if data.get(field) is None:
                raise TraceError(f"{where}: {kind} event, field '{field}': Field required")
    return event  # type: ignore[return-value]


def upgrade(event: dict[str, Any]) -> dict[str, Any]:
    """An event of an older schema version in today's shape.

    Version 1: submissions said `valid`; the gym's own score event had no novelty; run_finished
    named no final submission.

    Args:
        event: the event's JSON fields, as read.

    Returns:
        The fields in today's schema (the same dict when already current).

    Raises:
        TraceError: a schema version this innolab does not know.
    """
    version = event.get("v")
    if version == SCHEMA_VERSION:
        return event
    if version != 1:
        raise TraceError(f"schema version {version!r} is not known (this innolab reads 1 and "
                         f"{SCHEMA_VERSION})")
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
        for key, default in (("direction", "max"), ("beats_v_star", False),
                             ("final_submission", None), ("dev_score", None), ("novelty", None),
                             ("novelty_backend", None), ("nearest_known", None),
                             ("distances", {})):
            event.setdefault(key, default)
        distances = {k[2:]: event.pop(k) for k in list(event) if k.startswith("d_")}
        event["distances"] = distances or event["distances"]
    return event


class TraceWriter:
    """Appends events to run_dir/trace.jsonl; each is flushed and fsynced before `emit` returns."""

    def __init__(self, run_dir: Path, next_seq: int = 0) -> None:
        self.path = Path(run_dir) / TRACE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.seq = next_seq
        self._handle = self.path.open("ab")

    def emit(self, event: Event) -> AnyEvent:
        """Write one event, stamped with the schema version, the next sequence number and the time.

        Args:
            event: the event (its `v`, `seq` and `time` are the writer's to set).

        Returns:
            The event as written, stamped.

        Raises:
            TypeError: not an event object.
            TraceError: the event breaks its type's schema.
        """
        if not isinstance(event, Event):
            raise TypeError(f"emit takes an event of innolab.traces (e.g. Checkpoint(step=1)), got "
                            f"{type(event).__name__}")
        data = {"type": event.type, "step": event.step, **event.model_dump(exclude_unset=True)}
        for stamp in ("v", "seq", "time"):
            data.pop(stamp, None)
        data = {"v": SCHEMA_VERSION, "seq": self.seq, "time": time.time(), **data}
        data = json.loads(json.dumps(data, default=str))
        stamped = parse_event(data, f"{self.path.name}: event {self.seq}")
        self._handle.write((json.dumps(data) + "\n").encode())
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self.seq += 1
        return stamped

    def position(self) -> dict[str, int]:
        """Where the trace stands.

        The next sequence number and the byte length (for truncation on resume).
        """
        return {"seq": self.seq, "bytes": self._handle.tell()}

    def close(self) -> None:
        """Close the trace file."""
        self._handle.close()


def truncate_to(run_dir: Path, position: dict[str, int]) -> None:
    """Drop events written after a checkpoint (a step cut by a kill is redone in full on resume)."""
    path = Path(run_dir) / TRACE_FILE
    with path.open("r+b") as handle:
        handle.truncate(position["bytes"])


def read_events(run_dir: Path) -> list[AnyEvent]:
    """The events of a run's trace, older schema versions upgraded.

    A torn last line (a kill during a write) is ignored. A trace that does not start at sequence
    number 0 (its head lost) is refused, and so is one that two executors wrote (naming the
    line): sequence numbers that do not rise by one, or a second
    `run_finished` or `score` event (a run ends once and is scored once).

    Args:
        run_dir: the run folder.

    Returns:
        The events in order.

    Raises:
        TraceError: no trace, or a bad line other than a torn last one.
    """
    path = Path(run_dir) / TRACE_FILE
    if not path.is_file():
        raise TraceError(f"{run_dir} has no {TRACE_FILE}")
    lines = path.read_bytes().split(b"\n")
    events: list[AnyEvent] = []
    once: dict[str, int] = {}  # run_finished and score: the line of the first
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise TraceError(f"{path.name}: line {number} is not JSON") from None
        where = f"{path.name}: line {number}"
        try:
            event = parse_event(upgrade(data), where)
        except TraceError as error:
            text = str(error)
            raise TraceError(text if text.startswith(path.name) else f"{where}: {text}") from None
        if not events and event.seq != 0:
            raise TraceError(f"{where}: the first event has sequence number {event.seq}, not 0 "
                             "(the trace's head is missing)")
        if events and event.seq != events[-1].seq + 1:  # type: ignore[operator]
            raise TraceError(
                f"{where}: sequence number {event.seq} where {events[-1].seq + 1} comes next "  # type: ignore[operator]
                "(events out of order or written twice: two executors of one run)")
        # version 1 wrote the gym's own score event before the scorer's: only run_finished once
        if event.type == "run_finished" or (event.type == "score" and data.get("v") != 1):
            if event.type in once:
                raise TraceError(
                    f"{where}: a second {event.type} event (the first on line "
                    f"{once[event.type]}): the run was executed or scored twice")
            once[event.type] = number
        events.append(event)
    return events


def load(run_dir: str | Path) -> pd.DataFrame:
    """A run's trace as a DataFrame (what `innolab.analysis` reads).

    Args:
        run_dir: the run folder.

    Returns:
        One row per event: seq, time (a timestamp), type, step and the payload's fields.

    Raises:
        TraceError: as `read_events`.
    """
    import pandas as pd

    events = read_events(Path(run_dir))
    frame = pd.json_normalize([e.payload() for e in events], max_level=0)
    if not frame.empty:
        frame["time"] = pd.to_datetime(frame["time"], unit="s")
    return frame


# ---------------------------------------------------------------------------------- the trace view

E = TypeVar("E", bound=Event)


class Trace:
    """A run's trace read once, and the facts every reader wants of it.

    The configuration it started with, when it started, how and why it ended, its submissions,
    tool and model calls, the best dev score so far and its timings.
    """

    def __init__(self, events: list[AnyEvent]) -> None:
        self.events = events

    @classmethod
    def read(cls, run_dir: str | Path) -> Trace:
        """The trace of a run folder.

        Raises:
            TraceError: as `read_events`.
        """
        return cls(read_events(Path(run_dir)))

    def of(self, kind: type[E]) -> list[E]:
        """The events of one type, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def last(self, kind: type[E]) -> E | None:
        """The last event of one type (None where there is none)."""
        return next((e for e in reversed(self.events) if isinstance(e, kind)), None)

    @property
    def started(self) -> RunStarted | None:
        """The run's first run_started event (None where the start is not in the trace)."""
        return next((e for e in self.events if isinstance(e, RunStarted)), None)

    @property
    def config(self) -> dict[str, Any]:
        """The configuration the run started with ({} where the start is not in the trace)."""
        return self.started.config if self.started else {}

    @property
    def started_at(self) -> float:
        """When the run started: its run_started event, else its first event (0.0: no event)."""
        first = self.started or (self.events[0] if self.events else None)
        return float(first.time or 0.0) if first else 0.0

    def since_start(self, event: Event) -> float:
        """Seconds from the run's start to an event."""
        return float(event.time or 0.0) - self.started_at

    @property
    def finished(self) -> RunFinished | None:
        """The run's last run_finished event (None for a run that has not finished)."""
        return self.last(RunFinished)

    @property
    def score(self) -> Score | None:
        """The last score event (None for a run not scored)."""
        return self.last(Score)

    @property
    def end_reason(self) -> str | None:
        """Why the run ended (None for a run that has not finished)."""
        return self.finished.reason if self.finished else None

    @property
    def submissions(self) -> list[Submission]:
        """The submission events, in order."""
        return self.of(Submission)

    @property
    def tool_calls(self) -> list[ToolCallEvent]:
        """The tool call events, in order."""
        return self.of(ToolCallEvent)

    @property
    def llm_calls(self) -> list[LLMCall]:
        """The model call events, in order."""
        return self.of(LLMCall)

    @property
    def tool_steps(self) -> set[int | None]:
        """The steps in which the agent called a tool."""
        return {e.step for e in self.tool_calls}

    @property
    def used_steps(self) -> int:
        """Steps the run used: as its budget recorded them, else the steps with a tool call."""
        if self.finished is not None:
            return self.finished.budget.get("used_steps", len(self.tool_steps))
        return len(self.tool_steps)

    @property
    def wall_s(self) -> float | None:
        """The run's wall-clock time as its budget recorded at the end (None: not finished)."""
        return self.finished.budget.get("used_s") if self.finished else None

    @property
    def span_s(self) -> float:
        """Seconds from the start to the last event (0.0 for an empty trace)."""
        return self.since_start(self.events[-1]) if self.events else 0.0

    @property
    def model_s(self) -> float:
        """Seconds spent waiting for the model (the latency of every model call)."""
        return sum(float(c.latency_s or 0.0) for c in self.llm_calls)

    def source_of(self, file: str | None) -> str | None:
        """The source file recorded with a submission file (None when none was)."""
        return next((e.source for e in self.submissions if e.file == file), None)

    def best_so_far(self, direction: str) -> list[Submission]:
        """The submissions that improved on every earlier valid dev score.

        Args:
            direction: the task's direction, "max" or "min" (`innolab.metrics.better`).

        Returns:
            The improving submissions, in order (the last is the best).

        Raises:
            MetricError: a direction that is neither "max" nor "min".
        """
        best: list[Submission] = []
        for event in self.submissions:
            previous = best[-1].dev_score if best else None
            if event.dev_valid and better(event.dev_score, previous, direction):  # type: ignore
                best.append(event)
        return best


def summary(run_dir: str | Path) -> str:
    """One line on a run: agent, task, steps, tool calls, submissions, final score, why it ended.

    Raises:
        TraceError: as `read_events`.
    """
    trace = Trace.read(run_dir)
    config, score, finished = trace.config, trace.score, trace.finished
    scored = (f"score {score.score:.10g} (ratio {score.ratio:.4g})"
              if score and score.valid and isinstance(score.score, int | float)
              else "no valid submission" if score else "not scored")
    end = f"ended: {finished.reason}" if finished else "not finished"
    cause = end_cause(trace)
    if cause:
        end += f" ({cause})"
    return (f"{config.get('agent', '?')} on {config.get('task', '?')}: {len(trace.tool_steps)} "
            f"steps, {len(trace.tool_calls)} tool calls, {len(trace.submissions)} submissions, "
            f"{scored}, {end}")


def end_cause(trace: Trace) -> str | None:
    """Why a run ended on an error, in words: what failed, where, and what to do.

    A run that ended `llm_error`: an outage (no connection, 5xx, timeouts) says the endpoint could
    not be reached, with the error and the attempts; a request the endpoint refused says what it
    refused: the key (401, 403: check the key's variable), the model's name (404: name one the
    endpoint serves) or the request itself (400 and other 4xx, with the server's message). A run
    that ended `agent_error`: the error's last line (its traceback is in the trace).

    Args:
        trace: The run's trace.

    Returns:
        E.g. "the model at 127.0.0.1:9 could not be reached: Connection error.; 5 attempts over
        7.9 s", read from the last failed model call, or "the agent failed: ValueError: boom";
        None for a run that ended with a result (or has not ended).
    """
    if trace.end_reason == "agent_error":
        return _agent_cause(trace.last(AgentError))
    if trace.end_reason != "llm_error":
        return None
    failed = next((c for c in reversed(trace.llm_calls) if c.failed), None)
    llm = trace.config.get("llm") or {}
    where = trace.config.get("endpoint") or "?"
    where = "the embedded model" if where == "embedded" else f"the model at {where}"
    if failed is None:
        return f"{where} could not be reached"
    last = failed.attempts[-1] if failed.attempts else {}
    error = str(last.get("error") or failed.error or "no error recorded")
    status, message = _http_status(last, error)
    key = llm.get("api_key_env") or "INNOLAB_LLM_API_KEY"
    model = llm.get("model") or "?"
    if status in (401, 403):
        return (f"{where} refused the key (HTTP {status}: {message}): check {key}, the "
                "endpoint's key")
    if status == 404:
        variable = f"{key.removesuffix('_API_KEY')}_MODEL"
        return (f"{where} does not know the model {model!r} (HTTP 404: {message}): name a model "
                f"it serves (--model or {variable}; its /v1/models lists them), or check the base "
                "URL's path")
    if status is not None and 400 <= status < 500 and status != 429:
        return f"{where} refused the request (HTTP {status}: {message})"
    if last:  # the endpoint's own words, without the SDK's class name
        error = error.split(": ", 1)[1] if ": " in error else error
    else:
        error = error.removeprefix("LLM call failed after ")
        error = error.split(": ", 1)[1] if error[:1].isdigit() and ": " in error else error
    tries = len(failed.attempts) or 1
    clock = ("; the run's time ran out while it was retried"
             if (failed.error or "").startswith("the run's time budget ran out") else "")
    return (f"{where} could not be reached: {error}; {tries} attempt{'s' * (tries > 1)} over "
            f"{failed.latency_s:.1f} s{clock}")


def _agent_cause(event: AgentError | None) -> str:
    """An agent's failure in one line: its error, and the exception its traceback ends with."""
    if event is None:
        return "the agent failed (no agent_error event recorded)"

    def lines(text: str | None) -> list[str]:
        return [line.strip() for line in (text or "").splitlines() if line.strip()]

    said = (lines(event.error) or ["no error recorded"])[-1][:300]
    raised = (lines(event.traceback) or [""])[-1][:300]
    if raised and raised not in said:
        said = f"{said}: {raised}"
    return f"the agent failed: {said} (its traceback is in the trace's agent_error event)"


def _http_status(attempt: dict[str, Any], error: str) -> tuple[int | None, str]:
    """An attempt's HTTP status and the server's message (None: no HTTP answer).

    Read from the attempt's `status` (recorded since the client records it) or from the SDK's
    "Error code: 401 - message" in its error.
    """
    import re

    found = re.search(r"Error code: (\d{3})(?: - (.*))?", error, re.DOTALL)
    status = attempt.get("status") or (int(found.group(1)) if found else None)
    message = (found.group(2) if found and found.group(2) else "").strip() or "no message"
    return (int(status) if status else None), message[:300]
