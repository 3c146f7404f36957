"""Job shop (ta41-ta50): dispatching by earliest start, ties to the shortest operation."""
import json
from pathlib import Path

instances = json.loads(Path("task.json").read_text())["params"]["instances"]


def dispatch(durations, machines):
    jobs, ops = len(durations), len(durations[0])
    next_op = [0] * jobs
    job_ready = [0] * jobs
    machine_ready = [0] * (1 + max(map(max, machines)))
    starts = [[0] * ops for _ in range(jobs)]
    for _ in range(jobs * ops):
        options = []
        for job in range(jobs):
            k = next_op[job]
            if k < ops:
                start = max(job_ready[job], machine_ready[machines[job][k]])
                options.append((start, durations[job][k], job))
        start, duration, job = sorted(options)[0]
        k = next_op[job]
        starts[job][k] = start
        job_ready[job] = machine_ready[machines[job][k]] = start + duration
        next_op[job] += 1
    return starts


schedules = {}
for name, instance in instances.items():
    schedules[name] = dispatch(instance["duration_matrix"], instance["machines_matrix"])

Path("submission.json").write_text(json.dumps({"schedules": schedules}))
