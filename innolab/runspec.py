"""The run schema: one pydantic model of a run's user-facing settings, and the run table's configuration columns."""

from __future__ import annotations

from typing import Any

from innolab.gym.policy import RunConfig

__all__ = ["config_columns"]


def config_columns(config: RunConfig) -> dict[str, Any]:
    """A run table row's configuration columns, in order (task, agent, backbone, model, temperature, top_p, seed,
    budget_s, runtime, innovation_prompt, prior_solution), read from a resolved configuration."""
    llm = config.llm if isinstance(config.llm, dict) else (config.llm.model_dump() if config.llm else {})
    key_variable = llm.get("api_key_env") or "INNOLAB_LLM_API_KEY"
    return {
        "task": config.task, "agent": config.agent, "backbone": key_variable.removesuffix("_API_KEY"),
        "model": config.model_reported or llm.get("model"),
        "temperature": llm.get("temperature"), "top_p": llm.get("top_p"), "seed": config.seed,
        "budget_s": config.wall_clock_s, "runtime": config.runtime, "innovation_prompt": config.innovation_prompt,
        "prior_solution": (config.prior_solution or {}).get("name"),
    }
