"""A run as plain data for the viewer: steps, best so far against V*, totals, AIDE's journal.

Its steps hold the model calls, tool calls, validations and submissions; the prompts and replies
are read from the run's cache.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from innolab.llm.cache import ResponseCache
from innolab.rundir import RunDir
from innolab.traces import (
    LLMCall,
    Node,
    ResearchLog,
    Submission,
    ToolCallEvent,
    ToolResultEvent,
    Trace,
    Validation,
    end_cause,
)

STEP_EVENTS = (LLMCall, ToolCallEvent, ToolResultEvent, Validation, Submission, Node, ResearchLog)


# policies that are not agents, named as what they are wherever the viewer shows a run
AGENT_LABELS = {"baseline": "baseline (a budget-matched classical search, not an agent)"}

@dataclass
class Step:
    """What happened in one step of the run loop (times in seconds since the run started)."""

    index: int
    start_s: float
    end_s: float
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    # each tool call with its result and its duration
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    validations: list[dict[str, Any]] = field(default_factory=list)
    submissions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[Node | ResearchLog] = field(default_factory=list)  # AIDE nodes, research log

    @property
    def label(self) -> str:
        """The step's label: its index and the tools it called."""
        tools = ", ".join(c["tool"] for c in self.tool_calls) or "no tool call"
        return f"step {self.index}: {tools}"


@dataclass
class RunData:
    """A run read for the viewer: its configuration, its steps and their timings, and its scores.

    `best_so_far` holds the best valid dev score after each improvement; `journal` AIDE's nodes;
    `agent_state` the scaffold's state at the last checkpoint (None where none was kept).
    """

    run_dir: Path
    config: dict[str, Any]
    steps: list[Step]
    # {"t_s", "step", "score"}: the best valid dev score after each improvement
    best_so_far: list[dict[str, Any]]
    v_star: float | None
    direction: str
    finished: dict[str, Any] | None
    score: dict[str, Any] | None
    totals: dict[str, float]
    journal: list[dict[str, Any]]
    agent_state: dict[str, Any] | None
    # why the run ended, where it ended on an error (innolab.traces.end_cause; None: a result)
    cause: str | None = None

    @property
    def task(self) -> str:
        """The run's task ("?" where the configuration names none)."""
        return str(self.config.get("task", "?"))

    @property
    def agent(self) -> str:
        """The run's scaffold ("?" where the configuration names none)."""
        return str(self.config.get("agent", "?"))

    @property
    def agent_label(self) -> str:
        """The run's policy as a person reads it: the baseline is named a classical search."""
        return AGENT_LABELS.get(self.agent, self.agent)

    @property
    def model(self) -> str:
        """The model as the endpoint reported it, else as configured ("-" where unknown)."""
        llm = self.config.get("llm") or {}
        return str(self.config.get("model_reported") or llm.get("model") or "-")

    @property
    def final_score(self) -> float | None:
        """The hidden evaluator's V where the run is scored, else the final dev score."""
        if self.score and self.score.get("valid"):
            return self.score.get("score")
        return (self.finished or {}).get("dev_score")

    def actions(self) -> list[dict[str, Any]]:
        """The sequence of actions (CodeAct, MLAB): one row per tool call."""
        return [{"step": s.index, "tool": c["tool"], "arguments": c["arguments"], "ok": c.get("ok"),
                 "duration_s": c.get("duration_s")} for s in self.steps for c in s.tool_calls]


