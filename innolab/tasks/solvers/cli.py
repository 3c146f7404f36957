"""The common command line of solve.py scripts: --out FILE [--quick] [--seed N] [--time-limit S]."""

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
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", required=True, help="where to write the JSON submission")
    parser.add_argument("--quick", action="store_true", help="a small, deterministic budget (test suite)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=default_time_limit, help="wall-clock seconds")
    if snapshots:
        parser.add_argument("--snapshot-dir", help="write the best-so-far candidate here at each --snapshot-at")
        parser.add_argument("--snapshot-at", type=lambda s: [float(x) for x in s.split(",")], default=[],
                            help="seconds after the start, comma-separated (e.g. 60,240)")
    return parser.parse_args()


def checker(task_id: str) -> tuple[str, dict[str, Any]]:
    task = get_task(task_id)
    return task.spec.problem.check, task.problem_params


def score(task_id: str, data: dict[str, Any]) -> float | None:
    """The exact score of a candidate under the task's own checks (None when invalid)."""
    problem, params = checker(task_id)
    errors, value = taskkit.check(problem, params, json.loads(json.dumps(data)))
    return None if errors else value


def write(path: str | Path, data: dict[str, Any], task_id: str) -> None:
    """Write the submission, refusing to write one that the task's checks reject."""
    problem, params = checker(task_id)
    errors, value = taskkit.check(problem, params, json.loads(json.dumps(data)))
    if errors:
        raise SystemExit(f"refusing to write an invalid submission: {errors[0]}")
    Path(path).write_text(json.dumps(data) + "\n", encoding="utf-8")
    print(f"score {value!r}", file=sys.stderr)


def as_rows(array: np.ndarray) -> list[list[float]]:
    return [[float(v) for v in row] for row in array]


def multistart(attempt, quick: bool, quick_starts: int, time_limit: float | None,
               minimise: bool = False):
    """Call `attempt() -> (candidate, value)` `quick_starts` times (--quick, deterministic) or until the time
    limit; return the best candidate."""
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
