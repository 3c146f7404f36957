"""The run schema: one pydantic model of a run's user-facing settings, and what is derived from it.

`RunSettings` declares each setting once (type, default, rule, description, and where it goes:
`Setting.goes`). `schema()` composes it with every registered agent's options (innolab.agents
.registry) and the settings added at run time (`add_setting`). From it come: the command line's
options (`add_options` / `settings_from_args`), the sweep spec's all-optional `RunFields`
(`optional_fields`), notebook 20's parameters cell (`parameters_cell`) and the run table's
configuration columns (`config_columns`); innolab.runner routes each setting by where it goes (the
model request, the endpoint's limits, the budget, the sandbox, the agent's options). Every
derivation takes the model as an argument (default `schema()`), so a setting added appears in all.
"""

from __future__ import annotations

import argparse
import json
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic_core import core_schema

from innolab.gym.budget import BudgetError, parse_duration
from innolab.gym.policy import DEFAULT_BUDGET_S, RunConfig
from innolab.llm.settings import MaxTokens, Temperature, TopP

__all__ = [
    "NOVELTY_CHOICES",
    "Choices",
    "RunSettings",
    "Setting",
    "SettingsError",
    "add_options",
    "columns",
    "config_columns",
    "novelty_choices",
    "optional_fields",
    "parameters_cell",
    "register_rules",
    "settings_from_args",
    "validate_settings",
]


class SettingsError(ValueError):
    """Run settings that break a rule; the message names each field and its rule."""


@dataclass(frozen=True)
class Choices:
    """The allowed values of a setting, read from their registry whenever a value is checked.

    `explain`, where given, says why a value that is not allowed is not (e.g. an agent whose
    entry point does not load); the command line then leaves the check to the schema.
    """

    registry: Callable[[], Iterable[str]]
    explain: Callable[[str], str | None] | None = None

    def values(self) -> list[str]:
        """The registry's names, in its order."""
        return list(self.registry())

    def check(self, value: Any) -> Any:
        """Returns value when allowed (None always is: it leaves the default).

        Raises:
            ValueError: naming the allowed values (or why the value is not one of them).
        """
        allowed = self.values()
        if value is not None and value not in allowed:
            why = self.explain(value) if self.explain else None
            raise ValueError(why or f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))


# Where a setting goes when a run is resolved (innolab.runner): the task; the agent; the model's
# identity (which endpoint and model); each model request (sampling); the endpoint's pacing; the
# budget; the sandbox; the prompt; the run's seed; the agent's own options (its `policy_args`).
Goes = Literal["task", "agent", "model", "request", "limit", "budget", "sandbox", "prompt", "run",
               "policy"]


@dataclass(frozen=True)
class Setting:
    """How a setting shows outside the model, and where it goes.

    `goes`: where the runner puts it (`Goes`). `column`: its run-table column ("" names it after
    the field; None: no column). `read`: how the column reads a resolved configuration (None: by
    `goes`: a request setting from the model settings, anything else from `policy_args`).
    `flags`: further command-line spellings (kept from before the schema). `owners`: for an
    agent's option, the agents that take it.
    """

    goes: Goes = "policy"
    column: str | None = ""
    read: Callable[[RunConfig], Any] | None = None
    flags: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()


def _scaffolds() -> Iterable[str]:
    from innolab.agents import registry

    return registry.names()


def _why_not_an_agent(name: str) -> str | None:
    """Why a registered agent cannot run (its entry point does not load); None: not registered."""
    from innolab.agents import registry

    found = registry.entry(name)
    if found is None or found.error is None:
        return None
    return (f"agent {name!r} ({found.value}, from {found.distribution}) does not load: "
            f"{found.error}")


def _runtimes() -> Iterable[str]:
    from innolab.gym import policy

    return policy.RUNTIMES


def _llm(config: RunConfig, key: str) -> Any:
    """One model setting of a resolved configuration (None for a run without a model)."""
    return None if config.llm is None else getattr(config.llm, key)


def _backbone(config: RunConfig) -> str | None:
    if config.llm is None and config.model_reported == "none":  # the baseline: no model at all
        return None
    return str(_llm(config, "api_key_env") or "INNOLAB_LLM_API_KEY").removesuffix("_API_KEY")