def load_run(run_dir: str | Path) -> RunData:
    """Read a run folder once (trace, score, checkpoint state) into plain data.

    Raises:
        TraceError: the run has no readable trace.
    """
    folder = RunDir(Path(run_dir))
    config = folder.read_config()
    trace = Trace.read(folder.root)
    score = folder.read_score()
    score_event = trace.score.payload() if trace.score else None
    v_star = (score or {}).get("v_star")
    direction = (score or score_event or {}).get("direction", "max")
    if v_star is None:
        v_star, direction = _task_v_star(config, direction)
    steps: dict[int, Step] = {}
    calls: dict[str, dict[str, Any]] = {}
    journal: list[dict[str, Any]] = []
    for event in trace.events:
        index = event.step
        # (a checkpoint names the step to come)
        if index is None or not isinstance(event, STEP_EVENTS):
            continue
        t = trace.since_start(event)
        step = steps.get(index)
        if step is None:
            step = steps[index] = Step(index, t, t)
        step.end_s = max(step.end_s, t)
        if isinstance(event, LLMCall):
            step.model_calls.append({**event.payload(), "time_s": t})
            step.start_s = min(step.start_s, t - float(event.latency_s or 0.0))
        elif isinstance(event, ToolCallEvent):
            call = {"call_id": event.call_id, "tool": event.tool, "arguments": event.arguments,
                    "t_s": t}
            calls[event.call_id] = call
            step.tool_calls.append(call)
        elif isinstance(event, ToolResultEvent):
            if event.call_id in calls:
                calls[event.call_id].update(ok=event.ok, output=event.output,
                                            duration_s=event.duration_s, end_s=t)
        elif isinstance(event, Validation):
            step.validations.append({**event.payload(), "t_s": t})
        elif isinstance(event, Submission):
            step.submissions.append({**event.payload(), "t_s": t})
        else:
            if isinstance(event, Node):
                journal.append(event.payload())
            step.notes.append(event)
    best = [{"t_s": trace.since_start(e), "step": e.step, "score": e.dev_score}
            for e in trace.best_so_far(direction)]
    ordered = [steps[i] for i in sorted(steps)]
    wall = trace.wall_s or trace.span_s
    finished = trace.finished.payload() if trace.finished else None
    return RunData(folder.root, config, ordered, best, v_star, direction, finished,
                   score or score_event, totals(ordered, float(wall)), journal,
                   _agent_state(folder), end_cause(trace))


def totals(steps: list[Step], wall_s: float) -> dict[str, float]:
    """Tokens, cost and wall time per component.

    Args:
        steps: the run's steps.
        wall_s: the run's wall-clock time.

    Returns:
        Counts, tokens, cost and seconds: the model's (latency of the calls sent), the tools' (per
        step, the longest of its concurrent calls) and the rest (loop, checkpoints, validation).
    """
    model_calls = [c for s in steps for c in s.model_calls]
    model_s = sum(float(c.get("latency_s") or 0.0) for c in model_calls)
    tools_s = sum(max((float(c.get("duration_s") or 0.0) for c in s.tool_calls), default=0.0)
                  for s in steps)
    return {"steps": len(steps), "model_calls": len(model_calls),
            "cached_calls": sum(bool(c.get("cached")) for c in model_calls),
            "tool_calls": sum(len(s.tool_calls) for s in steps),
            "failed_tool_calls": sum(c.get("ok") is False for s in steps for c in s.tool_calls),
            "prompt_tokens": sum(int(c.get("prompt_tokens") or 0) for c in model_calls),
            "completion_tokens": sum(int(c.get("completion_tokens") or 0) for c in model_calls),
            "cost_usd": sum(float(c.get("cost_usd") or 0.0) for c in model_calls),
            "wall_s": wall_s, "model_s": model_s, "tools_s": tools_s,
            "overhead_s": max(wall_s - model_s - tools_s, 0.0)}


def _task_v_star(config: dict[str, Any], direction: str) -> tuple[float | None, str]:
    """V* and the direction of the run's task, for a run not scored yet (None: no V*)."""
    from innolab.tasks.model import TaskError
    from innolab.tasks.registry import get_task

    try:
        task = get_task(config["task"], config.get("task_options") or None)
    except (TaskError, ValueError, OSError):
        return None, direction
    return getattr(task, "v_star", None), getattr(task, "direction", direction)


def task_direction(task: str) -> str:
    """The direction of a task's objective ("max" where the task cannot be loaded here)."""
    from innolab.tasks.model import TaskError
    from innolab.tasks.registry import get_task

    try:
        return get_task(task).direction
    except (TaskError, ValueError, OSError):
        return "max"


def _agent_state(folder: RunDir) -> dict[str, Any] | None:
    """The scaffold's state at the last checkpoint (plain JSON), where the run kept one."""
    if not folder.state.is_file():
        return None
    return json.loads(folder.state.read_text(encoding="utf-8")).get("policy")


