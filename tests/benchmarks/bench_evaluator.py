"""The hidden evaluator: one evaluation forked from this process's evaluator server
(innolab.tasks.evaluator_server) against one started as a new interpreter (`python -I -m
innolab.tasks.evaluator_worker`), in turn; wall time and the machine's CPU time per evaluation,
what the server's start adds to the first, and what `innolab tasks check` costs for one task both
ways. The machine's CPU (/proc/stat) is read because a forked evaluation is not this process's
child: on a quiet machine it is the evaluations' own (counted in clock ticks of 10 ms)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from unittest import mock

from innolab.tasks import evaluator_server, get_task
from innolab.tasks.checks import run_checks
from innolab.tasks.evaluation import evaluate
from innolab.tasks.solutions import solutions
from tests.benchmarks.bench_notebooks import machine_cpu_s

TASK = "circle-packing-26"  # exact-rational geometry, a check of NumPy's import and little else
CHECKED = "kissing-number-11"  # `tasks check` of a task whose reruns are quick
QUICK = {"repeats": 3, "check": False}


def cold() -> AbstractContextManager[object]:
    """Inside, evaluations start as new interpreters (as where no server answers)."""
    return mock.patch.object(evaluator_server, "evaluate", side_effect=evaluator_server.
                             EvaluatorServerError("started as a new interpreter"))


def timed(action: Callable[[], object],
          within: AbstractContextManager[object]) -> tuple[float, float]:
    """The wall seconds and the machine's CPU seconds of `action` inside `within`."""
    with within:
        cpu, wall = machine_cpu_s(), time.perf_counter()
        action()
        return time.perf_counter() - wall, machine_cpu_s() - cpu


def main(repeats: int = 20, check: bool = True) -> dict[str, float | int | str]:
    task = get_task(TASK)
    output = solutions(task)[0].output
    if evaluator_server._server is not None:  # the first forked evaluation starts the server
        evaluator_server._server.close()
        evaluator_server._server = None
    first = timed(lambda: evaluate(task, output), nullcontext())
    runs: dict[str, list[tuple[float, float]]] = {"cold": [], "forked": []}
    for _ in range(repeats):  # in turn: the machine's drift weighs on both
        runs["cold"].append(timed(lambda: evaluate(task, output), cold()))
        runs["forked"].append(timed(lambda: evaluate(task, output), nullcontext()))
    median = {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r))
              for name, r in runs.items()}
    figures: dict[str, float | int | str] = {
        "task": TASK,
        "repeats": repeats,
        "cold_ms": median["cold"][0] * 1000,
        "cold_cpu_ms": median["cold"][1] * 1000,
        "forked_ms": median["forked"][0] * 1000,
        "forked_cpu_ms": median["forked"][1] * 1000,
        "forked_cold_wall_ratio": median["forked"][0] / median["cold"][0],
        "forked_cold_cpu_ratio": median["forked"][1] / median["cold"][1],
        "first_forked_ms": first[0] * 1000,
        "first_forked_cpu_ms": first[1] * 1000,
    }
    print(f"{TASK}, one evaluation (median of {repeats}, in turn): a new interpreter "
          f"{median['cold'][0] * 1000:.0f} ms wall, {median['cold'][1] * 1000:.0f} CPU-ms; forked "
          f"{median['forked'][0] * 1000:.0f} ms, {median['forked'][1] * 1000:.0f} CPU-ms (ratio "
          f"{figures['forked_cold_wall_ratio']:.2f} in wall time, "
          f"{figures['forked_cold_cpu_ratio']:.2f} in CPU); the first, with the server's start, "
          f"{first[0] * 1000:.0f} ms, {first[1] * 1000:.0f} CPU-ms")
    if check:  # one `tasks check` each way (its reruns of the known solutions included)
        checked = get_task(CHECKED)
        check_cold = timed(lambda: run_checks(checked), cold())
        check_forked = timed(lambda: run_checks(checked), nullcontext())
        figures |= {"check_task": CHECKED, "check_cold_s": check_cold[0],
                    "check_cold_cpu_s": check_cold[1], "check_forked_s": check_forked[0],
                    "check_forked_cpu_s": check_forked[1]}
        print(f"tasks check {CHECKED}: evaluations as new interpreters {check_cold[0]:.2f} s, "
              f"{check_cold[1]:.2f} CPU-s; forked {check_forked[0]:.2f} s, "
              f"{check_forked[1]:.2f} CPU-s")
    return figures


if __name__ == "__main__":
    main()