def _positive_duration(value: str | float | None) -> str | float | None:
    if value is None:
        return value
    try:
        parse_duration(value)
    except BudgetError as error:
        raise ValueError(str(error).removeprefix("budget ")) from None
    return value


def _is_file_name(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("a prior solution is the path of a file of code, got an empty string")
    return value


LIMIT = Setting("limit", column=None)
Duration = Annotated[str | float, AfterValidator(_positive_duration)]
ENV_PREFIX = r"^[A-Za-z_][A-Za-z0-9_]*$"


class RunSettings(BaseModel):
    """A run's settings as a user gives them (CLI options, sweep spec fields, notebook parameters).

    Settings left None come from the backbone's environment (INNOLAB_LLM_* or PREFIX_*) once, when
    the run's configuration is resolved (`runner.resolve`), and are written to its config.json.
    """

    model_config = ConfigDict(extra="forbid")

    task: Annotated[str, Setting("task", read=lambda c: c.task)] = Field(
        default="circle-packing-26",
        min_length=1,
        description="a task id, a task folder, or <scheme>:<reference> "
        "(expbench:<conf>/<paper>/<i>)",
    )
    agent: Annotated[str, Choices(_scaffolds, _why_not_an_agent),
                     Setting("agent", read=lambda c: c.agent)] = Field(
        default="aide", description="the scaffold"
    )
    backbone: Annotated[str | None, Setting("model", read=_backbone)] = Field(
        default=None,
        pattern=ENV_PREFIX,
        description="an environment-variable prefix naming an endpoint "
        "(OPENAI: OPENAI_BASE_URL, _MODEL, "
        "_API_KEY); None: INNOLAB_LLM",
    )
    model: Annotated[str | None,
                     Setting("model", read=lambda c: c.model_reported or _llm(c, "model"))] = (
        Field(
            default=None,
            description="None: the backbone's model ($INNOLAB_LLM_MODEL) or the embedded model",
        )
    )
    base_url: Annotated[str | None, Setting("model", column=None)] = Field(
        default=None,
        description="None: the backbone's endpoint ($INNOLAB_LLM_BASE_URL) or the embedded model",
    )
    temperature: Annotated[Temperature | None, Setting("request")] = (
        Field(default=None, description="None: $INNOLAB_LLM_TEMPERATURE or 0.7")
    )
    top_p: Annotated[TopP | None, Setting("request")] = Field(
        default=None, description="nucleus sampling; None: $INNOLAB_LLM_TOP_P or the endpoint's"
    )
    max_tokens: Annotated[MaxTokens | None, Setting("request", column=None)] = Field(
        default=None,
        description="a reply's token cap; None: $INNOLAB_LLM_MAX_TOKENS, else 256 for the "
        "embedded model and 512 for an endpoint",
    )
    max_concurrent_requests: Annotated[int | None, LIMIT] = Field(
        default=None, gt=0,
        description="the endpoint's cap on requests in flight, shared by a sweep's workers; "
        "None: $INNOLAB_LLM_MAX_CONCURRENT_REQUESTS or none",
    )
    requests_per_minute: Annotated[int | None, LIMIT] = Field(
        default=None, gt=0,
        description="the endpoint's request rate limit; None: $INNOLAB_LLM_REQUESTS_PER_MINUTE "
        "or none",
    )
    tokens_per_minute: Annotated[int | None, LIMIT] = Field(
        default=None, gt=0,
        description="the endpoint's token rate limit; None: $INNOLAB_LLM_TOKENS_PER_MINUTE or none",
    )
    seed: Annotated[int, Setting("run", read=lambda c: c.seed)] = Field(
        default=0,
        description="the run seed; each model call's seed derives from (seed, call index)",
    )
    budget: Annotated[Duration,
                      Setting("budget", column="budget_s", read=lambda c: c.wall_clock_s)] = Field(
        default=f"{DEFAULT_BUDGET_S:g}s",
        description="wall clock, e.g. 90s, 10m, 12h (a number: seconds)"
    )
    max_steps: Annotated[int | None, Setting("budget", column=None)] = Field(
        default=None, gt=0, description="None: no step limit"
    )
    token_budget: Annotated[int | None, Setting("budget", column=None)] = Field(
        default=None, gt=0,
        description="the run's tokens (prompt and reply, every model call); None: no limit",
    )
    cost_budget_usd: Annotated[float | None, Setting("budget", column=None)] = Field(
        default=None, gt=0,
        description="the run's model cost in USD, at the model's prices; None: no limit",
    )
    runtime: Annotated[str, Choices(_runtimes),
                       Setting("sandbox", read=lambda c: c.runtime)] = Field(
        default="local", description="where the agent's sandbox runs"
    )
    image: Annotated[str | None, Setting("sandbox", column=None)] = Field(
        default=None, description="docker image (None: innolab/base:latest)"
    )
    innovation_prompt: Annotated[bool,
                                 Setting("prompt", read=lambda c: c.innovation_prompt)] = Field(
        default=False, description="ask explicitly for a novel method"
    )
    prior_solution: Annotated[
        str | None,
        AfterValidator(_is_file_name),
        Setting("prompt", read=lambda c: (c.prior_solution or {}).get("name"),
                flags=("--initial-solution",)),
    ] = Field(
        default=None,
        description="path of a prior solution's code to start from "
        "(its name and hash are recorded)",
    )
    agent_options: Annotated[dict[str, Any], Setting("policy", column=None)] = Field(
        default_factory=dict, description='the scaffold\'s own options, e.g. {"num_drafts": 2}'
    )
    task_options: Annotated[dict[str, Any], Setting("task", column=None)] = Field(
        default_factory=dict,
        description='what a `<scheme>:` task needs, e.g. {"repo": CLONE} '
        "for expbench:<conf>/<paper>/<i>",
    )


# ------------------------------------------------------------------------ the schema, composed

_added: dict[str, tuple[Any, FieldInfo]] = {}  # settings added at run time (`add_setting`)
_generation = 0  # bumped by every change of `_added`
_composed: dict[tuple[Any, ...], type[RunSettings]] = {}
# The runs table's own columns (innolab.results reads each; tests/test_plugins.py holds this to
# its columns), and those a sweep's table adds: with notebook 20's own parameters, the names of a
# run's record that are not settings, which no agent's option or added setting may take.
TABLE_COLUMNS = (
    "config_id", "run_dir", "complete", "end_reason", "valid", "score", "v_star", "v_star_as_of",
    "gain", "ratio", "beats_v_star", "headroom_closed", "novelty", "ratio_raw", "novelty_raw",
    "novelty_backend", "novelty_status", "novelty_code", "novelty_out", "novelty_out_nearest",
    "rederived_known", "source_status", "source_seconds", "steps", "tool_calls", "llm_calls",
    "llm_calls_sent", "tokens", "cost_usd", "wall_s", "error",
)
SWEEP_TABLE_COLUMNS = ("attempt", "attempts")


def taken(name: str) -> str | None:
    """What a name already is in a run's record (None: free for an agent's option).

    Args:
        name: An option's or setting's name.

    Returns:
        What it is named like (a run setting, a column of the runs table, a parameter of
        notebook 20), or None.
    """
    if name in RunSettings.model_fields or name in _added:
        return "named like a run setting"
    if name in TABLE_COLUMNS or name in SWEEP_TABLE_COLUMNS:
        return "named like a column of the runs table"
    if any(name == parameter for parameter, _, _ in notebook_parameters()):
        return "named like a parameter of notebook 20"
    return None


def add_setting(name: str, annotation: Any, field: FieldInfo, goes: Goes,
                column: str | None = "") -> None:
    """Add a setting to the run schema in one place; every derivation follows.

    It appears in `innolab run`'s options, a sweep spec's fields, notebook 20's parameters and
    the run table's columns; a `request` setting (a sampling setting the endpoint takes, e.g.
    `frequency_penalty`) is also read from `<PREFIX>_<NAME>`, sent with every model request and
    recorded in each `llm_call` event (innolab.llm).

    Args:
        name: The setting's name (a Python identifier).
        annotation: Its type (None is always allowed: the default leaves it unset).
        field: Its pydantic field (default, rules, description).
        goes: Where the runner puts it.
        column: Its run-table column ("": its name; None: none).

    Raises:
        ValueError: A name the schema already has.
    """
    global _generation
    if taken(name) or not name.isidentifier():
        raise ValueError(f"run setting {name!r}: {taken(name) or 'not a name'}")
    info = FieldInfo.merge_field_infos(field)
    info.metadata = [*info.metadata, Setting(goes, column=column)]
    _added[name] = (annotation | None, info)
    _generation += 1


def remove_setting(name: str) -> None:
    """Take a setting `add_setting` added out of the schema again.

    Args:
        name: The setting.
    """
    global _generation
    if _added.pop(name, None) is not None:
        _generation += 1


def added_settings(goes: Goes | None = None) -> list[str]:
    """The names of the settings added at run time (of one kind, where given)."""
    return [name for name, (_, info) in _added.items()
            if goes is None or setting_of(info).goes == goes]


def schema() -> type[RunSettings]:
    """The run schema in force: `RunSettings`, every registered agent's options, added settings.

    Each agent's options (innolab.agents.registry) become settings of their own, optional (None:
    the agent's default) with the option's rules; a run may set only its own agent's. An option
    several agents declare (of one type: the registry refuses another) is one setting: with the
    rules of each where they agree, else with its type alone (each agent's own model checks its
    value when the run is resolved). Built once per state of the registries.

    Returns:
        The composed model (a subclass of RunSettings).
    """
    from innolab.agents import registry

    entries = registry.registered()
    key = (_generation, tuple((name, id(entry.spec)) for name, entry in entries.items()))
    if key in _composed:
        return _composed[key]
    declared: dict[str, dict[str, FieldInfo]] = {}  # option -> agent -> its field
    for name, entry in entries.items():
        if entry.spec is None:  # an agent whose options break a rule is listed as broken
            continue
        for option, field in entry.spec.options.model_fields.items():
            declared.setdefault(option, {})[name] = field
    fields: dict[str, Any] = {}
    for option, by_agent in declared.items():
        field = next(iter(by_agent.values()))
        defaults = {agent: f.get_default(call_default_factory=True)
                    for agent, f in by_agent.items()}
        said = (f"default {next(iter(defaults.values()))!r}" if len(set(map(repr,
                defaults.values()))) == 1 else "default " + ", ".join(
                    f"{agent} {value!r}" for agent, value in defaults.items()))
        info = FieldInfo.merge_field_infos(
            field, default=None,
            description=f"{field.description or option} ({said}; {', '.join(by_agent)} only)")
        info.default_factory = None
        same_rules = all(f.metadata == field.metadata for f in by_agent.values())
        info.metadata = [*(info.metadata if same_rules else []),
                         Setting("policy", owners=tuple(by_agent))]
        fields[option] = (field.annotation | None, info)
    fields.update(_added)
    built = create_model("RunSettings", __base__=RunSettings, __doc__=RunSettings.__doc__,
                         **fields)
    _composed.clear()
    _composed[key] = built
    return built


def register_rules() -> None:
    """Make the registry refuse an agent whose option is named like a part of a run's record.

    Done when this module is imported (whatever builds a run's schema has it); `innolab agents
    list` calls it too, before it lists.
    """
    from innolab.agents import registry

    registry.add_rule("run record", taken)


# --------------------------------------------------------------------------------- reading a field


def setting_of(field: FieldInfo) -> Setting:
    """The field's `Setting`.

    Args:
        field: A field of the run schema.

    Returns:
        Its `Setting` (without one: a column of its name, read from policy_args).
    """
    return next((m for m in field.metadata if isinstance(m, Setting)), Setting())


def choices_of(field: FieldInfo) -> list[str] | None:
    """The allowed values of a field restricted by a registry.

    Args:
        field: A field of the run schema.

    Returns:
        The registry's names, or None for an unrestricted field.
    """
    found = next((m for m in field.metadata if isinstance(m, Choices)), None)
    return found.values() if found else None


def _plain_type(field: FieldInfo) -> type:
    """The field's value type without None (bool, int, float, str, dict), for the command line."""
    annotation = field.annotation
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        # str | float (a duration) is read as text
        annotation = members[0] if len(members) == 1 else str
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    origin = get_origin(annotation) or annotation
    return origin if origin in (bool, int, float, str, dict) else str


def _default(field: FieldInfo) -> Any:
    return field.get_default(call_default_factory=True)


def validate_settings(values: dict[str, Any], model: type[BaseModel] | None = None) -> BaseModel:
    """The settings model validated from values.

    Args:
        values: setting names and values (unknown names are an error).
        model: the run schema (default `schema()`) or a sweep's `RunFields`.

    Returns:
        The validated settings.

    Raises:
        SettingsError: naming each bad field and its rule.
    """
    model = model or schema()
    try:
        return model(**values)
    except ValidationError as error:
        raise SettingsError(
            "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: "
                f"{e['msg'].removeprefix('Value error, ')}"
                for e in error.errors()
            )
        ) from None


