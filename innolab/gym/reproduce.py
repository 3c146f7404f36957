"""Whether a submission's stored program reproduces it, re-run alone in a fresh sandbox of its task.

`check_source` opens a new sandbox of the run's task (its visible files only) with the run's
runtime and image, writes the program's files (innolab.gym.provenance) into the workspace, runs
`python3 ENTRY ARGS...` in the program's folder, without network, under a stated time limit (by
default the run's longest code-tool time limit), and takes the file at the path the agent
submitted. Identical bytes reproduce; otherwise the caller's `same_outcome` (the hidden evaluator,
on the host: innolab.scoring passes it, the gym never imports it) decides; else the program differs.

Line coverage: the program runs with the capture hook's line tracer on (INNOLAB_LINES=1), its
statements written one a line (`one_statement_a_line`, so that a line that ran is a statement
that ran), and the check also returns which lines of each of its files ran
(`SourceCheck.executed`, of `SourceCheck.traced_program`): what novelty keeps of it
(innolab.novelty.deadcode.keep_executed). A coverage record is used only when every traced
process said at its exit that its tracer stayed in place and the program names nothing that
touches tracing (`TRACE_NAMES`, in its text, strings included); else `executed` is None and
`coverage_note` says why. Where the traced run does not reproduce the submission (tracing slows
pure-Python loops: a time-bounded search finds less), the program as stored is run again,
untraced, in a fresh sandbox, and that run decides the status.

Network: a docker sandbox has none; the local runtime runs the program in a network namespace of
its own (`unshare -rn`: loopback only) where the machine allows it, and says so in the detail where
it does not.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

from innolab import pyparse
from innolab.gym.capture import Capture
from innolab.gym.factory import open_sandbox
from innolab.gym.policy import RunConfig
from innolab.gym.provenance import Program, ProgramError, load_program
from innolab.gym.sandbox import ExecResult, Sandbox, SandboxError
from innolab.gym.tools import DEFAULT_TIMEOUTS
from innolab.rundir import FINAL_SUBMISSION, SUBMISSION_DIR, RunDir, RunDirError
from innolab.tasks.model import TaskError
from innolab.tasks.registry import get_task
from innolab.traces import Submission, ToolCallEvent, ToolResultEvent, Trace, TraceError, Validation

SourceStatus = Literal["reproduces", "differs", "timeout", "error"]
SOURCE_STATUSES: tuple[SourceStatus, ...] = ("reproduces", "differs", "timeout", "error")
CODE_TOOLS = ("bash", "python", "python_session")  # the tools whose time limit bounds a re-run
ISOLATE_NETWORK = ["unshare", "-rn"]  # a new user and network namespace: loopback only
DETAIL_CHARS = 500
LINES_ON = "INNOLAB_LINES=1"  # the capture hook's line tracer (innolab/gym/images/capture_site.py)
# a program that names any of these may switch the line tracer off or fake it: no coverage is used
TRACE_NAMES = re.compile(r"settrace|setprofile|gettrace|getprofile|f_trace|monitoring|_getframe|"
                         r"ctypes|cffi|tracemalloc|sitecustomize|INNOLAB_LINES")

# (recorded submission, reproduced file) -> (whether the hidden evaluator scores them alike, note)
SameOutcome = Callable[[Path, Path], tuple[bool, str]]


@dataclass(frozen=True)
class SourceCheck:
    """The outcome of re-running a submission's program in a fresh sandbox.

    Attributes:
        status: "reproduces" (the same file, or one the hidden evaluator scores identically),
            "differs", "timeout" (killed at the time limit) or "error" (no program, a sandbox
            that cannot start, a crash without the file...).
        seconds: The program's wall time in the sandbox (0.0 where it did not run).
        detail: What was run and what came of it.
        time_limit_s: The time limit the program ran under (None where it did not run).
        executed: The lines of each of the program's files that ran in the traced re-run
            (workspace-relative paths; None where no coverage can be trusted).
        coverage_note: How the coverage came about, or why there is none.
        traced_program: The program the traced re-run ran, its statements one a line (as
            `Program.to_dict`): `executed` numbers its lines. The status is that run's where it
            reproduced the submission, else that of the program as stored, run untraced.
    """

    status: SourceStatus
    seconds: float
    detail: str
    time_limit_s: float | None = None
    executed: dict[str, list[int]] | None = None
    coverage_note: str = "the program did not run"
    traced_program: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The check as plain data."""
        return asdict(self)


