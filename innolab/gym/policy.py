"""The agent interface: what a policy sees (Observation), what it does (Action), its protocol, and a run's config.

Agents import this module (and the tool call types), never the run loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from innolab.gym.tools import ToolCall, ToolResult

Runtime = Literal["local", "docker"]
RUNTIMES: tuple[Runtime, ...] = ("local", "docker")


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
    stall_steps: int | None = 5  # consecutive steps without a tool call that end the run as "stalled"
    extra: dict[str, Any] = field(default_factory=dict)
