"""Run tables: one row per run (runs.parquet) and per validated candidate (trajectory.parquet).

Each table is declared once as a list of `Column`s, each naming its column and where its value
comes from. A sweep folder holds `runs/<config id>/` and a manifest of its configurations
(`sweep.json`); a plain folder of single runs (results/runs/) is read the same way. Failed or
unfinished runs get the paper's pessimistic imputation (`metrics.impute`: `valid` false, `ratio`
-1, `novelty` 0) with the raw values kept in `ratio_raw` and `novelty_raw`; a valid run whose N was
not computed has `novelty` NaN, never 0, and its `novelty_status` says why.

Novelty has two axes: `novelty` (the method, N) and `novelty_out` (the outcome against the known
solutions' outputs, with `novelty_out_nearest`; `rederived_known` names a known solution whose
output the submission re-derives). `novelty_status` (innolab.scoring.NOVELTY_STATUSES) says how N
came about and `source_status` / `source_seconds` whether the stored program reproduced the
submission in a fresh sandbox. Scores recorded before these were have NaN / None in them and a
`novelty_status` read from their N and note (innolab.scoring.novelty_status).

Every table reads its runs as of a date (`as_of`, innolab.scoring.AsOf): None reads each score as
recorded; "run" (the day each run started), "today" or an ISO date re-read `v_star`,
`v_star_as_of`, `gain`, `ratio`, `beats_v_star` and `headroom_closed` against the task's V* of
that date (innolab.scoring.reread). `headroom_closed` = (V − V*)/(B − V*) is NaN with no proven
bound, for an invalid run and for a score recorded before it was (as recorded).
"""

from __future__ import annotations

import json
import math
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
from innolab.rundir import RunDir, attempts_made, write_atomic
from innolab.scoring import AsOf, ScoringError, novelty_status, reread, resolve_as_of
from innolab.tasks.model import TaskError
from innolab.tasks.registry import get_task, scheme_of
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
    trace_error: str | None = None  # why the trace could not be read (None: it was, or none yet)

    @classmethod
    def read(cls, run_dir: Path, relative_to: Path | None = None,
             as_of: AsOf = None) -> RunSource:
        """A run folder read once; a missing or broken trace reads as an empty one.

        A broken trace (one that two executors wrote, a bad line) is named in the row's `error`
        and its run counts as not complete: its score is not read.

        Args:
            run_dir: the run folder (it holds a config.json).
            relative_to: the folder the `run_dir` column is written relative to (None: absolute).
            as_of: the date its score is read as of (None: as recorded; see `read_as_of`).

        Returns:
            The run's sources.
        """
        folder = RunDir(run_dir)
        config = RunConfig.from_dict(folder.read_config())
        error = None
        try:
            trace = Trace.read(folder.root)
        except TraceError as broken:
            trace, error = Trace([]), f"trace: {broken}" if folder.trace.exists() else None
        except OSError as broken:
            trace, error = Trace([]), f"trace: {broken}"
        score = None if error else read_as_of(folder, config.task, trace, as_of)
        return cls(folder, config, trace, score, relative_to, error)

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

    @property
    def headroom_closed(self) -> float:
        """The share of the headroom to the proven bound the run closed (NaN: not known)."""
        value = self.recorded("headroom_closed")
        return math.nan if value is None else float(value)

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


def _planned(name: str, model: type[BaseModel] | None) -> Callable[[dict[str, Any]], Any]:
    """How a configuration column is read for a sweep configuration without a run folder.

    From the configuration the sweep resolved (the manifest entry's `config`), as a run's is;
    an entry written before manifests held it reads its parameters.
    """
    def read(entry: dict[str, Any]) -> Any:
        if entry.get("config"):
            return runspec.config_columns(RunConfig.from_dict(entry["config"]), model).get(name)
        return entry.get("parameters", {}).get(name)
    return read


def _setting(name: str, model: type[BaseModel] | None = None) -> Column:
    """A configuration column (innolab.runspec), read with the run schema `model`."""
    if model is None:
        return Column(name, lambda r: r.settings[name], _planned(name, model))
    return Column(name, lambda r: runspec.config_columns(r.config, model)[name],
                  _planned(name, model))


FAILED = impute(False, None, None)  # (ratio, novelty) of a failed run

