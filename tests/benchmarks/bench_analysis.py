"""Sweep-analysis figure: every function of innolab.analysis.sweeps on a synthetic table of 10,000
runs and 1,000,000 trajectory rows (target: <= 5 s in total on 2 cores, with the functions' default
10,000 resamples)."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from innolab.analysis import sweeps as sw

TARGET_S = 5.0


def synthetic(
    runs: int = 10_000, rows: int = 1_000_000, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Runs over 10 tasks x 3 agents x 4 temperatures x prompt off/on, and their improving
    candidates."""
    rng = np.random.default_rng(seed)
    index = np.arange(runs)
    temperature = np.array([0.25, 0.5, 0.75, 1.0])[index % 4]
    table = pd.DataFrame(
        {
            "config_id": [f"c{i:05d}" for i in index],
            "task": [f"task{i % 10}" for i in index],
            "agent": np.array(["aide", "mlab", "codeact"])[(index // 10) % 3],
            "temperature": temperature,
            "innovation_prompt": (index // 4) % 2 == 1,
            "seed": index // 80,
            "budget_s": 3600.0,
            "prior_solution": np.where(index % 5 == 0, "prior", None),
        }
    )
    table["valid"] = rng.random(runs) < 0.6
    table["ratio"] = np.where(
        table["valid"], -0.4 * temperature + rng.normal(-0.2, 0.1, runs), -1.0
    )
    table["novelty"] = np.where(table["valid"], 30 + 20 * temperature + rng.normal(0, 5, runs), 0.0)
    per_run = rows // runs
    run_of = np.repeat(index, per_run)
    t = rng.uniform(0, 3600, rows)
    trajectory = pd.DataFrame(
        {
            "config_id": table["config_id"].to_numpy()[run_of],
            "t_s": t,
            "step": (t // 10).astype(int),
            "improving": rng.random(rows) < 0.3,
            "valid": rng.random(rows) < 0.7,
            "gain": rng.normal(-0.5, 0.2, rows),
            "ratio": rng.normal(-0.5, 0.2, rows),
            "novelty": rng.uniform(0, 100, rows),
            "novelty_vs_prior": rng.uniform(0, 100, rows),
        }
    )
    return table, trajectory


def main(runs: int = 10_000, rows: int = 1_000_000) -> dict[str, float]:
    table, trajectory = synthetic(runs, rows)
    grid = np.linspace(0, 3600, 25)
    calls = {
        "success_rates": lambda: sw.success_rates(table, ["task", "agent"]),
        "anytime": lambda: sw.anytime(trajectory, table, "temperature", grid),
        "factor_effect": lambda: sw.factor_effect(table, "temperature", "ratio"),
        "trade_off": lambda: sw.trade_off(table, "temperature"),
        "paired_effect": lambda: sw.paired_effect(
            table, "innovation_prompt", "novelty", pair_on=("task", "agent", "temperature", "seed")
        ),
        "prior_trajectory": lambda: sw.prior_trajectory(trajectory, table),
        "trend_holds": lambda: sw.trend_holds(
            table, "temperature", "novelty", "increasing", unit="config_id"
        ),
        "regression": lambda: sw.regression(table, "ratio ~ temperature + C(agent)"),
        "main_results": lambda: sw.main_results(table),
    }
    seconds: dict[str, float] = {}
    for name, call in calls.items():
        began = time.perf_counter()
        call()
        seconds[name] = time.perf_counter() - began
    total = sum(seconds.values())
    detail = ", ".join(f"{name} {s:.2f}" for name, s in seconds.items())
    print(
        f"sweep analyses on {runs:,} runs and {rows:,} trajectory rows: {total:.2f} s in total "
        f"(target <= {TARGET_S:g} s) -> ratio {total / TARGET_S:.2f}; per function (s): {detail}"
    )
    return {"total_s": total, "ratio": total / TARGET_S, **seconds}


if __name__ == "__main__":
    main()
