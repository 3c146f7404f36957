"""Run tables: one row per run (runs.parquet) and per validated candidate (trajectory.parquet).

Each table is declared once as a list of `Column`s, each naming its column and where its value
comes from. A sweep folder holds `runs/<config id>/` and a manifest of its configurations
(`sweep.json`); a plain folder of single runs (results/runs/) is read the same way. Failed or
unfinished runs get the paper's pessimistic imputation (`metrics.impute`: `valid` false, `ratio`
-1, `novelty` 0) with the raw values kept in `ratio_raw` and `novelty_raw`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from innolab import runspec
from innolab.gym.policy import RunConfig
from innolab.metrics import impute
from innolab.rundir import RunDir, write_atomic
from innolab.traces import Submission, Trace, TraceError

RUNS_TABLE = "runs.parquet"
TRAJECTORY_TABLE = "trajectory.parquet"
MANIFEST = "sweep.json"


@dataclass
class RunSource:
    """What a runs-table row is read from: a run folder's configuration, trace and score."""

    folder: RunDir
    config: RunConfig
    trace: Trace
    score: dict[str, Any] | None
    relative_to: Path | None = None

    @classmethod
    def read(cls, run_dir: Path, relative_to: Path | None = None) -> RunSource:
        """A run folder read once; a missing or broken trace reads as an empty one.

        Args:
            run_dir: the run folder (it holds a config.json).
            relative_to: the folder the `run_dir` column is written relative to (None: absolute).

        Returns:
            The run's sources.
        """
        folder = RunDir(run_dir)
        config = RunConfig.from_dict(folder.read_config())
        try:
            trace = Trace.read(folder.root)
        except (TraceError, OSError):
            trace = Trace([])
        return cls(folder, config, trace, folder.read_score(), relative_to)

    @cached_property
    def config_id(self) -> str:
        """The id of the run's configuration."""
        return _config_id(self.config)

    @cached_property
    def settings(self) -> dict[str, Any]:
        """The run's configuration columns (innolab.runspec)."""
        return runspec.config_columns(self.config)

    @property
    def run_dir(self) -> str:
        """The run folder, relative to `relative_to` where one is given."""
        root = self.folder.root
        return str(root.relative_to(self.relative_to) if self.relative_to else root)

    def recorded(self, key: str) -> Any:
        """A value of the run's score (None for a run not scored)."""
        return self.score.get(key) if self.score else None

    @property
    def valid(self) -> bool:
        """Whether the run is scored and its final submission is valid."""
        return bool(self.score and self.score.get("valid"))

    @cached_property
    def imputed(self) -> tuple[float, float]:
        """(ratio, novelty) under the paper's pessimistic imputation of a failed run."""
        return impute(self.valid, self.recorded("ratio"), self.recorded("novelty"))


@dataclass(frozen=True)
class Column:
    """A table's column: its name and how its value is read.

    `missing` (runs table only) is its value for a sweep configuration without a run folder,
    read from the configuration's manifest entry (default None).
    """

    name: str
    extract: Callable[[Any], Any]
    missing: Callable[[dict[str, Any]], Any] = lambda entry: None


def _parameter(key: str) -> Callable[[dict[str, Any]], Any]:
    return lambda entry: entry["parameters"].get(key)


def _setting(name: str, model: type[BaseModel] | None = None) -> Column:
    """A configuration column (innolab.runspec), read with the run schema `model`.

    A missing configuration's row reads the manifest entry's parameters for task, agent, temperature
    and seed.
    """
    missing = _parameter(name) if name in ("task", "agent", "temperature", "seed") else None
    if model is None:
        return Column(name, lambda r: r.settings[name], missing or (lambda entry: None))
    return Column(name, lambda r: runspec.config_columns(r.config, model)[name],
                  missing or (lambda entry: None))


FAILED = impute(False, None, None)  # (ratio, novelty) of a failed run

def run_table_columns(model: type[BaseModel] | None = None) -> list[Column]:
    """The runs table's columns: its configuration columns derived from the run schema.

    Args:
        model: The run schema (default `innolab.runspec.RunSettings`); a setting added to it is a
            column of the table.

    Returns:
        The columns, in the table's order.
    """
    return [
        *RUN_TABLE_COLUMNS[:2],
        *(_setting(name, model) for name in runspec.columns(model)),
        *RUN_TABLE_COLUMNS[2 + len(runspec.columns()):],
    ]


