"""The agent registry: every agent an installed distribution declares in `innolab.agents`.

The built-in scaffolds (aide, mlab, codeact), the classical `baseline` and the external frameworks
register in pyproject.toml's entry-point group `innolab.agents` exactly as a third party's agent
does (`[project.entry-points."innolab.agents"] myagent = "mypackage.agent:AGENT"`, the object an
`innolab.gym.policy.AgentSpec`). An entry point that fails to load (whatever its import raises,
SystemExit included) is listed as broken with its error and never crashes the listing; naming it in
a run is a clear error. So is a declaration whose options break a rule: an option named like
something of the run's record (a run setting, a column of the runs table, a parameter of notebook
20: the rules are added from above, `add_rule`, by innolab.runspec), or an option another agent
declares with another type (innolab's own agents first, then by name: the later one is broken,
naming both). The runner builds a run's policy here (`build_policy`), only ever through a
registered agent, and hands it to the gym, which imports no agent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from innolab.gym.policy import AgentSpec, Policy, RunConfig
from innolab.rundir import RunDir

GROUP = "innolab.agents"

_lock = threading.Lock()
_loaded: dict[str, Registered] | None = None  # the entry points as they loaded, before the rules

# Rules an agent's option names must keep, added from above (the run schema knows the names a run's
# record takes): each returns why a name is not an option's to take, or None.
OptionRule = Callable[[str], str | None]
_rules: dict[str, OptionRule] = {}
OWN = "innolab"  # the distribution whose agents come first when two declare one option
# the distributions whose agents `registered` shows (None: all installed; see `only`)
_only: ContextVar[frozenset[str] | None] = ContextVar("innolab_agents_only", default=None)


class AgentError(ValueError):
    """An agent that is not registered, does not load, or is given options it does not take."""


@dataclass(frozen=True)
class Registered:
    """One entry of the group: the agent it declares, or why it could not be loaded.

    Attributes:
        name: The entry point's name (the agent's name).
        value: What the entry point names (`module:object`).
        distribution: The distribution that declares it (None: not known).
        version: That distribution's version.
        spec: The declaration (None when broken).
        error: Why it could not be loaded (None when it loaded).
    """

    name: str
    value: str
    distribution: str | None
    version: str | None
    spec: AgentSpec | None
    error: str | None = None

    @property
    def broken(self) -> bool:
        """Whether the entry point failed to load."""
        return self.spec is None

    def as_dict(self) -> dict[str, Any]:
        """The entry as `innolab agents list --json` prints it."""
        spec = self.spec
        options = {} if spec is None else {
            name: {"type": _type_name(field.annotation), "default": field.get_default(
                call_default_factory=True), "description": field.description or ""}
            for name, field in spec.options.model_fields.items()}
        return {"name": self.name, "mode": spec.mode if spec else None,
                "needs_model": spec.needs_model if spec else None, "options": options,
                "distribution": self.distribution, "version": self.version,
                "entry_point": self.value, "description": spec.description if spec else "",
                "broken": self.broken, "error": self.error}


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _load(point: EntryPoint) -> Registered:
    dist = getattr(point, "dist", None)
    name, version = (dist.name, dist.version) if dist is not None else (None, None)
    try:
        loaded = point.load()
        spec = loaded() if callable(loaded) and not isinstance(loaded, AgentSpec) else loaded
        if not isinstance(spec, AgentSpec):
            raise TypeError(f"{point.value} is a {type(spec).__name__}, not an AgentSpec")
        if spec.name != point.name:
            raise ValueError(f"{point.value} declares the agent {spec.name!r}, registered as "
                             f"{point.name!r}")
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # a third party's import may raise anything, SystemExit
        # included (a module that exits when imported): listed as broken
        return Registered(point.name, point.value, name, version, None,
                          f"{type(error).__name__}: {error}")
    return Registered(point.name, point.value, name, version, spec)


def add_rule(name: str, rule: OptionRule) -> None:
    """Add (or replace) a rule every agent's option names must keep.

    An agent one of whose options breaks a rule is listed as broken, with the rule's word.

    Args:
        name: The rule's name (adding it again replaces it).
        rule: Returns why an option's name is not the option's to take (None: it may).
    """
    with _lock:
        _rules[name] = rule


def _broken(entry: Registered, error: str) -> Registered:
    return replace(entry, spec=None, error=error)


def _checked(loaded: dict[str, Registered]) -> dict[str, Registered]:
    """The loaded entries under the rules: an option's name, and one type per option name.

    innolab's own agents come first, then the others by name; an option that an earlier agent
    declares with another type breaks the later agent, naming both.
    """
    found = dict(loaded)
    rules = list(_rules.values())
    for name, entry in loaded.items():
        if entry.spec is None:
            continue
        refused = []
        for option in entry.spec.options.model_fields:
            why = next((said for rule in rules if (said := rule(option))), None)
            if why:
                refused.append(f"option {option!r}: {why}")
        if refused:
            found[name] = _broken(entry, f"{'; '.join(refused)}: rename it (an option becomes a "
                                         "run setting, a CLI flag, a spec field, a notebook "
                                         "parameter and a column of the runs table)")
    declared: dict[str, tuple[str, Any]] = {}  # option -> (first agent, its type)
    order = sorted(found, key=lambda n: (found[n].distribution != OWN, n))
    for name in order:
        spec = found[name].spec
        if spec is None:
            continue
        clashes = [(option, declared[option]) for option, field in spec.options.model_fields.items()
                   if option in declared and declared[option][1] != field.annotation]
        if clashes:
            found[name] = _broken(found[name], "; ".join(
                f"option {option!r} is {_type_name(spec.options.model_fields[option].annotation)}"
                f" here but {_type_name(kind)} in agent {first!r} ({found[first].distribution}): "
                "one option name is one run setting, of one type" for option, (first, kind)
                in clashes))
            continue
        for option, field in spec.options.model_fields.items():
            declared.setdefault(option, (name, field.annotation))
    return found


def registered(reload: bool = False) -> dict[str, Registered]:
    """Every entry of the group `innolab.agents`, loaded once per process.

    Args:
        reload: Read the installed distributions again (after installing one).

    Returns:
        The entries by name, sorted; a name two distributions declare is listed as broken, and so
        is an agent whose options break a rule (`add_rule`, `_checked`), under the rules and
        settings in force at the call.
    """
    global _loaded
    with _lock:
        if _loaded is None or reload:
            found: dict[str, Registered] = {}
            for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
                entry = _load(point)
                if point.name in found:
                    first = found[point.name]
                    entry = Registered(point.name, point.value, entry.distribution,
                                       entry.version, None,
                                       f"declared twice: by {first.distribution} "
                                       f"({first.value}) and by {entry.distribution} "
                                       f"({point.value})")
                found[point.name] = entry
            _loaded = found
        shown = _only.get()
        return _checked({name: entry for name, entry in _loaded.items()
                         if shown is None or entry.distribution in shown})


@contextmanager
def only(distributions: Collection[str]) -> Iterator[None]:
    """Inside, the registry shows only the agents of these distributions.

    What innolab ships is rendered with its own agents (`only([OWN])`: notebook 20's parameters
    cell as committed), whatever else is installed.

    Args:
        distributions: The distributions' names.
    """
    token = _only.set(frozenset(distributions))
    try:
        yield
    finally:
        _only.reset(token)


def names() -> list[str]:
    """The names of the agents that load, sorted (what `--agent` takes)."""
    return [name for name, entry in registered().items() if not entry.broken]


def policies() -> dict[str, str]:
    """The factory (`module:qualname`) of each agent that loads, by name.

    The leak scan reads their fixed prompt texts.
    """
    return {name: entry.spec.policy for name, entry in registered().items()
            if entry.spec is not None}


def get(name: str) -> AgentSpec:
    """The declaration of a registered agent.

    Args:
        name: The agent's name.

    Returns:
        Its AgentSpec.

    Raises:
        AgentError: No agent of that name, or its entry point does not load (with its error).
    """
    entry = registered().get(name)
    if entry is None:
        raise AgentError(f"agent {name!r} is not registered; registered: "
                         f"{', '.join(names()) or 'none'} (innolab agents list)")
    if entry.spec is None:
        raise AgentError(f"agent {name!r} ({entry.value}, from {entry.distribution}) does not "
                         f"load: {entry.error}")
    return entry.spec


def entry(name: str) -> Registered | None:
    """The registry's entry of an agent (None: not registered)."""
    return registered().get(name)


