"""The run loop's state (step, budget, submissions, last results, code log) and its checkpoint form.

`RunState.to_checkpoint()` is what a run folder's checkpoint/state.json holds (beside the name of
the workspace tar, which innolab.gym.run adds); `RunState.from_checkpoint` reads it back, including
checkpoints written before the state was typed. One step's submissions in flight (`pending`,
`sources`) and the count of idle steps live within a process only: a resume starts them anew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from innolab.gym.budget import Budget
from innolab.gym.capture import Capture
from innolab.gym.tools import ToolCall, ToolResult
from innolab.metrics import best_index


class CheckpointError(ValueError):
    """A checkpoint's state that cannot be read; the message names the field."""


@dataclass
class SubmissionRecord:
    """A recorded submission.

    Its file and the code that wrote it (run-relative paths), and the pristine validator's verdict
    on it (the dev score).
    """

    file: str
    source: str | None
    dev_valid: bool
    dev_score: float | None
    dev_errors: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SubmissionRecord:
        """A record as checkpointed (the earliest checkpoints said `valid` and kept no source)."""
        valid = data["dev_valid"] if "dev_valid" in data else data.get("valid", False)
        return cls(file=data["file"], source=data.get("source"), dev_valid=bool(valid),
                   dev_score=data.get("dev_score"), dev_errors=list(data.get("dev_errors", [])))


CodeKind = Literal["python", "session", "bash", "script"]


@dataclass
class CodeAction:
    """One code action of the run.

    Python code, code for the persistent interpreter (`session`), a bash command, or the content of
    a workspace script (`file`) a command ran, as the capture saw it run (innolab.gym.capture).
    `failed`: the action's tool call did not succeed.
    """

    step: int
    kind: CodeKind
    code: str
    file: str | None = None
    failed: bool = False

    def to_json(self) -> dict[str, Any]:
        """As checkpointed: `file` only for a script, `failed` only when the action failed."""
        where = {"file": self.file} if self.file is not None else {}
        failed = {"failed": True} if self.failed else {}
        return {"step": self.step, "kind": self.kind, **where, "code": self.code, **failed}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CodeAction:
        """A code action as `to_json` wrote it.

        Args:
            data: the checkpointed code action.

        Returns:
            The code action.
        """
        return cls(step=data["step"], kind=data["kind"], code=data["code"], file=data.get("file"),
                   failed=bool(data.get("failed", False)))


@dataclass
class Candidate:
    """A submission accepted by the submit tool during a step, recorded at the step's end.

    Its content, the pristine validator's verdict, the program that wrote it as the scaffold knows
    it (`source`, AIDE's node; None for the others) and the submit call's id.
    """

    content: str
    verdict: dict[str, Any]
    source: str | None
    call_id: str | None = None


@dataclass
class RunState:
    """What the run loop carries from step to step, and what a checkpoint keeps of it.

    `policy` and `trace` are the policy's state and the trace's position as of the last checkpoint
    (what a resume restores); `idle` counts consecutive steps without a tool call; `pending` holds
    the step's accepted submissions until they are recorded, `sources` the program the scaffold
    names behind each of the step's submit calls (None where it names none); `capture` what the
    sandbox's Python processes ran (innolab.gym.capture; a resume starts it anew, with the new
    sandbox).
    """

    budget: Budget
    step: int = 0
    submissions: list[SubmissionRecord] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    code_log: list[CodeAction] = field(default_factory=list)
    policy: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, int] = field(default_factory=dict)
    idle: int = 0
    pending: list[Candidate] = field(default_factory=list)
    sources: dict[str, str | None] = field(default_factory=dict)
    capture: Capture = field(default_factory=Capture)

    def to_checkpoint(self) -> dict[str, Any]:
        """The state as checkpoint/state.json holds it.

        Plain JSON data (the workspace tar is named beside it).
        """
        return {"step": self.step, "policy": self.policy, "budget": self.budget.as_dict(),
                "submissions": [asdict(s) for s in self.submissions], "trace": self.trace,
                "code_log": [e.to_json() for e in self.code_log],
                "results": [asdict(r) for r in self.results]}

    @classmethod
    def from_checkpoint(cls, data: Mapping[str, Any]) -> RunState:
        """The state of a checkpoint/state.json.

        Written by `to_checkpoint` or before the state was typed.

        Args:
            data: the checkpoint's JSON data (a checkpoint without a code log has an empty one).

        Returns:
            The state, with nothing pending and no idle steps counted.

        Raises:
            CheckpointError: a field is missing or does not hold what it should (named).
        """
        return cls(
            budget=_read(data, "budget", lambda v: Budget(**v)),
            step=_read(data, "step", int),
            submissions=_read(data, "submissions",
                              lambda v: [SubmissionRecord.from_json(s) for s in v]),
            results=_read(data, "results", lambda v: [ToolResult(**r) for r in v]),
            code_log=_read(data, "code_log", lambda v: [CodeAction.from_json(e) for e in v], []),
            policy=_read(data, "policy", dict),
            trace=_read(data, "trace", lambda v: {"seq": int(v["seq"]), "bytes": int(v["bytes"])}),
        )

    def on_submit(self, content: str, verdict: dict[str, Any], call_id: str | None = None) -> None:
        """The submit tool accepted a file.

        Keep it, with the code behind its call, until the step ends.
        """
        self.pending.append(Candidate(content, verdict, self.sources.get(call_id or ""), call_id))

    def session_code(self) -> list[str]:
        """The code sent to the persistent interpreter so far.

        A resume replays it to rebuild the interpreter.
        """
        return [e.code for e in self.code_log if e.kind == "session"]


