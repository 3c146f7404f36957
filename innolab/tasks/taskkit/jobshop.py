"""Job-shop schedules: each operation's start time in every instance; score Σ makespans (exact)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .core import Invalid, int_rows, only_keys, violations


def job_shop(data: dict[str, Any], instances: dict[str, dict[str, list[list[int]]]]) -> float:
    """Check start times for every operation of every instance; score Σ makespans (minimise).

    Exact integers.

    Args:
        data: The submission: {"schedules": {instance: [[start, ...] per job]}}.
        instances: Each instance's duration_matrix and machines_matrix, by name.

    Returns:
        The sum of the instances' makespans.

    Raises:
        Invalid: The submission breaks a rule (every violation listed).
    """
    only_keys(data, ("schedules",))
    schedules = data["schedules"]
    if not isinstance(schedules, dict):
        raise Invalid("schedules must be an object mapping instance names to start-time matrices")
    extra = sorted(set(schedules) - set(instances))
    missing = sorted(set(instances) - set(schedules))
    if extra or missing:
        raise Invalid(
            f"schedules must name exactly {sorted(instances)}; extra {extra}, missing {missing}")
    total = 0
    broken: list[str] = []
    for name in sorted(instances):
        durations = np.array(instances[name]["duration_matrix"], dtype=np.int64)
        machines = np.array(instances[name]["machines_matrix"], dtype=np.int64)
        jobs, ops = durations.shape
        start = np.array(int_rows(schedules[name], f"schedules[{name}]", jobs, ops, 40),
                         dtype=np.int64)
        for j, k in np.argwhere(start < 0):
            broken.append(f"schedules[{name}][{j}][{k}] starts at {int(start[j, k])} < 0")
        end = start + durations
        for j, k in np.argwhere(start[:, 1:] < end[:, :-1]):
            broken.append(f"schedules[{name}]: job {j} operation {k + 1} starts "
                          f"{int(end[j, k] - start[j, k + 1])} before operation {k} ends")
        for m in range(int(machines.max()) + 1):
            js, ks = np.nonzero(machines == m)
            order = np.argsort(start[js, ks], kind="stable")
            s, e = start[js, ks][order], end[js, ks][order]
            for c in np.flatnonzero(s[1:] < e[:-1]):
                broken.append(f"schedules[{name}]: two operations overlap on machine {m} "
                              f"by {int(e[c] - s[c + 1])}")
        total += int(end.max())
    violations("schedule", broken)
    return float(total)
