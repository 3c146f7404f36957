"""The run loop: policy steps → concurrent tool calls → trace → checkpoint; resume after a kill; the final submission.

The loop never scores: it records every submission with its pristine dev score and, at the end, names the final
submission (the best by that score). V, G, ratio and N come later, once, from innolab.scoring, outside the gym.
"""

from __future__ import annotations

import importlib
import json
import re
import secrets
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from innolab.gym.budget import Budget
from innolab.gym.dispatcher import dispatch_sync
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.leftovers import reap
from innolab.gym.policy import Observation, Policy, RunConfig
from innolab.gym.sandbox import SandboxError
from innolab.gym.tools import Toolbox, ToolResult
from innolab.llm.client import LLMError
from innolab.rundir import RunDir, runs_root, write_atomic
from innolab.tasks.registry import get_task
from innolab.traces import TraceWriter, read_events, truncate_to


class RunError(RuntimeError):
    """A run that cannot start or resume; the message says why."""


def new_run_id(config: RunConfig) -> str:
    """A fresh run folder name: time, agent, task and a random suffix."""
    task = re.sub(r"[^\w.-]+", "-", config.task).strip("-")
    return time.strftime("%Y%m%d-%H%M%S") + f"-{config.agent}-{task}-{secrets.token_hex(3)}"


def create_run(config: RunConfig, run_dir: Path | None = None) -> Path:
    """A new run directory with its config.json; nothing runs yet."""
    get_task(config.task, config.task_options)  # fail early on an unknown task
    folder = RunDir(Path(run_dir or runs_root() / new_run_id(config)))
    folder.root.mkdir(parents=True, exist_ok=True)
    if folder.exists():
        raise RunError(f"{folder.root} already holds a run")
    folder.config.write_text(json.dumps(config.as_dict(), indent=2) + "\n", encoding="utf-8")
    return folder.root


def load_config(run_dir: Path) -> RunConfig:
    folder = RunDir(run_dir)
    if not folder.exists():
        raise RunError(f"{run_dir} is not a run directory (no {folder.config.name})")
    try:
        return RunConfig.from_dict(folder.read_config())
    except (TypeError, ValueError) as error:
        raise RunError(f"{folder.config}: {error}") from None


def make_policy(config: RunConfig, run_dir: Path) -> Policy:
    """Import and build the policy; a relative `cache_path` in its arguments lives in the run directory."""
    module_name, _, attribute = config.policy.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise RunError(f"policy {config.policy!r} cannot be imported: {error}") from None
    args = dict(config.policy_args)
    if config.llm is not None:  # an LLM agent: the settled settings, the run's response cache, its options
        args.setdefault("cache_path", str(RunDir(run_dir).llm_cache))
        args.update(settings=config.as_dict()["llm"], innovation_prompt=config.innovation_prompt,
                    initial_solution=(config.prior_solution or {}).get("code"))
    elif args.get("cache_path") and not Path(args["cache_path"]).is_absolute():
        args["cache_path"] = str(run_dir / args["cache_path"])
    return factory(**args)


# ------------------------------------------------------------------------------------------- checkpoints


def save_checkpoint(run_dir: Path, state: dict[str, Any], workspace: bytes) -> None:
    """Atomic: the workspace tar under a new name, then state.json replaced in one rename, then old tars removed."""
    folder = RunDir(run_dir)
    tar = folder.workspace_tar(state["step"])
    write_atomic(tar, workspace)
    write_atomic(folder.state, json.dumps({**state, "workspace": tar.name}).encode())
    for old in folder.checkpoint_dir.glob("workspace-*.tar"):
        if old.name != tar.name:
            old.unlink()


def load_checkpoint(run_dir: Path) -> tuple[dict[str, Any], bytes] | None:
    folder = RunDir(run_dir)
    if not folder.state.is_file():
        return None
    state = json.loads(folder.state.read_text(encoding="utf-8"))
    return state, (folder.checkpoint_dir / state["workspace"]).read_bytes()


# ------------------------------------------------------------------------------------------------ the loop