_REQUIRED: Any = object()


def _read(data: Mapping[str, Any], name: str, read: Callable[[Any], Any],
          default: Any = _REQUIRED) -> Any:
    """One field of a checkpoint's state, read by `read`.

    A missing or malformed one is a CheckpointError.
    """
    if name not in data and default is _REQUIRED:
        raise CheckpointError(f"checkpoint state: field '{name}' is missing")
    try:
        return read(data.get(name, default))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise CheckpointError(f"checkpoint state, field '{name}': malformed ({error})") from None


def code_actions(calls: Sequence[ToolCall], step: int) -> list[CodeAction]:
    """The code a step is about to run: one action per python, python_session or bash call.

    Args:
        calls: the step's tool calls.
        step: the step.

    Returns:
        The code actions, in the calls' order.
    """
    entries: list[CodeAction] = []
    for call in calls:
        if call.name in ("python", "python_session"):
            kind: CodeKind = "python" if call.name == "python" else "session"
            entries.append(CodeAction(step, kind, str(call.arguments.get("code", ""))))
        elif call.name == "bash":
            entries.append(CodeAction(step, "bash", str(call.arguments.get("command", ""))))
    return entries


def script_actions(capture: Capture, since: int, step: int) -> list[CodeAction]:
    """The workspace scripts that commands ran, as the capture saw them run.

    Any spelling (`cd x && python y.py`, `timeout 60 python3 -u y.py`, a script started by another
    program); the persistent interpreter's own are its actions, not scripts.

    Args:
        capture: the sandbox's capture.
        since: the log position from which processes count (those of this step).
        step: the step.

    Returns:
        One `script` action per outermost process that ran a workspace file, with the file's text
        as it ran.
    """
    entries = []
    for process in capture.processes:
        run = process.run or {}
        if process.start < since or process.parent is not None or process.session \
                or process.cell is not None or run.get("how") != "file":
            continue
        path = run.get("path")
        text = process.activity.code.get(path) if isinstance(path, str) else None
        if text is not None:
            entries.append(CodeAction(step, "script", text, file=path))
    return entries


def program_text(code_log: Sequence[CodeAction]) -> str:
    """The run's code actions up to now, in order.

    As one Python text (bash commands as comments).
    """
    parts = []
    for entry in code_log:
        if entry.kind == "bash":
            parts.append("\n".join(f"# bash: {line}" for line in entry.code.splitlines()))
        else:
            label = f"{entry.kind} {entry.file or ''}".strip()
            parts.append(f"# --- step {entry.step}: {label}\n{entry.code}")
    return "\n\n".join(parts) + ("\n" if parts else "")


def best_submission(submissions: Sequence[SubmissionRecord],
                    direction: str) -> SubmissionRecord | None:
    """The submission with the best pristine dev score under `direction`.

    The first of equal ones; None when none is valid with a score.
    """
    index = best_index([s.dev_score if s.dev_valid else None for s in submissions], direction)
    return None if index is None else submissions[index]
