"""One way to start, resume and replay a run: configure a scaffold run, execute it in the gym, score it once.

The CLI (`innolab run`), notebook 01 and the demo runs all come through here; the gym executes, innolab.scoring
scores, and this module only wires the two.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from innolab.agents import SCAFFOLDS
from innolab.gym.policy import RunConfig
from innolab.gym.run import create_run, execute, load_config, new_run_id
from innolab.llm.client import LLMClient
from innolab.llm.errors import LLMError
from innolab.llm.settings import LOCAL_MODEL, LLMSettings
from innolab.rundir import LLM_CACHE, RunDir
from innolab.runlock import HEARTBEAT_S, STALE_S, RunLock
from innolab.scoring import score_run
from innolab.tasks.registry import resolve_task_options, scheme_of

__all__ = ["RUN_PARAMETERS", "agent_config", "config_from_parameters", "config_id", "create_run", "finish",
           "new_run_id", "replay", "resume", "run_or_resume", "settle", "start"]


def agent_config(agent: str, task: str, model: str | None = None, temperature: float | None = None,
                 seed: int = 0, budget_s: float = 600.0, runtime: str = "local", max_steps: int | None = None,
                 innovation_prompt: bool = False, initial_solution: str | None = None,
                 settings: dict[str, Any] | None = None, image: str | None = None,
                 prior_name: str | None = None, backbone: str | None = None,
                 task_options: dict[str, Any] | None = None, **options: Any) -> RunConfig:
    """One run = agent × task × model × temperature × seed × budget (× runtime), its settings resolved once from
    these arguments and the INNOLAB_LLM_* environment, or a backbone's own (`backbone="OPENAI"`: OPENAI_BASE_URL,
    OPENAI_MODEL, OPENAI_API_KEY...); explicit arguments win; the API key is never written, only its variable's name.
    `task_options`: what a `<scheme>:` task needs (an EXP-Bench task: `repo`, and `data` or $INNOLAB_EXPBENCH_DIR),
    resolved here once (paths made absolute) and checked by loading the task."""
    if agent not in SCAFFOLDS:
        raise ValueError(f"agent must be one of {sorted(SCAFFOLDS)}, got {agent!r}")
    resolved = LLMSettings.from_env(backbone or "INNOLAB_LLM", **{"model": model, "temperature": temperature,
                                                                  "seed": seed, **(settings or {})})
    if backbone and backbone != "INNOLAB_LLM" and not (resolved.base_url and resolved.model != LOCAL_MODEL):
        raise ValueError(f"backbone {backbone}: set {backbone}_BASE_URL and {backbone}_MODEL (and {backbone}_API_KEY "
                         "where the endpoint needs one) to the endpoint that serves it")
    llm = resolved.model_dump(exclude={"api_key"})
    if runtime == "docker" and image is None:
        from innolab.gym.docker_sandbox import DEFAULT_IMAGE

        image = DEFAULT_IMAGE
    prior = None
    if initial_solution is not None:
        digest = hashlib.sha256(initial_solution.encode()).hexdigest()
        prior = {"name": prior_name or f"prior-{digest[:8]}", "sha256": digest, "code": initial_solution}
    task_options = resolve_task_options(task, task_options)
    return RunConfig(task=task, policy=SCAFFOLDS[agent], task_options=task_options, policy_args=dict(options),
                     agent=agent, llm=llm,
                     endpoint=endpoint_of(resolved), innovation_prompt=innovation_prompt, prior_solution=prior,
                     runtime=runtime, image=image, wall_clock_s=budget_s, max_steps=max_steps,  # type: ignore[arg-type]
                     seed=seed)


# The run notebook's parameters (notebooks/20_agent_run.ipynb) and their defaults: every field of a run configuration.
RUN_PARAMETERS: dict[str, Any] = {
    "agent": "aide", "task": "circle-packing-26", "backbone": None, "model": None, "base_url": None,
    "temperature": None, "top_p": None, "max_tokens": None, "seed": 0, "budget": "60s", "max_steps": None,
    "runtime": "local", "image": None, "innovation_prompt": False, "prior_solution": None, "agent_options": {},
    "task_options": {},
}


def config_from_parameters(parameters: dict[str, Any]) -> RunConfig:
    """The run configuration that the run notebook's parameters describe (unknown names are an error): the one
    place where notebook parameters, sweep configurations and the CLI meet."""
    from innolab.gym.budget import parse_duration

    unknown = sorted(set(parameters) - set(RUN_PARAMETERS))
    if unknown:
        raise ValueError(f"unknown run parameter(s) {unknown}; known: {sorted(RUN_PARAMETERS)}")
    p = {**RUN_PARAMETERS, **parameters}
    llm = {k: p[k] for k in ("base_url", "top_p", "max_tokens") if p[k] is not None}
    prior = Path(p["prior_solution"]) if p["prior_solution"] else None
    if prior is not None and not prior.is_file():
        raise ValueError(f"prior_solution: {prior} is not a file")
    budget = p["budget"]
    budget_s = float(budget) if isinstance(budget, int | float) else parse_duration(str(budget))
    return agent_config(p["agent"], p["task"], model=p["model"], temperature=p["temperature"], seed=int(p["seed"]),
                        budget_s=budget_s, runtime=p["runtime"], image=p["image"], max_steps=p["max_steps"],
                        innovation_prompt=bool(p["innovation_prompt"]), settings=llm,
                        initial_solution=prior.read_text(encoding="utf-8") if prior else None,
                        prior_name=prior.stem if prior else None, backbone=p["backbone"],
                        task_options=dict(p["task_options"] or {}), **dict(p["agent_options"] or {}))


def config_id(config: RunConfig) -> str:
    """A configuration's stable id: the hash of its settled settings (what the endpoint reports is left out, so
    that the id is known before the run starts)."""
    fields = {k: v for k, v in asdict(config).items()
              if k != "model_reported" and not (k == "task_options" and not v)}  # ids made before it stay
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:12]


def endpoint_of(settings: LLMSettings) -> str:
    """Where the model runs, in words that hold no secret: "embedded" or the endpoint's host."""
    if not settings.base_url:
        return "embedded"
    return urlparse(settings.base_url).netloc or settings.base_url