class Exchanges:
    """The requests and replies of a run's model calls.

    Read from its response cache by the events' keys.
    """

    def __init__(self, run_dir: str | Path) -> None:
        path = RunDir(Path(run_dir)).llm_cache
        self._cache = ResponseCache(path, read_only=True) if path.is_file() else None

    def get(self, key: str | None) -> dict[str, Any] | None:
        """{"messages", "reply", "tool_calls"} of one call (None: not in the cache)."""
        entry = self._cache.entry(key) if self._cache is not None and key else None
        if entry is None:
            return None
        request, response = entry
        return {"messages": request.get("messages", []), "reply": response.get("text", ""),
                "tool_calls": response.get("tool_calls", [])}

    def close(self) -> None:
        """Close the response cache, where one is open."""
        if self._cache is not None:
            self._cache.close()


def newest_run(roots: list[Path] | None = None) -> Path:
    """The most recently started run under results/runs and the sweeps' runs folders.

    Other roots can be given instead.

    Raises:
        ValueError: no run is there.
    """
    from innolab.paths import project_root
    from innolab.rundir import runs_root

    if roots is None:
        roots = [runs_root(), *sorted((project_root() / "results" / "sweeps").glob("*/runs"))]
    found = [config.parent for root in roots if root.is_dir()
             for config in root.glob("*/config.json")]
    if not found:
        raise ValueError("no run found: make one (`innolab run --agent codeact --task "
                         "circle-packing-26 --budget 30s`) or pass run_dir")
    return max(found, key=lambda p: (p / "config.json").stat().st_mtime)


REFERENCE_SWEEP = ("results", "sweeps", "offline")  # the committed reference sweep


def default_run() -> tuple[Path, str]:
    """The run a newcomer's viewer opens: their newest run, else one the clone carries.

    The newest run under results/runs and the sweeps' runs folders (a run of one's own); on a
    fresh clone, where there is none, a run of the committed reference sweep
    (results/sweeps/offline/): the longest of its model-driven runs with a valid submission (a
    timeline with model calls, tool calls and a best-so-far curve), else any of its runs.

    Returns:
        The run folder, and a sentence saying which run it is and why.

    Raises:
        ValueError: no run anywhere (not even the reference sweep's): says how to make one.
    """
    from innolab.paths import project_root
    from innolab.rundir import runs_root

    reference = project_root().joinpath(*REFERENCE_SWEEP)
    own = [runs_root(), *(p for p in sorted((project_root() / "results" / "sweeps").glob("*/runs"))
                          if p.parent != reference)]
    try:
        found = newest_run(own)
    except ValueError:
        pass
    else:
        return found, f"the newest run of your own ({found.name})"
    carried = sorted(c.parent for c in (reference / "runs").glob("*/config.json"))
    if not carried:
        raise ValueError("no run found, and no reference sweep in results/sweeps/offline/: make a "
                         "run (innolab run --agent codeact --task circle-packing-26 --budget 30s) "
                         "or pass run_dir")

    def merit(run: Path) -> tuple[bool, bool, int]:
        score = RunDir(run).read_score() or {}
        config = RunDir(run).read_config()
        try:
            steps = len(Trace.read(run).tool_steps)
        except (OSError, ValueError):
            steps = 0
        return bool(config.get("llm")), bool(score.get("valid")), steps

    chosen = max(carried, key=lambda run: (*merit(run), run.name))
    return chosen, (f"no run of your own yet: run {chosen.name} of the reference sweep the clone "
                    "carries (results/sweeps/offline/; make your own with `innolab run --agent "
                    "codeact --task circle-packing-26 --budget 30s`, then run this notebook again)")


def sweep_of(run_dir: Path) -> Path:
    """The folder a run belongs to.

    Its sweep (which holds runs.parquet), else the folder of runs that holds it.
    """
    parent = Path(run_dir).resolve().parent
    if parent.name == "runs" and (parent.parent / "runs.parquet").is_file():
        return parent.parent
    return parent
