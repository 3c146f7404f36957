"""One way to start, resume and replay a run: resolve its settings, execute it, score it once.

The CLI (`innolab run`), notebook 01 and the demo runs all come through here; the gym executes,
innolab.scoring scores, and this module only wires the two.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from innolab.agents import registry
from innolab.gym.budget import parse_duration
from innolab.gym.policy import AgentSpec, RunConfig
from innolab.gym.run import RunError, create_run, execute, load_config, new_run_id
from innolab.llm.client import LLMClient
from innolab.llm.errors import LLMError
from innolab.llm.settings import LIMIT_FIELDS, LOCAL_MODEL, LLMSettings
from innolab.rundir import LLM_CACHE, RunDir, runs_root
from innolab.runlock import HEARTBEAT_S, STALE_S, RunLock
from innolab.runspec import RunSettings, validate_settings
from innolab.scoring import score_run
from innolab.tasks import TaskError, get_task
from innolab.tasks.registry import resolve_task_options, scheme_of

__all__ = [
    "agent_config",
    "config_from_parameters",
    "config_id",
    "create_run",
    "finish",
    "new_run_id",
    "replay",
    "resolve",
    "resume",
    "run_or_resume",
    "settle",
    "start",
]


def resolve(settings: RunSettings) -> RunConfig:
    """The run configuration that a run's settings describe.

    Resolved once (what the CLI, the sweep and notebook 20 run).

    Settings left None come from the backbone's environment (INNOLAB_LLM_*, or a backbone's own:
    `backbone= "OPENAI"` reads OPENAI_BASE_URL, OPENAI_MODEL, OPENAI_API_KEY...); the API key is
    never written, only its variable's name. The prior solution's file is read (its name and hash
    recorded with its code); a `<scheme>:` task's options are resolved (paths made absolute) and
    checked by loading the task. A setting the schema has beyond today's is a scaffold option (in
    `policy_args`).

    Args:
        settings: the run's settings (`RunSettings` or a model derived from it).

    Returns:
        The resolved configuration.

    Raises:
        ValueError: a prior solution that is not a file, a backbone without an endpoint, bad model
            settings.
        innolab.tasks.model.TaskError: task options a task does not take.
    """
    prior = Path(settings.prior_solution) if settings.prior_solution else None
    if prior is not None and not prior.is_file():
        raise ValueError(f"prior_solution: {prior} is not a file")
    return _resolve(
        settings,
        prior.read_text(encoding="utf-8") if prior else None,
        prior.stem if prior else None,
    )


def _resolve(
    settings: RunSettings,
    prior_code: str | None,
    prior_name: str | None,
    llm: dict[str, Any] | None = None,
) -> RunConfig:
    """`resolve` with the prior solution's code given (and further model settings, which win)."""
    spec = _agent(settings.agent)
    options, defaults = _options(settings, spec)
    if not spec.needs_model:
        return _resolve_no_model(spec, settings, prior_code, prior_name, llm, options, defaults)
    if spec.prepare is not None:
        from innolab.runspec import SettingsError

        checked = options
        try:
            options = spec.prepare(options)
            # a default its prepare changed is what it resolved: no longer a default
            defaults = [k for k in defaults if k in options and options[k] == checked[k]]
        except ValueError as error:
            raise SettingsError(f"agent: {spec.name}: {error}") from None
    # the model's settings: which endpoint and model, each request's sampling, the endpoint's
    # pace (where the schema says they go), the run seed, then the further settings given
    overrides = {
        **{k: getattr(settings, k) for k in _going(settings, "model", "request", "limit")
           if k != "backbone"},
        "seed": settings.seed,
        **(llm or {}),
    }
    added = tuple(k for k in _going(settings, "request") if k not in LLMSettings.model_fields)
    backbone = settings.backbone
    resolved = LLMSettings.from_env(backbone or "INNOLAB_LLM", sampling_names=added, **overrides)
    if (
        backbone
        and backbone != "INNOLAB_LLM"
        and not (resolved.base_url and resolved.model != LOCAL_MODEL)
    ):
        raise ValueError(
            f"backbone {backbone}: set {backbone}_BASE_URL and {backbone}_MODEL "
            f"(and {backbone}_API_KEY "
            "where the endpoint needs one) to the endpoint that serves it"
        )
    image = _image(settings)
    prior = _prior(prior_code, prior_name)
    return RunConfig(
        task=settings.task,
        policy=spec.policy,
        task_options=resolve_task_options(settings.task, settings.task_options or None),
        policy_args=options,
        option_defaults=defaults,
        agent=settings.agent,
        llm=resolved.model_dump(exclude={"api_key"}),
        endpoint=endpoint_of(resolved),
        innovation_prompt=settings.innovation_prompt,
        prior_solution=prior,
        runtime=settings.runtime,  # type: ignore[arg-type]
        image=image,
        wall_clock_s=parse_duration(settings.budget),
        max_steps=settings.max_steps,
        max_tokens=settings.token_budget,
        max_cost_usd=settings.cost_budget_usd,
        seed=settings.seed,
    )