def exec_time_limit(config: RunConfig) -> float:
    """The run's exec time limit: the longest time limit of its code tools.

    Args:
        config: The run's configuration (its `tool_timeouts` over the tools' defaults).

    Returns:
        Seconds.
    """
    limits = {**DEFAULT_TIMEOUTS, **config.tool_timeouts}
    return float(max(limits[name] for name in CODE_TOOLS))


def submitted_path(trace: Trace, submission_file: str) -> str | None:
    """The workspace path the agent submitted a recorded submission from.

    The submit call of the submission's step whose file was recorded (its result says so); where
    a step recorded several, the one whose pristine verdict matches the submission's, else the
    one in the submission's place among them.

    Args:
        trace: The run's trace.
        submission_file: The submission's run-relative file (the final submission's copy,
            submission/submission.json, stands for the file the run named final).

    Returns:
        The workspace-relative path, or None where the trace does not say.
    """
    finished = trace.finished
    if finished is not None and finished.final_submission and \
            submission_file == f"{SUBMISSION_DIR}/{FINAL_SUBMISSION}":
        submission_file = finished.final_submission
    events = trace.submissions
    event = next((e for e in events if e.file == submission_file), None)
    if event is None:
        return None
    recorded = {e.call_id for e in trace.of(ToolResultEvent)
                if e.step == event.step and e.tool == "submit"
                and e.output.startswith("recorded a copy")}
    calls = [c for c in trace.of(ToolCallEvent)
             if c.step == event.step and c.tool == "submit" and c.call_id in recorded]
    if not calls:
        return None
    verdicts = {v.call_id: v for v in trace.of(Validation) if v.step == event.step}
    matching = [c for c in calls if _agrees(verdicts.get(c.call_id), event)]
    if len({str(c.arguments.get("path")) for c in matching}) == 1:
        return str(matching[0].arguments.get("path"))
    same_step = [e for e in events if e.step == event.step]
    place = same_step.index(event)
    return str(calls[min(place, len(calls) - 1)].arguments.get("path"))


def _agrees(verdict: Validation | None, event: Submission) -> bool:
    return verdict is not None and verdict.valid == event.dev_valid and \
        verdict.score == event.dev_score


def check_source(run_dir: Path, submission_file: str, source_file: str | None,
                 time_limit_s: float | None = None, *,
                 same_outcome: SameOutcome | None = None) -> SourceCheck:
    """Re-run a submission's stored program alone in a fresh sandbox and compare what it writes.

    Args:
        run_dir: The run folder.
        submission_file: The submission's run-relative file (as the trace records it).
        source_file: Its stored source text's run-relative file (its program beside it), or None.
        time_limit_s: The program's time limit (None: the run's exec time limit,
            `exec_time_limit`).
        same_outcome: Whether the hidden evaluator scores the recorded file and the reproduced one
            identically (run on the host); None: only identical bytes reproduce.

    Returns:
        The check; never raises for what the program or the sandbox does (status "error").

    Raises:
        ValueError: A time limit that is not a positive number.
    """
    if time_limit_s is not None and not time_limit_s > 0:
        raise ValueError(f"time_limit_s must be a positive number of seconds, got {time_limit_s!r}")
    folder = RunDir(Path(run_dir))
    try:
        config = RunConfig.from_dict(folder.read_config())
        trace = Trace.read(folder.root)
    except (RunDirError, TraceError, TypeError, ValueError) as error:
        return SourceCheck("error", 0.0, f"the run cannot be read: {error}"[:DETAIL_CHARS])
    limit = float(time_limit_s or exec_time_limit(config))
    if not source_file:
        return SourceCheck("error", 0.0, "no program was recorded with this submission")
    try:
        program = load_program(folder.root, source_file)
    except (ProgramError, OSError) as error:
        return SourceCheck("error", 0.0, f"the program cannot be read: {error}"[:DETAIL_CHARS])
    if not any(text.strip() for text in program.files.values()):
        return SourceCheck("error", 0.0, "no program was recorded with this submission")
    target = submitted_path(trace, submission_file)
    if target is None:
        return SourceCheck("error", 0.0, f"the trace names no submitted path for {submission_file}")
    try:
        recorded = folder.resolve(submission_file)
        expected = recorded.read_bytes()
        task = get_task(config.task, config.task_options)
    except (RunDirError, OSError, TaskError, ValueError) as error:
        return SourceCheck("error", 0.0, str(error)[:DETAIL_CHARS])
    normal = one_statement_a_line(program)
    checks: list[SourceCheck] = []
    for run, traced in ((normal, True), (program, False)):
        try:
            sandbox = open_sandbox(task, config.runtime, config.image)
        except (SandboxError, OSError) as error:
            why = f"no fresh {config.runtime} sandbox: {error}"
            return SourceCheck("error", 0.0, why[:DETAIL_CHARS])
        try:
            checks.append(_run_and_compare(sandbox, run, target, limit, expected, recorded,
                                           same_outcome, traced))
        finally:
            sandbox.close()
        if checks[0].status == "reproduces":
            break  # the traced run of the same statements decides; else the program as stored
    traced_check, decided = checks[0], checks[-1]
    return replace(decided, executed=traced_check.executed,
                   coverage_note=traced_check.coverage_note,
                   traced_program=normal.to_dict() if traced_check.executed else None)