RUN_TABLE_COLUMNS: list[Column] = [
    Column("config_id", lambda r: r.config_id, lambda entry: entry["config_id"]),
    Column("run_dir", lambda r: r.run_dir),
    *(_setting(name) for name in runspec.columns()),
    Column("complete", lambda r: r.trace.finished is not None and r.score is not None,
           lambda entry: False),
    Column("end_reason", lambda r: r.trace.end_reason),
    Column("valid", lambda r: r.valid, lambda entry: False),
    Column("score", lambda r: r.recorded("score")),
    Column("gain", lambda r: r.recorded("gain")),
    Column("ratio", lambda r: r.imputed[0], lambda entry: FAILED[0]),
    Column("novelty", lambda r: r.imputed[1], lambda entry: FAILED[1]),
    Column("ratio_raw", lambda r: r.recorded("ratio")),
    Column("novelty_raw", lambda r: r.recorded("novelty")),
    Column("novelty_backend", lambda r: r.recorded("novelty_backend")),
    Column("steps", lambda r: r.trace.used_steps),
    Column("tool_calls", lambda r: len(r.trace.tool_calls)),
    Column("llm_calls", lambda r: len(r.trace.llm_calls)),
    Column("llm_calls_sent", lambda r: sum(not c.cached for c in r.trace.llm_calls)),
    Column("tokens", lambda r: sum(c.prompt_tokens + c.completion_tokens
                                   for c in r.trace.llm_calls)),
    Column("cost_usd", lambda r: sum(c.cost_usd for c in r.trace.llm_calls)),
    Column("wall_s", lambda r: r.trace.wall_s),
    Column("error", lambda r: None),
]
RUN_COLUMNS = [c.name for c in RUN_TABLE_COLUMNS]


@dataclass
class Candidate:
    """What a trajectory row is read from.

    One submission of a run and, when it improved, its hidden score.
    """

    config_id: str
    trace: Trace
    event: Submission
    hidden: dict[str, Any] | None  # the score's record of this candidate (None: not improving)


TRAJECTORY_TABLE_COLUMNS: list[Column] = [
    Column("config_id", lambda c: c.config_id),
    Column("t_s", lambda c: round(c.trace.since_start(c.event), 3)),
    Column("step", lambda c: c.event.step),
    Column("file", lambda c: c.event.file),
    Column("dev_valid", lambda c: c.event.dev_valid),
    Column("dev_score", lambda c: c.event.dev_score),
    Column("improving", lambda c: c.hidden is not None),
    *(Column(name, lambda c, name=name: (c.hidden or {}).get(name))
      for name in ("valid", "score", "gain", "ratio", "novelty", "novelty_vs_prior")),
]
TRAJECTORY_COLUMNS = [c.name for c in TRAJECTORY_TABLE_COLUMNS]


def _config_id(config: RunConfig) -> str:
    from innolab.runner import config_id  # imported when needed: it loads the gym and the agents

    return config_id(config)


def run_folders(path: Path) -> list[Path]:
    """The run folders under a sweep folder (runs/*) or a folder of runs (*).

    A run folder is one with a config.json.
    """
    root = path / "runs" if (path / "runs").is_dir() else path
    return sorted(p for p in root.iterdir() if RunDir(p).exists()) if root.is_dir() else []


def run_row(
    run_dir: Path, relative_to: Path | None = None, model: type[BaseModel] | None = None
) -> dict[str, Any]:
    """One run as one row.

    Its configuration, how it ended, its scores (imputed when missing) and its costs.

    Args:
        run_dir: the run folder.
        relative_to: the folder the `run_dir` column is written relative to (None: absolute).
        model: the run schema whose settings are the configuration columns (default RunSettings).

    Returns:
        The row's values by column, in the order of `RUN_COLUMNS` (of `model`'s columns).
    """
    source = RunSource.read(run_dir, relative_to)
    columns = RUN_TABLE_COLUMNS if model is None else run_table_columns(model)
    return {column.name: column.extract(source) for column in columns}