def _going(settings: RunSettings, *kinds: str) -> list[str]:
    """The settings of the run's schema that go to one of these places (runspec.Setting.goes)."""
    from innolab.runspec import setting_of

    return [name for name, field in type(settings).model_fields.items()
            if setting_of(field).goes in kinds]


def _agent(name: str) -> AgentSpec:
    """The registered agent of a run (innolab.agents.registry).

    Raises:
        SettingsError: Not registered, or its entry point does not load (naming the field).
    """
    from innolab.runspec import SettingsError

    try:
        return registry.get(name)
    except registry.AgentError as error:
        raise SettingsError(f"agent: {error}") from None


def _options(settings: RunSettings, spec: AgentSpec) -> tuple[dict[str, Any], list[str]]:
    """The agent's own options: its option settings that were given, then `agent_options`.

    Every option is checked by the agent's options model; an option of another agent, or one
    the agent does not take, is an error naming it.

    Returns:
        Every option of the agent (those not given at their defaults), and the names of those
        not given (`RunConfig.option_defaults`).

    Raises:
        SettingsError: An option the agent does not take, or a value that breaks its rule.
    """
    from innolab.runspec import SettingsError

    given = {name: getattr(settings, name) for name in _going(settings, "policy")
             if name != "agent_options" and getattr(settings, name) is not None}
    options = {**given, **settings.agent_options}
    try:
        checked = registry.check_options(spec.name, options)
    except registry.AgentError as error:
        raise SettingsError(str(error)) from None
    return checked, [name for name in checked if name not in options]


def _image(settings: RunSettings) -> str | None:
    """The Docker image of a run (with the docker runtime and none named: the task's default)."""
    if settings.runtime == "docker" and settings.image is None:
        from innolab.gym.docker_sandbox import default_image

        try:
            task = get_task(settings.task, settings.task_options)
        except (TaskError, ValueError):
            return default_image("cpu")  # the task's own error comes where it is loaded
        return default_image(getattr(task, "compute", "cpu"))
    return settings.image


def _prior(code: str | None, name: str | None) -> dict[str, Any] | None:
    """The prior solution as config.json records it: name, hash and code (None: none)."""
    if code is None:
        return None
    digest = hashlib.sha256(code.encode()).hexdigest()
    return {"name": name or f"prior-{digest[:8]}", "sha256": digest, "code": code}


NO_MODEL = "none"  # the model of an agent with none, as the tables show it


