"""Run tables: one row per run (runs.parquet) and one per validated candidate (trajectory.parquet), from run folders.

A sweep folder holds `runs/<config id>/` and a manifest of its configurations (`sweep.json`); a plain folder of
single runs (results/runs/) is read the same way. Failed or unfinished runs get the paper's pessimistic imputation
(`valid` false, `ratio` -1, `novelty` 0) with the raw values kept in `ratio_raw` and `novelty_raw`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from innolab.rundir import RunDir, write_atomic
from innolab.traces import TraceError, read_events

RUNS_TABLE = "runs.parquet"
TRAJECTORY_TABLE = "trajectory.parquet"
MANIFEST = "sweep.json"

RUN_COLUMNS = [
    "config_id", "run_dir", "task", "agent", "backbone", "model", "temperature", "top_p", "seed", "budget_s",
    "runtime", "innovation_prompt", "prior_solution", "complete", "end_reason", "valid", "score", "gain", "ratio",
    "novelty", "ratio_raw", "novelty_raw", "novelty_backend", "steps", "tool_calls", "llm_calls", "llm_calls_sent",
    "tokens", "cost_usd", "wall_s", "error",
]
TRAJECTORY_COLUMNS = ["config_id", "t_s", "step", "file", "dev_valid", "dev_score", "improving", "valid", "score",
                      "gain", "ratio", "novelty", "novelty_vs_prior"]


def run_folders(path: Path) -> list[Path]:
    """The run folders under a sweep folder (runs/*) or a folder of runs (*): those with a config.json."""
    root = path / "runs" if (path / "runs").is_dir() else path
    return sorted(p for p in root.iterdir() if RunDir(p).exists()) if root.is_dir() else []


def run_row(run_dir: Path, relative_to: Path | None = None) -> dict[str, Any]:
    """One run as one row: its configuration, how it ended, its scores (imputed when missing) and its costs."""
    from innolab.gym.policy import RunConfig
    from innolab.runner import config_id

    folder = RunDir(run_dir)
    config = RunConfig.from_dict(folder.read_config())
    llm = config.llm or {}
    try:
        events = read_events(folder.root)
    except (TraceError, OSError):
        events = []
    finished = next((e for e in reversed(events) if e["type"] == "run_finished"), None)
    score = folder.read_score()
    calls = [e for e in events if e["type"] == "llm_call"]
    key_variable = llm.get("api_key_env") or "INNOLAB_LLM_API_KEY"
    valid = bool(score and score.get("valid"))
    ratio_raw = score.get("ratio") if score else None
    novelty_raw = score.get("novelty") if score else None
    return {
        "config_id": config_id(config),
        "run_dir": str(folder.root.relative_to(relative_to)) if relative_to else str(folder.root),
        "task": config.task, "agent": config.agent,
        "backbone": key_variable.removesuffix("_API_KEY"),
        "model": config.model_reported or llm.get("model"),
        "temperature": llm.get("temperature"), "top_p": llm.get("top_p"), "seed": config.seed,
        "budget_s": config.wall_clock_s, "runtime": config.runtime, "innovation_prompt": config.innovation_prompt,
        "prior_solution": (config.prior_solution or {}).get("name"),
        "complete": finished is not None and score is not None,
        "end_reason": finished["reason"] if finished else None,
        "valid": valid,
        "score": score.get("score") if score else None,
        "gain": score.get("gain") if score else None,
        "ratio": ratio_raw if valid and ratio_raw is not None else -1.0,
        "novelty": novelty_raw if valid and novelty_raw is not None else 0.0,
        "ratio_raw": ratio_raw, "novelty_raw": novelty_raw,
        "novelty_backend": score.get("novelty_backend") if score else None,
        "steps": (finished or {}).get("budget", {}).get("used_steps", len({e["step"] for e in events
                                                                              if e["type"] == "tool_call"})),
        "tool_calls": sum(e["type"] == "tool_call" for e in events),
        "llm_calls": len(calls),
        "llm_calls_sent": sum(not e.get("cached") for e in calls),
        "tokens": sum(e.get("prompt_tokens", 0) + e.get("completion_tokens", 0) for e in calls),
        "cost_usd": sum(e.get("cost_usd", 0.0) for e in calls),
        "wall_s": (finished or {}).get("budget", {}).get("used_s"),
        "error": None,
    }


def trajectory_rows(run_dir: Path) -> list[dict[str, Any]]:
    """Every validated candidate of a run (each submission with its pristine dev verdict), the improving ones with
    their hidden-evaluator score and N from the run's score (computed outside the sandbox, after the run)."""
    from innolab.gym.policy import RunConfig
    from innolab.runner import config_id

    folder = RunDir(run_dir)
    identifier = config_id(RunConfig.from_dict(folder.read_config()))
    try:
        events = read_events(folder.root)
    except (TraceError, OSError):
        return []
    score = folder.read_score() or {}
    scored = {c["file"]: c for c in score.get("candidates", [])}
    started = next((e["time"] for e in events if e["type"] == "run_started"), events[0]["time"] if events else 0.0)
    rows = []
    for event in events:
        if event["type"] != "submission":
            continue
        hidden = scored.get(event["file"], {})
        rows.append({"config_id": identifier, "t_s": round(event["time"] - started, 3), "step": event["step"],
                     "file": event["file"], "dev_valid": event["dev_valid"], "dev_score": event["dev_score"],
                     "improving": event["file"] in scored, "valid": hidden.get("valid"),
                     "score": hidden.get("score"), "gain": hidden.get("gain"), "ratio": hidden.get("ratio"),
                     "novelty": hidden.get("novelty"), "novelty_vs_prior": hidden.get("novelty_vs_prior")})
    return rows


def read_manifest(path: Path) -> dict[str, Any] | None:
    manifest = path / MANIFEST
    return json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else None


def build(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables from the run folders under path. In a sweep folder, one row per configuration of its manifest
    (a configuration without a finished run is a row with `complete` false and its error), with the factor levels."""
    path = Path(path)
    manifest = read_manifest(path)
    folders = {p.name: p for p in run_folders(path)}
    rows, trajectory = [], []
    if manifest is None:
        for folder in folders.values():
            rows.append(run_row(folder, path))
            trajectory += trajectory_rows(folder)
    else:
        for configuration in manifest["configurations"]:
            identifier = configuration["config_id"]
            folder = folders.get(identifier)
            row = run_row(folder, path) if folder is not None else _missing_row(configuration)
            row["error"] = configuration.get("error") if not row["complete"] else None
            rows.append({**row, **{k: v for k, v in configuration["levels"].items() if k not in row}})
            if folder is not None:
                trajectory += trajectory_rows(folder)
    runs = pd.DataFrame(rows)
    runs = runs.reindex(columns=RUN_COLUMNS + [c for c in runs.columns if c not in RUN_COLUMNS])
    return runs, pd.DataFrame(trajectory, columns=TRAJECTORY_COLUMNS)


def _missing_row(configuration: dict[str, Any]) -> dict[str, Any]:
    parameters = configuration["parameters"]
    row: dict[str, Any] = dict.fromkeys(RUN_COLUMNS)
    row.update(config_id=configuration["config_id"], task=parameters.get("task"), agent=parameters.get("agent"),
               temperature=parameters.get("temperature"), seed=parameters.get("seed"), complete=False,
               valid=False, ratio=-1.0, novelty=0.0)
    return row


def collect(path: Path) -> tuple[Path, Path]:
    """Rebuild runs.parquet and trajectory.parquet in path from its run folders; returns their paths."""
    path = Path(path)
    runs, trajectory = build(path)
    written = []
    for table, name in ((runs, RUNS_TABLE), (trajectory, TRAJECTORY_TABLE)):
        target = path / name
        write_atomic(target, table.to_parquet(index=False))
        written.append(target)
    return written[0], written[1]


def runs(path: str | Path) -> pd.DataFrame:
    """The runs table of a sweep folder (its runs.parquet) or of a folder of single runs (built from the runs)."""
    path = Path(path)
    if (path / RUNS_TABLE).is_file():
        return pd.read_parquet(path / RUNS_TABLE)
    return build(path)[0]


def trajectory(path: str | Path) -> pd.DataFrame:
    """The trajectory table of a sweep folder (its trajectory.parquet) or of a folder of single runs."""
    path = Path(path)
    if (path / TRAJECTORY_TABLE).is_file():
        return pd.read_parquet(path / TRAJECTORY_TABLE)
    return build(path)[1]