def trajectory_rows(run_dir: Path) -> list[dict[str, Any]]:
    """Every validated candidate of a run.

    Each submission with its pristine dev verdict, the improving ones with their hidden-evaluator
    score and N from the run's score (computed outside the sandbox, after the run).

    Args:
        run_dir: the run folder.

    Returns:
        One row per submission, in the order of `TRAJECTORY_COLUMNS` (none without a trace).
    """
    folder = RunDir(run_dir)
    identifier = _config_id(RunConfig.from_dict(folder.read_config()))
    try:
        trace = Trace.read(folder.root)
    except (TraceError, OSError):
        return []
    scored = {c["file"]: c for c in (folder.read_score() or {}).get("candidates", [])}
    candidates = [Candidate(identifier, trace, event, scored.get(event.file))
                  for event in trace.submissions]
    return [{column.name: column.extract(c) for column in TRAJECTORY_TABLE_COLUMNS}
            for c in candidates]


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A sweep folder's manifest (None for a plain folder of runs)."""
    manifest = path / MANIFEST
    return json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else None


def build(
    path: Path, model: type[BaseModel] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables from the run folders under path.

    In a sweep folder, one row per configuration of its manifest (a configuration without a
    finished run is a row with `complete` false and its error), with the factor levels.

    Args:
        path: a sweep folder or a folder of runs.
        model: the run schema whose settings are the configuration columns (default RunSettings).

    Returns:
        (runs, trajectory).
    """
    path = Path(path)
    manifest = read_manifest(path)
    folders = {p.name: p for p in run_folders(path)}
    rows, trajectory = [], []
    if manifest is None:
        for folder in folders.values():
            rows.append(run_row(folder, path, model))
            trajectory += trajectory_rows(folder)
    else:
        for configuration in manifest["configurations"]:
            folder = folders.get(configuration["config_id"])
            row = (run_row(folder, path, model) if folder is not None
                   else _missing_row(configuration, model))
            row["error"] = configuration.get("error") if not row["complete"] else None
            levels = {k: v for k, v in configuration["levels"].items() if k not in row}
            rows.append({**row, **levels})
            if folder is not None:
                trajectory += trajectory_rows(folder)
    runs = pd.DataFrame(rows)
    names = RUN_COLUMNS if model is None else [c.name for c in run_table_columns(model)]
    runs = runs.reindex(columns=names + [c for c in runs.columns if c not in names])
    return runs, pd.DataFrame(trajectory, columns=TRAJECTORY_COLUMNS)


def _missing_row(
    configuration: dict[str, Any], model: type[BaseModel] | None = None
) -> dict[str, Any]:
    """The row of a sweep configuration without a run folder (from its manifest entry)."""
    columns = RUN_TABLE_COLUMNS if model is None else run_table_columns(model)
    return {column.name: column.missing(configuration) for column in columns}


def collect(path: Path) -> tuple[Path, Path]:
    """Rebuild runs.parquet and trajectory.parquet in path from its run folders.

    Returns:
        The paths of the two tables.
    """
    path = Path(path)
    runs, trajectory = build(path)
    written = []
    for table, name in ((runs, RUNS_TABLE), (trajectory, TRAJECTORY_TABLE)):
        target = path / name
        write_atomic(target, table.to_parquet(index=False))
        written.append(target)
    return written[0], written[1]


def runs(path: str | Path) -> pd.DataFrame:
    """The runs table of a sweep folder or of a folder of single runs.

    A sweep's is its runs.parquet; a folder of single runs has its table built from the runs.
    """
    path = Path(path)
    if (path / RUNS_TABLE).is_file():
        return pd.read_parquet(path / RUNS_TABLE)
    return build(path)[0]


def trajectory(path: str | Path) -> pd.DataFrame:
    """The trajectory table of a sweep folder or of a folder of single runs.

    A sweep's is its trajectory.parquet.
    """
    path = Path(path)
    if (path / TRAJECTORY_TABLE).is_file():
        return pd.read_parquet(path / TRAJECTORY_TABLE)
    return build(path)[1]
