"""The command line of solve.py scripts: --out FILE [--quick] [--seed N] [--time-limit S]."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from innolab.tasks import taskkit
from innolab.tasks.registry import get_task


def parse_args(description: str, default_time_limit: float | None = None, snapshots: bool = False
               ) -> argparse.Namespace:
    """Parse a solve.py script's command line.

    Args:
        description: The script's description (its --help).
        default_time_limit: The --time-limit default, in seconds; None for none.
        snapshots: Accept --snapshot-dir and --snapshot-at.

    Returns:
        The parsed arguments.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="where to write the JSON submission")
    parser.add_argument("--quick", action="store_true",
                        help="a small, deterministic budget (test suite)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=default_time_limit,
                        help="wall-clock seconds")
    if snapshots:
        parser.add_argument("--snapshot-dir",
                            help="write the best-so-far candidate here at each --snapshot-at")
        parser.add_argument("--snapshot-at", type=lambda s: [float(x) for x in s.split(",")],
                            default=[],
                            help="seconds after the start, comma-separated (e.g. 60,240)")
    return parser.parse_args()


def checker(task_id: str) -> tuple[str, dict[str, Any]]:
    """Return a task's check and its parameters.

    Args:
        task_id: The task's id.

    Returns:
        The check's name and the problem's parameters.
    """
    task = get_task(task_id)
    return task.spec.problem.check, task.problem_params


def score(task_id: str, data: dict[str, Any]) -> float | None:
    """Score a candidate exactly under the task's own checks.

    Args:
        task_id: The task's id.
        data: The candidate submission.

    Returns:
        The score, or None when the candidate is invalid.
    """
    problem, params = checker(task_id)
    errors, value = taskkit.check(problem, params, json.loads(json.dumps(data)))
    return None if errors else value


def write(path: str | Path, data: dict[str, Any], task_id: str) -> None:
    """Write the submission, refusing to write one that the task's checks reject.

    Args:
        path: The submission file.
        data: The submission.
        task_id: The task's id.

    Raises:
        SystemExit: The checks reject the submission.
    """
    problem, params = checker(task_id)
    errors, value = taskkit.check(problem, params, json.loads(json.dumps(data)))
    if errors:
        raise SystemExit(f"refusing to write an invalid submission: {errors[0]}")
    Path(path).write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"score {value!r}", file=sys.stderr)


def as_rows(array: np.ndarray) -> list[list[float]]:
    """Convert a 2-D array to lists of floats (JSON-ready).

    Args:
        array: The array.

    Returns:
        Its rows as lists of floats.
    """
    return [[float(v) for v in row] for row in array]


def multistart(attempt, quick: bool, quick_starts: int, time_limit: float | None,
               minimise: bool = False):
    """Call `attempt() -> (candidate, value)` repeatedly and keep the best candidate.

    Args:
        attempt: One start: returns a candidate and its value.
        quick: Make `quick_starts` calls (--quick, deterministic) instead of calling until the
            time limit.
        quick_starts: The number of calls in quick mode.
        time_limit: The time limit in seconds; None for none (then only quick mode ends).
        minimise: Whether a smaller value is better.

    Returns:
        The best candidate (None if no call was made).
    """
    import math
    import time

    deadline = time.monotonic() + (1e9 if quick or time_limit is None else time_limit)
    best, best_value = None, math.inf if minimise else -math.inf
    for _ in range(quick_starts if quick else 10**9):
        if time.monotonic() > deadline:
            break
        candidate, value = attempt()
        if (value < best_value) if minimise else (value > best_value):
            best, best_value = candidate, value
    return best