def _resolve_no_model(
    spec: AgentSpec,
    settings: RunSettings,
    prior_code: str | None,
    prior_name: str | None,
    llm: dict[str, Any] | None,
    options: dict[str, Any],
    defaults: list[str] | None = None,
) -> RunConfig:
    """The configuration of a run of an agent with no model (the baseline): `model` none.

    Sampling settings (temperature, top_p, max_tokens) and the endpoint's limits have nothing to
    act on: they are left out of the configuration, with a warning (so that a notebook or sweep
    that sets them for every agent runs such an agent too). Its policy arguments come from its
    `resolve` (the baseline: the task's problem family, the seed, a prior program).

    Raises:
        SettingsError: A model or endpoint, or the innovation prompt, given to it (naming each).
        innolab.agents.baseline.BaselineError: A task whose family has no search template.
    """
    import warnings

    from innolab.runspec import SettingsError
    from innolab.tasks.registry import get_task

    who = "the baseline" if spec.name == "baseline" else f"agent {spec.name}"
    # what names a model is refused; what shapes its replies or paces its endpoint is ignored
    nothing_to_act_on = frozenset({*_going(settings, "request", "limit"), *LIMIT_FIELDS})
    given = [k for k in _going(settings, "model")
             if k != "model" and getattr(settings, k) is not None]
    if settings.model not in (None, NO_MODEL):
        given.insert(0, "model")
    broken = [f"{k}: {who} has no model; leave it unset" for k in given]
    if llm and set(llm) - nothing_to_act_on:
        named = sorted(set(llm) - nothing_to_act_on)
        broken.append(f"settings: {who} has no model, got {named}")
    ignored = sorted({k for k in nothing_to_act_on if getattr(settings, k, None) is not None}
                     | (set(llm or {}) & nothing_to_act_on))
    if settings.innovation_prompt:
        broken.append(f"innovation_prompt: {who} has no prompt; leave it unset")
    if broken:
        raise SettingsError("; ".join(broken))
    if ignored:
        warnings.warn(f"{who} has no model: {', '.join(ignored)} ignored", stacklevel=3)
    task_options = resolve_task_options(settings.task, settings.task_options or None)
    defaults = list(defaults or [])
    given = {k: v for k, v in options.items() if k not in defaults}
    if spec.resolve is not None:  # given options win over what it resolves, that over defaults
        resolved = spec.resolve(get_task(settings.task, task_options), settings.seed, prior_code)
        args = {**options, **resolved, **given}
        defaults = [k for k in defaults if k not in resolved]
    else:
        args = {**options, **({"initial_solution": prior_code} if prior_code else {})}
    return RunConfig(
        task=settings.task,
        policy=spec.policy,
        task_options=task_options,
        policy_args=args,
        option_defaults=defaults,
        agent=settings.agent,
        llm=None,
        endpoint=None,
        model_reported=NO_MODEL,
        innovation_prompt=False,
        prior_solution=_prior(prior_code, prior_name),
        runtime=settings.runtime,  # type: ignore[arg-type]
        image=_image(settings),
        wall_clock_s=parse_duration(settings.budget),
        max_steps=settings.max_steps,
        max_tokens=settings.token_budget,
        max_cost_usd=settings.cost_budget_usd,
        seed=settings.seed,
    )


def agent_config(
    agent: str,
    task: str,
    model: str | None = None,
    temperature: float | None = None,
    seed: int = 0,
    budget_s: float | str | None = None,
    runtime: str = "local",
    max_steps: int | None = None,
    innovation_prompt: bool = False,
    initial_solution: str | None = None,
    settings: dict[str, Any] | None = None,
    image: str | None = None,
    prior_name: str | None = None,
    backbone: str | None = None,
    task_options: dict[str, Any] | None = None,
    **options: Any,
) -> RunConfig:
    """`resolve` with the settings as arguments (notebook 01 and tests call it so).

    Args:
        agent: The scaffold.
        task: The task reference.
        model: The model id (None: the backbone's).
        temperature: The sampling temperature (None: the backbone's or 0.7).
        seed: The run seed.
        budget_s: The wall clock in seconds (or a duration such as "10m"; None: the schema's).
        runtime: Where the sandbox runs.
        max_steps: The step limit (None: none).
        innovation_prompt: Whether to ask explicitly for a novel method.
        initial_solution: The prior solution's code (None: the run starts from scratch).
        settings: Further model settings (LLMSettings' fields); they win over the others.
        image: The Docker image (None: the default one with the docker runtime).
        prior_name: The prior solution's name (None: `prior-<hash>`).
        backbone: The environment-variable prefix of an endpoint (None: INNOLAB_LLM).
        task_options: What a `<scheme>:` task needs.
        **options: The scaffold's own options.

    Returns:
        The resolved configuration.

    Raises:
        innolab.runspec.SettingsError: A setting that breaks its rule (naming both).
        ValueError: A backbone without an endpoint, or bad model settings.
    """
    run = validate_settings(
        {
            "agent": agent,
            "task": task,
            "model": model,
            "temperature": temperature,
            "seed": seed,
            **({"budget": budget_s} if budget_s is not None else {}),
            "runtime": runtime,
            "max_steps": max_steps,
            "innovation_prompt": innovation_prompt,
            "image": image,
            "backbone": backbone,
            "task_options": task_options or {},
            "agent_options": options,
        }
    )
    config = _resolve(run, initial_solution, prior_name, llm=settings)  # type: ignore[arg-type]
    if isinstance(budget_s, int) and not isinstance(budget_s, bool):
        # as written before the schema: an int budget keeps its config id
        config.wall_clock_s = budget_s
    return config


