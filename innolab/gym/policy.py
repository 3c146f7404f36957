"""The agent interface: Observation, Action, the Policy protocol, and a run's config (RunConfig).

Agents import this module (and the tool call types), never the run loop.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, get_args

from pydantic import BaseModel

from innolab.gym.tools import ToolCall, ToolResult
from innolab.llm.settings import LIMIT_FIELDS, LLMSettings
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
    the wall-clock budget (None: no limit), the objective's direction, the workspace rules, and
    what is left of the token and cost budgets (None: no limit).
    """

    step: int
    task_description: str
    results: list[ToolResult]
    remaining_s: float | None
    direction: str = "max"  # of the task's objective (visible: the description says it too)
    workspace_rules: str | None = (
        None  # what the workspace holds and how answers count (None: the scaffold's own)
    )
    remaining_tokens: int | None = None  # of the run's token budget (None: no limit)
    remaining_cost_usd: float | None = None  # of the run's cost budget (None: no limit)


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


class AgentFailed(RuntimeError):
    """Raised by a policy whose agent failed: an external framework raised or exited in error.

    The run ends as `agent_error`, with the message and traceback in its trace.

    Attributes:
        traceback: The agent's own traceback, where it has one.
        tokens: The tokens its model calls used since the last step (they count against the
            run's budget, as a step's do).
        cost_usd: Their cost.
    """

    def __init__(self, message: str, traceback: str | None = None, tokens: int = 0,
                 cost_usd: float = 0.0) -> None:
        super().__init__(message)
        self.traceback = traceback
        self.tokens, self.cost_usd = tokens, cost_usd


AgentMode = Literal["workflow", "agent", "framework", "no model"]
AGENT_MODES: tuple[AgentMode, ...] = get_args(AgentMode)


class NoOptions(BaseModel):
    """An agent without options of its own."""


@dataclass(frozen=True)
class AgentSpec:
    """What an agent's distribution declares in the entry-point group `innolab.agents`.

    `innolab.agents.registry` reads every declaration of the group (the built-in scaffolds and
    baseline register there exactly as a third party's agent does); `innolab run --agent NAME`,
    sweep specs and notebook 20 name agents by `name`.

    Attributes:
        name: The agent's name (letters, digits, `-`, `_`).
        factory: Builds the policy: called with the run's `policy_args` (its options, validated
            by `options`) and, where `needs_model`, `settings` (the run's LLMSettings),
            `cache_path`, `innovation_prompt` and `initial_solution`.
        mode: "workflow" (a fixed procedure, AIDE), "agent" (a tool loop), "framework" (an
            external framework that owns its loop, on the run's MCP tools and model gateway) or
            "no model" (a classical search).
        options: The agent's own options as a pydantic model (its fields become run settings:
            CLI flags, spec fields, notebook 20's parameters, run-table columns); every field
            needs a default.
        needs_model: Whether the agent calls a model (its runs resolve model settings).
        description: One line on what it is.
        resolve: For an agent with no model: its `policy_args` from the run's settings and task
            (None: its validated options).
        prepare: For an agent with a model: its `policy_args` from its validated options (e.g.
            an external framework's version recorded); a ValueError refuses the run, its
            message said as it is (e.g. the install command of a missing extra).
    """

    name: str
    factory: Callable[..., Policy]
    mode: AgentMode = "agent"
    options: type[BaseModel] = NoOptions
    needs_model: bool = True
    description: str = ""
    resolve: Callable[..., dict[str, Any]] | None = None
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        """Check the declaration.

        Raises:
            ValueError: A name, mode or options model that breaks its rule.
        """
        import re

        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", self.name or ""):
            raise ValueError(f"agent name {self.name!r}: letters, digits, - and _, "
                             "starting with a letter")
        if self.mode not in AGENT_MODES:
            raise ValueError(f"agent {self.name}: mode must be one of {AGENT_MODES}, "
                             f"got {self.mode!r}")
        if not (isinstance(self.options, type) and issubclass(self.options, BaseModel)):
            raise ValueError(f"agent {self.name}: options must be a pydantic model class")
        missing = [k for k, f in self.options.model_fields.items() if f.is_required()]
        if missing:
            raise ValueError(f"agent {self.name}: option(s) {missing} need a default")

    @property
    def policy(self) -> str:
        """The factory's import path, as config.json records it (`module:qualname`)."""
        return f"{self.factory.__module__}:{self.factory.__qualname__}"


# A run's wall clock when none is given: stated here once (the run schema's default budget, and a
# configuration built without one, take it).
DEFAULT_BUDGET_S = 60.0

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
    retries...); `policy_args` only the agent's own arguments: every option of its options model,
    given or at its default, and what its `prepare` or `resolve` adds. `option_defaults` names
    the options that took their default (their values are in `policy_args`). config.json holds
    `as_dict()`: of `llm`, the settings that were written (all but the key for a resolved
    configuration; those an older file holds for one loaded from it).
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
    wall_clock_s: float | None = DEFAULT_BUDGET_S
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
    # the agent's options that took their default, their values in policy_args (recorded since
    # every option is; a file written before names none and holds only the options given)
    option_defaults: list[str] = field(default_factory=list)

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
        if not self.option_defaults:  # a file written before it existed is written back as it was
            del data["option_defaults"]
        return data

    def config_id(self) -> str:
        """The configuration's stable id: the hash of its settled settings.

        What the endpoint reports is left out, so that the id is known before the run starts;
        empty task options are left out, so that ids made before they existed stay; the
        endpoint's limits (LIMIT_FIELDS: they pace requests, never change a result) are left out.
        The agent's options that took their default (`option_defaults`) are left out of
        `policy_args`, so that a configuration keeps the id it had before config.json recorded
        defaults (the built-ins' and the committed reference sweep's): an option given keeps
        its place in the id, at any value; a change of an option's default does not change ids
        (tests/test_config_ids.py pins the built-ins' defaults, so that one is made knowingly).

        Returns:
            Twelve hexadecimal digits.
        """
        fields = {
            k: v
            for k, v in self.as_dict().items()
            if k not in ("model_reported", "option_defaults")
            and not (k == "task_options" and not v)
        }  # ids made before it stay
        if self.option_defaults:
            fields["policy_args"] = {k: v for k, v in fields["policy_args"].items()
                                     if k not in self.option_defaults}
        if fields.get("llm"):
            fields["llm"] = {k: v for k, v in fields["llm"].items() if k not in LIMIT_FIELDS}
        text = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

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
