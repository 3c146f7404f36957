"""The hidden evaluator: recomputes a submission's objective out of process, with limits."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from innolab.metrics import score_solution
from innolab.tasks import evaluator_server
from innolab.tasks.evaluator_server import limit_resources
from innolab.tasks.model import Task
from innolab.tasks.numerics import numeric_env


@dataclass(frozen=True)
class Evaluation:
    """The evaluator's verdict on one submission file, with the metrics V = C·R, G and ratio.

    Attributes:
        task: The task's id.
        valid: Whether the submission passed every check (C = 1).
        score: The recomputed objective R; None when invalid.
        v_star: The task's published frontier V*.
        direction: "max" or "min".
        gain: The direction-aware performance gain G over V*.
        ratio: The gain relative to V*.
        errors: Why the submission is invalid (empty when valid).
        elapsed_s: The evaluation's wall time in seconds.
        beats_v_star: Whether the gain is a record, not a tie (see `beats_v_star`).
    """

    task: str
    valid: bool
    score: float | None
    v_star: float
    direction: str
    gain: float
    ratio: float
    errors: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    beats_v_star: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Return the verdict as a plain dict of its fields."""
        return asdict(self)


def tie_margin(task: Task) -> float:
    """Return the gain at or below which a solution ties with V* rather than beating it.

    It is half a unit of V*'s last published digit plus min_improvement · |V*|
    (`Task.tie_margin`): V* is published with finite precision, e.g. to about 1e-9 for the circle
    packings and to six decimals for the arena's records.

    Args:
        task: The task.

    Returns:
        The tie margin, in the objective's units.
    """
    return task.tie_margin()


def beats_v_star(task: Task, gain: float) -> bool:
    """Test whether a valid solution with this gain beats the published frontier.

    Args:
        task: The task.
        gain: The solution's direction-aware gain over V*.

    Returns:
        True when the gain exceeds the task's tie margin.
    """
    return gain > tie_margin(task)


def evaluate(task: Task, submission: str | Path, timeout_s: float | None = None) -> Evaluation:
    """Score a submission with the task's pristine checks in a child process; invalid means V = 0.

    Args:
        task: The task whose hidden checks apply.
        submission: The submission file.
        timeout_s: The time limit in seconds; None takes the task's eval_timeout_s.

    Returns:
        The verdict, with the innovation metrics. A failure of the submission or of the child
        process is reported in its errors, never raised.
    """
    limits = task.spec.limits
    timeout = timeout_s or limits.eval_timeout_s
    start = time.perf_counter()
    errors, score = _run_worker(task, Path(submission), timeout, limits.eval_memory_mb)
    elapsed = time.perf_counter() - start
    valid = not errors and score is not None
    metrics = score_solution(valid, score if valid else None, task.v_star, task.direction)
    beats = valid and beats_v_star(task, metrics.gain)
    return Evaluation(task.id, valid, score if valid else None, task.v_star, task.direction,
                      metrics.gain, metrics.ratio, errors, elapsed, beats)


def _run_worker(
    task: Task, submission: Path, timeout: float, memory_mb: int
) -> tuple[list[str], float | None]:
    if submission.is_symlink() or not submission.is_file():
        return [f"submission {submission.name} is not a regular file"], None
    size = submission.stat().st_size
    if size > task.spec.limits.max_submission_bytes:
        return [f"submission is {size} bytes; "
                f"the limit is {task.spec.limits.max_submission_bytes} bytes"], None
    argv = [str(Path(task.root).resolve()), str(submission.resolve()),
            str(Path(task.family.spec.module).resolve())]
    env = numeric_env()
    try:  # forked from this process's evaluator server (innolab.tasks.evaluator_server)
        done = evaluator_server.evaluate(argv, env, memory_mb, timeout)
        stdout, stderr = done.stdout, done.stderr
        status = (f"exit status {done.status}" if done.status is not None
                  else "it ended without a verdict")
        if done.timed_out:
            return [f"evaluation exceeded the time limit of {timeout:g} s"], None
    except evaluator_server.EvaluatorServerError:  # no server: a worker started as usual
        try:
            ran = subprocess.run([sys.executable, "-I", "-m", "innolab.tasks.evaluator_worker",
                                  *argv], capture_output=True, text=True, timeout=timeout,
                                 check=False, env=env,
                                 preexec_fn=lambda: limit_resources(memory_mb, timeout))
        except subprocess.TimeoutExpired:
            return [f"evaluation exceeded the time limit of {timeout:g} s"], None
        stdout, stderr, status = ran.stdout, ran.stderr, f"exit status {ran.returncode}"
    lines = stdout.strip().splitlines()
    try:
        verdict = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = stderr.strip().splitlines()[-1:] or [status]
        return [f"evaluator failed: {tail[0]}"], None
    return list(verdict["errors"]), verdict["score"]
