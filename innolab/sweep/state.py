"""A sweep's state read from its folder: each configuration's state, attempts, and the spend so far.

The folder is the truth, read afresh each time (so `innolab sweep status` works while a sweep runs
and after its driver died): a configuration is scored (its run's score.json), failed (an error
recorded, or a run that ended because the model stayed unreachable: `FAILED_REASONS`), running (a
live holder of its run folder's lock), interrupted (a run folder, nothing executing it), stopped
for cost (not run because the sweep's cost cap was reached) or pending (never started).

A failed run retried (`innolab sweep run --retry-failed`) is kept: its folder's contents move to
`runs/<config id>/attempts/<n>/` (n = 1, 2, ...) with an `attempt.json` saying how it ended, and the
next attempt runs in the configuration's folder again; the attempt that counts is the last one.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from innolab.results import MANIFEST, read_manifest
from innolab.rundir import (
    ATTEMPTS,
    HEARTBEAT_FILE,
    LOCK_FILE,
    LOCK_GUARD,
    RunDir,
    archived,
    attempts_made,
    write_atomic,
)
from innolab.runlock import STALE_S, RunLock, read_heartbeat
from innolab.sweep.spec import SpecError

# how a scored run ended that makes it a failure to retry, not a result (a spent budget, an agent
# that finished or stalled are results)
# a run ended by its model's outage, or a trace with two ends (it ran twice: its results cannot
# be read, innolab.traces refuses it): failed, so that --retry-failed runs it again
TRACE_BROKEN = "trace_broken"
FAILED_REASONS = frozenset({"llm_error", TRACE_BROKEN})
STATES = ("pending", "running", "interrupted", "scored", "failed", "stopped_for_cost")
ATTEMPT_RECORD = "attempt.json"
PARTIAL = ".partial"


@dataclass(frozen=True)
class RunReading:
    """What a run folder's trace says so far.

    Attributes:
        cost_usd: The cost of its model calls recorded so far.
        end_reason: Why it ended (None: not ended).
        started: When its first event was written (seconds since the epoch; None: no trace).
    """

    cost_usd: float = 0.0
    end_reason: str | None = None
    started: float | None = None


def read_run(run_dir: Path) -> RunReading:
    """Read a run folder's trace for its cost, its end and its start.

    Args:
        run_dir: A run folder (or an archived attempt's folder).

    Returns:
        The reading (zeros and None without a trace; a line cut by a kill is skipped).
    """
    trace = RunDir(run_dir).trace
    try:
        lines = trace.read_text(encoding="utf-8").splitlines()
    except OSError:
        return RunReading()
    cost, reason, started = 0.0, None, None
    for line in lines:
        if started is None or '"llm_call"' in line or '"run_finished"' in line:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            started = event.get("time") if started is None else started
            if event.get("type") == "llm_call":
                cost += float(event.get("cost_usd") or 0.0)
            elif event.get("type") == "run_finished":
                # a second end: two executors ran it (innolab.traces refuses such a trace)
                reason = TRACE_BROKEN if reason is not None else event.get("reason")
    return RunReading(cost, reason, started)


def scored(run_dir: Path) -> bool:
    """Whether a configuration's run finished and was scored (score.json comes last).

    Args:
        run_dir: The configuration's run folder.

    Returns:
        True when the run's score.json exists.
    """
    return RunDir(run_dir).score.is_file()


def running(run_dir: Path) -> bool:
    """Whether a live process holds the run folder's lock (heartbeat fresh, pid alive, no zombie).

    Args:
        run_dir: The run folder.

    Returns:
        True while an executor holds it.
    """
    _text, holder = read_heartbeat(RunDir(run_dir).heartbeat)
    if holder is None or time.time() - holder.time > STALE_S:
        return False
    if holder.on_this_machine():
        try:  # a killed executor nobody has reaped yet (a zombie) runs nothing
            return psutil.Process(holder.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:
            return True
    return True


def failed(run_dir: Path, error: str | None) -> bool:
    """Whether the configuration's attempt in its folder failed (not a result: retry it).

    Args:
        run_dir: The configuration's run folder.
        error: The error the sweep recorded for it.

    Returns:
        True for a recorded error without a scored run, or a run that ended in `FAILED_REASONS`.
    """
    if scored(run_dir):
        return read_run(run_dir).end_reason in FAILED_REASONS
    return bool(error)


def cause(run_dir: Path, error: str | None) -> str | None:
    """Why a configuration's run failed, in one line, where the user looks (status, the driver).

    Args:
        run_dir: The configuration's run folder.
        error: The error the sweep recorded for it.

    Returns:
        The run's end cause from its trace (innolab.traces.end_cause: the model's error, its host
        and the attempts, or the agent's error), a trace with two ends said so, else the recorded
        error; None where there is none.
    """
    from innolab.traces import Trace, TraceError, end_cause

    if read_run(run_dir).end_reason == TRACE_BROKEN:
        return "its trace has two ends: two executors ran it (--retry-failed runs it again)"
    try:
        said = end_cause(Trace.read(run_dir)) if RunDir(run_dir).trace.is_file() else None
    except (TraceError, OSError, ValueError):
        said = None
    return said or error


def archive_attempt(run_dir: Path, error: str | None) -> int:
    """Keep the attempt in a configuration's folder as attempts/<n>/ and empty the folder.

    Its files move into attempts/<n>.partial/, which is then renamed: a driver killed half way
    leaves a .partial folder that `finish_archive` completes.

    The run's lock is held meanwhile (innolab.runlock): a run an executor still holds (a failed
    run's kernel still shutting down) is waited for, never moved from under it; the lock's own
    files stay in the folder.

    Args:
        run_dir: The configuration's run folder.
        error: The error the sweep recorded for the attempt (written to its attempt.json).

    Returns:
        The archived attempt's number.
    """
    with RunLock(run_dir):
        return _archive_attempt(run_dir, error)


def _archive_attempt(run_dir: Path, error: str | None) -> int:
    finish_archive(run_dir)
    number = len(archived(run_dir)) + 1
    staging = run_dir / ATTEMPTS / f"{number}{PARTIAL}"
    staging.mkdir(parents=True, exist_ok=True)
    reading = read_run(run_dir)
    record = {"attempt": number, "end_reason": reading.end_reason, "error": error,
              "cost_usd": reading.cost_usd, "scored": scored(run_dir), "archived": time.time()}
    write_atomic(staging / ATTEMPT_RECORD, (json.dumps(record, indent=2) + "\n").encode())
    _move_into(run_dir, staging)
    staging.rename(run_dir / ATTEMPTS / str(number))
    return number


def finish_archive(run_dir: Path) -> None:
    """Complete an archiving that a killed driver left half done (a attempts/<n>.partial/ folder).

    Args:
        run_dir: The configuration's run folder.
    """
    folder = run_dir / ATTEMPTS
    partial = list(folder.glob(f"*{PARTIAL}")) if folder.is_dir() else []
    if not partial:
        return
    with RunLock(run_dir):  # nothing is moved from under an executor
        for staging in partial:
            _move_into(run_dir, staging)
            staging.rename(folder / staging.name.removesuffix(PARTIAL))


def _move_into(run_dir: Path, staging: Path) -> None:
    for entry in list(run_dir.iterdir()):
        if entry.name not in KEPT:
            entry.rename(staging / entry.name)


# what archiving leaves in a run folder: the attempts, and the lock's files (held meanwhile)
KEPT = frozenset({ATTEMPTS, LOCK_FILE, LOCK_GUARD, HEARTBEAT_FILE})


class Ledger:
    """The spend of a sweep's runs, every attempt included, read from their traces.

    A finished trace (an archived attempt, a scored run) is read once; the others each time.
    """

    def __init__(self, folder: Path) -> None:
        """Read the sweep in `folder`.

        Args:
            folder: The sweep folder.
        """
        self.folder = Path(folder)
        self._fixed: dict[Path, float] = {}

    def forget(self, run_dir: Path) -> None:
        """Read a configuration's folder afresh (its attempt was just archived).

        Args:
            run_dir: The configuration's run folder.
        """
        self._fixed.pop(run_dir, None)

    def spent(self) -> float:
        """The cost so far of every run of the sweep (in flight included), in USD."""
        runs = self.folder / "runs"
        total = 0.0
        for run_dir in runs.iterdir() if runs.is_dir() else []:
            if not run_dir.is_dir():
                continue
            for folder in [*archived(run_dir), run_dir]:
                if folder in self._fixed:
                    total += self._fixed[folder]
                    continue
                cost = read_run(folder).cost_usd
                if folder != run_dir or scored(run_dir):
                    self._fixed[folder] = cost
                total += cost
        return total


def state_of(run_dir: Path, entry: dict[str, Any], stopped_for_cost: bool) -> str:
    """One configuration's state (one of `STATES`).

    Args:
        run_dir: Its run folder.
        entry: Its manifest entry (its recorded error).
        stopped_for_cost: Whether the sweep stopped for its cost cap.

    Returns:
        The state.
    """
    if scored(run_dir):
        return "failed" if failed(run_dir, None) else "scored"
    if run_dir.is_dir() and running(run_dir):
        return "running"
    if entry.get("error"):
        return "failed"
    if stopped_for_cost:
        return "stopped_for_cost"
    return "interrupted" if RunDir(run_dir).exists() else "pending"


def status(folder: Path) -> dict[str, Any]:
    """How far a sweep is, read from its folder (while it runs, or after its driver died).

    Args:
        folder: The sweep folder.

    Returns:
        `name`; `configurations` (how many); `counts` by state (`STATES`); `cost_usd`, the spend so
        far of every attempt; `max_cost_usd`, the cap (None: none); `stopped_for_cost`, whether the
        sweep stopped for it; `in_flight`, each running configuration's id, elapsed seconds since
        its run started and cost so far; `runs`, each configuration's state, levels, error, end
        reason, cause (`cause`: why a failed run, or one that ended agent_error, ended; else
        None), attempts and cost.

    Raises:
        innolab.sweep.spec.SpecError: The folder holds no sweep.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        raise SpecError(f"{folder} is not a sweep folder (no {MANIFEST})")
    stopped = manifest.get("stopped_for_cost") is not None
    now = time.time()
    runs, in_flight, total = {}, [], 0.0
    for entry in manifest["configurations"]:
        identifier = entry["config_id"]
        run_dir = folder / "runs" / identifier
        state = state_of(run_dir, entry, stopped)
        reading = read_run(run_dir)
        cost = reading.cost_usd + sum(read_run(p).cost_usd for p in archived(run_dir))
        total += cost
        said = (cause(run_dir, entry.get("error"))
                if state == "failed" or reading.end_reason == "agent_error" else None)
        runs[identifier] = {"state": state, "levels": entry["levels"], "error": entry.get("error"),
                            "end_reason": reading.end_reason, "cause": said,
                            "attempts": attempts_made(run_dir), "cost_usd": cost}
        if state == "running":  # since its first event, else since its folder got its config
            started = reading.started or _mtime(RunDir(run_dir).config)
            elapsed = None if started is None else round(now - started, 1)
            in_flight.append({"config_id": identifier, "elapsed_s": elapsed,
                              "cost_usd": reading.cost_usd})
    counts = {s: sum(r["state"] == s for r in runs.values()) for s in STATES}
    return {"name": manifest["name"], "configurations": len(runs), "counts": counts,
            "cost_usd": total,
            "max_cost_usd": (manifest.get("spec") or {}).get("budget", {}).get("max_cost_usd"),
            "stopped_for_cost": stopped, "in_flight": in_flight, "runs": runs}


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Write a sweep's manifest atomically (the driver is its only writer).

    Args:
        folder: The sweep folder.
        manifest: The manifest.
    """
    write_atomic(folder / MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode())
