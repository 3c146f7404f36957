"""Sweep specs: YAML validated with pydantic, `--set` overrides, the expansion into runs."""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator

from innolab.llm.settings import LIMIT_FIELDS
from innolab.runspec import (
    NOVELTY_CHOICES,
    RunSettings,
    optional_fields,
    schema,
    validate_settings,
)


class SpecError(ValueError):
    """A sweep spec that innolab cannot run; the message names the field and the rule."""


RUN_FIELDS_DOC = (
    "The fields of a run that a sweep may fix (`base`) or vary (`grid`): "
    "the run schema's settings, "
    "each optional (None leaves the run's default), and the novelty back end of its runs."
)


def run_fields(settings: type[BaseModel] = RunSettings) -> type[BaseModel]:
    """The fields of a run that a sweep may fix (`base`) or vary (`grid`).

    The run schema's settings, each optional (None leaves the run's default), and the novelty back
    end its runs are scored with.

    Args:
        settings: the run schema (default `RunSettings`).

    Returns:
        The all-optional model (named RunFields).
    """
    return optional_fields(
        settings,
        "RunFields",
        doc=RUN_FIELDS_DOC,
        extra={
            "novelty": (
                Annotated[str | None, NOVELTY_CHOICES],
                Field(
                    default=None,
                    description="the back end of N (default, a registered back end, or none)",
                ),
            )
        },
    )


RunFields = run_fields()


class SweepBudget(BaseModel):
    """What the whole sweep may spend (each run's own budgets are `base.budget` and the like).

    `max_cost_usd`: no new run starts once the recorded cost of the sweep's runs (every attempt),
    plus what the runs in flight spent so far, reaches it; runs in flight end at their own budgets.
    None: no cap.
    """

    model_config = ConfigDict(extra="forbid")

    max_cost_usd: float | None = Field(
        default=None, gt=0, description="the sweep's cost cap in USD (None: none)"
    )


