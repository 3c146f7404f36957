"""A sweep's plan before any spend: its runs, seeds, endpoints and the most its budgets allow.

`preview(spec)` expands a spec as `innolab sweep run` would (nothing is written, no model is
called) and bounds each configuration by what innolab enforces: the run's wall clock (no request
starts after it), its token and cost budgets (checked before each step: a run stops at the first
step that reaches one, whose own calls may go beyond it; for an external framework, whose model
calls between two steps are not bounded by steps, the run's gateway checks them before each
request, so its run goes beyond by one request at most), the endpoint's request and token rates
(requests spaced evenly, innolab.llm.gate.admit: in T seconds at most T·rpm/60 + 1 requests, and
T·tpm/60 tokens beyond one request's, by innolab's estimate of a request's tokens) and the
sweep's cost cap (no run starts once the spend reaches it; the runs in flight end at their own
budgets). Where nothing bounds a quantity the plan says so rather than guess: a wall clock alone
bounds time, not calls, and a step limit (max_steps) steps, not calls (innolab caps no step's
model calls: a scaffold's history summaries and re-asks, a framework's calls between its tool
calls). Cost is tokens times the higher of the two stated prices (USD per million tokens); a model
with no price is named as such, the embedded model costs nothing. The novelty judge's calls at
scoring (N by the llm back end, on the run's endpoint) are stated per run beside the bounds, not in
them: their number grows with the submissions assessed, which nothing bounds. A sweep that may
spend with no cost cap is warned of.

Each configuration's task is resolved (`innolab.tasks.registry.get_task`) as `innolab run` would:
an unknown task is refused naming the field and the configuration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from innolab.sweep.spec import Configuration, SweepSpec, expand, load_spec

FREE = "embedded"  # the endpoint of the local model: no charge


@dataclass(frozen=True)
class Bound:
    """An upper bound and what sets it.

    Attributes:
        value: The bound (None: nothing bounds it).
        rule: What sets it, in words.
        step_over: Whether a run's last step may go beyond it (a budget checked between steps).
    """

    value: float | None
    rule: str
    step_over: bool = False


@dataclass(frozen=True)
class RunPlan:
    """One configuration of the plan: what it runs, where, and the most it may use.

    Attributes:
        config_id: The configuration's id.
        levels: Its factor levels and seed.
        agent: The policy.
        endpoint: "embedded", the endpoint's host, or "none" (no model).
        model: The model id (or "none").
        budget_s: Its wall clock in seconds (None: none).
        calls: Model requests.
        tokens: Tokens (prompt and reply).
        cost: USD.
        price: The prices in words ("$1.25 / $10 per M tokens in / out", "no charge",
            "unknown price: set GPT_5_PRICE_IN and GPT_5_PRICE_OUT").
        scored: Whether the sweep folder already holds its scored run (it is not run again).
        scoring: The model calls its scoring makes, in words (the novelty judge's, where N is
            computed by the llm back end; "" for none).
    """

    config_id: str
    levels: dict[str, Any]
    agent: str
    endpoint: str
    model: str
    budget_s: float | None
    calls: Bound
    tokens: Bound
    cost: Bound
    price: str
    scored: bool = False
    scoring: str = ""


@dataclass
class Plan:
    """A sweep's plan: its configurations and their bounds, and what cannot run here.

    Attributes:
        name: The sweep's name.
        folder: Its folder.
        seeds: The seeds of its configurations.
        runs: One per configuration that resolves.
        unresolved: (levels, why) of each configuration that does not resolve here.
        max_cost_usd: The sweep's cost cap (None: none).
        workers: The runs in flight at once (a cap's overshoot: each may end its own budget).
    """

    name: str
    folder: Path
    seeds: list[int]
    runs: list[RunPlan]
    unresolved: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    max_cost_usd: float | None = None
    workers: int = 1

    @property
    def to_run(self) -> list[RunPlan]:
        """The configurations `sweep run` would start (those not scored yet)."""
        return [r for r in self.runs if not r.scored]

    def total(self, what: str) -> Bound:
        """The sum of one bound over the runs still to run ("calls", "tokens" or "cost").

        The cost is also bounded by the sweep's cap: no run starts once it is reached, and each
        run in flight then may spend up to its own bound.
        """
        bounds = [getattr(r, what) for r in self.to_run]
        if not bounds:
            return Bound(0.0, "nothing to run")
        over = any(b.step_over for b in bounds)
        known = [b.value for b in bounds]
        summed = None if any(v is None for v in known) else float(sum(known))  # type: ignore[arg-type]
        if what != "cost" or self.max_cost_usd is None:
            rule = "the sum over the runs" if summed is not None else \
                "a run's bound is missing"
            return Bound(summed, rule, over)
        worst = max((v for v in known if v is not None), default=None)
        capped = (None if any(v is None for v in known) or worst is None
                  else self.max_cost_usd + self.workers * worst)
        if capped is not None and summed is not None and summed <= capped:
            return Bound(summed, "the sum over the runs, below the sweep's cap", over)
        if capped is None:
            return Bound(None, f"the sweep's cap ${self.max_cost_usd:g} stops new runs, but a run "
                               "in flight has no bound of its own")
        return Bound(capped, f"the sweep's cap ${self.max_cost_usd:g} + {self.workers} run(s) in "
                             "flight, each at its own bound", over)


def preview(spec: SweepSpec | str | Path | dict[str, Any], output: Path | None = None,
            overrides: list[str] | None = None, max_cost_usd: float | None = None,
            workers: int | None = None) -> Plan:
    """The plan of a sweep: what `innolab sweep run` would run, and the most it can use.

    Args:
        spec: A spec, a YAML file or a mapping.
        output: The sweep folder (default results/sweeps/<name>/): its scored runs are not rerun.
        overrides: `--set K=V` overrides.
        max_cost_usd: The sweep's cost cap (default: the spec's).
        workers: The runs in flight at once (default: as `sweep run` would start them).

    Returns:
        The plan (nothing is written).

    Raises:
        innolab.sweep.spec.SpecError: A spec that breaks a rule.
    """
    from innolab.sweep.engine import default_workers, finished, sweeps_root

    if max_cost_usd is not None:
        overrides = [*(overrides or []), f"budget.max_cost_usd={max_cost_usd!r}"]
    if not isinstance(spec, SweepSpec) or overrides:
        settings = type(spec).settings if isinstance(spec, SweepSpec) else None
        spec = load_spec(spec.model_dump(exclude_unset=True) if isinstance(spec, SweepSpec)
                         else spec, overrides, settings)
    unresolved: list[tuple[dict[str, Any], str]] = []
    configurations = expand(spec, unresolved)
    known = _tasks(configurations)
    folder = Path(output or sweeps_root() / spec.name).resolve()
    runs = [run_plan(c, finished(folder / "runs" / c.config_id), known.get(_task_key(c), 0))
            for c in configurations]
    seeds = sorted({int(c.levels["seed"]) for c in configurations}
                   | {int(levels["seed"]) for levels, _ in unresolved})
    count = workers or (default_workers(configurations) if configurations else 1)
    return Plan(spec.name, folder, seeds, runs, unresolved, spec.budget.max_cost_usd, count)


def _task_key(configuration: Configuration) -> tuple[str, str]:
    parameters = configuration.parameters
    return (str(parameters.get("task")),
            repr(sorted((parameters.get("task_options") or {}).items())))


def _tasks(configurations: list[Configuration]) -> dict[tuple[str, str], int]:
    """Resolve each configuration's task as `innolab run` would; the known solutions' count of each.

    Raises:
        innolab.sweep.spec.SpecError: A task that does not resolve, naming the field, the first
            configuration that names it and how many more do.
    """
    from innolab.sweep.spec import SpecError
    from innolab.tasks.model import TaskError
    from innolab.tasks.registry import get_task

    known: dict[tuple[str, str], int] = {}
    failed: dict[tuple[str, str], tuple[Configuration, str, int]] = {}
    for configuration in configurations:
        key = _task_key(configuration)
        if key in known:
            continue
        if key in failed:
            first, why, count = failed[key]
            failed[key] = (first, why, count + 1)
            continue
        parameters = configuration.parameters
        try:
            task = get_task(parameters["task"], parameters.get("task_options") or None)
        except (TaskError, ValueError, KeyError) as error:
            failed[key] = (configuration, str(error).removeprefix("innolab: "), 1)
            continue
        names = getattr(task, "solution_names", None)
        known[key] = len(names()) if callable(names) else 0
    if failed:
        first, why, count = next(iter(failed.values()))
        more = f" (and {count - 1} more configuration(s))" if count > 1 else ""
        raise SpecError(f"configuration {first.levels}{more}: task: {why}")
    return known


def run_plan(configuration: Configuration, scored: bool = False, known: int = 0) -> RunPlan:
    """One configuration's bounds (see the module's docstring for the rules).

    Args:
        configuration: The configuration, resolved.
        scored: Whether its run is already scored.
        known: Its task's known solutions (the novelty judge compares with each).

    Returns:
        Its plan.
    """
    config = configuration.config
    llm = config.get("llm")
    budget_s = config.get("wall_clock_s")
    common = {"config_id": configuration.config_id, "levels": configuration.levels,
              "agent": str(config.get("agent")), "budget_s": budget_s, "scored": scored}
    if not llm:
        none = Bound(0.0, "no model")
        return RunPlan(**common, endpoint="none", model="none", calls=none, tokens=none,
                       cost=Bound(0.0, "no model"), price="no model",
                       scoring=_scoring(configuration, None, known))
    endpoint = str(config.get("endpoint") or "?")
    calls = _calls(llm, budget_s, config.get("max_steps"))
    tokens = _tokens(config, llm, budget_s)
    price, per_token = _price(configuration, llm, endpoint)
    cost = _cost(config, tokens, per_token, price)
    return RunPlan(**common, endpoint=endpoint, model=str(llm.get("model")), calls=calls,
                   tokens=tokens, cost=cost, price=price,
                   scoring=_scoring(configuration, endpoint, known))


def _scoring(configuration: Configuration, endpoint: str | None, known: int) -> str:
    """The model calls a configuration's scoring makes, in words ("" for none).

    N by the llm back end (named, or the default where $INNOLAB_LLM_BASE_URL is set) asks the
    run's model for a method card of each known solution, once per run, then for each valid
    submission assessed (each improving candidate and the final one) its card and one judge call
    per known solution (and against the prior solution, where the run has one).
    """
    from innolab.novelty.scoring import compares_cards, default_backend

    backend = configuration.novelty
    if backend == "default":
        backend = default_backend()
    if not backend or not compares_cards(backend):
        return ""
    if endpoint is None:
        return "N by the llm judge: not computed for a run with no model (no calls)"
    prior = " and 2 against the prior solution" if configuration.parameters.get(
        "prior_solution") else ""
    return (f"N by the llm judge on {endpoint}: {known} method cards of the known solutions, "
            f"then per valid submission assessed 1 card + {known} judge calls{prior} (not in the "
            "bounds above: nothing bounds the submissions assessed)")


def _calls(llm: dict[str, Any], budget_s: float | None, max_steps: int | None = None) -> Bound:
    rpm = llm.get("requests_per_minute")
    if rpm and budget_s:
        return Bound(math.floor(budget_s * rpm / 60.0) + 1,
                     f"{rpm} requests per minute over {budget_s:g} s")
    if max_steps:
        return Bound(None, f"max_steps {max_steps} bounds a run's steps, not its calls: innolab "
                     "caps no step's model calls (a scaffold's history summaries and re-asks, a "
                     "framework's calls between its tool calls; a request rate, "
                     "requests_per_minute, would)")
    return Bound(None, "a wall clock bounds a run's time, not its calls (a request rate, "
                 "requests_per_minute, would)" if budget_s else
                 "no wall clock and no request rate")


def _tokens(config: dict[str, Any], llm: dict[str, Any], budget_s: float | None) -> Bound:
    found: list[Bound] = []
    if config.get("max_tokens"):
        found.append(Bound(float(config["max_tokens"]), "the run's token budget", True))
    tpm = llm.get("tokens_per_minute")
    if tpm and budget_s:
        found.append(Bound(budget_s * tpm / 60.0 + tpm, f"{tpm} tokens per minute over "
                           f"{budget_s:g} s, by innolab's estimate of each request"))
    if not found:
        return Bound(None, "no token budget (token_budget) and no token rate (tokens_per_minute)")
    return min(found, key=lambda b: (b.value or math.inf) + (1 if b.step_over else 0))


def _price(configuration: Configuration, llm: dict[str, Any],
           endpoint: str) -> tuple[str, float | None]:
    """The prices in words, and the higher of the two per token (None: unknown)."""
    from innolab.llm.settings import DEFAULT_PRICES

    if endpoint == FREE:
        return "no charge (the embedded model runs here)", 0.0
    given = (llm.get("price_in"), llm.get("price_out"))
    if None in given:
        known = DEFAULT_PRICES.get(str(llm.get("model")))
        if known is None:
            prefix = configuration.parameters.get("backbone") or "INNOLAB_LLM"
            return f"unknown price: set {prefix}_PRICE_IN and {prefix}_PRICE_OUT", None
        given = known
    price_in, price_out = (float(p) for p in given)  # type: ignore[arg-type]
    return (f"${price_in:g} / ${price_out:g} per million tokens in / out",
            max(price_in, price_out) / 1e6)


def _cost(config: dict[str, Any], tokens: Bound, per_token: float | None, price: str) -> Bound:
    found: list[Bound] = []
    if config.get("max_cost_usd"):
        found.append(Bound(float(config["max_cost_usd"]), "the run's cost budget", True))
    if per_token == 0.0:
        found.append(Bound(0.0, price))
    elif per_token is not None and tokens.value is not None:
        found.append(Bound(tokens.value * per_token, "its tokens at the higher price",
                           tokens.step_over))
    if not found:
        why = price if per_token is None else "its tokens have no bound"
        return Bound(None, why)
    return min(found, key=lambda b: (b.value or 0.0) + (1e-12 if b.step_over else 0.0))


def plan_lines(plan: Plan) -> list[str]:
    """The plan as `innolab sweep plan` (and `sweep run`, before it starts) prints it.

    Args:
        plan: The plan.

    Returns:
        Its lines: the sweep, its seeds, endpoints and prices, one row per configuration, the
        totals, what sets each bound, and what cannot run here and why.
    """
    todo = plan.to_run
    prices = {f"{r.endpoint} ({r.model}): {r.price}" for r in plan.runs if r.endpoint != "none"}
    cap = f"${plan.max_cost_usd:g}" if plan.max_cost_usd else "none"
    lines = [f"sweep {plan.name} -> {_shown_path(plan.folder)}",
             f"  configurations: {len(plan.runs) + len(plan.unresolved)} ({len(todo)} to run, "
             f"{len(plan.runs) - len(todo)} already scored"
             + (f", {len(plan.unresolved)} cannot run here)" if plan.unresolved else ")"),
             f"  seeds: {', '.join(map(str, plan.seeds))}",
             "  endpoints: " + ("; ".join(sorted(prices)) or "none (no model)"),
             f"  cost cap: {cap}; runs in flight at once: {plan.workers}"]
    rows = [["config id", "state", "levels", "budget", "endpoint", "model calls", "tokens",
             "cost"]]
    for run in plan.runs:
        rows.append([run.config_id, "scored" if run.scored else "to run",
                     " ".join(f"{k}={_level(v)}" for k, v in run.levels.items()),
                     _duration(run.budget_s), run.endpoint,
                     _cell(run.calls), _cell(run.tokens), _cell(run.cost, money=True)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]
    totals = {what: plan.total(what) for what in ("calls", "tokens", "cost")}
    lines.append(f"  at most, over the {len(todo)} run(s) to run: model calls "
                 f"{_cell(totals['calls'])}, tokens {_cell(totals['tokens'])}, "
                 f"cost {_cell(totals['cost'], money=True)}")
    with_model = [r for r in todo if r.endpoint != "none"]
    for what, label in (("calls", "model calls"), ("tokens", "tokens"), ("cost", "cost")):
        rules = [getattr(r, what).rule for r in with_model]
        if "cap" in totals[what].rule:
            rules.append(totals[what].rule)
        if rules:
            lines.append(f"  {label}: " + "; ".join(dict.fromkeys(rules)))
    if any(b.step_over for r in todo for b in (r.calls, r.tokens, r.cost)):
        lines.append("  * a budget checked between steps: a run's last step may go beyond it")
    for said in dict.fromkeys(r.scoring for r in todo if r.scoring):
        lines.append(f"  at scoring: {said}")
    charged = [r for r in todo if r.endpoint not in ("none", FREE)]
    if plan.max_cost_usd is None and charged:
        most = totals["cost"]
        spend = (f"up to {_cell(most, money=True).removeprefix('≤ ')} by the bounds above"
                 if most.value is not None else "with no bound")
        lines.append(f"  WARNING: no cost cap: {len(charged)} run(s) on a paid endpoint may spend "
                     f"{spend}; set budget.max_cost_usd in the spec, or --max-cost USD")
    reasons: dict[str, list[str]] = {}
    for levels, why in plan.unresolved:
        reasons.setdefault(why, []).append(" ".join(f"{k}={_level(v)}" for k, v in levels.items()))
    for why, which in reasons.items():
        lines.append(f"  cannot run here ({len(which)}: {'; '.join(which[:4])}"
                     f"{'; ...' if len(which) > 4 else ''}): {why}")
    return lines


def _cell(bound: Bound, money: bool = False) -> str:
    """A bound in a table cell: "≤ 1,200", "≤ $0.35*" (a budget checked between steps), "none"."""
    if bound.value is None:
        return "no bound"
    shown = f"${bound.value:,.2f}" if money else f"{bound.value:,.0f}"
    return f"≤ {shown}{'*' if bound.step_over else ''}"


def _duration(seconds: float | None) -> str:
    """A budget as a person reads it: "30 s", "20 min", "12 h" ("none" without one)."""
    if not seconds:
        return "none"
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:g} min"
    return f"{seconds / 3600:g} h"


def _shown_path(path: Path) -> str:
    """A folder relative to the working directory where it lies below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _level(value: Any) -> str:
    """A level as written in a spec: a prior solution by its file name."""
    if isinstance(value, str) and "/" in value:
        return Path(value).name
    return str(value)