# -------------------------------------------------------------------------------- (a) command line


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_options(
    parser: argparse.ArgumentParser,
    model: type[BaseModel] | None = None,
    only: Sequence[str] | None = None,
    defaults: dict[str, Any] | None = None,
    required: Sequence[str] = (),
) -> None:
    """One command-line option per setting of the schema: `--name`, its type, choices and help.

    Options default to None (the schema's default applies when read back, unless `defaults` gives
    the command's own); a bool setting is a switch; a dict setting is given as repeated `KEY=VALUE`
    (VALUE read as YAML).

    Args:
        parser: the command's parser.
        model: the run schema (default `schema()`).
        only: the settings this command takes (default: all).
        defaults: the command's own defaults, shown in the help (None: the command has none, e.g. a
            setting it needs given).
        required: settings this command requires.
    """
    model = model or schema()
    defaults = defaults or {}
    for name, field in model.model_fields.items():
        if only is not None and name not in only:
            continue
        kind = _plain_type(field)
        default = defaults.get(name, _default(field))
        text = field.description or ""
        flags = (_flag(name), *setting_of(field).flags)
        if kind is bool:  # --name and --no-name: an option whose default is true can be unset
            parser.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction,
                                default=None, help=text)
        elif kind is dict:
            parser.add_argument(
                *flags,
                dest=name,
                action="append",
                metavar="KEY=VALUE",
                default=None,
                help=f"{text} (repeatable)",
            )
        else:
            shown = "" if default is None else f" (default {default})"
            choices = choices_of(field)
            explained = any(isinstance(m, Choices) and m.explain for m in field.metadata)
            if choices and explained:  # the schema says why a value is refused, naming it
                text, choices = f"{text}: {' | '.join(choices)}", None
            parser.add_argument(
                *flags,
                dest=name,
                type=kind,
                choices=choices,
                default=None,
                required=name in required,
                metavar=None if choices else name.upper(),
                help=text + shown,
            )