def one_statement_a_line(program: Program) -> Program:
    """The program with each Python file written one statement a line (`ast.unparse`).

    What the traced re-run runs, so that a line's coverage is a statement's: a one-line body
    (`def f(x): return x`, `if c: a(); b()`) is then told apart from its header. The same
    statements, the same meaning; a file that does not parse stays as it is.

    Args:
        program: The stored program.

    Returns:
        The program, rewritten.
    """
    files = {}
    for name, text in program.files.items():
        try:
            tree = pyparse.parse(text)
            with pyparse.lock():
                files[name] = ast.unparse(tree) + "\n"
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            files[name] = text
    return Program(files=files, entry=program.entry, args=list(program.args), cwd=program.cwd)


def _coverage(sandbox: Sandbox, program: Program) -> tuple[dict[str, list[int]] | None, str]:
    """The lines of the program's files that ran, read from the sandbox's capture log.

    Returns:
        The lines by file (None where the record cannot be trusted) and how it came about.
    """
    if any(TRACE_NAMES.search(text) for text in program.files.values()):
        return None, ("not used: the program names something that can switch line tracing off "
                      "or fake it")
    capture = Capture()
    try:
        capture.read(sandbox)
    except SandboxError as error:
        return None, f"not read: {error}"
    if not capture.lines_intact:
        return None, "not complete: the program's process did not exit normally"
    if not all(capture.lines_intact):
        return None, "not used: a process's line tracer was replaced while it ran"
    unended = sorted(capture.lines_traced - set(capture.lines_ended))
    if unended:  # e.g. a pool worker ended by os._exit, or a log that filled up
        return None, (f"not complete: {len(unended)} traced process(es) did not say at their "
                      "exit that their tracer stayed in place")
    executed = {name: sorted(capture.executed.get(name, ())) for name in program.files}
    if not executed[program.entry]:
        return None, "not recorded: no line of the entry ran under the tracer"
    return executed, "line coverage of the re-run"


@dataclass(frozen=True)
class TracedRun:
    """One run of a program in a sandbox, with its line coverage.

    Attributes:
        result: What the command returned.
        ran: The command line, how its network was cut and its limit, in words.
        executed: The lines of each of the program's files that ran (None: no trusted coverage).
        coverage_note: How the coverage came about, or why there is none.
    """

    result: ExecResult
    ran: str
    executed: dict[str, list[int]] | None
    coverage_note: str


