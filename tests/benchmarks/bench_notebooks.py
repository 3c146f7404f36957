"""Analysis notebooks' kernels: one started as a new interpreter against one forked from a server
that loaded the notebooks' imports once (innolab.notebooks.forked_kernels, what `innolab reproduce`
does): wall time and the machine's CPU time per notebook, one of each in turn, and what the
server's start adds to the first; then, computed from those (not measured as a sequence), a
worker's share of `innolab reproduce`'s notebooks both ways. The machine's CPU (all processes,
/proc/stat, steal left out) is read because a forked kernel is not this process's child: on a
quiet machine it is the notebooks' own."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from innolab import notebooks
from innolab.paths import notebooks_dir, project_root

NOTEBOOK = "22_backbone"  # an analysis notebook of the shared imports, on the committed sweep
QUICK = {"repeats": 1}


def machine_cpu_s() -> float:
    """CPU seconds spent by the machine's processes (user, nice, system, irq, softirq)."""
    with open("/proc/stat", encoding="ascii") as stat:
        user, nice, system, _idle, _iowait, irq, softirq = (
            int(x) for x in stat.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def execute_once(out: Path, index: int, cold: bool = False) -> tuple[float, float]:
    """One execution of NOTEBOOK (`cold`: its kernel a new interpreter, even within a scope): its
    wall seconds and the machine's CPU seconds."""
    parameters = {"sweep_dir": str(project_root() / "results" / "sweeps" / "offline"),
                  "n_resamples": 200, "results_dir": str(out / "results"),
                  "figures_dir": str(out / "figures")}
    manager = notebooks.ipc_kernel_manager() if cold else None  # None: the scope's, if any
    cpu, wall = machine_cpu_s(), time.perf_counter()
    notebooks.execute(notebooks_dir() / f"{NOTEBOOK}.ipynb", out / f"{index}.ipynb", parameters,
                      kernel_manager_class=manager)
    return time.perf_counter() - wall, machine_cpu_s() - cpu


def main(repeats: int = 3) -> dict[str, float | int | str]:
    # a worker's share: `innolab reproduce`'s analysis notebooks over its workers, rounded up
    sequence = -(-len(notebooks.analysis_notebooks()) // notebooks.side_by_side_workers())
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        execute_once(out, 0, cold=True)  # the files and caches both kinds read, warm alike
        cold, forked = [], []
        with notebooks.forked_kernels():
            first = execute_once(out, 1)  # the server starts with the first kernel
            for i in range(repeats):  # one of each in turn: the machine's drift weighs on both
                cold.append(execute_once(out, 2 + 2 * i, cold=True))
                forked.append(execute_once(out, 3 + 2 * i))
    median = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
              for name, runs in (("cold", cold), ("forked", forked))}
    # computed: the server's start with its first kernel, then the other sequence - 1 forked;
    # against `sequence` kernels started as new interpreters (each notebook as NOTEBOOK)
    sequence_forked = first[1] + (sequence - 1) * median["forked"][1]
    sequence_cold = sequence * median["cold"][1]
    figures: dict[str, float | int | str] = {
        "notebook": NOTEBOOK,
        "repeats": repeats,
        "cold_s": median["cold"][0],
        "cold_cpu_s": median["cold"][1],
        "forked_s": median["forked"][0],
        "forked_cpu_s": median["forked"][1],
        "forked_cold_cpu_ratio": median["forked"][1] / median["cold"][1],
        "forked_cold_wall_ratio": median["forked"][0] / median["cold"][0],
        "first_forked_s": first[0],
        "first_forked_cpu_s": first[1],
        "server_start_cpu_s": first[1] - median["forked"][1],
        "sequence": sequence,
        "sequence_cold_cpu_s": sequence_cold,
        "sequence_forked_cpu_s": sequence_forked,
        "sequence_forked_cold_cpu_ratio": sequence_forked / sequence_cold,
    }
    print(f"{NOTEBOOK} (median of {repeats}, in turn): its kernel a new interpreter "
          f"{median['cold'][0]:.2f} s wall, {median['cold'][1]:.2f} CPU-s; forked from the server "
          f"{median['forked'][0]:.2f} s, {median['forked'][1]:.2f} CPU-s (ratio "
          f"{figures['forked_cold_cpu_ratio']:.2f} in CPU, {figures['forked_cold_wall_ratio']:.2f} "
          f"in wall time); the first forked one, with the server's start, {first[0]:.2f} s, "
          f"{first[1]:.2f} CPU-s; computed for {sequence} in a row (a worker of innolab reproduce) "
          f"{sequence_forked:.1f} against {sequence_cold:.1f} CPU-s, ratio "
          f"{figures['sequence_forked_cold_cpu_ratio']:.2f}")
    return figures


if __name__ == "__main__":
    main()
