"""Job-shop scheduling: sequential baseline, Giffler–Thompson dispatching, annealing on job sequences."""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from innolab.tasks.registry import get_task
from innolab.tasks.solvers.cli import parse_args, write

Instance = dict[str, Any]


def _matrices(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    return np.array(instance["duration_matrix"]), np.array(instance["machines_matrix"])


def sequential(instance: Instance) -> np.ndarray:
    """Every operation after the previous one of any job: makespan = the sum of all durations."""
    durations, _ = _matrices(instance)
    ends = np.cumsum(durations.ravel())
    return (ends - durations.ravel()).reshape(durations.shape)


def decode(sequence: list[int], durations: np.ndarray, machines: np.ndarray) -> tuple[np.ndarray, int]:
    """Semi-active schedule of a job sequence (each job id appears once per operation, in order)."""
    jobs, ops = durations.shape
    next_op = [0] * jobs
    job_ready = [0] * jobs
    machine_ready = [0] * (int(machines.max()) + 1)
    start = np.zeros((jobs, ops), dtype=np.int64)
    d, m = durations.tolist(), machines.tolist()
    for j in sequence:
        k = next_op[j]
        machine = m[j][k]
        s = max(job_ready[j], machine_ready[machine])
        start[j, k] = s
        job_ready[j] = machine_ready[machine] = s + d[j][k]
        next_op[j] = k + 1
    return start, max(job_ready)


def giffler_thompson(instance: Instance) -> tuple[np.ndarray, list[int]]:
    """Active schedule: among operations that could start before the earliest completion on the critical machine,
    pick the one whose job has the most work remaining (MWKR)."""
    durations, machines = _matrices(instance)
    jobs, ops = durations.shape
    next_op, job_ready = [0] * jobs, [0] * jobs
    machine_ready = [0] * (int(machines.max()) + 1)
    remaining = durations.sum(axis=1).tolist()
    start = np.zeros((jobs, ops), dtype=np.int64)
    sequence: list[int] = []
    for _ in range(jobs * ops):
        ready = [j for j in range(jobs) if next_op[j] < ops]
        est = {j: max(job_ready[j], machine_ready[machines[j, next_op[j]]]) for j in ready}
        ect = {j: est[j] + durations[j, next_op[j]] for j in ready}
        first = min(ready, key=lambda j: (ect[j], j))
        machine = machines[first, next_op[first]]
        conflict = [j for j in ready if machines[j, next_op[j]] == machine and est[j] < ect[first]]
        chosen = max(conflict, key=lambda j: (remaining[j], -j))
        k = next_op[chosen]
        start[chosen, k] = est[chosen]
        job_ready[chosen] = machine_ready[machine] = est[chosen] + durations[chosen, k]
        remaining[chosen] -= durations[chosen, k]
        next_op[chosen] += 1
        sequence.append(chosen)
    return start, sequence


def anneal(instance: Instance, sequence: list[int], iterations: int, rng: np.random.Generator,
           deadline: float | None = None) -> np.ndarray:
    """Simulated annealing over job sequences (swap or insertion moves), decoded semi-actively."""
    durations, machines = _matrices(instance)
    current = list(sequence)
    _, value = decode(current, durations, machines)
    best, best_value = list(current), value
    temperature0 = 0.01 * value
    for it in range(iterations):
        if deadline is not None and time.monotonic() > deadline:
            break
        candidate = list(current)
        a, b = rng.integers(len(candidate), size=2)
        if rng.random() < 0.5:
            candidate[a], candidate[b] = candidate[b], candidate[a]
        else:
            candidate.insert(b, candidate.pop(a))
        _, new = decode(candidate, durations, machines)
        temperature = temperature0 * (1 - it / iterations) + 1e-9
        if new <= value or rng.random() < math.exp((value - new) / temperature):
            current, value = candidate, new
            if value < best_value:
                best, best_value = list(current), value
    start, _ = decode(best, durations, machines)
    return start


def _instances(task_id: str) -> dict[str, Instance]:
    return get_task(task_id).problem_data.params["instances"]


def _write(task_id: str, out: str, schedules: dict[str, np.ndarray]) -> None:
    write(out, {"schedules": {name: s.tolist() for name, s in schedules.items()}}, task_id)


def run_sequential(task_id: str) -> None:
    args = parse_args("sequential baseline")
    _write(task_id, args.out, {name: sequential(inst) for name, inst in _instances(task_id).items()})


def run_dispatch(task_id: str) -> None:
    args = parse_args("Giffler-Thompson with most-work-remaining")
    _write(task_id, args.out, {name: giffler_thompson(inst)[0] for name, inst in _instances(task_id).items()})


def run_annealing(task_id: str) -> None:
    args = parse_args("simulated annealing on job sequences", default_time_limit=240.0)
    rng = np.random.default_rng(args.seed)
    instances = _instances(task_id)
    iterations = 300 if args.quick else 10**9
    share = None if args.quick else args.time_limit / len(instances)
    schedules = {}
    for name, inst in instances.items():
        deadline = None if share is None else time.monotonic() + share
        schedules[name] = anneal(inst, giffler_thompson(inst)[1], iterations if args.quick else 200_000, rng, deadline)
    _write(task_id, args.out, schedules)