def config_from_parameters(parameters: dict[str, Any]) -> RunConfig:
    """`resolve` of the settings given as a mapping.

    Args:
        parameters: Setting names and values (notebook 20's parameters).

    Returns:
        The resolved configuration.

    Raises:
        innolab.runspec.SettingsError: Naming each bad or unknown field and its rule.
    """
    return resolve(validate_settings(parameters))  # type: ignore[arg-type]


def config_id(config: RunConfig) -> str:
    """A configuration's stable id (`RunConfig.config_id`, where it belongs).

    Args:
        config: The configuration.

    Returns:
        Twelve hexadecimal digits.
    """
    return config.config_id()


def endpoint_of(settings: LLMSettings) -> str:
    """Where the model runs, in words that hold no secret.

    Args:
        settings: The model settings.

    Returns:
        "embedded" or the endpoint's host.
    """
    if not settings.base_url:
        return "embedded"
    return urlparse(settings.base_url).netloc or settings.base_url


def settle(config: RunConfig) -> RunConfig:
    """Ask the endpoint which model it serves under the configured id (once, before the run).

    Args:
        config: The configuration; its `model_reported` is set (None: the endpoint did not say).

    Returns:
        The same configuration.
    """
    if config.llm is None or config.model_reported is not None:
        return config
    try:
        reported = LLMClient(config.llm).reported_model()
    except LLMError:
        reported = None
    config.model_reported = reported
    return config


def start(
    config: RunConfig,
    run_dir: Path | None = None,
    novelty: str | None = "default",
    show_progress: bool = True,
) -> dict[str, Any]:
    """Create a run folder, execute the run, score it.

    The folder's lock (innolab.runlock) is held from its creation to its score: a second executor
    of the same folder never runs it twice.

    Args:
        config: The resolved configuration.
        run_dir: The run folder (None: results/runs/<id>).
        novelty: The back end of N (None: N is not computed).
        show_progress: Whether to show a progress bar.

    Returns:
        The outcome, with V, G, ratio and N.

    Raises:
        innolab.tasks.leaks.LeakError: The agent would be shown a hidden number (the run does not
            start).
        innolab.gym.run.RunError: The folder already holds a run.
    """
    refuse_leaks(config)
    target = Path(run_dir) if run_dir is not None else runs_root() / new_run_id(config)
    if RunDir(target).exists():
        raise RunError(f"{target} already holds a run (resume it: innolab run --resume {target})")
    with RunLock(target):
        folder = create_run(settle(config), target)
        return finish(execute(folder, registry.build_policy, show_progress=show_progress),
                      novelty)


def refuse_leaks(config: RunConfig) -> None:
    """Scan everything the run's agent would be shown for the task's hidden numbers.

    What is scanned: innolab.gym.agent_view (description, prior solution, prompt texts, sandbox
    files); a task of another benchmark has no hidden numbers.

    Args:
        config: The configuration.

    Raises:
        innolab.tasks.leaks.LeakError: Naming what leaks and where.
        innolab.agents.registry.AgentError: The agent is not registered, or the factory the
            configuration names is not its registered one (refused before it is imported).
    """
    from innolab.gym.agent_view import agent_view
    from innolab.tasks.leaks import refuse
    from innolab.tasks.registry import get_task

    # the agent's texts are read only from its registered factory: nothing is imported from a
    # path the configuration names that is not the registered agent's
    registry.spec_of(config)
    if scheme_of(config.task) is None:
        task = get_task(config.task)
        refuse(task, agent_view(config, task))


def resume(
    run_dir: Path, novelty: str | None = "default", show_progress: bool = True,
    wait: bool = True,
) -> dict[str, Any]:
    """Continue a killed run from its last checkpoint, then score it (a finished one: reported).

    The run's lock (innolab.runlock) is held throughout: a run another process is executing is
    waited for (then found finished and reported) or, with wait False, refused.

    Args:
        run_dir: The run folder.
        novelty: The back end of N (None: N is not computed).
        show_progress: Whether to show a progress bar.
        wait: Whether to wait for another executor of the run.

    Returns:
        The outcome, with V, G, ratio and N.

    Raises:
        innolab.runlock.RunBusy: Another executor holds the run and wait is False.
        innolab.gym.run.RunError: Not a run folder.
    """
    folder = Path(run_dir)
    load_config(folder)  # not a run folder: said before a lock file is made in it
    with RunLock(folder, wait=wait):
        return finish(execute(folder, registry.build_policy, resume=True,
                              show_progress=show_progress), novelty)


