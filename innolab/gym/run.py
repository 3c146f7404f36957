"""The run loop: policy steps → concurrent tool calls → trace → checkpoint; resume; the final pick.

One `step` advances a run's `RunState` (innolab.gym.runstate) by one policy step and checkpoints it.
The loop never scores: it records every submission with its pristine dev score and, at the end,
names the final submission (the best by that score). V, G, ratio and N come later, once, from
innolab.scoring, outside the gym.
"""

from __future__ import annotations

import inspect
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from innolab.gym import checkpoint
from innolab.gym.budget import Budget
from innolab.gym.dispatcher import dispatch_sync
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.leftovers import reap
from innolab.gym.policy import AgentFailed, Observation, Policy, RunConfig
from innolab.gym.provenance import (
    CODE_LOG_ENTRY,
    SCAFFOLD_ENTRY,
    Program,
    ProgramError,
    build_program,
    program_file,
    save_program,
)
from innolab.gym.runstate import (
    Candidate,
    CheckpointError,
    CodeAction,
    RunState,
    SubmissionRecord,
    best_submission,
    code_actions,
    program_text,
    script_actions,
)
from innolab.gym.sandbox import Sandbox, SandboxError
from innolab.gym.task import GymTask
from innolab.gym.tools import Toolbox, ToolCall
from innolab.llm.client import LLMError
from innolab.rundir import RunDir, runs_root, write_atomic
from innolab.runlock import RunLock, still_held
from innolab.tasks.registry import get_task
from innolab.traces import (
    AgentError,
    Checkpoint,
    LLMCall,
    ResearchLog,
    RunFinished,
    RunResumed,
    RunStarted,
    Submission,
    ToolCallEvent,
    ToolResultEvent,
    Trace,
    TraceWriter,
    Validation,
    truncate_to,
)


class RunError(RuntimeError):
    """A run that cannot start or resume; the message says why."""


def new_run_id(config: RunConfig) -> str:
    """A fresh run folder name: time, agent, task and a random suffix."""
    task = re.sub(r"[^\w.-]+", "-", config.task).strip("-")
    return time.strftime("%Y%m%d-%H%M%S") + f"-{config.agent}-{task}-{secrets.token_hex(3)}"


def create_run(config: RunConfig, run_dir: Path | None = None) -> Path:
    """A new run directory with its config.json; nothing runs yet.

    Args:
        config: the run's resolved configuration.
        run_dir: where the run lives (default: a new folder under the runs root).

    Returns:
        The run directory.

    Raises:
        RunError: the folder already holds a run.
    """
    get_task(config.task, config.task_options)  # fail early on an unknown task
    folder = RunDir(Path(run_dir or runs_root() / new_run_id(config)))
    folder.root.mkdir(parents=True, exist_ok=True)
    if folder.exists():
        raise RunError(f"{folder.root} already holds a run")
    folder.config.write_text(json.dumps(config.as_dict(), indent=2) + "\n", encoding="utf-8")
    return folder.root


def load_config(run_dir: Path) -> RunConfig:
    """The configuration of a run directory.

    Raises:
        RunError: the folder holds no run, or its config.json breaks the schema.
    """
    folder = RunDir(run_dir)
    if not folder.exists():
        raise RunError(f"{run_dir} is not a run directory (no {folder.config.name})")
    try:
        return RunConfig.from_dict(folder.read_config())
    except (TypeError, ValueError) as error:
        raise RunError(f"{folder.config}: {error}") from None


# Builds a run's policy from its configuration and folder (innolab.agents.registry.build_policy:
# the runner hands it over; the gym imports no agent).
PolicyFactory = Callable[[RunConfig, Path], Policy]


# ------------------------------------------------------------------------------------- checkpoints


def save_checkpoint(run_dir: Path, state: RunState, workspace: bytes) -> None:
    """Checkpoint the run atomically from a workspace tar (the form of earlier checkpoints).

    The workspace tar is written under a new name, then state.json replaced in one rename, then
    the old tars removed. The run loop checkpoints through `checkpoint_sandbox`, which costs what
    changed.
    """
    folder = RunDir(run_dir)
    tar = folder.workspace_tar(state.step)
    write_atomic(tar, workspace)
    data = {**state.to_checkpoint(), "workspace": tar.name}
    write_atomic(folder.state, json.dumps(data).encode())
    for old in folder.checkpoint_dir.glob("workspace-*.tar"):
        if old.name != tar.name:
            old.unlink()


