"""The agent interface: Observation, Action, the Policy protocol, and a run's config (RunConfig).

Agents import this module (and the tool call types), never the run loop.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, get_args

from innolab.gym.tools import ToolCall, ToolResult
from innolab.llm.settings import LLMSettings
from innolab.traces import Event

Runtime = Literal["local", "docker"]
RUNTIMES: tuple[Runtime, ...] = get_args(Runtime)  # the runtimes a run may name


@dataclass
class Action:
    """What a policy does in one step.

    Tool calls (run concurrently), or finish. Usage feeds the budgets.
    """

    tool_calls: list[ToolCall] = field(default_factory=list)
    done: bool = False
    tokens: int = 0
    cost_usd: float = 0.0
    events: list[Event] = field(
        default_factory=list
    )  # e.g. LLMCall, Node; the run loop stamps the step


@dataclass
class Observation:
    """What a policy sees at the start of a step.

    The step's number, the task's description, the last step's tool results, the seconds left of
    the wall-clock budget (None: no limit), the objective's direction and the workspace rules.
    """

    step: int
    task_description: str
    results: list[ToolResult]
    remaining_s: float | None
    direction: str = "max"  # of the task's objective (visible: the description says it too)
    workspace_rules: str | None = (
        None  # what the workspace holds and how answers count (None: the scaffold's own)
    )


class Policy(Protocol):
    """An agent seen by the run loop.

    Its state is plain JSON data, so a killed run resumes exactly.
    """

    name: str

    def step(self, observation: Observation) -> Action:
        """Act on one step's observation.

        Args:
            observation: the last step's results and what is left of the budget.

        Returns:
            The step's action.
        """
        ...

    def state(self) -> dict[str, Any]:
        """The policy's state as plain JSON data, checkpointed after each step.

        Returns:
            The state.
        """
        ...

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from a state that `state()` returned (a resumed run).

        Args:
            state: the checkpointed state.
        """
        ...


SEED_RULE = (
    "each model call's seed = sha256('<seed>:<call index>')[:4] (31 bits); "
    "cache keyed by request + index"
)


@dataclass
class RunConfig:
    """Everything needed to start (or restart) a run, resolved once and written to config.json.

    No setting is re-derived from the environment later (the API key, a secret, is read at run time
    and never written).

    `llm` holds the model settings in force (endpoint, model, temperature, top_p, max_tokens, seed,
    retries...); `policy_args` only the scaffold's own options. config.json holds `as_dict()`: of
    `llm`, the settings that were written (all but the key for a resolved configuration; those an
    older file holds for one loaded from it).
    """

    task: str
    policy: (
        str  # "module:factory", called with policy_args (and, for LLM agents, the settings below)
    )
    policy_args: dict[str, Any] = field(default_factory=dict)
    agent: str = "scripted"
    llm: LLMSettings | None = None
    endpoint: str | None = None  # "embedded" or the endpoint's host (never a key)
    model_reported: str | None = None  # the model id as the endpoint reports it
    innovation_prompt: bool = False
    prior_solution: dict[str, Any] | None = None  # {"name", "sha256", "code"}
    runtime: Runtime = "local"
    image: str | None = None
    wall_clock_s: float | None = 600.0
    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    seed: int = 0
    seed_rule: str = SEED_RULE
    tool_timeouts: dict[str, float] = field(default_factory=dict)
    stall_steps: int | None = (
        5  # consecutive steps without a tool call that end the run as "stalled"
    )
    task_options: dict[str, Any] = field(
        default_factory=dict
    )  # what a `<scheme>:` task needs (paths, resolved)

    def __post_init__(self) -> None:
        if isinstance(self.llm, dict):
            self.llm = LLMSettings.model_validate(self.llm)

    def as_dict(self) -> dict[str, Any]:
        """The configuration as config.json holds it: plain JSON data.

        Of `llm`, the settings that were given (all but the key for a resolved configuration, those
        an older file held for one loaded from it): the same bytes, and ids, as before it was typed.

        Returns:
            The fields, `llm` as a mapping.
        """
        data = asdict(self)
        data["llm"] = None if self.llm is None else self.llm.model_dump(exclude_unset=True)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunConfig:
        """A configuration from its config.json, including one written before settings were settled.

        An older file's `extra` bag is dropped; its model settings move from policy_args to `llm`.

        Args:
            data: config.json's fields.

        Returns:
            The configuration.

        Raises:
            ValueError: An unknown field, or model settings that break their rules.
        """
        data = dict(data)
        data.pop("extra", None)
        args = dict(data.get("policy_args") or {})
        if data.get("llm") is None and isinstance(args.get("settings"), dict):
            data["llm"] = args.pop("settings")
            for key in ("innovation_prompt",):
                if key in args:
                    data[key] = args.pop(key)
            if args.get("initial_solution"):
                code = args.pop("initial_solution")
                data["prior_solution"] = {"name": "prior", "sha256": None, "code": code}
            args.pop("initial_solution", None)
            args.pop("cache_path", None)
        data["policy_args"] = args
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"config.json: unknown field(s) {unknown}")
        return cls(**data)