def run_table_columns(model: type[BaseModel] | None = None) -> list[Column]:
    """The runs table's columns: its configuration columns derived from the run schema.

    Args:
        model: The run schema (default: the one in force, `innolab.runspec.schema()`); every
            setting of it with a column is a column of the table.

    Returns:
        The columns, in the table's order.
    """
    settings = runspec.columns(model)
    others = [c.name for c in RUN_TABLE_COLUMNS if c.name not in BASE_SETTING_COLUMNS]
    clash = sorted(set(settings) & set(others))
    if clash:
        raise ValueError(f"run setting(s) {', '.join(clash)} (an agent's option, or a setting "
                         "added) share a name with the runs table's own column(s): rename them")
    return [
        *RUN_TABLE_COLUMNS[:2],
        *(_setting(name, model) for name in settings),
        *RUN_TABLE_COLUMNS[2 + len(BASE_SETTING_COLUMNS):],
    ]


# the configuration columns of the run schema's own settings; the tables' columns add those of the
# schema in force (`runspec.schema()`: every registered agent's options and added settings)
BASE_SETTING_COLUMNS = runspec.columns(runspec.RunSettings)
RUN_TABLE_COLUMNS: list[Column] = [
    Column("config_id", lambda r: r.config_id, lambda entry: entry["config_id"]),
    Column("run_dir", lambda r: r.run_dir),
    *(_setting(name, runspec.RunSettings) for name in BASE_SETTING_COLUMNS),
    Column("complete", lambda r: r.trace.finished is not None and r.score is not None,
           lambda entry: False),
    Column("end_reason", lambda r: r.trace.end_reason),
    Column("valid", lambda r: r.valid, lambda entry: False),
    Column("score", lambda r: r.recorded("score")),
    Column("v_star", lambda r: r.recorded("v_star")),
    Column("v_star_as_of", lambda r: r.recorded("v_star_as_of")),
    Column("gain", lambda r: r.recorded("gain")),
    Column("ratio", lambda r: r.imputed[0], lambda entry: FAILED[0]),
    Column("beats_v_star", lambda r: bool(r.recorded("beats_v_star")), lambda entry: False),
    Column("headroom_closed", lambda r: r.headroom_closed, lambda entry: math.nan),
    Column("novelty", lambda r: r.imputed[1], lambda entry: FAILED[1]),
    Column("ratio_raw", lambda r: r.recorded("ratio")),
    Column("novelty_raw", lambda r: r.recorded("novelty")),
    Column("novelty_backend", lambda r: r.recorded("novelty_backend")),
    Column("novelty_status", lambda r: novelty_status(r.score)),
    Column("novelty_code", lambda r: r.recorded("novelty_code")),
    Column("novelty_out",  # an invalid run's is the paper's N = 0, as the method axis's
           lambda r: _number(r.recorded("novelty_out")) if r.valid else FAILED[1],
           lambda entry: FAILED[1]),
    Column("novelty_out_nearest", lambda r: r.recorded("novelty_out_nearest")),
    Column("rederived_known", lambda r: r.recorded("rederived_known")),
    Column("source_status", lambda r: r.recorded("source_status")),
    Column("source_seconds", lambda r: _number(r.recorded("source_seconds"))),
    Column("steps", lambda r: r.trace.used_steps),
    Column("tool_calls", lambda r: len(r.trace.tool_calls)),
    Column("llm_calls", lambda r: len(r.trace.llm_calls)),
    Column("llm_calls_sent", lambda r: sum(not c.cached for c in r.trace.llm_calls)),
    Column("tokens", lambda r: sum(c.prompt_tokens + c.completion_tokens
                                   for c in r.trace.llm_calls)),
    Column("cost_usd", lambda r: sum(c.cost_usd for c in r.trace.llm_calls)),
    Column("wall_s", lambda r: r.trace.wall_s),
    Column("error", lambda r: r.trace_error),
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
    v_star: float | None = None  # the V* the run's score was read against
    backend: str | None = None  # the run's novelty back end


TRAJECTORY_TABLE_COLUMNS: list[Column] = [
    Column("config_id", lambda c: c.config_id),
    Column("t_s", lambda c: round(c.trace.since_start(c.event), 3)),
    Column("step", lambda c: c.event.step),
    Column("file", lambda c: c.event.file),
    Column("dev_valid", lambda c: c.event.dev_valid),
    Column("dev_score", lambda c: c.event.dev_score),
    Column("improving", lambda c: c.hidden is not None),
    *(Column(name, lambda c, name=name: (c.hidden or {}).get(name))
      for name in ("valid", "score", "gain", "ratio")),
    Column("novelty", lambda c: _number((c.hidden or {}).get("novelty"))),
    Column("novelty_vs_prior", lambda c: (c.hidden or {}).get("novelty_vs_prior")),
    Column("v_star", lambda c: c.v_star if c.hidden is not None else None),
    Column("beats_v_star", lambda c: (c.hidden or {}).get("beats_v_star")),
    Column("headroom_closed", lambda c: _number((c.hidden or {}).get("headroom_closed"))),
    Column("novelty_out", lambda c: _number((c.hidden or {}).get("novelty_out"))),
    Column("novelty_out_nearest", lambda c: (c.hidden or {}).get("novelty_out_nearest")),
    Column("novelty_backend", lambda c: c.backend if c.hidden is not None else None),
    Column("novelty_status", lambda c: novelty_status(c.hidden)),
    Column("novelty_code", lambda c: (c.hidden or {}).get("novelty_code")),
    Column("source_status", lambda c: (c.hidden or {}).get("source_status")),
    Column("source_seconds", lambda c: _number((c.hidden or {}).get("source_seconds"))),
    Column("rederived_known", lambda c: (c.hidden or {}).get("rederived_known")),
]
TRAJECTORY_COLUMNS = [c.name for c in TRAJECTORY_TABLE_COLUMNS]


def _number(value: Any) -> float:
    """A value that may be missing, as a float (NaN: missing)."""
    return math.nan if value is None else float(value)


def read_as_of(folder: RunDir, task_ref: str, trace: Trace, as_of: AsOf) -> dict[str, Any] | None:
    """A run's score as recorded (as_of None) or read against its task's V* as of a date.

    A run not scored, or of another benchmark's task (no ledger), reads as recorded.

    Args:
        folder: The run folder.
        task_ref: The run's task.
        trace: The run's trace (for as_of "run").
        as_of: "run", "today", an ISO date, a date, or None (innolab.scoring.resolve_as_of).

    Returns:
        The score (innolab.scoring.reread), or None for a run not scored.

    Raises:
        innolab.scoring.ScoringError: Naming the run folder: a date that is none of these, no
            record of the task on it, or a task that no longer loads.
    """
    score = folder.read_score()
    if score is None or as_of is None or scheme_of(task_ref) is not None:
        return score
    try:
        day = resolve_as_of(as_of, trace)
        return score if day is None else reread(score, get_task(task_ref), day)
    except (ScoringError, TaskError) as error:
        raise ScoringError(f"{folder.root}: {error}") from None


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
    run_dir: Path, relative_to: Path | None = None, as_of: AsOf = None,
    model: type[BaseModel] | None = None,
) -> dict[str, Any]:
    """One run as one row.

    Its configuration, how it ended, its scores (imputed when missing) and its costs.

    Args:
        run_dir: the run folder.
        relative_to: the folder the `run_dir` column is written relative to (None: absolute).
        as_of: the date its score is read as of (None: as recorded; see `read_as_of`).
        model: the run schema whose settings are the configuration columns (default RunSettings).

    Returns:
        The row's values by column, in the order of `RUN_COLUMNS` (of `model`'s columns).
    """
    source = RunSource.read(run_dir, relative_to, as_of)
    columns = run_table_columns(model or runspec.schema())
    return {column.name: column.extract(source) for column in columns}


