"""Outcome novelty N_out: how far a submission's solution lies from the known solutions' outputs.

The method axis (the paper's N) compares programs; this axis compares what they produced. Each
problem family (innolab.tasks.families: built-in, installed or a task folder's own) defines a
descriptor of a solution and a distance on 0-100 invariant to the task's symmetries
(`taskkit.core.Outcome`, in each family module's `OUTCOMES`), so re-deriving a
known configuration is seen whatever code produced it. The scale of each family:

* circles: rows [x, y, r] matched one to one (optimal assignment) up to the container's
  symmetries (the unit square's 8; the free rectangle's translations and 8); 100 × the RMS
  displacement of matched rows over the mean nearest-neighbour distance, capped at 100.
* points: the same, up to what the score ignores (the triangle's 6 symmetries; similarity for the
  min-max distance ratio; affine maps for Heilbronn in convex regions).
* steps: resampled onto a common grid, up to reversal (and h → 1 − h for Erdős, shifts over zero
  margins for the first autocorrelation, shifts and dilations for the second); 100 × the mean
  absolute difference of heights (Erdős) or 100 × the total-variation distance of f / ∫f.
* kissing: the distribution of normalised inner products ⟨x, y⟩ / max ‖z‖² (in [−1, 1/2]);
  100 × its 1-Wasserstein distance over 1.5.
* jobshop: each machine's job order; 100 × the normalised Kendall tau distance, averaged over
  machines and instances (50: unrelated random orders).

N_out = C · min over the known solutions' outputs of the distance (C = 0 for an invalid
submission). A submission within its family's tie threshold of a known output (distance ≤ 1 for
every family: a hundredth of the family's unit) is that known solution re-derived: `rederived_known`
names it. No model is called.
"""

from __future__ import annotations

import functools
import json
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from innolab.metrics import novelty as novelty_metric
from innolab.tasks.families import FamilyError
from innolab.tasks.model import Task, TaskError
from innolab.tasks.solutions import solutions
from innolab.tasks.taskkit import Invalid, load_submission
from innolab.tasks.taskkit.core import Outcome


class OutcomeError(ValueError):
    """An outcome distance cannot be computed: no descriptor, or a malformed submission."""


@dataclass(frozen=True)
class OutcomeResult:
    """The outcome novelty of one submission.

    Attributes:
        novelty_out: C · min distance to the known outputs (0-100); 0 when invalid; NaN (with
            `note`) when not computed.
        nearest: The known solution whose output is nearest, or None.
        distances: The distance to each known solution's output, by name.
        rederived_known: The nearest known solution when within the family's tie threshold.
        note: Why N_out is what it is (not computed, invalid, the tie threshold).
        tie: The family's tie threshold (None where there is no descriptor).
    """

    novelty_out: float
    nearest: str | None = None
    distances: dict[str, float] = field(default_factory=dict)
    rederived_known: str | None = None
    note: str = ""
    tie: float | None = None


def _as_task(task: Task | str) -> Task:
    if isinstance(task, Task):
        return task
    if not isinstance(task, str):
        raise OutcomeError(f"{type(task).__name__} is not a taskkit task: it has no outcome "
                           "descriptor")
    from innolab.tasks.registry import get_task

    found = get_task(task)
    if not isinstance(found, Task):
        raise OutcomeError(f"task {task!r} is not a taskkit task: it has no outcome descriptor")
    return found


def family_outcome(task: Task | str) -> Outcome | None:
    """Return how a task's solutions are compared.

    Args:
        task: The task (or its id).

    Returns:
        Its family's descriptor and distance, or None when the family defines none.
    """
    task = _as_task(task)
    problem = getattr(task.spec, "problem", None)
    if problem is None:
        return None
    try:
        return task.family.outcome(problem.function)
    except FamilyError as error:
        raise OutcomeError(str(error)) from None


def _require(task: Task) -> Outcome:
    found = family_outcome(task)
    if found is None:
        raise OutcomeError(f"task {task.id}: its problem family defines no outcome descriptor")
    return found


def describe(task: Task | str, submission: Path | str | dict[str, Any]) -> Any:
    """Return a submission's outcome descriptor.

    Args:
        task: The task (or its id).
        submission: A submission file, or the parsed submission.

    Returns:
        The descriptor its family compares.

    Raises:
        OutcomeError: The family has no descriptor, or the submission is malformed (the message
            names the file, the field and the rule).
    """
    task = _as_task(task)
    found = _require(task)
    where = "submission"
    try:
        if isinstance(submission, dict):
            data = submission
        else:
            where = Path(submission).name
            data = load_submission(submission, task.spec.limits.max_submission_bytes)
        return found.describe(data, task.problem_params)
    except Invalid as error:
        message = str(error)
        raise OutcomeError(message if where in message else f"{where}: {message}") from None
    except (KeyError, TypeError, ValueError) as error:
        raise OutcomeError(f"{where}: not a {task.id} submission ({error!r})") from None


