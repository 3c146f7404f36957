"""Job shop (ta41-ta50): dispatching by earliest start, ties to the shortest operation."""
import json

import numpy as np

with open("task.json") as handle:
    instances = json.load(handle)["params"]["instances"]


def dispatch(durations, machines):
    durations, machines = np.array(durations), np.array(machines)
    jobs, ops = durations.shape
    next_op = np.zeros(jobs, dtype=int)
    job_ready = np.zeros(jobs, dtype=int)
    machine_ready = np.zeros(machines.max() + 1, dtype=int)
    starts = np.zeros((jobs, ops), dtype=int)
    rows = np.arange(jobs)
    for _ in range(jobs * ops):
        open_jobs = rows[next_op < ops]
        k = next_op[open_jobs]
        start = np.maximum(job_ready[open_jobs], machine_ready[machines[open_jobs, k]])
        pick = np.lexsort((open_jobs, durations[open_jobs, k], start))[0]
        job, op = open_jobs[pick], k[pick]
        starts[job, op] = start[pick]
        job_ready[job] = machine_ready[machines[job, op]] = start[pick] + durations[job, op]
        next_op[job] += 1
    return starts.tolist()


schedules = {}
for name, instance in instances.items():
    schedules[name] = dispatch(instance["duration_matrix"], instance["machines_matrix"])

with open("submission.json", "w") as handle:
    json.dump({"schedules": schedules}, handle)
