"""The workers of a sweep's LocalCluster end with its driver: none survives a killed driver.

A LocalCluster's worker processes are children of the driver (`innolab sweep run`), which runs
their nannies; killed by SIGKILL, it takes nothing down with it. Each worker loads this module as a
Dask preload: a watchdog thread notices that the process's parent changed (the driver died and the
worker was re-parented) and ends the worker with every process under it (the run notebook's kernel
and the programs its run started), so the rerun's workers find the run folders free.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import Any

POLL_S = 0.5  # how often the watchdog looks at its parent


def dask_setup(worker: Any) -> None:
    """Dask's preload hook: watch this worker process's parent.

    Args:
        worker: The Dask worker (unused: the watch is of the process).
    """
    watch(os.getppid())


def watch(parent: int, poll_s: float = POLL_S) -> threading.Thread:
    """Start a daemon thread that ends this process tree once its parent is no longer `parent`.

    Args:
        parent: The parent process id to outlive none of.
        poll_s: How often to look.

    Returns:
        The watching thread.
    """

    def loop() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        end_tree()

    thread = threading.Thread(target=loop, name="innolab-orphan-watch", daemon=True)
    thread.start()
    return thread


def end_tree() -> None:
    """Kill every process under this one (SIGKILL), then this process.

    The tree is stopped first (SIGSTOP), then looked at again, so that a process started meanwhile
    is not missed; then each is killed.
    """
    import psutil

    seen: dict[int, psutil.Process] = {}
    for _round in range(3):
        try:
            found = psutil.Process().children(recursive=True)
        except psutil.Error:
            break
        fresh = [p for p in found if p.pid not in seen]
        if not fresh:
            break
        for process in fresh:
            seen[process.pid] = process
            with contextlib.suppress(psutil.Error):
                process.suspend()
    for process in seen.values():
        with contextlib.suppress(psutil.Error):
            process.kill()
    os.kill(os.getpid(), signal.SIGKILL)
