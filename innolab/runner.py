"""One way to start, resume and replay a run: configure a scaffold run, execute it in the gym, score it once.

The CLI (`innolab run`), notebook 01 and the demo runs all come through here; the gym executes, innolab.scoring
scores, and this module only wires the two.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict
from pathlib import Path
from typing import Any

from innolab.agents import SCAFFOLDS
from innolab.gym.policy import RunConfig
from innolab.gym.run import create_run, execute, load_config

__all__ = ["agent_config", "create_run", "finish", "replay", "resume", "start"]
from innolab.rundir import LLM_CACHE, RunDir
from innolab.scoring import score_run


def agent_config(agent: str, task: str, model: str | None = None, temperature: float | None = None,
                 seed: int = 0, budget_s: float = 600.0, runtime: str = "local", max_steps: int | None = None,
                 innovation_prompt: bool = False, initial_solution: str | None = None,
                 settings: dict[str, Any] | None = None, image: str | None = None, **options: Any) -> RunConfig:
    """One run = agent × task × model × temperature × seed × budget (× runtime)."""
    if agent not in SCAFFOLDS:
        raise ValueError(f"agent must be one of {sorted(SCAFFOLDS)}, got {agent!r}")
    llm = {k: v for k, v in {"model": model, "temperature": temperature, "seed": seed,
                             **(settings or {})}.items() if v is not None}
    policy_args = {"settings": llm, "cache_path": LLM_CACHE, "innovation_prompt": innovation_prompt,
                   "initial_solution": initial_solution, **options}
    return RunConfig(task=task, policy=SCAFFOLDS[agent], policy_args=policy_args, agent=agent,
                     runtime=runtime, image=image, wall_clock_s=budget_s, max_steps=max_steps,  # type: ignore[arg-type]
                     seed=seed, extra={"model": llm.get("model"), "temperature": llm.get("temperature")})


def start(config: RunConfig, run_dir: Path | None = None, novelty: str | None = "default",
          show_progress: bool = True) -> dict[str, Any]:
    """Create a run folder, execute the run, score it; returns the outcome with V, G, ratio and N."""
    folder = create_run(config, run_dir)
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