def settle(config: RunConfig) -> RunConfig:
    """Ask the endpoint which model it serves under the configured id (once, before the run starts)."""
    if config.llm is None or config.model_reported is not None:
        return config
    settings = LLMSettings(**config.llm)
    try:
        reported = LLMClient(settings).reported_model()
    except LLMError:
        reported = None
    config.model_reported = reported
    return config


def start(config: RunConfig, run_dir: Path | None = None, novelty: str | None = "default",
          show_progress: bool = True) -> dict[str, Any]:
    """Create a run folder, execute the run, score it; returns the outcome with V, G, ratio and N. A run whose
    agent would be shown a hidden number does not start (innolab.tasks.leaks.LeakError)."""
    refuse_leaks(config)
    folder = create_run(settle(config), run_dir)
    return finish(execute(folder, show_progress=show_progress), novelty)


def refuse_leaks(config: RunConfig) -> None:
    """Scan everything the run's agent would be shown (innolab.gym.agent_view: description, prior solution,
    prompt texts, sandbox files) for the task's hidden numbers; a task of another benchmark has none."""
    from innolab.gym.agent_view import agent_view
    from innolab.tasks.leaks import refuse
    from innolab.tasks.registry import get_task

    if scheme_of(config.task) is None:
        task = get_task(config.task)
        refuse(task, agent_view(config, task))


def resume(run_dir: Path, novelty: str | None = "default", show_progress: bool = True) -> dict[str, Any]:
    """Continue a killed run from its last checkpoint (a finished one is only reported), then score it once."""
    return finish(execute(Path(run_dir), resume=True, show_progress=show_progress), novelty)


def finish(outcome: dict[str, Any], novelty: str | None) -> dict[str, Any]:
    """Score a finished run once; a task of another benchmark is judged by its own tools (EXP-Bench: `innolab
    expbench judge --run`), so its outcome carries the artefacts the run left instead."""
    if scheme_of(RunDir(Path(outcome["run_dir"])).read_config()["task"]) is not None:
        return outcome
    scored = score_run(outcome["run_dir"], novelty_backend=novelty)
    keys = ("valid", "score", "gain", "ratio", "novelty", "beats_v_star")
    return {**outcome, **{k: scored.get(k) for k in keys}}


def replay(run_dir: Path) -> dict[str, Any]:
    """Re-run a finished run with every LLM answer taken from its cache (a cache miss is an error)."""
    source = RunDir(Path(run_dir))
    config = load_config(source.root)
    if not source.llm_cache.is_file():
        raise ValueError(f"{run_dir} has no {LLM_CACHE}: only LLM runs can be replayed")
    args = {**config.policy_args, "cache_path": str(source.llm_cache.resolve()), "replay_only": True}
    copy = RunConfig(**{**asdict(config), "policy_args": args, "wall_clock_s": None,
                        "max_steps": source.steps_taken() or config.max_steps})
    target = Path(f"{source.root}-replay-{secrets.token_hex(2)}")
    return start(copy, target, novelty=None, show_progress=False)


def run_or_resume(config: RunConfig, run_dir: Path, novelty: str | None = "default",
                  show_progress: bool = True, heartbeat_s: float = HEARTBEAT_S,
                  stale_s: float = STALE_S) -> dict[str, Any]:
    """Start the run in run_dir, or continue it when that folder already holds it (a finished run is only
    reported): what the run notebook does, so that re-executing it never starts a run twice.

    The folder is locked while its run executes (innolab.runlock): a second executor (a sweep's task executed again
    by Dask while the first is alive, or while a killed one's kernel is still shutting down) waits as long as the
    holder's heartbeat is fresh, then resumes the run, or takes the lock over from a holder whose heartbeat stayed
    unchanged for stale_s (stopped, hung, or dead on another machine)."""
    folder = RunDir(Path(run_dir))
    with RunLock(folder.root, heartbeat_s=heartbeat_s, stale_s=stale_s):
        if folder.exists():
            recorded = RunConfig.from_dict(folder.read_config())
            if config_id(recorded) != config_id(config):
                raise ValueError(f"{folder.root} holds a run of another configuration "
                                 f"({config_id(recorded)}, not {config_id(config)})")
            return resume(folder.root, novelty=novelty, show_progress=show_progress)
        return start(config, folder.root, novelty=novelty, show_progress=show_progress)
