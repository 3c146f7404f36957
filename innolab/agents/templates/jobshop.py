"""innolab baseline template (schedules): greedy dispatching, then local search, per instance.

Job-shop scheduling, on every instance of the task.

Greedy: random-priority active schedules (Giffler-Thompson) with the most-work-remaining rule.
Local search: an operation sequence (jobs repeated once per operation), decoded into a
semi-active schedule; moves swap two adjacent operations of different jobs that are on the
critical path's machines, or move one operation elsewhere; kept when the makespan does not grow.

Reads task.json (the check's name and the instances) in the working folder; writes --out whenever
the total makespan drops (so a killed run leaves its best). Runs at most --time seconds.
Usage: python3 jobshop.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()  # the time limit counts from here, imports included
# ruff: noqa: E402 (the imports come after START, so that their time counts)

import argparse
import itertools
import json
import os

import numpy as np


def read_args():
    """The command line: seed, time limit, warm-start file and output file."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--warm", default=None)
    parser.add_argument("--out", required=True)
    return parser.parse_args()


def load_json(path):
    """The JSON data of a file."""
    with open(path) as handle:
        return json.load(handle)


def write_json(path, data):
    """Write data to path atomically."""
    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)


class Instance:
    """One instance: durations and machines (jobs x operations)."""

    def __init__(self, data):
        self.dur = [list(map(int, row)) for row in data["duration_matrix"]]
        self.mach = [list(map(int, row)) for row in data["machines_matrix"]]
        self.jobs, self.ops = len(self.dur), len(self.dur[0])
        self.machines = 1 + max(max(row) for row in self.mach)

    def decode(self, sequence):
        """Start times (jobs x operations) and makespan of a sequence's semi-active schedule."""
        next_op = [0] * self.jobs
        job_ready = [0] * self.jobs
        machine_ready = [0] * self.machines
        starts = [[0] * self.ops for _ in range(self.jobs)]
        dur, mach = self.dur, self.mach
        for j in sequence:
            k = next_op[j]
            m = mach[j][k]
            s = job_ready[j] if job_ready[j] > machine_ready[m] else machine_ready[m]
            starts[j][k] = s
            end = s + dur[j][k]
            job_ready[j] = end
            machine_ready[m] = end
            next_op[j] = k + 1
        return starts, max(job_ready)

    def greedy(self, rng):
        """A random-priority active schedule (Giffler-Thompson, most work remaining first)."""
        remaining = [sum(row) for row in self.dur]
        next_op = [0] * self.jobs
        job_ready = [0] * self.jobs
        machine_ready = [0] * self.machines
        noise = rng.random(self.jobs) * 0.3
        sequence = []
        for _ in range(self.jobs * self.ops):
            ready = [j for j in range(self.jobs) if next_op[j] < self.ops]
            ends = {}
            for j in ready:
                k = next_op[j]
                m = self.mach[j][k]
                ends[j] = max(job_ready[j], machine_ready[m]) + self.dur[j][k]
            first = min(ready, key=lambda j: ends[j])
            m_star = self.mach[first][next_op[first]]
            bound = ends[first]
            conflict = [j for j in ready if self.mach[j][next_op[j]] == m_star
                        and max(job_ready[j], machine_ready[m_star]) < bound]
            pick = max(conflict, key=lambda j: remaining[j] * (1 + noise[j]))
            k = next_op[pick]
            start = max(job_ready[pick], machine_ready[m_star])
            job_ready[pick] = machine_ready[m_star] = start + self.dur[pick][k]
            remaining[pick] -= self.dur[pick][k]
            next_op[pick] += 1
            sequence.append(pick)
        return sequence

    def sequence_of(self, starts):
        """The operation sequence of a schedule (operations by start time)."""
        order = sorted((starts[j][k], k, j) for j in range(self.jobs) for k in range(self.ops))
        return [j for _, _, j in order]

    def valid(self, starts):
        """Whether a schedule keeps every job's order and every machine free of overlaps."""
        for j in range(self.jobs):
            for k in range(1, self.ops):
                if starts[j][k] < starts[j][k - 1] + self.dur[j][k - 1] or starts[j][k - 1] < 0:
                    return False
        for m in range(self.machines):
            spans = sorted((starts[j][k], starts[j][k] + self.dur[j][k])
                           for j in range(self.jobs) for k in range(self.ops)
                           if self.mach[j][k] == m)
            if any(a[1] > b[0] for a, b in itertools.pairwise(spans)):
                return False
        return True


def improve(inst, sequence, makespan, deadline, rng):
    """Local search on the sequence until the deadline: swaps and moves kept unless worse."""
    sequence = list(sequence)
    size = len(sequence)
    while time.time() < deadline:
        for _ in range(50):
            candidate = list(sequence)
            if rng.random() < 0.7:
                i = int(rng.integers(0, size - 1))
                if candidate[i] == candidate[i + 1]:
                    continue
                candidate[i], candidate[i + 1] = candidate[i + 1], candidate[i]
            else:
                i = int(rng.integers(0, size))
                j = int(np.clip(i + rng.integers(-40, 41), 0, size - 1))
                candidate.insert(j, candidate.pop(i))
            _, value = inst.decode(candidate)
            if value <= makespan:
                sequence, makespan = candidate, value
    return sequence, makespan


def main():
    """Greedy schedules, then local search on each instance in turn until the time limit."""
    args = read_args()
    start = START
    config = load_json("task.json")
    instances = {name: Instance(data) for name, data in config["params"]["instances"].items()}
    rng = np.random.default_rng(args.seed)
    warm = {}
    if args.warm and os.path.exists(args.warm):
        try:
            warm = load_json(args.warm)["schedules"]
        except (ValueError, KeyError, TypeError):
            warm = {}
    best = {}
    for name, inst in instances.items():  # a first schedule for every instance
        starts = warm.get(name)
        if starts is not None and inst.valid(starts):
            sequence = inst.sequence_of(starts)
        else:
            sequence = inst.greedy(rng)
        starts, makespan = inst.decode(sequence)
        best[name] = (sequence, makespan, starts)
    total = sum(b[1] for b in best.values())
    warm_total = total if warm else None

    def save():
        write_json(args.out, {"schedules": {n: b[2] for n, b in best.items()}})
        print(f"total makespan {sum(b[1] for b in best.values())}", flush=True)

    if warm_total is None:
        save()
    names = list(instances)
    rounds = 0
    while time.time() - start < args.time * 0.9:
        rounds += 1
        order = [names[i] for i in rng.permutation(len(names))]
        piece = max(0.2, (args.time * 0.9 - (time.time() - start)) / len(names))
        for name in order:
            if time.time() - start > args.time * 0.9:
                break
            inst = instances[name]
            sequence, makespan, _ = best[name]
            if rng.random() < 0.1:  # now and then a fresh greedy start
                fresh = inst.greedy(rng)
                value = inst.decode(fresh)[1]
                if value < makespan:
                    sequence, makespan = fresh, value
            sequence, makespan = improve(inst, sequence, makespan, time.time() + piece, rng)
            if makespan < best[name][1] or sequence != best[name][0]:
                best[name] = (sequence, makespan, inst.decode(sequence)[0])
        total_now = sum(b[1] for b in best.values())
        if total_now < total:
            total = total_now
            save()
    print(f"done: {rounds} rounds, best total {total}")


if __name__ == "__main__":
    main()