def checkpoint_sandbox(run_dir: Path, state: RunState, sandbox: Sandbox) -> checkpoint.Saved:
    """Checkpoint the run atomically: the workspace's manifest over its content store, then state.

    Only what changed since the last checkpoint is read and stored (innolab.gym.checkpoint); the
    new manifest is written, state.json replaced in one rename, then older manifests and the
    contents only they needed removed.

    Args:
        run_dir: The run folder.
        state: The run's state.
        sandbox: The run's sandbox.

    Returns:
        What the checkpoint wrote.
    """
    folder = RunDir(run_dir)
    folder.checkpoint_dir.mkdir(exist_ok=True)
    previous = None
    if folder.state.is_file():
        name = json.loads(folder.state.read_text(encoding="utf-8")).get("workspace", "")
        if name.endswith(".json") and (folder.checkpoint_dir / name).is_file():
            previous = checkpoint.load_entries(folder.checkpoint_dir / name)
    saved = checkpoint.save(sandbox, folder.checkpoint_dir, state.step, previous)
    data = {**state.to_checkpoint(), "workspace": saved.manifest.name}
    write_atomic(folder.state, json.dumps(data).encode())
    checkpoint.prune(folder.checkpoint_dir, saved.manifest)
    return saved


def load_checkpoint(run_dir: Path) -> tuple[RunState, bytes] | None:
    """The last checkpoint's state and workspace tar (None when the run has none).

    Raises:
        RunError: the checkpoint cannot be read; the message names the file and the field.
    """
    folder = RunDir(run_dir)
    if not folder.state.is_file():
        return None
    data = json.loads(folder.state.read_text(encoding="utf-8"))
    try:
        state = RunState.from_checkpoint(data)
    except CheckpointError as error:
        raise RunError(f"{folder.state}: {error}") from None
    stored = folder.checkpoint_dir / data["workspace"]
    if stored.suffix != ".json":
        return state, stored.read_bytes()
    try:
        return state, checkpoint.as_tar(folder.checkpoint_dir, checkpoint.load_entries(stored))
    except (OSError, ValueError, TypeError) as error:
        raise RunError(f"{stored}: the checkpointed workspace cannot be read ({error})") from None


# ---------------------------------------------------------------------------------------- the loop


@dataclass
class RunContext:
    """What a run's steps act with, fixed for the run.

    Its folder, configuration, task, policy, sandbox, tools and trace.
    """

    folder: RunDir
    config: RunConfig
    task: GymTask
    policy: Policy
    sandbox: Sandbox
    toolbox: Toolbox
    trace: TraceWriter


def execute(run_dir: Path, build_policy: PolicyFactory, resume: bool = False,
            show_progress: bool = True, wait: bool = True) -> dict[str, Any]:
    """Run (or resume) the run in run_dir until the policy finishes or a budget is spent.

    Name its final submission. Scoring is innolab.scoring's job, outside the gym. The run's lock
    (innolab.runlock) is held throughout: one executor per run; a second waits until the first
    ends and then finds the run finished (or, with wait False, is refused with the holder named).

    Args:
        run_dir: a run directory made by `create_run`.
        build_policy: builds the run's policy (innolab.agents.registry.build_policy).
        resume: continue from the last checkpoint (a finished run is only reported).
        show_progress: show a progress bar.
        wait: wait for another executor of the run (False: raise innolab.runlock.RunBusy).

    Returns:
        The outcome: run_dir, reason, final_submission, dev_valid, dev_score (and already_finished
        when a finished run was resumed).

    Raises:
        RunError: the run folder, its configuration or its checkpoint cannot be read, or its
            policy cannot be built.
        innolab.runlock.RunBusy: another executor holds the run and wait is False.
    """
    folder = RunDir(run_dir)
    load_config(folder.root)  # not a run folder: said before a lock file is made in it
    with RunLock(folder.root, wait=wait):
        return _execute(folder, build_policy, resume, show_progress)


