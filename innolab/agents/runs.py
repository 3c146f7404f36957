"""Run configurations for the scaffolds, and replays of finished runs from their response cache."""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict
from pathlib import Path
from typing import Any

from innolab.agents import SCAFFOLDS
from innolab.gym.run import RunConfig, create_run, execute, load_config

CACHE_FILE = "llm_cache.sqlite"


def agent_config(agent: str, task: str, model: str | None = None, temperature: float | None = None,
                 seed: int = 0, budget_s: float = 600.0, runtime: str = "local", max_steps: int | None = None,
                 innovation_prompt: bool = False, initial_solution: str | None = None,
                 settings: dict[str, Any] | None = None, **options: Any) -> RunConfig:
    """One run = agent × task × model × temperature × seed × budget (× runtime)."""
    if agent not in SCAFFOLDS:
        raise ValueError(f"agent must be one of {sorted(SCAFFOLDS)}, got {agent!r}")
    llm = {k: v for k, v in {"model": model, "temperature": temperature, "seed": seed,
                             **(settings or {})}.items() if v is not None}
    policy_args = {"settings": llm, "cache_path": CACHE_FILE, "innovation_prompt": innovation_prompt,
                   "initial_solution": initial_solution, **options}
    return RunConfig(task=task, policy=SCAFFOLDS[agent], policy_args=policy_args, agent=agent,
                     runtime=runtime, wall_clock_s=budget_s, max_steps=max_steps, seed=seed,  # type: ignore[arg-type]
                     extra={"model": llm.get("model"), "temperature": llm.get("temperature")})


def replay(run_dir: Path) -> dict[str, Any]:
    """Re-run a finished run with every LLM answer taken from its cache (a cache miss is an error)."""
    config = load_config(run_dir)
    cache = Path(run_dir) / CACHE_FILE
    if not cache.is_file():
        raise ValueError(f"{run_dir} has no {CACHE_FILE}: only LLM runs can be replayed")
    args = {**config.policy_args, "cache_path": str(cache.resolve()), "replay_only": True}
    copy = RunConfig(**{**asdict(config), "policy_args": args, "wall_clock_s": None,
                        "max_steps": _steps_taken(run_dir) or config.max_steps})
    target = Path(f"{run_dir}-replay-{secrets.token_hex(2)}")
    return execute(create_run(copy, target), show_progress=False)


def _steps_taken(run_dir: Path) -> int | None:
    state = Path(run_dir) / "checkpoint" / "state.json"
    return json.loads(state.read_text())["step"] if state.is_file() else None
