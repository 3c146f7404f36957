"""One way to start, resume and replay a run: configure a scaffold run, execute it in the gym, score it once.

The CLI (`innolab run`), notebook 01 and the demo runs all come through here; the gym executes, innolab.scoring
scores, and this module only wires the two.
"""

from __future__ import annotations

import hashlib
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
from innolab.llm.settings import LLMSettings
from innolab.rundir import LLM_CACHE, RunDir
from innolab.scoring import score_run

__all__ = ["agent_config", "create_run", "finish", "new_run_id", "replay", "resume", "run_or_resume", "settle",
           "start"]


def agent_config(agent: str, task: str, model: str | None = None, temperature: float | None = None,
                 seed: int = 0, budget_s: float = 600.0, runtime: str = "local", max_steps: int | None = None,
                 innovation_prompt: bool = False, initial_solution: str | None = None,
                 settings: dict[str, Any] | None = None, image: str | None = None,
                 prior_name: str | None = None, **options: Any) -> RunConfig:
    """One run = agent × task × model × temperature × seed × budget (× runtime), its settings resolved once from
    these arguments and the INNOLAB_LLM_* environment (explicit arguments win); the API key is never written."""
    if agent not in SCAFFOLDS:
        raise ValueError(f"agent must be one of {sorted(SCAFFOLDS)}, got {agent!r}")
    resolved = LLMSettings.from_env(**{"model": model, "temperature": temperature, "seed": seed,
                                       **(settings or {})})
    llm = resolved.model_dump(exclude={"api_key"})
    if runtime == "docker" and image is None:
        from innolab.gym.docker_sandbox import DEFAULT_IMAGE

        image = DEFAULT_IMAGE
    prior = None
    if initial_solution is not None:
        digest = hashlib.sha256(initial_solution.encode()).hexdigest()
        prior = {"name": prior_name or f"prior-{digest[:8]}", "sha256": digest, "code": initial_solution}
    return RunConfig(task=task, policy=SCAFFOLDS[agent], policy_args=dict(options), agent=agent, llm=llm,
                     endpoint=endpoint_of(resolved), innovation_prompt=innovation_prompt, prior_solution=prior,
                     runtime=runtime, image=image, wall_clock_s=budget_s, max_steps=max_steps,  # type: ignore[arg-type]
                     seed=seed)


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
    """Create a run folder, execute the run, score it; returns the outcome with V, G, ratio and N."""
    folder = create_run(settle(config), run_dir)
    return finish(execute(folder, show_progress=show_progress), novelty)


def resume(run_dir: Path, novelty: str | None = "default", show_progress: bool = True) -> dict[str, Any]:
    """Continue a killed run from its last checkpoint (a finished one is only reported), then score it once."""
    return finish(execute(Path(run_dir), resume=True, show_progress=show_progress), novelty)


def finish(outcome: dict[str, Any], novelty: str | None) -> dict[str, Any]:
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
                  show_progress: bool = True) -> dict[str, Any]:
    """Start the run in run_dir, or continue it when that folder already holds it (a finished run is only
    reported): what the run notebook does, so that re-executing it never starts a run twice."""
    folder = RunDir(Path(run_dir))
    if folder.exists():
        return resume(folder.root, novelty=novelty, show_progress=show_progress)
    return start(config, folder.root, novelty=novelty, show_progress=show_progress)
