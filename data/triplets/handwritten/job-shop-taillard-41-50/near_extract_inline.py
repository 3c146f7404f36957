"""Job shop (ta41-ta50): dispatching by earliest start, ties to the shortest operation."""
import json


def load_instances(path):
    with open(path) as handle:
        return json.load(handle)["params"]["instances"]


def earliest_candidate(durations, machines, next_op, job_ready, machine_ready):
    best = None
    for job in range(len(durations)):
        k = next_op[job]
        if k == len(durations[0]):
            continue
        start = max(job_ready[job], machine_ready[machines[job][k]])
        key = (start, durations[job][k], job)
        if best is None or key < best:
            best = key
    return best


def dispatch(durations, machines):
    jobs, ops = len(durations), len(durations[0])
    next_op = [0] * jobs
    job_ready = [0] * jobs
    machine_ready = [0] * (max(max(row) for row in machines) + 1)
    starts = [[0] * ops for _ in range(jobs)]
    for _ in range(jobs * ops):
        start, duration, job = earliest_candidate(durations, machines, next_op, job_ready,
                                                  machine_ready)
        k = next_op[job]
        starts[job][k] = start
        job_ready[job] = machine_ready[machines[job][k]] = start + duration
        next_op[job] += 1
    return starts


schedules = {}
for name, instance in load_instances("task.json").items():
    schedules[name] = dispatch(instance["duration_matrix"], instance["machines_matrix"])

with open("submission.json", "w") as handle:
    json.dump({"schedules": schedules}, handle)