def _pairs(name: str, items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise SettingsError(f"{name}: write KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise SettingsError(f"{name}.{key.strip()}: not a YAML value: {error}") from None
    return out


def settings_from_args(
    args: argparse.Namespace,
    model: type[BaseModel] | None = None,
    defaults: dict[str, Any] | None = None,
    **given: Any,
) -> BaseModel:
    """The settings the options of `add_options` were given, validated.

    Args:
        args: the parsed command line.
        model: the run schema (default `schema()`).
        defaults: the command's own defaults (given options win over them; None: none).
        **given: further values (e.g. task options from other flags), merged into dict settings.

    Returns:
        The validated settings.

    Raises:
        SettingsError: naming the bad field and its rule.
    """
    model = model or schema()
    values = {k: v for k, v in (defaults or {}).items() if v is not None}
    for name, field in model.model_fields.items():
        value = getattr(args, name, None)
        if value is None:
            continue
        values[name] = _pairs(name, value) if _plain_type(field) is dict else value
    for name, value in given.items():
        values[name] = {**value, **values.get(name, {})} if isinstance(value, dict) else value
    return validate_settings(values, model)


# -------------------------------------------------------------------------------- (b) sweep fields


def optional_fields(
    model: type[BaseModel] | None = None,
    name: str = "RunFields",
    extra: dict[str, Any] | None = None,
    doc: str | None = None,
) -> type[BaseModel]:
    """The schema with every setting optional (None: the run's default), same types and rules.

    Args:
        model: the run schema (default `schema()`).
        name: the new model's name.
        extra: further fields, as `create_model` takes them (`name=(type, default or Field)`).
        doc: the new model's docstring.

    Returns:
        A pydantic model class forbidding unknown fields.
    """
    model = model or schema()
    fields: dict[str, Any] = {}
    for key, field in model.model_fields.items():
        info = FieldInfo.merge_field_infos(field, default=None)
        info.default_factory = None
        fields[key] = (field.annotation | None, info)
    built = create_model(
        name, __config__=ConfigDict(extra="forbid"), __doc__=doc, **fields, **(extra or {})
    )
    return built


# --------------------------------------------------------------------------------- (c) notebook 20


def novelty_choices() -> list[str]:
    """The names a run's novelty back end may take: default, each registered back end, none."""
    from innolab.novelty.registry import BACKENDS

    return ["default", *BACKENDS, "none"]


NOVELTY_CHOICES = Choices(novelty_choices)


def _literal(value: Any) -> str:
    """A value as Python source, strings in double quotes (as the notebook writes them)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _comment(field: FieldInfo) -> str:
    choices = choices_of(field)
    text = field.description or ""
    if choices:
        text = f"{text}: {' | '.join(choices)}" if text else " | ".join(choices)
    return f"  # {text}" if text else ""


def notebook_parameters() -> list[tuple[str, Any, str]]:
    """Notebook 20's own parameters after the settings: (name, default, comment)."""
    return [
        (
            "novelty",
            "default",
            f"back end for N when the run is scored: {' | '.join(novelty_choices()[:-1])}; "
            "None: skip",
        ),
        ("run_dir", None, "None: results/runs/<id>; a folder that holds the run resumes it"),
        (
            "config",
            None,
            "set by a sweep: the resolved configuration (config.json's fields), run as it is",
        ),
        ("config_id", None, "set by a sweep: the id the configuration must have (checked)"),
        (
            "show_progress",
            True,
            "a progress bar while the run runs (False from a sweep: its own progress shows runs)",
        ),
        (
            "embedded_url",
            None,
            "set by a sweep: the embedded-model server it started for all its runs",
        ),
        ("results_dir", "../results", ""),
        ("figures_dir", "../figures", ""),
    ]


def parameters_cell(model: type[BaseModel] | None = None, shipped: bool = False) -> str:
    """The source of notebook 20's parameters cell.

    One line per setting (its default and description), then the notebook's own parameters.

    Args:
        model: The run schema (default `schema()`).
        shipped: Render it as innolab ships it: with innolab's own agents only (their options,
            their names among the agents), whatever other distribution is installed.

    Returns:
        The cell's source, without a final newline.
    """
    if shipped:
        from innolab.agents import registry

        with registry.only([registry.OWN]):
            return parameters_cell(model)
    model = model or schema()
    lines = [
        f"{name} = {_literal(_default(field))}{_comment(field)}"
        for name, field in model.model_fields.items()
    ]
    lines += [
        f"{name} = {_literal(value)}" + (f"  # {text}" if text else "")
        for name, value, text in notebook_parameters()
    ]
    return "\n".join(lines)


# ----------------------------------------------------------------------------------- (d) run table


def _reader(name: str, setting: Setting) -> Callable[[RunConfig], Any]:
    """How a column reads a setting without a `read` of its own: by where the setting goes."""
    if setting.goes == "request":
        return lambda c: request_setting(c, name)
    return lambda c: c.policy_args.get(name)


def request_setting(config: RunConfig, name: str) -> Any:
    """A sampling setting of a resolved configuration (None for a run without a model).

    Args:
        config: The configuration.
        name: The setting (one of the model settings', or one added at run time).

    Returns:
        Its value as sent with each request.
    """
    if config.llm is None:
        return None
    if name in type(config.llm).model_fields:
        return getattr(config.llm, name)
    return config.llm.sampling.get(name)


def columns(model: type[BaseModel] | None = None) -> list[str]:
    """The run table's configuration columns, in the schema's order.

    Args:
        model: The run schema (default `schema()`).

    Returns:
        The column names.
    """
    model = model or schema()
    names = []
    for name, field in model.model_fields.items():
        column = setting_of(field).column
        if column is not None:
            names.append(column or name)
    return names


def config_columns(config: RunConfig, model: type[BaseModel] | None = None) -> dict[str, Any]:
    """A run table row's configuration columns, in order, read from a resolved configuration.

    Args:
        config: the run's configuration (as its config.json loads).
        model: the run schema (default `schema()`).

    Returns:
        Today: task, agent, backbone, model, temperature, top_p, seed, budget_s, runtime,
            innovation_prompt,
        prior_solution; a setting added to the schema adds its column.
    """
    model = model or schema()
    row = {}
    for name, field in model.model_fields.items():
        setting = setting_of(field)
        if setting.column is None:
            continue
        row[setting.column or name] = (setting.read or _reader(name, setting))(config)
    return row


register_rules()
