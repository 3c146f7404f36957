"""Job shop (ta41-ta50): whole jobs inserted one by one, longest first, each operation into the earliest gap."""
import json

with open("task.json") as handle:
    instances = json.load(handle)["params"]["instances"]


def earliest_gap(busy, ready, duration):
    start = ready
    for begin, end in busy:
        if start + duration <= begin:
            return start
        start = max(start, end)
    return start


def insert_jobs(durations, machines):
    order = sorted(range(len(durations)), key=lambda j: -sum(durations[j]))
    busy = {}
    starts = [[0] * len(durations[0]) for _ in durations]
    for job in order:
        ready = 0
        for k, (duration, machine) in enumerate(zip(durations[job], machines[job])):
            intervals = busy.setdefault(machine, [])
            start = earliest_gap(intervals, ready, duration)
            intervals.append((start, start + duration))
            intervals.sort()
            starts[job][k] = start
            ready = start + duration
    return starts


schedules = {name: insert_jobs(inst["duration_matrix"], inst["machines_matrix"])
             for name, inst in instances.items()}
with open("submission.json", "w") as handle:
    json.dump({"schedules": schedules}, handle)