def execute(run_dir: Path, resume: bool = False, show_progress: bool = True) -> dict[str, Any]:
    """Run (or resume) the run in run_dir until the policy finishes or a budget is spent; name its final
    submission. Scoring is innolab.scoring's job, outside the gym."""
    folder = RunDir(run_dir)
    config = load_config(folder.root)
    task = get_task(config.task, config.task_options)
    policy = make_policy(config, folder.root)
    finished = _finished(folder) if resume else None
    if finished is not None:  # resuming a finished run changes nothing and reports its outcome
        return {"run_dir": str(folder.root), **_outcome(finished), "already_finished": True}
    checkpoint = load_checkpoint(folder.root) if resume else None
    if resume and checkpoint is None and folder.trace.exists():
        folder.trace.unlink()  # killed before its first checkpoint: start over
    budget = Budget(config.wall_clock_s, config.max_steps, config.max_tokens, config.max_cost_usd)
    submissions: list[dict[str, Any]] = []
    results: list[ToolResult] = []
    code_log: list[dict[str, Any]] = []
    step = 0
    sandbox = open_sandbox(task, config.runtime, config.image)
    # what ended runs left (this one's, after a kill, included): folders, processes, containers, volumes
    reap(docker_client=sandbox.client)
    validator = open_validator(task, sandbox)
    try:
        if checkpoint is not None:
            state, workspace = checkpoint
            truncate_to(folder.root, state["trace"])
            trace = TraceWriter(folder.root, next_seq=state["trace"]["seq"])
            sandbox.restore(workspace)
            policy.load_state(state["policy"])
            budget = Budget(**state["budget"])
            submissions, step = state["submissions"], state["step"]
            results = [ToolResult(**r) for r in state["results"]]
            code_log = state.get("code_log", [])
            trace.emit("run_resumed", step=step, from_checkpoint=step)
            entries = [e["entry"] for e in read_events(folder.root) if e["type"] == "research_log"]
            if entries or folder.research_log.exists():  # the trace was cut back: so is the log
                folder.research_log.write_text("".join(entries), encoding="utf-8")
        else:
            trace = TraceWriter(folder.root)
            trace.emit("run_started", step=0, config=config.as_dict())
        # after a resume, the persistent interpreter is rebuilt by replaying its recorded actions
        toolbox = Toolbox(sandbox, validator, session_replay=[e["code"] for e in code_log if e["kind"] == "session"])
        try:
            reason = _loop(folder, config, task, policy, sandbox, toolbox, trace, budget, submissions, results,
                           code_log, step, show_progress)
        finally:
            toolbox.close()
        final = _final_submission(folder, submissions, task.direction)
        artefacts = task.collect(sandbox, folder.root, config)  # what the task keeps of the final workspace
        event = trace.emit("run_finished", step=None, reason=reason, budget=budget.as_dict(), artefacts=artefacts,
                           **final)
        trace.close()
        return {"run_dir": str(folder.root), **_outcome(event)}
    finally:
        try:
            sandbox.close()
        finally:
            validator.close()


def _outcome(finished: dict[str, Any]) -> dict[str, Any]:
    return {key: finished.get(key) for key in ("reason", "final_submission", "dev_valid", "dev_score")}


def _loop(folder: RunDir, config: RunConfig, task, policy: Policy, sandbox, toolbox: Toolbox, trace: TraceWriter,
          budget: Budget, submissions: list[dict[str, Any]], results: list[ToolResult],
          code_log: list[dict[str, Any]], step: int, show_progress: bool) -> str:
    pending: list[dict[str, Any]] = []
    sources: dict[str, str | None] = {}
    idle = 0  # consecutive steps without a tool call (not checkpointed: a resume starts counting anew)

    def on_submit(content: str, verdict: dict[str, Any], call_id: str | None = None) -> None:
        pending.append({"content": content, "verdict": verdict, "source": sources.get(call_id or "")})

    toolbox.on_submit = on_submit
    bar = tqdm(total=config.max_steps, initial=step, desc=f"{config.agent} on {task.id}", unit="step",
               disable=not show_progress)
    try:
        while True:
            reason = budget.exhausted()
            if reason:
                return reason
            observation = Observation(step, task.description, results, budget.remaining_s(), task.direction,
                                      task.workspace_rules)
            try:
                action = policy.step(observation)
            except LLMError as error:  # the model stayed unreachable after its retries: end cleanly
                trace.emit("llm_call", step=step, failed=True, cached=False, error=str(error)[:500], **error.sent)
                return budget.exhausted() or "llm_error"
            budget.spend(tokens=action.tokens, cost_usd=action.cost_usd)
            for event in action.events:
                trace.emit(event["type"], step=step, **{k: v for k, v in event.items() if k != "type"})
                if event["type"] == "research_log":
                    with folder.research_log.open("a", encoding="utf-8") as log:
                        log.write(event["entry"])
            if action.done:
                return "agent_finished"
            idle = 0 if action.tool_calls else idle + 1
            if config.stall_steps and idle >= config.stall_steps:
                return "stalled"
            for call in action.tool_calls:
                trace.emit("tool_call", step=step, call_id=call.id, tool=call.name, arguments=call.arguments)
            code_log += code_actions(sandbox, action.tool_calls, step)
            sources.clear()
            sources.update({c.id: c.source if c.source is not None else program_text(code_log)
                            for c in action.tool_calls if c.name == "submit"})
            results = dispatch_sync(toolbox, action.tool_calls, config.tool_timeouts, budget.remaining_s())
            for result in results:
                trace.emit("tool_result", step=step, call_id=result.call_id, tool=result.name, ok=result.ok,
                           output=result.output, duration_s=round(result.duration_s, 4))
                if result.name in ("validate", "submit") and "verdict" in result.extra:
                    trace.emit("validation", step=step, call_id=result.call_id, **result.extra["verdict"])
            for item in pending:
                record = _save_submission(folder, step, len(submissions), item)
                submissions.append(record)
                trace.emit("submission", step=step, **record)
            pending.clear()
            budget.spend(steps=1)
            step += 1
            trace.emit("checkpoint", step=step)
            save_checkpoint(folder.root, {"step": step, "policy": policy.state(), "budget": budget.as_dict(),
                                          "submissions": submissions, "trace": trace.position(),
                                          "code_log": code_log,
                                          "results": [asdict(r) for r in results]}, sandbox.snapshot())
            bar.update(1)
            best = best_submission(submissions, task.direction)
            if best:
                bar.set_postfix(best=best["dev_score"])
    finally:
        bar.close()