def outcome_distance(task: Task | str, a: Path | str | dict[str, Any],
                     b: Path | str | dict[str, Any]) -> float:
    """Return the outcome distance of two submissions, 0-100, up to the task's symmetries.

    Args:
        task: The task (or its id).
        a: A submission file or a parsed submission.
        b: Another.

    Returns:
        The distance (0: the same solution up to the task's symmetries).

    Raises:
        OutcomeError: The family has no descriptor, or a submission is malformed.
    """
    task = _as_task(task)
    return _require(task).distance(describe(task, a), describe(task, b))


@functools.lru_cache(maxsize=256)
def _known_output(root: str, name: str, stamp: int) -> dict[str, Any]:
    """One known solution's output: its committed solution.json, or a --quick run of it."""
    del stamp  # part of the cache key only: a new recording is read anew
    task = Task.load(Path(root))
    solution = next(s for s in solutions(task) if s.name == name)
    if solution.output.is_file():
        return load_submission(solution.output, task.spec.limits.max_submission_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "solution.json"
        run = solution.run(out, quick=True)
        if run.returncode != 0 or not out.is_file():
            raise TaskError(f"{task.id}/{name}: no committed output and its --quick run failed: "
                            f"{run.stderr.strip()[-300:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def _stamp(path: Path) -> int:
    return path.stat().st_mtime_ns if path.is_file() else 0


def known_outputs(task: Task | str) -> dict[str, Any]:
    """Return each known solution's output (its committed solution.json), read once and cached.

    A solution without a committed output is run once (--quick, host side) and its output kept
    for the process. Known solutions never enter a sandbox.

    Args:
        task: The task (or its id).

    Returns:
        Each known solution's parsed output, by name.
    """
    task = _as_task(task)
    return {s.name: _known_output(str(task.root), s.name, _stamp(s.output))
            for s in solutions(task)}


@functools.lru_cache(maxsize=256)
def _known_descriptor(root: str, name: str, stamp: int) -> Any:
    task = Task.load(Path(root))
    return describe(task, _known_output(root, name, stamp))


def outcome_novelty(task: Task | str, submission: Path | str | dict[str, Any],
                    valid: bool) -> OutcomeResult:
    """Return N_out = C · min over the known solutions' outputs of the outcome distance.

    Args:
        task: The task (or its id).
        submission: The submission file (or the parsed submission).
        valid: Whether the hidden evaluator found it valid (C).

    Returns:
        The result: 0 when invalid (the paper's imputation); NaN with a note when the family has no
        descriptor, the task no known output, or the submission cannot be described; else the
        least distance, the nearest known solution and, within the family's tie threshold, the
        known solution it re-derives.
    """
    try:
        task = _as_task(task)
    except OutcomeError as error:
        return OutcomeResult(math.nan, note=f"not computed: {error}")
    try:
        found = family_outcome(task)
    except OutcomeError as error:
        return OutcomeResult(math.nan, note=f"not computed: {error}")
    if found is None:
        return OutcomeResult(math.nan, note=f"not computed: task {task.id}'s problem family "
                                            "defines no outcome descriptor")
    if not valid:
        return OutcomeResult(novelty_metric(False, []), tie=found.tie,
                             note="invalid submission: N_out = 0 (the paper's imputation)")
    try:
        mine = describe(task, submission)
    except OutcomeError as error:
        return OutcomeResult(math.nan, tie=found.tie, note=f"not computed: {error}")
    names = [s.name for s in solutions(task)]
    if not names:
        return OutcomeResult(math.nan, tie=found.tie,
                             note=f"not computed: task {task.id} has no known solution")
    try:
        distances = {name: found.distance(mine, _known_descriptor(
            str(task.root), name, _stamp(task.solutions_dir / name / "solution.json")))
            for name in names}
    except (TaskError, OutcomeError, Invalid) as error:
        return OutcomeResult(math.nan, tie=found.tie,
                             note=f"not computed: a known solution's output: {error}")
    nearest = min(distances, key=lambda name: distances[name])
    value = novelty_metric(True, distances.values())
    rederived = nearest if distances[nearest] <= found.tie else None
    note = (f"within the tie threshold {found.tie:g} of {nearest}: re-derived" if rederived
            else f"nearest known output: {nearest} (tie threshold {found.tie:g})")
    return OutcomeResult(value, nearest, distances, rederived, note, found.tie)