def check_options(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """An agent's options validated by its options model, as plain data: every option.

    A run records what it used: the options given and every other option at its default (the
    caller names those in `RunConfig.option_defaults`, which keeps them out of the config id).

    Args:
        name: The agent.
        options: The options given.

    Returns:
        Every option of the agent's options model, validated, in JSON form: the given ones'
        values and the others' defaults, in the model's order.

    Raises:
        AgentError: An option the agent does not take, or a value that breaks its rule (named).
    """
    spec = get(name)
    unknown = sorted(set(options) - set(spec.options.model_fields))
    if unknown:
        takes = ", ".join(spec.options.model_fields) or "none"
        raise AgentError(f"agent_options: {name} takes no option {', '.join(unknown)} "
                         f"(it takes: {takes})")
    try:
        checked = spec.options.model_validate(options)
    except ValidationError as error:
        raise AgentError("; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors())) from None
    return checked.model_dump(mode="json")


def spec_of(config: RunConfig) -> AgentSpec:
    """The registered agent of a configuration, checked against the factory it recorded.

    What reads a run's agent (its policy, the leak scan's prompt texts) asks here first, so that
    nothing is imported from a path a config.json names unless it is the registered agent's.

    Raises:
        AgentError: The agent is not registered or does not load, or its factory is not the
            one the configuration recorded.
    """
    spec = get(config.agent)
    if config.policy != spec.policy:
        found = registered()[config.agent]
        raise AgentError(f"agent {config.agent!r}: the run was made with the factory "
                         f"{config.policy!r}; {found.distribution} {found.version} registers "
                         f"{spec.policy!r} under that name, and a run is built only by its "
                         "registered agent (install the distribution the run was made with)")
    return spec


def build_policy(config: RunConfig, run_dir: Path) -> Policy:
    """The policy of a run: its agent's factory with the run's options and model settings.

    Only a registered agent is built, by its name (`config.agent`): no factory is imported from
    the path a config.json names. That path (`config.policy`, recorded at resolution) must be
    the registered agent's factory: a run is never resumed by a factory other than the one it
    was made with (the distribution changed since). innolab's own agents have recorded the
    paths they declare since config.json existed.

    Args:
        config: The run's configuration.
        run_dir: The run folder (a relative `cache_path` lives there).

    Returns:
        The policy.

    Raises:
        AgentError: The agent is not registered or does not load, or its factory is not the
            one the configuration recorded.
    """
    factory = spec_of(config).factory
    args = dict(config.policy_args)
    if config.llm is not None:  # a model agent: the settled settings, the run's cache, its prompt
        args.setdefault("cache_path", str(RunDir(run_dir).llm_cache))
        args.update(settings=config.llm, innovation_prompt=config.innovation_prompt,
                    initial_solution=(config.prior_solution or {}).get("code"))
    elif args.get("cache_path") and not Path(args["cache_path"]).is_absolute():
        args["cache_path"] = str(run_dir / args["cache_path"])
    policy: Policy = factory(**args)
    return policy