def finish(outcome: dict[str, Any], novelty: str | None) -> dict[str, Any]:
    """Score a finished run once.

    A task of another benchmark is judged by its own tools (EXP-Bench: `innolab expbench judge
    --run`), so its outcome carries the artefacts the run left instead.

    Args:
        outcome: The run loop's outcome.
        novelty: The back end of N (None: N is not computed).

    Returns:
        The outcome with the score's valid, score, gain, ratio, novelty and beats_v_star.
    """
    if scheme_of(RunDir(Path(outcome["run_dir"])).read_config()["task"]) is not None:
        return outcome
    scored = score_run(outcome["run_dir"], novelty_backend=novelty)
    keys = ("valid", "score", "gain", "ratio", "novelty", "beats_v_star")
    return {**outcome, **{k: scored.get(k) for k in keys}}


def replay(run_dir: Path) -> dict[str, Any]:
    """Re-run a finished run with every LLM answer taken from its cache.

    Args:
        run_dir: The finished run's folder.

    Returns:
        The replay's outcome (in a new folder beside the run).

    Raises:
        ValueError: The run has no response cache; a cache miss during the replay is an error too.
    """
    source = RunDir(Path(run_dir))
    config = load_config(source.root)
    if not source.llm_cache.is_file():
        raise ValueError(f"{run_dir} has no {LLM_CACHE}: only LLM runs can be replayed")
    args = {
        **config.policy_args,
        "cache_path": str(source.llm_cache.resolve()),
        "replay_only": True,
    }
    copy = RunConfig(
        **{
            **asdict(config),
            "policy_args": args,
            "wall_clock_s": None,
            "max_steps": source.steps_taken() or config.max_steps,
        }
    )
    target = Path(f"{source.root}-replay-{secrets.token_hex(2)}")
    return start(copy, target, novelty=None, show_progress=False)


def run_or_resume(
    config: RunConfig,
    run_dir: Path,
    novelty: str | None = "default",
    show_progress: bool = True,
    heartbeat_s: float = HEARTBEAT_S,
    stale_s: float = STALE_S,
) -> dict[str, Any]:
    """Start the run in run_dir, or continue it when that folder already holds it.

    A finished run is only reported: what the run notebook does, so that re-executing it never
    starts a run twice. The folder is locked while its run executes (innolab.runlock): a second
    executor (a sweep's task executed again by Dask while the first is alive, or while a killed
    one's kernel is still shutting down) waits as long as the holder's heartbeat is fresh, then
    resumes the run, or takes the lock over from a holder whose heartbeat stayed unchanged for
    stale_s (stopped, hung, or dead on another machine).

    Args:
        config: The resolved configuration.
        run_dir: The run folder.
        novelty: The back end of N (None: N is not computed).
        show_progress: Whether to show a progress bar.
        heartbeat_s: The lock's heartbeat period.
        stale_s: How long an unchanged heartbeat means a dead holder.

    Returns:
        The outcome, with V, G, ratio and N.

    Raises:
        ValueError: The folder holds a run of another configuration.
    """
    folder = RunDir(Path(run_dir))
    with RunLock(folder.root, heartbeat_s=heartbeat_s, stale_s=stale_s):
        if folder.exists():
            recorded = RunConfig.from_dict(folder.read_config())
            if config_id(recorded) != config_id(config):
                raise ValueError(
                    f"{folder.root} holds a run of another configuration "
                    f"({config_id(recorded)}, not {config_id(config)})"
                )
            return resume(folder.root, novelty=novelty, show_progress=show_progress)
        return start(config, folder.root, novelty=novelty, show_progress=show_progress)


def main(argv: list[str] | None = None) -> None:
    """Execute a prepared run folder, not scoring it: python -m innolab.runner RUN_DIR [--resume].

    The run's policy is built through the agent registry, as every run's is.

    Args:
        argv: The arguments (None: the command line's).
    """
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("run_dir")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    outcome = execute(Path(args.run_dir), registry.build_policy, resume=args.resume,
                      show_progress=not args.quiet)
    print(outcome["run_dir"])


if __name__ == "__main__":
    main()
