"""The run loop: policy steps → concurrent tool calls → trace → checkpoint; resume after a kill; scoring at the end."""

from __future__ import annotations

import importlib
import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tqdm.auto import tqdm

from innolab.gym.budget import Budget
from innolab.gym.dispatcher import dispatch_sync
from innolab.gym.factory import Runtime, open_sandbox
from innolab.gym.tools import SUBMISSION_PATH, Toolbox, ToolCall, ToolResult
from innolab.llm.client import LLMError
from innolab.paths import project_root
from innolab.tasks.evaluation import evaluate
from innolab.tasks.registry import get_task
from innolab.traces import TraceWriter, truncate_to

CONFIG_FILE = "config.json"
CHECKPOINT_DIR = "checkpoint"
STATE_FILE = "state.json"


class RunError(RuntimeError):
    """A run that cannot start or resume; the message says why."""


@dataclass
class Action:
    """What a policy does in one step: tool calls (run concurrently), or finish. Usage feeds the budgets."""

    tool_calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    tokens: int = 0
    cost_usd: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list)  # e.g. llm_call, node: {"type": ..., ...}


@dataclass
class Observation:
    step: int
    task_description: str
    results: list[ToolResult]
    remaining_s: float | None
    direction: str = "max"  # of the task's objective (visible: the description says it too)


class Policy(Protocol):
    """An agent seen by the run loop. Its state is plain JSON data, so a killed run resumes exactly."""

    name: str

    def step(self, observation: Observation) -> Action: ...

    def state(self) -> dict[str, Any]: ...

    def load_state(self, state: dict[str, Any]) -> None: ...


@dataclass
class RunConfig:
    """Everything needed to start (or restart) a run; written to config.json."""

    task: str
    policy: str  # "module:factory", called with policy_args
    policy_args: dict[str, Any] = field(default_factory=dict)
    agent: str = "scripted"
    runtime: Runtime = "local"
    image: str | None = None
    wall_clock_s: float | None = 600.0
    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    seed: int = 0
    tool_timeouts: dict[str, float] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


def runs_dir() -> Path:
    return Path(os.environ.get("INNOLAB_RUNS_DIR", project_root() / "results" / "runs"))