def _execute(folder: RunDir, build_policy: PolicyFactory, resume: bool,
             show_progress: bool) -> dict[str, Any]:
    """`execute` with the run's lock held."""
    config = load_config(folder.root)
    task = get_task(config.task, config.task_options)
    try:
        policy = build_policy(config, folder.root)
    except ValueError as error:  # an agent that is not registered or does not load
        raise RunError(str(error)) from None
    if not resume and (folder.trace.exists() or folder.state.exists()):
        raise RunError(f"{folder.root} has run already (its trace or checkpoint exists): resume "
                       f"it (innolab run --resume {folder.root}), never start it again")
    finished = _finished(folder) if resume else None
    if finished is not None:  # resuming a finished run changes nothing and reports its outcome
        return {"run_dir": str(folder.root), **_outcome(finished), "already_finished": True}
    checkpoint = load_checkpoint(folder.root) if resume else None
    if resume and checkpoint is None and folder.trace.exists():
        folder.trace.unlink()  # killed before its first checkpoint: start over
    state = RunState(Budget(config.wall_clock_s, config.max_steps, config.max_tokens,
                            config.max_cost_usd))
    try:
        sandbox = open_sandbox(task, config.runtime, config.image)
    except SandboxError as error:  # no engine, no image, a GPU asked of an engine without one
        raise RunError(f"the {config.runtime} sandbox cannot start: {error}") from None
    # what ended runs left (this one's, after a kill, included): folders, processes, containers,
    # volumes
    reap(docker_client=sandbox.client)
    validator = open_validator(task, sandbox)
    try:
        if checkpoint is not None:
            state, workspace = checkpoint
            try:
                policy.load_state(state.policy)
            except ValueError as error:
                raise RunError(f"{folder.state}: field 'policy': {error}") from None
            truncate_to(folder.root, state.trace)
            trace = TraceWriter(folder.root, next_seq=state.trace["seq"])
            sandbox.restore(workspace)
            state.budget.restart()  # the clock runs on from the checkpoint's used time
            trace.emit(RunResumed(step=state.step, from_checkpoint=state.step,
                                  note=getattr(policy, "resume_note", None)))
            entries = [e.entry for e in Trace.read(folder.root).of(ResearchLog)]
            if entries or folder.research_log.exists():  # the trace was cut back: so is the log
                folder.research_log.write_text("".join(entries), encoding="utf-8")
        else:
            trace = TraceWriter(folder.root)
            trace.emit(RunStarted(step=0, config=config.as_dict()))
        # after a resume, the persistent interpreter is rebuilt by replaying its recorded actions
        toolbox = Toolbox(sandbox, validator, session_replay=state.session_code())
        run = RunContext(folder, config, task, policy, sandbox, toolbox, trace)
        reason: str | None = None
        try:
            reason = _steps(run, state, show_progress)
        finally:
            try:
                closing = getattr(policy, "close", None)
                if closing is not None:  # an external framework ends with its run, told why
                    if "reason" in inspect.signature(closing).parameters:
                        closing(reason=reason)
                    else:
                        closing()
                    for event in getattr(policy, "flush_events", list)():
                        trace.emit(event.model_copy(update={"step": None}))
                        if isinstance(event, LLMCall):  # its usage counts, as a step's does
                            state.budget.spend(tokens=event.prompt_tokens +
                                               event.completion_tokens, cost_usd=event.cost_usd)
            finally:
                toolbox.close()
        final = _final_submission(folder, state.submissions, task.direction)
        # what the task keeps of the final workspace
        artefacts = task.collect(sandbox, folder.root, config)
        still_held(folder.root)
        event = trace.emit(RunFinished(step=None, reason=reason, budget=state.budget.as_dict(),
                                       artefacts=artefacts, **final))
        trace.close()
        return {"run_dir": str(folder.root), **_outcome(event)}
    finally:
        try:
            sandbox.close()
        finally:
            validator.close()