def _finished(folder: RunDir) -> dict[str, Any] | None:
    if not folder.trace.is_file():
        return None
    finished = [e for e in read_events(folder.root) if e["type"] == "run_finished"]
    return finished[-1] if finished else None


def _save_submission(folder: RunDir, step: int, index: int, item: dict[str, Any]) -> dict[str, Any]:
    path = folder.submission(step, index)
    path.parent.mkdir(exist_ok=True)
    path.write_text(item["content"], encoding="utf-8")
    source = folder.source_of(path)
    source.write_text((item.get("source") or "")[-MAX_SOURCE_CHARS:], encoding="utf-8")  # the latest code
    verdict = item["verdict"]
    return {"file": folder.relative(path), "source": folder.relative(source), "dev_valid": bool(verdict.get("valid")),
            "dev_score": verdict.get("score"), "dev_errors": list(verdict.get("errors", []))[:5]}


SCRIPT_RUN = re.compile(r"^\s*(?:timeout\s+\S+\s+)?python3?\s+(?:-u\s+)?([\w./-]+\.py)\b")
MAX_SOURCE_CHARS = 500_000


def code_actions(sandbox, calls: list, step: int) -> list[dict[str, Any]]:
    """The code a step is about to run: python code actions, bash commands, and the content of any workspace
    script a bash command executes (read before it runs)."""
    entries: list[dict[str, Any]] = []
    for call in calls:
        if call.name in ("python", "python_session"):
            kind = "python" if call.name == "python" else "session"
            entries.append({"step": step, "kind": kind, "code": str(call.arguments.get("code", ""))})
        elif call.name == "bash":
            command = str(call.arguments.get("command", ""))
            match = SCRIPT_RUN.match(command)
            script = None
            if match:
                try:
                    script = sandbox.read_file(match.group(1)).decode("utf-8", errors="replace")
                except (SandboxError, OSError):
                    script = None
            if script is not None:
                entries.append({"step": step, "kind": "script", "file": match.group(1), "code": script})
            else:
                entries.append({"step": step, "kind": "bash", "code": command})
    return entries


def program_text(code_log: list[dict[str, Any]]) -> str:
    """The run's code actions up to now, in order, as one Python text (bash commands kept as comments)."""
    parts = []
    for entry in code_log:
        if entry["kind"] == "bash":
            parts.append("\n".join(f"# bash: {line}" for line in entry["code"].splitlines()))
        else:
            label = f"{entry['kind']} {entry.get('file', '')}".strip()
            parts.append(f"# --- step {entry['step']}: {label}\n{entry['code']}")
    return "\n\n".join(parts) + ("\n" if parts else "")


def best_submission(submissions: list[dict[str, Any]], direction: str) -> dict[str, Any] | None:
    """The submission with the best pristine dev score (None when none is valid)."""
    valid = [s for s in submissions if s["dev_valid"] and s["dev_score"] is not None]
    if not valid:
        return None
    return (max if direction == "max" else min)(valid, key=lambda s: s["dev_score"])


def _final_submission(folder: RunDir, submissions: list[dict[str, Any]], direction: str) -> dict[str, Any]:
    """The best submission by the pristine dev score, else the last valid one (a task whose checker gives no
    score), else the last one; copied to submission/submission.json."""
    valid = [s for s in submissions if s["dev_valid"]]
    chosen = best_submission(submissions, direction) or (valid or submissions or [None])[-1]
    if chosen is None:
        return {"final_submission": None, "dev_valid": False, "dev_score": None}
    folder.final_submission.write_bytes(folder.resolve(chosen["file"]).read_bytes())
    if chosen.get("source"):
        folder.final_source.write_bytes(folder.resolve(chosen["source"]).read_bytes())
    return {"final_submission": chosen["file"], "dev_valid": chosen["dev_valid"], "dev_score": chosen["dev_score"]}


def main() -> None:
    """python -m innolab.gym.run RUN_DIR [--resume]: execute a prepared run directory (no scoring)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("run_dir")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    outcome = execute(Path(args.run_dir), resume=args.resume, show_progress=not args.quiet)
    print(outcome["run_dir"])


if __name__ == "__main__":
    main()
