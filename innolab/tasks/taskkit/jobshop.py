"""Job-shop schedules: each operation's start time in every instance; score Σ makespans (exact)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .core import Invalid, Outcome, hostile_variants, int_rows, only_keys, violations


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


# ---------------------------------------------------------------------------- outcome descriptors

JOBSHOP_SCALE = (
    "job shop: each machine's order of jobs (start times only order them: delays, compaction and "
    "any other retiming that keeps every machine's order are the same schedule); the distance is "
    "100 × the normalised Kendall tau distance of the two orders (the share of job pairs that "
    "the two schedules order differently), averaged over the machines of every instance: 0 the "
    "same orders, 50 what unrelated random orders give, 100 every order reversed"
)


def _describe_schedule(data: dict[str, Any], params: dict[str, Any]) -> dict[str, np.ndarray]:
    only_keys(data, ("schedules",))
    schedules = data["schedules"]
    instances = params["instances"]
    if not isinstance(schedules, dict) or sorted(schedules) != sorted(instances):
        raise Invalid(f"schedules must map exactly the instances {sorted(instances)} "
                      "to start-time matrices")
    ranks = {}
    for name in sorted(instances):
        machines = np.array(instances[name]["machines_matrix"], dtype=np.int64)
        jobs, ops = machines.shape
        start = np.array(int_rows(schedules[name], f"schedules[{name}]", jobs, ops, 40),
                         dtype=np.int64)
        # rank[m, j]: the position of job j on machine m (ties, impossible when valid, by job)
        rank = np.zeros((int(machines.max()) + 1, jobs), dtype=np.int64)
        for m in range(rank.shape[0]):
            js, ks = np.nonzero(machines == m)
            times = np.full(jobs, np.iinfo(np.int64).max)
            times[js] = start[js, ks]
            rank[m, np.argsort(times, kind="stable")] = np.arange(jobs)
        ranks[name] = rank
    return ranks


def _kendall_distance(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    shares = []
    for name in sorted(a):
        ra, rb = a[name], b[name]
        jobs = ra.shape[1]
        i, j = np.triu_indices(jobs, 1)
        discordant = (ra[:, i] < ra[:, j]) != (rb[:, i] < rb[:, j])
        shares.append(discordant.mean(axis=1))
    return float(100 * np.concatenate(shares).mean())


OUTCOMES = {"job_shop": Outcome(_describe_schedule, _kendall_distance, JOBSHOP_SCALE)}


# ------------------------------------------------------------------------------- hostile inputs

CHECKS = ("job_shop",)


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    instances = params["instances"]
    names = sorted(instances)
    zero = {n: [[0] * len(instances[n]["duration_matrix"][0])
                for _ in instances[n]["duration_matrix"]] for n in names}
    first = names[0]
    slot = json.dumps({"schedules": {**zero, first: "\x00"}})
    out = {}
    for label, text in hostile_variants(first, zero[first]).items():
        prefix = '{"' + first + '": '
        if text.startswith(prefix):  # the instance's matrix corrupted, the others intact
            out[label] = slot.replace(json.dumps("\x00"), text[len(prefix):-1], 1)
    out["an instance missing"] = json.dumps({"schedules": {n: zero[n] for n in names[1:]}})
    out["an unknown instance"] = json.dumps({"schedules": {**zero, "ta00": zero[first]}})
    out["a reported score"] = json.dumps({"schedules": zero, "score": 1})
    out["a float start time"] = json.dumps({"schedules": {**zero, first: [[0.5, *row[1:]]
                                                                        for row in zero[first]]}})
    return out


HOSTILE = {"job_shop": _hostile}