def run_program(sandbox: Sandbox, program: Program, limit: float,
                traced: bool = True) -> TracedRun:
    """Write a program into a (fresh) sandbox and run it once, its lines traced.

    Args:
        sandbox: The sandbox, holding the task's visible files only.
        program: The program.
        limit: Its time limit in seconds.
        traced: Whether the capture hook traces its lines.

    Returns:
        The run, with its line coverage where it can be trusted (`_coverage`).

    Raises:
        SandboxError: The program's files cannot be written.
    """
    sandbox.write_files({name: text.encode("utf-8") for name, text in program.files.items()})
    argv, line, network = _command(sandbox, program, traced)
    ran = f"ran `{line}` ({network}, limit {limit:g} s{', lines traced' if traced else ''})"
    result = sandbox.exec(argv, timeout_s=limit)
    if result.timed_out:
        return TracedRun(result, ran, None, "not complete: the run hit its time limit")
    if not traced:
        return TracedRun(result, ran, None,
                         "not recorded: the traced run hit its time limit, this one ran untraced")
    executed, note = _coverage(sandbox, program)
    return TracedRun(result, ran, executed, note)


def _run_and_compare(sandbox: Sandbox, program: Program, target: str, limit: float,
                     expected: bytes, recorded: Path,
                     same_outcome: SameOutcome | None, traced: bool = True) -> SourceCheck:
    """Write the program, run it under the limit, and compare the file it leaves at `target`."""
    try:
        run = run_program(sandbox, program, limit, traced)
    except SandboxError as error:
        return SourceCheck("error", 0.0, f"the program cannot be written: {error}", limit)
    seconds = round(run.result.duration_s, 3)
    if run.result.timed_out:
        return SourceCheck("timeout", seconds, f"{run.ran}: killed after {limit:g} s", limit,
                           coverage_note=run.coverage_note)
    found = _compare(sandbox, target, expected, recorded, same_outcome, run.result, run.ran,
                     limit)
    return SourceCheck(found.status, seconds, found.detail, limit, run.executed,
                       run.coverage_note)


def _compare(sandbox: Sandbox, target: str, expected: bytes, recorded: Path,
             same_outcome: SameOutcome | None, result: ExecResult, ran: str,
             limit: float) -> SourceCheck:
    """Compare the file the program left at `target` with the recorded submission."""
    seconds = round(result.duration_s, 3)
    try:
        produced = sandbox.read_file(target, max_bytes=max(len(expected) * 4, 50_000_000))
    except SandboxError as error:
        tail = (result.stderr or result.stdout).strip()[-300:]
        return SourceCheck("error", seconds, f"{ran}: exit code {result.returncode}, no "
                           f"{target} ({error}); {tail}"[:DETAIL_CHARS], limit)
    exit_note = f", exit code {result.returncode}" if result.returncode else ""
    if produced == expected:
        return SourceCheck("reproduces", seconds, f"{ran}: {target} identical{exit_note}", limit)
    if same_outcome is None:
        return SourceCheck("differs", seconds, f"{ran}: {target} differs in its bytes "
                           f"({len(produced)} vs {len(expected)}){exit_note}", limit)
    with tempfile.TemporaryDirectory(prefix="innolab-reproduced-") as scratch:
        copy = Path(scratch) / recorded.name
        copy.write_bytes(produced)
        same, note = same_outcome(recorded, copy)
    status: SourceStatus = "reproduces" if same else "differs"
    return SourceCheck(status, seconds, f"{ran}: {target} differs in its bytes; hidden evaluator: "
                       f"{note}{exit_note}"[:DETAIL_CHARS], limit)


def _command(sandbox: Sandbox, program: Program,
             traced: bool = False) -> tuple[list[str], str, str]:
    """The argument list that runs the program, its command line, and how its network is cut."""
    cwd = posixpath.normpath(program.cwd or ".")
    line = shlex.join(program.command())
    line = line if cwd == "." else f"cd {shlex.quote(cwd)} && {line}"
    argv = ["/bin/bash", "-c", f"export {LINES_ON}; {line}" if traced else line]
    if sandbox.runtime == "docker":
        return argv, line, "no network"
    probe = sandbox.exec([*ISOLATE_NETWORK, "true"], timeout_s=10)
    if probe.returncode == 0:
        return [*ISOLATE_NETWORK, *argv], line, "no network"
    return argv, line, "network not isolated: unshare is refused here"
