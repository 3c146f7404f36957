"""Job shop (ta41-ta50): dispatching by earliest start, ties to the shortest operation."""
import collections
import json

with open("task.json") as handle:
    instances = json.load(handle)["params"]["instances"]

MAX_ITERATIONS = 10_000


def makespan(starts, durations):
    return max(s + d for row_s, row_d in zip(starts, durations) for s, d in zip(row_s, row_d))


def machine_loads(durations, machines):
    loads = collections.Counter()
    for row_d, row_m in zip(durations, machines):
        for duration, machine in zip(row_d, row_m):
            loads[machine] += duration
    return loads


def lower_bound(durations, machines):
    return max(max(machine_loads(durations, machines).values()), max(map(sum, durations)))


def dispatch(durations, machines):
    jobs, ops = len(durations), len(durations[0])
    next_op = [0] * jobs
    job_ready = [0] * jobs
    machine_ready = [0] * (max(max(row) for row in machines) + 1)
    starts = [[0] * ops for _ in range(jobs)]
    for _ in range(jobs * ops):
        best = None
        for job in range(jobs):
            k = next_op[job]
            if k == ops:
                continue
            start = max(job_ready[job], machine_ready[machines[job][k]])
            key = (start, durations[job][k], job)
            if best is None or key < best:
                best = key
        start, duration, job = best
        k = next_op[job]
        starts[job][k] = start
        job_ready[job] = machine_ready[machines[job][k]] = start + duration
        next_op[job] += 1
    return starts


report = {}
schedules = {}
for name, instance in instances.items():
    schedules[name] = dispatch(instance["duration_matrix"], instance["machines_matrix"])

with open("submission.json", "w") as handle:
    json.dump({"schedules": schedules}, handle)