def trajectory_rows(run_dir: Path, as_of: AsOf = None) -> list[dict[str, Any]]:
    """Every validated candidate of a run.

    Each submission with its pristine dev verdict, the improving ones with their hidden-evaluator
    score and N from the run's score (computed outside the sandbox, after the run).

    Args:
        run_dir: the run folder.
        as_of: the date the score is read as of (None: as recorded; see `read_as_of`).

    Returns:
        One row per submission, in the order of `TRAJECTORY_COLUMNS` (none without a trace).
    """
    folder = RunDir(run_dir)
    config = RunConfig.from_dict(folder.read_config())
    identifier = _config_id(config)
    try:
        trace = Trace.read(folder.root)
    except (TraceError, OSError):
        return []
    score = read_as_of(folder, config.task, trace, as_of) or {}
    scored = {c["file"]: c for c in score.get("candidates", [])}
    candidates = [Candidate(identifier, trace, event, scored.get(event.file), score.get("v_star"),
                            scored.get(event.file, {}).get("novelty_backend",
                                                          score.get("novelty_backend")))
                  for event in trace.submissions]
    return [{column.name: column.extract(c) for column in TRAJECTORY_TABLE_COLUMNS}
            for c in candidates]


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A sweep folder's manifest (None for a plain folder of runs)."""
    manifest = path / MANIFEST
    return json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else None


