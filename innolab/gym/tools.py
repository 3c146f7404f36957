"""Agent tools as OpenAI tool schemas, run against a sandbox: bash, python, files, validate, submit.

Python runs one-shot or in a persistent session.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from innolab.gym.sandbox import Sandbox, SandboxError
from innolab.gym.session import PythonSession, SessionError
from innolab.gym.validator import Validator

MAX_OUTPUT_CHARS = 8000
SUBMISSION_PATH = "submission.json"


def truncate(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Keep the head and the tail of a long output, with a marker saying how much was cut.

    Args:
        text: The output.
        limit: The most characters kept.

    Returns:
        The text itself when within the limit; else its first and last limit/2 characters around
        a marker.
    """
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 2], text[-limit // 2 :]
    return f"{head}\n[... truncated {len(text) - len(head) - len(tail)} characters ...]\n{tail}"


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool.

    Attributes:
        id: The call's id.
        name: The tool's name (one of TOOL_NAMES).
        arguments: The call's arguments.
        source: On a submit call, the program that wrote the candidate as the scaffold knows it
            (e.g. AIDE's node); bookkeeping for the run record, never sent to the tool.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    source: str | None = None


@dataclass
class ToolResult:
    """What a tool call returned.

    Attributes:
        call_id: The call's id.
        name: The tool's name.
        output: The output shown to the agent (truncated).
        ok: Whether the call succeeded (exit code 0, a valid candidate...).
        duration_s: The call's wall time.
        extra: Tool-specific fields for the trace (returncode, verdict, status...).
    """

    call_id: str
    name: str
    output: str
    ok: bool
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def _schema(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description, "parameters": {
            "type": "object", "properties": properties, "required": required,
            "additionalProperties": False}}}


_PATH = {"type": "string", "description": "path relative to the workspace"}
_TIMEOUT = {"type": "number", "description": "seconds before the command is killed", "minimum": 1}

TOOL_SPECS: list[dict[str, Any]] = [
    _schema("bash", "Run a bash command in the workspace.",
            {"command": {"type": "string"}, "timeout": _TIMEOUT}, ["command"]),
    _schema("python", "Run Python code in the workspace (python3 -c).",
            {"code": {"type": "string"}, "timeout": _TIMEOUT}, ["code"]),
    _schema("python_session",
            "Run Python code in this run's persistent interpreter: variables, imports and "
            "functions defined by one call are there in the next. An action past its time limit "
            "is interrupted (KeyboardInterrupt) and the interpreter keeps its state.",
            {"code": {"type": "string"}, "timeout": _TIMEOUT}, ["code"]),
    _schema("read_file", "Read a text file.", {"path": _PATH}, ["path"]),
    _schema("write_file", "Create or overwrite a file.",
            {"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
    _schema("edit_file", "Replace one exact occurrence of old with new in a file.",
            {"path": _PATH, "old": {"type": "string"}, "new": {"type": "string"}},
            ["path", "old", "new"]),
    _schema("list_files", "List files under a folder of the workspace.", {"path": _PATH}, []),
    _schema("validate",
            "Check a candidate with the task's pristine validator (format, constraints and its "
            "score); the copy of validate.py in the workspace is for reading and running by hand, "
            "it scores nothing.",
            {"path": _PATH}, ["path"]),
    _schema("submit",
            "Record a copy of a candidate as a submission; the pristine validator checks it now. "
            "After the run, the submission with the best validator score is scored by the hidden "
            "evaluator (the last submission when none is valid).",
            {"path": _PATH}, ["path"]),
]
TOOL_NAMES = [spec["function"]["name"] for spec in TOOL_SPECS]
DEFAULT_TIMEOUTS = {"bash": 120.0, "python": 120.0, "python_session": 120.0, "validate": 60.0,
                    "submit": 60.0}


class ToolError(ValueError):
    """A tool call with an unknown name or arguments that break its schema."""


def check_arguments(call: ToolCall) -> None:
    """Check a tool call against its tool's schema.

    Args:
        call: The call.

    Raises:
        ToolError: The tool is unknown, an argument is missing or unknown, or a value has the
            wrong type (numbers must be positive).
    """
    spec = next((s["function"] for s in TOOL_SPECS if s["function"]["name"] == call.name), None)
    if spec is None:
        raise ToolError(f"unknown tool {call.name!r}; tools: {', '.join(TOOL_NAMES)}")
    parameters = spec["parameters"]
    missing = [k for k in parameters["required"] if k not in call.arguments]
    extra = [k for k in call.arguments if k not in parameters["properties"]]
    if missing or extra:
        raise ToolError(f"{call.name}: missing arguments {missing}, unknown arguments {extra}")
    for key, value in call.arguments.items():
        expected = parameters["properties"][key]["type"]
        if expected == "string" and not isinstance(value, str):
            raise ToolError(f"{call.name}: argument {key!r} must be a string")
        if expected == "number" and (not isinstance(value, int | float) or isinstance(value, bool)
                                     or value <= 0):
            raise ToolError(f"{call.name}: argument {key!r} must be a positive number")


class Toolbox:
    """Runs tool calls against one sandbox; blocking (the dispatcher runs calls in threads).

    Attributes:
        sandbox: The sandbox.
        validator: The pristine validator behind validate and submit.
        on_submit: Called with (content, verdict, call id) on each submit, or None.
        session: The persistent interpreter, started by the first python_session call.
    """

    def __init__(self, sandbox: Sandbox, validator: Validator,
                 on_submit: Callable[..., None] | None = None,
                 session_replay: list[str] | None = None) -> None:
        """Make a toolbox for one sandbox.

        Args:
            sandbox: The sandbox.
            validator: The pristine validator.
            on_submit: Called with (content, verdict, call id) on each submit, or None.
            session_replay: The python_session code run before a resume, rerun on its start.
        """
        self.sandbox = sandbox
        self.validator = validator
        self.on_submit = on_submit
        # started by the first python_session call
        self.session = PythonSession(sandbox, replay=session_replay)

    def close(self) -> None:
        """Stop what the toolbox started in the sandbox (the persistent interpreter)."""
        self.session.close()

    def run(self, call: ToolCall, timeout_s: float) -> ToolResult:
        """Run one tool call.

        Args:
            call: The call.
            timeout_s: The most seconds the call may take (a call's own timeout may be shorter).

        Returns:
            The result; a bad call or a sandbox error is reported in it as "error: ...", never
            raised.
        """
        try:
            check_arguments(call)
            extra_args = {"call_id": call.id} if call.name == "submit" else {}
            output, ok, extra = getattr(self, f"_{call.name}")(
                timeout_s=timeout_s, **call.arguments, **extra_args)
        except (ToolError, SandboxError, UnicodeDecodeError) as error:
            return ToolResult(call.id, call.name, f"error: {error}", False)
        return ToolResult(call.id, call.name, truncate(output), ok, extra=extra)

    def _command(
        self, argv: list[str] | str, timeout_s: float
    ) -> tuple[str, bool, dict[str, Any]]:
        result = self.sandbox.exec(argv, timeout_s=timeout_s)
        text = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
        if result.timed_out:
            text += f"\n[killed after {timeout_s:g} s]"
        return (f"{text}\n[exit code {result.returncode}]", result.returncode == 0,
                {"returncode": result.returncode})

    def _bash(
        self, command: str, timeout_s: float, timeout: float | None = None
    ) -> tuple[str, bool, dict]:
        return self._command(command, min(timeout or timeout_s, timeout_s))

    def _python(
        self, code: str, timeout_s: float, timeout: float | None = None
    ) -> tuple[str, bool, dict]:
        return self._command(["python3", "-c", code], min(timeout or timeout_s, timeout_s))

    def _python_session(
        self, code: str, timeout_s: float, timeout: float | None = None
    ) -> tuple[str, bool, dict]:
        try:
            return self.session.run(code, min(timeout or timeout_s, timeout_s))
        except SessionError as error:
            return f"error: {error}", False, {}

    def _read_file(self, path: str, timeout_s: float) -> tuple[str, bool, dict]:
        return self.sandbox.read_file(path).decode("utf-8"), True, {}

    def _write_file(self, path: str, content: str, timeout_s: float) -> tuple[str, bool, dict]:
        self.sandbox.write_file(path, content.encode("utf-8"))
        return f"wrote {len(content)} characters to {path}", True, {}

    def _edit_file(
        self, path: str, old: str, new: str, timeout_s: float
    ) -> tuple[str, bool, dict]:
        text = self.sandbox.read_file(path).decode("utf-8")
        count = text.count(old)
        if count != 1:
            return (f"error: {path} contains the old text {count} times; "
                    "it must occur exactly once", False, {})
        self.sandbox.write_file(path, text.replace(old, new, 1).encode("utf-8"))
        return f"edited {path}", True, {}

    def _list_files(self, timeout_s: float, path: str = ".") -> tuple[str, bool, dict]:
        return self._command(
            f"find {shlex.quote(path)} -maxdepth 3 -not -path '*/.*' | sort | head -500", timeout_s)

    def _check(self, content: bytes, timeout_s: float) -> tuple[str, bool, dict]:
        verdict = self.validator.check(content, timeout_s)
        return json.dumps(verdict), bool(verdict["valid"]), {"verdict": verdict}

    def _validate(self, path: str, timeout_s: float) -> tuple[str, bool, dict]:
        return self._check(self.sandbox.read_file(path, max_bytes=50_000_000), timeout_s)

    def _submit(
        self, path: str, timeout_s: float, call_id: str | None = None
    ) -> tuple[str, bool, dict]:
        content = self.sandbox.read_file(path, max_bytes=50_000_000)
        output, ok, extra = self._check(content, timeout_s)
        if self.on_submit:
            self.on_submit(content.decode("utf-8", errors="replace"), extra["verdict"], call_id)
        return (f"recorded a copy of {path} as a submission; pristine validator: {output}", ok,
                extra)
