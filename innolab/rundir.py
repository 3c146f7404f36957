"""The one owner of a run folder's layout: config, trace, checkpoint, submissions, caches, card.

```
results/runs/<run id>/
  config.json            the settings in force (written once, when the run is created)
  trace.jsonl            versioned events (innolab.traces)
  checkpoint/state.json  agent state, budgets, trace position; checkpoint/workspace-<step>.tar
                         beside it
  submission/            step<k>-<i>.json for every submission and step<k>-<i>.source.py, the
                         code that wrote it; submission.json and submission.source.py, the final
                         one
  llm_cache.sqlite       every model request and reply of the run (replay, resume)
  distances.sqlite       novelty distances by content hash
  method_card.json       the method card of the final submission
  score.json             V, G, ratio and N, written once by innolab.scoring
  run.ipynb              the executed run notebook, when the run went through papermill
  .lock, .lock.guard     the executor's lock (flock) and the guard of decisions about it
                         (innolab.runlock)
  heartbeat.json         the executing process (pid, host, time), rewritten while it holds the lock
```
Every other module asks this one for a path; none spells a file name of the folder itself.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_FILE = "config.json"
TRACE_FILE = "trace.jsonl"
CHECKPOINT_DIR = "checkpoint"
STATE_FILE = "state.json"
SUBMISSION_DIR = "submission"
FINAL_SUBMISSION = "submission.json"
LLM_CACHE = "llm_cache.sqlite"
DISTANCE_CACHE = "distances.sqlite"
METHOD_CARD = "method_card.json"
ATTEMPTS = "attempts"  # a sweep's earlier attempts of the configuration: attempts/1, 2...
SCORE_FILE = "score.json"
NOTEBOOK = "run.ipynb"
RESEARCH_LOG = "research_log.md"
SCORES_TABLE = "scores.csv"
LOCK_FILE = ".lock"
LOCK_GUARD = ".lock.guard"
HEARTBEAT_FILE = "heartbeat.json"


class RunDirError(ValueError):
    """A folder that is not (yet) a run folder, or a file of it that is missing."""


@dataclass(frozen=True)
class RunDir:
    """Paths inside one run folder.

    Attributes:
        root: The run folder.
    """

    root: Path

    def __post_init__(self) -> None:
        """Take `root` as a Path."""
        object.__setattr__(self, "root", Path(self.root))

    @property
    def name(self) -> str:
        """The run folder's name (the run id)."""
        return self.root.name

    @property
    def config(self) -> Path:
        """config.json: the settings in force."""
        return self.root / CONFIG_FILE

    @property
    def trace(self) -> Path:
        """trace.jsonl: the run's events."""
        return self.root / TRACE_FILE

    @property
    def checkpoint_dir(self) -> Path:
        """The checkpoint folder."""
        return self.root / CHECKPOINT_DIR

    @property
    def state(self) -> Path:
        """The checkpoint's state.json."""
        return self.checkpoint_dir / STATE_FILE

    def workspace_tar(self, step: int) -> Path:
        """Return the tar of the workspace checkpointed after a step.

        Args:
            step: The step.

        Returns:
            checkpoint/workspace-<step>.tar.
        """
        return self.checkpoint_dir / f"workspace-{step}.tar"

    @property
    def submission_dir(self) -> Path:
        """The folder of submissions."""
        return self.root / SUBMISSION_DIR

    def submission(self, step: int, index: int) -> Path:
        """Return the file of one submission.

        Args:
            step: The step it was made at.
            index: Its index within the step.

        Returns:
            submission/step<step>-<index>.json (zero-padded).
        """
        return self.submission_dir / f"step{step:05d}-{index:03d}.json"

    @property
    def final_submission(self) -> Path:
        """submission/submission.json: the final submission."""
        return self.submission_dir / FINAL_SUBMISSION

    @staticmethod
    def source_of(submission: Path) -> Path:
        """Return where the code that produced a submission is kept.

        Args:
            submission: The submission's file.

        Returns:
            `<name>.source.py` beside it.
        """
        return submission.with_name(submission.stem + ".source.py")

    @property
    def final_source(self) -> Path:
        """The code that produced the final submission."""
        return self.source_of(self.final_submission)

    def relative(self, path: Path) -> str:
        """Write a path of this folder as the trace does (relative: a moved folder stays readable).

        Args:
            path: A path inside the folder.

        Returns:
            The path relative to the folder.

        Raises:
            ValueError: The path is not inside the folder.
        """
        return str(Path(path).relative_to(self.root))

    def resolve(self, relative: str) -> Path:
        """Turn a relative path written in the trace back into a path.

        Args:
            relative: The path as the trace holds it.

        Returns:
            The absolute path, resolved.

        Raises:
            RunDirError: The path leads outside the folder.
        """
        target = (self.root / relative).resolve()
        if self.root.resolve() not in target.parents:
            raise RunDirError(f"{relative!r} is not inside {self.root}")
        return target

    @property
    def llm_cache(self) -> Path:
        """llm_cache.sqlite: every model request and reply of the run."""
        return self.root / LLM_CACHE

    @property
    def distance_cache(self) -> Path:
        """distances.sqlite: novelty distances by content hash."""
        return self.root / DISTANCE_CACHE

    @property
    def method_card(self) -> Path:
        """method_card.json: the final submission's method card."""
        return self.root / METHOD_CARD

    @property
    def score(self) -> Path:
        """score.json: V, G, ratio and N."""
        return self.root / SCORE_FILE

    @property
    def research_log(self) -> Path:
        """MLAB's research log, rebuilt from the trace's research_log events (never repeated)."""
        return self.root / RESEARCH_LOG

    @property
    def notebook(self) -> Path:
        """run.ipynb: the executed run notebook."""
        return self.root / NOTEBOOK

    @property
    def lock(self) -> Path:
        """The file its executor holds with flock (innolab.runlock)."""
        return self.root / LOCK_FILE

    @property
    def lock_guard(self) -> Path:
        """The guard of decisions about the lock (innolab.runlock)."""
        return self.root / LOCK_GUARD

    @property
    def heartbeat(self) -> Path:
        """Who is executing the run, rewritten by its executor every few seconds while locked."""
        return self.root / HEARTBEAT_FILE

    @property
    def scores_table(self) -> Path:
        """The results table of the folder of runs this run lives in."""
        return self.root.parent / SCORES_TABLE

    def final_workspace(self) -> Path | None:
        """Find the tar of the workspace at the last checkpoint.

        Returns:
            The tar, or None before the first checkpoint.
        """
        if not self.state.is_file():
            return None
        return self.checkpoint_dir / json.loads(self.state.read_text(encoding="utf-8"))["workspace"]

    def steps_taken(self) -> int | None:
        """Read the step of the last checkpoint.

        Returns:
            The step, or None before the first checkpoint.
        """
        return (json.loads(self.state.read_text(encoding="utf-8"))["step"] if self.state.is_file()
                else None)

    def exists(self) -> bool:
        """Test whether the folder is a run folder (it has a config.json)."""
        return self.config.is_file()

    def read_config(self) -> dict[str, Any]:
        """Read the run's config.json.

        Returns:
            The settings as written.

        Raises:
            RunDirError: The folder has no config.json.
        """
        if not self.config.is_file():
            raise RunDirError(f"{self.root} is not a run directory (no {CONFIG_FILE})")
        return json.loads(self.config.read_text(encoding="utf-8"))

    def read_score(self) -> dict[str, Any] | None:
        """Read the run's score.json.

        Returns:
            The score, or None before the run is scored.
        """
        return json.loads(self.score.read_text(encoding="utf-8")) if self.score.is_file() else None


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file so that a kill leaves either the old or the new content, never a torn one.

    Args:
        path: The file (its folder is created).
        data: The content.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def runs_root() -> Path:
    """Find where new runs go.

    Returns:
        $INNOLAB_RUNS_DIR, else results/runs of the project (or of the current folder).
    """
    from innolab.paths import project_root

    return Path(os.environ.get("INNOLAB_RUNS_DIR", project_root() / "results" / "runs"))


def archived(run_dir: Path) -> list[Path]:
    """The configuration's earlier attempts kept in its folder, in order.

    Args:
        run_dir: The configuration's run folder.

    Returns:
        attempts/1, attempts/2, ... that exist.
    """
    folder = run_dir / ATTEMPTS
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))


def attempts_made(run_dir: Path) -> int:
    """How many attempts a configuration has had: the archived ones and the one in its folder.

    Args:
        run_dir: The configuration's run folder.

    Returns:
        0 for a configuration never started.
    """
    kept = {ATTEMPTS, LOCK_FILE, LOCK_GUARD, HEARTBEAT_FILE}  # no attempt's: the lock's own
    current = run_dir.is_dir() and any(p.name not in kept for p in run_dir.iterdir())
    return len(archived(run_dir)) + int(current)
