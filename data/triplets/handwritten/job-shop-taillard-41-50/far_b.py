"""Job shop (ta41-ta50): hill climbing on an operation sequence (swap moves), decoded by appending."""
import json
import random

with open("task.json") as handle:
    instances = json.load(handle)["params"]["instances"]

ITERATIONS = 150


def decode(sequence, durations, machines):
    jobs, ops = len(durations), len(durations[0])
    next_op = [0] * jobs
    job_ready = [0] * jobs
    machine_ready = {}
    starts = [[0] * ops for _ in range(jobs)]
    for job in sequence:
        k = next_op[job]
        machine = machines[job][k]
        start = max(job_ready[job], machine_ready.get(machine, 0))
        starts[job][k] = start
        job_ready[job] = machine_ready[machine] = start + durations[job][k]
        next_op[job] += 1
    return starts, max(job_ready)


def hill_climb(durations, machines, rng):
    sequence = [job for job in range(len(durations)) for _ in durations[job]]
    rng.shuffle(sequence)
    starts, makespan = decode(sequence, durations, machines)
    for _ in range(ITERATIONS):
        i, j = rng.randrange(len(sequence)), rng.randrange(len(sequence))
        sequence[i], sequence[j] = sequence[j], sequence[i]
        trial_starts, trial_makespan = decode(sequence, durations, machines)
        if trial_makespan <= makespan:
            starts, makespan = trial_starts, trial_makespan
        else:
            sequence[i], sequence[j] = sequence[j], sequence[i]
    return starts


rng = random.Random(0)
schedules = {}
for name, instance in instances.items():
    schedules[name] = hill_climb(instance["duration_matrix"], instance["machines_matrix"], rng)

with open("submission.json", "w") as handle:
    json.dump({"schedules": schedules}, handle)