def build(
    path: Path, as_of: AsOf = None, model: type[BaseModel] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables from the run folders under path.

    In a sweep folder, one row per configuration of its manifest (a configuration without a
    finished run is a row with `complete` false and its error), with the factor levels.

    Args:
        path: a sweep folder or a folder of runs.
        as_of: the date the scores are read as of (None: as recorded; see `read_as_of`).
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
            rows.append(run_row(folder, path, as_of, model))
            trajectory += trajectory_rows(folder, as_of)
    else:
        for configuration in manifest["configurations"]:
            folder = folders.get(configuration["config_id"])
            row = (run_row(folder, path, as_of, model) if folder is not None
                   else _missing_row(configuration, model))
            row["error"] = row["error"] or (
                configuration.get("error") if not row["complete"] else None)
            # retries (innolab sweep run --retry-failed): the attempt that counts is the last
            # read from the folder (the manifest's count is written when the sweep ends)
            made = attempts_made(folder) if folder is not None else 0
            row["attempt"] = row["attempts"] = made
            levels = {k: v for k, v in configuration["levels"].items() if k not in row}
            rows.append({**row, **levels})
            if folder is not None:
                trajectory += trajectory_rows(folder, as_of)
    runs = pd.DataFrame(rows)
    names = [c.name for c in run_table_columns(model or runspec.schema())]
    runs = runs.reindex(columns=names + [c for c in runs.columns if c not in names])
    return runs, pd.DataFrame(trajectory, columns=TRAJECTORY_COLUMNS)


def _missing_row(
    configuration: dict[str, Any], model: type[BaseModel] | None = None
) -> dict[str, Any]:
    """The row of a sweep configuration without a run folder (from its manifest entry)."""
    columns = run_table_columns(model or runspec.schema())
    return {column.name: column.missing(configuration) for column in columns}


def collect(path: Path, as_of: AsOf = None) -> tuple[Path, Path]:
    """Rebuild runs.parquet and trajectory.parquet in path from its run folders.

    Args:
        path: a sweep folder or a folder of runs.
        as_of: the date the scores are read as of (None: as recorded; see `read_as_of`); the
            tables' `v_star_as_of` column says which date each row was read as of.

    Returns:
        The paths of the two tables.
    """
    path = Path(path)
    runs, trajectory = build(path, as_of)
    written = []
    for table, name in ((runs, RUNS_TABLE), (trajectory, TRAJECTORY_TABLE)):
        target = path / name
        write_atomic(target, table.to_parquet(index=False))
        written.append(target)
    return written[0], written[1]


def runs(path: str | Path, as_of: AsOf = None) -> pd.DataFrame:
    """The runs table of a sweep folder or of a folder of single runs.

    Args:
        path: a sweep folder or a folder of runs.
        as_of: None: the folder's runs.parquet as collected (else built from the runs, each score
            as recorded); "run", "today" or an ISO date: built from the runs, each score read
            against V* as of that date (`read_as_of`).

    Returns:
        One row per run (per configuration of a sweep).
    """
    path = Path(path)
    if as_of is None and (path / RUNS_TABLE).is_file():
        return pd.read_parquet(path / RUNS_TABLE)
    _refuse_tables_only(path, as_of)
    return build(path, as_of)[0]


def _refuse_tables_only(path: Path, as_of: AsOf) -> None:
    """Refuse to re-read a folder that holds its tables but none of its run folders."""
    if (path / RUNS_TABLE).is_file() and not run_folders(path):
        raise ScoringError(f"{path} holds only its tables, not its run folders: as_of={as_of!r} "
                           "re-reads each score from its run folder (give as_of=None to read the "
                           "tables as collected)")


def trajectory(path: str | Path, as_of: AsOf = None) -> pd.DataFrame:
    """The trajectory table of a sweep folder or of a folder of single runs.

    Args:
        path: a sweep folder or a folder of runs.
        as_of: as in `runs` (None: trajectory.parquet as collected).

    Returns:
        One row per submission of every run.
    """
    path = Path(path)
    if as_of is None and (path / TRAJECTORY_TABLE).is_file():
        return pd.read_parquet(path / TRAJECTORY_TABLE)
    _refuse_tables_only(path, as_of)
    return build(path, as_of)[1]