class SweepSpec(BaseModel):
    """A sweep spec: name, base fields, a grid of factors and the seeds of each configuration.

    The grid's configurations are its cartesian product; each runs with every seed. `include`
    adds configurations outside the grid: each entry is merged over `base` (a field set to null
    leaves the run's default: e.g. a policy with no model takes no temperature) and runs with the
    entry's own `seeds` or the spec's. `budget` is the sweep's own (a cost cap over all its
    runs), not a run's.

    `settings` is the run schema its configurations resolve with (`spec_class` makes the spec of
    another).
    """

    model_config = ConfigDict(extra="forbid")
    settings: ClassVar[type[BaseModel]] = RunSettings

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=80)
    description: str = ""
    base: RunFields = Field(default_factory=RunFields)  # type: ignore[valid-type]
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    include: list[dict[str, Any]] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    budget: SweepBudget = Field(default_factory=SweepBudget)

    @classmethod
    def fields_model(cls) -> type[BaseModel]:
        """The model of `base` (and of each grid level)."""
        return cls.model_fields["base"].annotation  # type: ignore[return-value]

    @field_validator("grid")
    @classmethod
    def _factors(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        fields = cls.fields_model()
        factors = tuple(fields.model_fields)
        for factor, levels in grid.items():
            if factor not in factors:
                raise ValueError(f"{factor!r} is not a run field; known: {', '.join(factors)}")
            if factor in LIMIT_FIELDS:
                raise ValueError(
                    f".{factor}: an endpoint's limit paces requests and changes no result, so it "
                    "cannot be a factor; set it in base (or an include entry)")
            if not levels:
                raise ValueError(f".{factor}: a factor needs at least one level")
            for index, level in enumerate(levels):
                try:
                    fields(**{factor: level})
                except ValidationError as error:
                    raise ValueError(f".{factor}[{index}]: {error.errors()[0]['msg']}") from None
            if len({json.dumps(level, sort_keys=True) for level in levels}) != len(levels):
                raise ValueError(f".{factor}: a level is listed twice")
        return grid

    @field_validator("include")
    @classmethod
    def _included(cls, include: list[dict[str, Any]]) -> list[dict[str, Any]]:
        fields = cls.fields_model()
        factors = tuple(fields.model_fields)
        for index, entry in enumerate(include):
            where = f"[{index}]"
            if not isinstance(entry, dict):
                raise ValueError(f"{where}: an entry is a mapping of run fields (and seeds)")
            if not set(entry) - {"seeds"}:
                raise ValueError(f"{where}: an entry needs at least one run field")
            for key, value in entry.items():
                if key == "seeds":
                    if (not isinstance(value, list) or not value
                            or not all(isinstance(v, int) and not isinstance(v, bool)
                                       for v in value)):
                        raise ValueError(f"{where}.seeds: a non-empty list of integers")
                    if len(set(value)) != len(value):
                        raise ValueError(f"{where}.seeds: a seed is listed twice")
                    continue
                if key not in factors:
                    raise ValueError(
                        f"{where}.{key}: not a run field; known: seeds, {', '.join(factors)}")
                if value is None:  # null: the base's value does not apply to this entry
                    continue
                try:
                    fields(**{key: value})
                except ValidationError as error:
                    raise ValueError(f"{where}.{key}: {error.errors()[0]['msg']}") from None
        return include

    @field_validator("seeds")
    @classmethod
    def _unique(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError("a seed is listed twice")
        return seeds

    def model_post_init(self, _context: Any) -> None:
        """Check that each field is either fixed or varied and that task and agent are set.

        Args:
            _context: pydantic's validation context (unused).

        Raises:
            ValueError: a grid factor also fixed in base, or no task or agent in base or the grid
                (or, for an include entry, in base or the entry).
        """
        both = sorted(set(self.grid) & set(self.base.model_fields_set))
        if both:
            raise ValueError(f"grid: {both} also fixed in base (a field is either fixed or varied)")
        for required in ("task", "agent"):
            if getattr(self.base, required) is None and required not in self.grid:
                raise ValueError(f"base.{required}: required (in base or as a grid factor)")
            for index, entry in enumerate(self.include):
                if entry.get(required, getattr(self.base, required)) is None:
                    raise ValueError(
                        f"include[{index}].{required}: required (in base or the entry)")

    def factors(self) -> list[str]:
        """The varied fields, in the spec's order (the grid's, then those include entries set).

        Then `seed` when several seeds run.
        """
        varied = list(self.grid)
        for entry in self.include:
            varied += [k for k in entry if k != "seeds" and k not in varied]
        seeds = {*self.seeds, *(s for e in self.include for s in e.get("seeds", []))}
        return varied + (["seed"] if len(seeds) > 1 else [])


def spec_class(settings: type[BaseModel] | None = None) -> type[SweepSpec]:
    """The sweep spec of a run schema.

    Its `base` and grid levels are that schema's fields, all optional.

    Args:
        settings: the run schema (default: the one in force, `innolab.runspec.schema()`, with
            every registered agent's options).

    Returns:
        The spec model.
    """
    return _spec_class(settings or schema())


@functools.cache
def _spec_class(settings: type[BaseModel]) -> type[SweepSpec]:
    if settings is RunSettings:
        return SweepSpec
    fields = run_fields(settings)
    built = create_model(
        "SweepSpec", __base__=SweepSpec, base=(fields, Field(default_factory=fields))
    )
    built.settings = settings
    return built


def parse_spec(
    data: dict[str, Any], where: str = "spec", settings: type[BaseModel] | None = None
) -> SweepSpec:
    """A validated spec.

    Args:
        data: The spec as a mapping (name, description, base, grid, seeds).
        where: What the spec is, for messages (its file).
        settings: The run schema (default: the one in force, `innolab.runspec.schema()`).

    Returns:
        The spec.

    Raises:
        SpecError: Naming each bad field and its rule.
    """
    if not isinstance(data, dict):
        raise SpecError(
            f"{where}: a sweep spec is a mapping (name, base, grid, seeds), "
            f"got {type(data).__name__}"
        )
    try:
        return spec_class(settings)(**data)
    except ValidationError as error:
        lines = []
        for e in error.errors():
            where_in = ".".join(str(part) for part in e["loc"]) or "spec"
            message = e["msg"].removeprefix("Value error, ")
            lines.append(
                where_in + message if message.startswith((".", "[")) else f"{where_in}: {message}"
            )
        raise SpecError(f"{where}: " + "; ".join(lines)) from None
    except ValueError as error:
        raise SpecError(f"{where}: {error}") from None


def yaml_problem(error: yaml.YAMLError) -> str:
    """A YAML error in one line: what, and where (line and column, counted from 1)."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context = getattr(error, "context", None)
    return f"{where}{problem}" + (f" ({context})" if context else "")


def load_spec(
    source: str | Path | dict[str, Any],
    overrides: list[str] | None = None,
    settings: type[BaseModel] | None = None,
) -> SweepSpec:
    """Read a YAML spec (or take a mapping) and apply `--set K=V` overrides.

    V is read as YAML; K is a base field (which then leaves the grid, if it was a factor, and the
    include entries that set it; an entry that sets it to null keeps it unset), or `name`,
    `description`, `seeds` (also each include entry's), `include`, `budget.max_cost_usd`. Prior
    solutions are files relative to the spec's folder.

    Args:
        source: A YAML file or a mapping.
        overrides: The `K=V` overrides.
        settings: The run schema (default: the one in force, `innolab.runspec.schema()`).

    Returns:
        The spec, with its overrides.

    Raises:
        SpecError: A missing or unreadable file, or a bad field (its name and rule).
    """
    factors = tuple(spec_class(settings).fields_model().model_fields)
    if isinstance(source, dict):
        data, where = dict(source), "spec"
    else:
        path = Path(source)
        if not path.is_file():
            raise SpecError(f"{path}: no such spec file")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise SpecError(f"{path}: not valid YAML: {yaml_problem(error)}") from None
        where = str(path)
        if isinstance(data, dict):
            data = _priors_beside(data, path.parent)
    parse_spec(data, where, settings)  # the file itself must be valid, before any override
    for item in overrides or []:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SpecError(f"--set {item!r}: write KEY=VALUE")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise SpecError(f"--set {key}: not a YAML value: {yaml_problem(error)}") from None
        if key in ("name", "description", "seeds", "include"):
            data[key] = value
            if key == "seeds" and isinstance(data.get("include"), list):
                data["include"] = [_without(e, "seeds") for e in data["include"]]
        elif key == "budget.max_cost_usd":
            data["budget"] = {**(data.get("budget") or {}), "max_cost_usd": value}
        elif key in factors:
            data["base"] = {**(data.get("base") or {}), key: value}
            data["grid"] = {k: v for k, v in (data.get("grid") or {}).items() if k != key}
            if isinstance(data.get("include"), list):
                data["include"] = [
                    _without(e, key) if isinstance(e, dict) and e.get(key) is not None else e
                    for e in data["include"]
                ]
        else:
            raise SpecError(
                f"--set {key}: not a run field or a spec key; "
                f"known: name, seeds, include, budget.max_cost_usd, {', '.join(factors)}"
            )
    return parse_spec(
        data, where + (" with --set " + " ".join(overrides) if overrides else ""), settings
    )


def _without(entry: Any, key: str) -> Any:
    """An include entry without one key (anything else as it is, for validation to name)."""
    return {k: v for k, v in entry.items() if k != key} if isinstance(entry, dict) else entry


def _priors_beside(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Prior-solution files named relative to the spec's folder, made absolute.

    They are named in base, as grid levels or in include entries.
    """

    def resolve(value: Any) -> Any:
        if isinstance(value, str) and not Path(value).is_absolute() and (folder / value).is_file():
            return str((folder / value).resolve())
        return value

    data = dict(data)
    if isinstance(data.get("base"), dict) and "prior_solution" in data["base"]:
        data["base"] = {**data["base"], "prior_solution": resolve(data["base"]["prior_solution"])}
    if isinstance(data.get("grid"), dict) and isinstance(data["grid"].get("prior_solution"), list):
        data["grid"] = {
            **data["grid"],
            "prior_solution": [resolve(v) for v in data["grid"]["prior_solution"]],
        }
    if isinstance(data.get("include"), list):
        data["include"] = [
            {**e, "prior_solution": resolve(e["prior_solution"])}
            if isinstance(e, dict) and "prior_solution" in e else e
            for e in data["include"]
        ]
    return data


@dataclass(frozen=True)
class Configuration:
    """One point of a sweep.

    The run's settings (the run notebook's parameters), the factor levels it stands for, its novelty
    back end (scoring is not part of the run's configuration), and the configuration they resolved
    to (`config`, config.json's fields) with its id: what the worker runs, without resolving again.
    """

    parameters: dict[str, Any]
    levels: dict[str, Any]
    novelty: str | None = "default"
    config_id: str = ""
    labels: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


def expand(spec: SweepSpec,
           unresolved: list[tuple[dict[str, Any], str]] | None = None) -> list[Configuration]:
    """Every configuration of the spec, each resolved once and with its id.

    The cartesian product of the grid, times the seeds, then each include entry (merged over base,
    its nulls unset) times its seeds; each configuration's settings are resolved here
    (`runner.resolve`) and the resolved configuration travels with it to the worker.

    Args:
        spec: The spec.
        unresolved: Where given, a configuration that does not resolve (an endpoint not set, ...)
            is appended to it as (its levels with its seed, why) and left out, instead of raised
            (a plan shows what would run and what is missing).

    Returns:
        The configurations, in the grid's order, then the include entries'.

    Raises:
        SpecError: A configuration that does not resolve (naming its levels), or two grid points
            with the same configuration.
    """
    from innolab import runner

    base = spec.base.model_dump(exclude_none=True)
    factors = list(spec.grid)
    points = [  # (fields, levels, seeds) of each configuration before its seeds
        ({**base, **levels}, levels, spec.seeds)
        for levels in (
            dict(zip(factors, combination, strict=True))
            for combination in itertools.product(*(spec.grid[f] for f in factors))
        )
    ]
    for entry in spec.include:  # merged over base; a null unsets the base's value
        merged = {**base, **{k: v for k, v in entry.items() if k != "seeds"}}
        levels = {k: v for k, v in entry.items() if k != "seeds" and v is not None}
        points.append(
            ({k: v for k, v in merged.items() if v is not None}, levels,
             entry.get("seeds", spec.seeds))
        )
    out = []
    for point, levels, seeds in points:
        for seed in seeds:
            fields = dict(point)
            novelty = fields.pop("novelty", "default")
            parameters = {**fields, "seed": seed}
            if parameters.get("prior_solution"):
                parameters["prior_solution"] = _prior_file(parameters["prior_solution"])
            try:
                config = runner.resolve(validate_settings(parameters, type(spec).settings))  # type: ignore[arg-type]
            except (ValueError, KeyError) as error:
                if unresolved is None:
                    raise SpecError(f"configuration {levels | {'seed': seed}}: {error}") from None
                unresolved.append(({**levels, "seed": seed}, str(error)))
                continue
            out.append(
                Configuration(
                    parameters=parameters,
                    levels={**levels, "seed": seed},
                    novelty=None if novelty == "none" else novelty,
                    config_id=runner.config_id(config),
                    config=config.as_dict(),
                )
            )
    ids = [c.config_id for c in out]
    if len(set(ids)) != len(ids):
        raise SpecError(
            "two grid points give the same run configuration (a factor whose levels change nothing)"
        )
    return out


def _prior_file(prior: str) -> str:
    """Check a prior solution and return its absolute path.

    A prior solution is a file of code the run starts from (never one of the task's known
    solutions: those stay outside every sandbox).
    """
    path = Path(prior)
    if not path.is_file():
        raise SpecError(
            f"prior_solution: {prior!r} is not a file "
            "(a prior solution is a file of code, relative to "
            "the spec's folder; the task's known solutions never enter a sandbox)"
        )
    return str(path.resolve())
