"""Job shop (ta41-ta50): dispatching by earliest start, ties to the shortest operation."""
import json

with open("task.json") as handle:
    instances = json.load(handle)["params"]["instances"]


def dispatch(durations, machines):
    jobs, ops = len(durations), len(durations[0])
    starts = [[0] * ops for _ in range(jobs)]
    machine_ready = [0] * (max(max(row) for row in machines) + 1)
    job_ready = [0] * jobs
    next_op = [0] * jobs
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
        job_ready[job] = machine_ready[machines[job][k]] = start + duration
        starts[job][k] = start
        next_op[job] += 1
    return starts


schedules = {}
for name, instance in instances.items():
    schedules[name] = dispatch(instance["duration_matrix"], instance["machines_matrix"])

with open("submission.json", "w") as handle:
    json.dump({"schedules": schedules}, handle)