OUTCOME = ("reason", "final_submission", "dev_valid", "dev_score")


def _outcome(finished: RunFinished) -> dict[str, Any]:
    return {key: getattr(finished, key) for key in OUTCOME}


def _steps(run: RunContext, state: RunState, show_progress: bool) -> str:
    """Steps until the run ends.

    Returns why it ended. A progress bar shows the steps and the best dev score.
    """
    run.toolbox.on_submit = state.on_submit
    bar = tqdm(total=run.config.max_steps, initial=state.step, unit="step",
               desc=f"{run.config.agent} on {run.task.id}", disable=not show_progress)
    try:
        while (reason := step(run, state)) is None:
            bar.update(1)
            best = best_submission(state.submissions, run.task.direction)
            if best:
                bar.set_postfix(best=best.dev_score)
        return reason
    finally:
        bar.close()


def step(run: RunContext, state: RunState) -> str | None:
    """Advance the run by one step.

    The policy acts on the last results, its tool calls run concurrently, the step's submissions are
    recorded, and the state is checkpointed with the workspace.

    Args:
        run: what the step acts with.
        state: the run's state, advanced in place.

    Returns:
        None after a checkpointed step; otherwise why the run ends: a spent budget ("wall_clock",
        "steps", "tokens", "cost"), "agent_finished", "stalled" or "llm_error" (the model stayed
        unreachable after its retries, refused the request, or was failing when the clock ran
        out: LLMError.model_failed).
    """
    budget, trace, task = state.budget, run.trace, run.task
    reason = budget.exhausted()
    if reason:
        return reason
    observation = Observation(state.step, task.description, state.results, budget.remaining_s(),
                              task.direction, task.workspace_rules, budget.remaining_tokens(),
                              budget.remaining_cost_usd())
    try:
        action = run.policy.step(observation)
    except LLMError as error:  # the model stayed unreachable after its retries: end cleanly
        trace.emit(LLMCall(step=state.step, failed=True, cached=False, error=str(error)[:500],
                           **error.sent))
        # a model that failed ends the run as llm_error even where the clock ran out meanwhile (a
        # failure to retry, not a result); the clock that ran out while it answered ends it so
        return "llm_error" if error.model_failed else (budget.exhausted() or "llm_error")
    except AgentFailed as error:  # an external framework raised or exited with an error
        budget.spend(tokens=error.tokens, cost_usd=error.cost_usd)  # its model calls' usage
        for event in getattr(error, "events", []):
            trace.emit(event.model_copy(update={"step": state.step}))
        trace.emit(AgentError(step=state.step, error=str(error)[:2000],
                              traceback=(error.traceback or "")[-20000:] or None))
        return "agent_error"
    budget.spend(tokens=action.tokens, cost_usd=action.cost_usd)
    for event in action.events:
        trace.emit(event.model_copy(update={"step": state.step}))
        if isinstance(event, ResearchLog):
            with run.folder.research_log.open("a", encoding="utf-8") as log:
                log.write(event.entry)
    if action.done:
        return "agent_finished"
    state.idle = 0 if action.tool_calls else state.idle + 1
    if run.config.stall_steps and state.idle >= run.config.stall_steps:
        return "stalled"
    for call in action.tool_calls:
        trace.emit(ToolCallEvent(step=state.step, call_id=call.id, tool=call.name,
                                 arguments=call.arguments))
    actions = code_actions(action.tool_calls, state.step)
    state.code_log += actions
    state.sources = {c.id: c.source for c in action.tool_calls if c.name == "submit"}
    since = len(state.capture.records)
    state.results = dispatch_sync(run.toolbox, action.tool_calls, run.config.tool_timeouts,
                                  budget.remaining_s())
    _record_what_ran(run, state, action.tool_calls, actions, since)
    for result in state.results:
        trace.emit(ToolResultEvent(step=state.step, call_id=result.call_id, tool=result.name,
                                   ok=result.ok, output=result.output,
                                   duration_s=round(result.duration_s, 4)))
        if result.name in ("validate", "submit") and "verdict" in result.extra:
            trace.emit(Validation(step=state.step, call_id=result.call_id,
                                  **result.extra["verdict"]))
    submitted = {c.id: str(c.arguments.get("path", "")) for c in action.tool_calls
                 if c.name == "submit"}
    for candidate in state.pending:
        program = _program(run, state, submitted.get(candidate.call_id or ""), candidate.source)
        record = _save_submission(run.folder, state.step, len(state.submissions), candidate,
                                  program)
        state.submissions.append(record)
        trace.emit(Submission(step=state.step, **asdict(record)))
    state.pending.clear()
    budget.spend(steps=1)
    state.step += 1
    trace.emit(Checkpoint(step=state.step))
    state.policy, state.trace = run.policy.state(), trace.position()
    still_held(run.folder.root)  # a holder whose lock was taken over writes nothing more
    checkpoint_sandbox(run.folder.root, state, run.sandbox)
    return None


