"""Job shop (ta41-ta50): dispatching by earliest start, ties to the shortest operation."""
import json

with open("task.json") as handle:
    benchmark = json.load(handle)["params"]["instances"]


def list_schedule(processing_times, routing):
    job_count, stage_count = len(processing_times), len(processing_times[0])
    cursor = [0] * job_count
    job_free_at = [0] * job_count
    machine_free_at = [0] * (max(max(route) for route in routing) + 1)
    timetable = [[0] * stage_count for _ in range(job_count)]
    for _ in range(job_count * stage_count):
        chosen = None
        for candidate in range(job_count):
            stage = cursor[candidate]
            if stage == stage_count:
                continue
            begin = max(job_free_at[candidate], machine_free_at[routing[candidate][stage]])
            priority = (begin, processing_times[candidate][stage], candidate)
            if chosen is None or priority < chosen:
                chosen = priority
        begin, length, candidate = chosen
        stage = cursor[candidate]
        timetable[candidate][stage] = begin
        job_free_at[candidate] = machine_free_at[routing[candidate][stage]] = begin + length
        cursor[candidate] += 1
    return timetable


plans = {}
for label, problem in benchmark.items():
    plans[label] = list_schedule(problem["duration_matrix"], problem["machines_matrix"])

with open("submission.json", "w") as output:
    json.dump({"schedules": plans}, output)