def create_run(config: RunConfig, run_dir: Path | None = None) -> Path:
    """A new run directory with its config.json; nothing runs yet."""
    get_task(config.task)  # fail early on an unknown task
    run_id = time.strftime("%Y%m%d-%H%M%S") + f"-{config.agent}-{config.task}-{secrets.token_hex(3)}"
    run_dir = Path(run_dir or runs_dir() / run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    if (run_dir / CONFIG_FILE).exists():
        raise RunError(f"{run_dir} already holds a run")
    (run_dir / CONFIG_FILE).write_text(json.dumps(asdict(config), indent=2) + "\n", encoding="utf-8")
    return run_dir


def load_config(run_dir: Path) -> RunConfig:
    path = Path(run_dir) / CONFIG_FILE
    if not path.is_file():
        raise RunError(f"{run_dir} is not a run directory (no {CONFIG_FILE})")
    return RunConfig(**json.loads(path.read_text(encoding="utf-8")))


def make_policy(config: RunConfig, run_dir: Path) -> Policy:
    """Import and build the policy; a relative `cache_path` in its arguments lives in the run directory."""
    module_name, _, attribute = config.policy.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise RunError(f"policy {config.policy!r} cannot be imported: {error}") from None
    args = dict(config.policy_args)
    if args.get("cache_path") and not Path(args["cache_path"]).is_absolute():
        args["cache_path"] = str(run_dir / args["cache_path"])
    return factory(**args)


# ------------------------------------------------------------------------------------------- checkpoints


def _fsync_write(path: Path, data: bytes) -> None:
    with path.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def save_checkpoint(run_dir: Path, state: dict[str, Any], workspace: bytes) -> None:
    """Atomic: the workspace tar under a new name, then state.json replaced in one rename, then old tars removed."""
    folder = run_dir / CHECKPOINT_DIR
    folder.mkdir(exist_ok=True)
    tar_name = f"workspace-{state['step']}.tar"
    _fsync_write(folder / tar_name, workspace)
    state = {**state, "workspace": tar_name}
    _fsync_write(folder / (STATE_FILE + ".tmp"), json.dumps(state).encode())
    os.replace(folder / (STATE_FILE + ".tmp"), folder / STATE_FILE)
    for old in folder.glob("workspace-*.tar"):
        if old.name != tar_name:
            old.unlink()


def load_checkpoint(run_dir: Path) -> tuple[dict[str, Any], bytes] | None:
    path = run_dir / CHECKPOINT_DIR / STATE_FILE
    if not path.is_file():
        return None
    state = json.loads(path.read_text(encoding="utf-8"))
    return state, (run_dir / CHECKPOINT_DIR / state["workspace"]).read_bytes()


# ------------------------------------------------------------------------------------------------ the loop


def execute(run_dir: Path, resume: bool = False, show_progress: bool = True) -> dict[str, Any]:
    """Run (or resume) the run in run_dir until the policy finishes or a budget is spent; then score it."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    task = get_task(config.task)
    policy = make_policy(config, run_dir)
    finished = _finished(run_dir) if resume else None
    if finished is not None:  # resuming a finished run changes nothing and reports its outcome
        return {"run_dir": str(run_dir), "reason": finished["reason"], "valid": finished["valid"],
                "score": finished["score"], "ratio": finished["ratio"], "already_finished": True}
    checkpoint = load_checkpoint(run_dir) if resume else None
    if resume and checkpoint is None and (run_dir / "trace.jsonl").exists():
        (run_dir / "trace.jsonl").unlink()  # killed before its first checkpoint: start over
    budget = Budget(config.wall_clock_s, config.max_steps, config.max_tokens, config.max_cost_usd)
    submissions: list[dict[str, Any]] = []
    results: list[ToolResult] = []
    step = 0
    sandbox = open_sandbox(task, config.runtime, config.image)
    try:
        if checkpoint is not None:
            state, workspace = checkpoint
            truncate_to(run_dir, state["trace"])
            trace = TraceWriter(run_dir, next_seq=state["trace"]["seq"])
            sandbox.restore(workspace)
            policy.load_state(state["policy"])
            budget = Budget(**state["budget"])
            submissions, step = state["submissions"], state["step"]
            results = [ToolResult(**r) for r in state["results"]]
            trace.emit("run_resumed", step=step, from_checkpoint=step)
        else:
            trace = TraceWriter(run_dir)
            trace.emit("run_started", step=0, config=asdict(config))
        reason = _loop(run_dir, config, task, policy, sandbox, trace, budget, submissions, results, step,
                       show_progress)
        outcome = _score(run_dir, task, submissions, trace)
        trace.emit("run_finished", step=None, reason=reason, budget=budget.as_dict(), **outcome)
        trace.close()
        return {"run_dir": str(run_dir), "reason": reason, **outcome}
    finally:
        sandbox.close()


def _loop(run_dir: Path, config: RunConfig, task, policy: Policy, sandbox, trace: TraceWriter,
          budget: Budget, submissions: list[dict[str, Any]], results: list[ToolResult], step: int,
          show_progress: bool) -> str:
    pending: list[dict[str, Any]] = []

    def on_submit(content: str, verdict: dict[str, Any]) -> None:
        pending.append({"content": content, "verdict": verdict})

    toolbox = Toolbox(sandbox, on_submit=on_submit)
    bar = tqdm(total=config.max_steps, initial=step, desc=f"{config.agent} on {task.id}", unit="step",
               disable=not show_progress)
    try:
        while True:
            reason = budget.exhausted()
            if reason:
                return reason
            observation = Observation(step, task.description, results, budget.remaining_s(), task.direction)
            try:
                action = policy.step(observation)
            except LLMError as error:  # the model stayed unreachable after its retries: end cleanly, score
                trace.emit("llm_call", step=step, failed=True, error=str(error)[:500])
                return budget.exhausted() or "llm_error"
            budget.spend(tokens=action.tokens, cost_usd=action.cost_usd)
            for event in action.events:
                trace.emit(event["type"], step=step, **{k: v for k, v in event.items() if k != "type"})
            if action.done:
                return "agent_finished"
            for call in action.tool_calls:
                trace.emit("tool_call", step=step, call_id=call.id, tool=call.name, arguments=call.arguments)
            results = dispatch_sync(toolbox, action.tool_calls, config.tool_timeouts, budget.remaining_s())
            for result in results:
                trace.emit("tool_result", step=step, call_id=result.call_id, tool=result.name, ok=result.ok,
                           output=result.output, duration_s=round(result.duration_s, 4))
                if result.name == "validate" and "verdict" in result.extra:
                    trace.emit("validation", step=step, call_id=result.call_id, **result.extra["verdict"])
            for item in pending:
                record = _save_submission(run_dir, step, len(submissions), item)
                submissions.append(record)
                trace.emit("submission", step=step, **record)
            pending.clear()
            budget.spend(steps=1)
            step += 1
            trace.emit("checkpoint", step=step)
            save_checkpoint(run_dir, {"step": step, "policy": policy.state(), "budget": budget.as_dict(),
                                      "submissions": submissions, "trace": trace.position(),
                                      "results": [asdict(r) for r in results]}, sandbox.snapshot())
            bar.update(1)
            best = _best(submissions, task.direction)
            if best:
                bar.set_postfix(best=best["dev_score"])
    finally:
        bar.close()


def _finished(run_dir: Path) -> dict[str, Any] | None:
    from innolab.traces import read_events

    if not (run_dir / "trace.jsonl").is_file():
        return None
    finished = [e for e in read_events(run_dir) if e["type"] == "run_finished"]
    return finished[-1] if finished else None


def _save_submission(run_dir: Path, step: int, index: int, item: dict[str, Any]) -> dict[str, Any]:
    folder = run_dir / "submission"
    folder.mkdir(exist_ok=True)
    name = f"step{step:05d}-{index:03d}.json"
    (folder / name).write_text(item["content"], encoding="utf-8")
    verdict = item["verdict"]
    return {"file": f"submission/{name}", "valid": bool(verdict.get("valid")), "dev_score": verdict.get("score")}


def _best(submissions: list[dict[str, Any]], direction: str) -> dict[str, Any] | None:
    valid = [s for s in submissions if s["valid"] and s["dev_score"] is not None]
    if not valid:
        return None
    return (max if direction == "max" else min)(valid, key=lambda s: s["dev_score"])


def _score(run_dir: Path, task, submissions: list[dict[str, Any]], trace: TraceWriter) -> dict[str, Any]:
    """Score the best submission (by the visible validator) with the hidden evaluator, outside the sandbox."""
    best = _best(submissions, task.direction) or (submissions[-1] if submissions else None)
    if best is None:
        event = {"valid": False, "score": None, "v_star": task.v_star, "gain": None, "ratio": -1.0,
                 "errors": ["no submission"], "file": None}
    else:
        path = run_dir / best["file"]
        verdict = evaluate(task, path)
        (run_dir / "submission" / SUBMISSION_PATH).write_bytes(path.read_bytes())
        event = {"valid": verdict.valid, "score": verdict.score, "v_star": verdict.v_star, "gain": verdict.gain,
                 "ratio": verdict.ratio, "errors": verdict.errors, "file": best["file"]}
    trace.emit("score", step=None, **event)
    return {"valid": event["valid"], "score": event["score"], "ratio": event["ratio"]}


def main() -> None:
    """python -m innolab.gym.run RUN_DIR [--resume]: execute a prepared run directory."""
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