def _record_what_ran(run: RunContext, state: RunState, calls: list[ToolCall],
                     actions: list[CodeAction], since: int) -> None:
    """After a step's calls: read the capture, log the scripts run, mark the failed actions."""
    state.capture.read(run.sandbox)
    state.code_log += script_actions(state.capture, since, state.step)
    ok = {r.call_id: r.ok for r in state.results}
    code = [c for c in calls if c.name in ("python", "python_session", "bash")]
    for call, entry in zip(code, actions, strict=True):
        entry.failed = not ok.get(call.id, True)


def _program(run: RunContext, state: RunState, path: str | None,
             source: str | None) -> Program:
    """The program behind a submitted file (innolab.gym.provenance); the code log without one."""
    def read(name: str) -> str | None:
        try:
            return run.sandbox.read_file(name).decode("utf-8")
        except (SandboxError, UnicodeDecodeError):
            return None

    program = None
    if path:
        try:
            program = build_program(path, state.capture, state.code_log, source, read)
        except (ProgramError, ValueError, SyntaxError):
            program = None
    if program is None and source is not None:
        program = Program({SCAFFOLD_ENTRY: source}, SCAFFOLD_ENTRY)
    if program is None:
        text = program_text(state.code_log)[-MAX_SOURCE_CHARS:]
        program = Program({CODE_LOG_ENTRY: text}, CODE_LOG_ENTRY)
    return program


def _finished(folder: RunDir) -> RunFinished | None:
    return Trace.read(folder.root).finished if folder.trace.is_file() else None


MAX_SOURCE_CHARS = 500_000


def _save_submission(folder: RunDir, step: int, index: int, candidate: Candidate,
                     program: Program) -> SubmissionRecord:
    """Write a submission, its program's text (`<name>.source.py`) and the program beside it."""
    path = folder.submission(step, index)
    path.parent.mkdir(exist_ok=True)
    path.write_text(candidate.content, encoding="utf-8")
    source = folder.source_of(path)
    save_program(source, program)
    verdict = candidate.verdict
    return SubmissionRecord(file=folder.relative(path), source=folder.relative(source),
                            dev_valid=bool(verdict.get("valid")), dev_score=verdict.get("score"),
                            dev_errors=list(verdict.get("errors", []))[:5])


def _final_submission(folder: RunDir, submissions: list[SubmissionRecord],
                      direction: str) -> dict[str, Any]:
    """Choose the final submission: the best by the pristine dev score.

    Else the last valid one (a task whose checker gives no score), else the last one; copied to
    submission/submission.json.
    """
    valid = [s for s in submissions if s.dev_valid]
    chosen = best_submission(submissions, direction) or (valid or submissions or [None])[-1]
    if chosen is None:
        return {"final_submission": None, "dev_valid": False, "dev_score": None}
    folder.final_submission.write_bytes(folder.resolve(chosen.file).read_bytes())
    if chosen.source:
        folder.final_source.write_bytes(folder.resolve(chosen.source).read_bytes())
        stored = program_file(folder.resolve(chosen.source))
        if stored.is_file():
            program_file(folder.final_source).write_bytes(stored.read_bytes())
    return {"final_submission": chosen.file, "dev_valid": chosen.dev_valid,
            "dev_score": chosen.dev_score}
