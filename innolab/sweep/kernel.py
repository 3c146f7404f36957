"""A run notebook's kernel in a sweep: the shared limits there, and its end with its worker.

A sweep's task executes the run notebook with papermill: the run, and every model request it
makes, lives in a Jupyter kernel, a child process of the Dask worker, where no Dask worker is. The
worker hands the kernel what it needs through the kernel's own environment (the scheduler's
address, the run's model settings and id) and an IPython startup file that calls `enter` as the
kernel starts: the kernel's requests then pass the cluster's gate (innolab.sweep.limits.DaskGate),
jointly with every other worker's, and carry the run's id; and the kernel watches its worker
(innolab.sweep.orphans), ending with it however it ends (a worker that closes itself when its
driver died leaves no kernel).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from innolab.gym.leftovers import mark

LLM_VAR = "INNOLAB_SWEEP_LLM"  # the run's model settings (config.json's llm), as JSON
RUN_VAR = "INNOLAB_RUN_ID"  # the run's id (its configuration's)
SCHEDULER_VAR = "DASK_SCHEDULER_ADDRESS"  # where distributed.get_client() finds the cluster
# the worker that starts the kernel: its parent, as it was when launched (a kernel whose worker
# died while it started finds itself reparented by the time `enter` runs, and must end at once)
PARENT_VAR = "INNOLAB_KERNEL_PARENT"
STARTUP = "from innolab.sweep.kernel import enter\nenter()\n"

_held = contextlib.ExitStack()  # the kernel's gate, held for the kernel's life


@contextlib.contextmanager
def handed_to_kernels(llm: dict[str, Any] | None, run: str, scheduler: str | None
                      ) -> Iterator[type | None]:
    """Inside, the kernels of the yielded kernel manager join the cluster's limits for this run.

    The run's environment goes to its own kernels only (`kernel_manager`), never to the worker's
    process environment: the tasks of a worker with several threads each hand over their own.

    Args:
        llm: The run's model settings (None: no model, nothing to hand over).
        run: The run's id.
        scheduler: The Dask scheduler's address (None: not on a cluster; nothing to hand over).

    Yields:
        The kernel manager class to execute the run notebook with (papermill's
        `kernel_manager_class`), or None off a cluster.
    """
    if not scheduler:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="innolab-ipython-") as folder:
        mark(Path(folder))  # a killed worker's folder is removed by the reaper (gym.leftovers)
        startup = Path(folder) / "profile_default" / "startup"
        startup.mkdir(parents=True)
        (startup / "00-innolab-limits.py").write_text(STARTUP, encoding="utf-8")
        yield kernel_manager({LLM_VAR: json.dumps(llm or {}), RUN_VAR: run,
                              SCHEDULER_VAR: scheduler, PARENT_VAR: str(os.getpid()),
                              "IPYTHONDIR": folder})


def kernel_manager(env: dict[str, str]) -> type:
    """A kernel manager whose kernels start with `env` over the process's environment.

    Args:
        env: The variables to add.

    Returns:
        A subclass of innolab's kernel manager (nbclient's, over IPC sockets:
        innolab.notebooks.ipc_kernel_manager), made for this run.
    """
    from jupyter_client.manager import KernelManager

    from innolab.notebooks import ipc_kernel_manager

    extra = dict(env)

    class RunKernelManager(ipc_kernel_manager()):  # type: ignore[misc,valid-type]
        """Starts (and restarts) its kernels with the run's variables."""

        async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
            kw["env"] = {**kw.get("env", os.environ), **extra}
            await KernelManager._async_start_kernel(self, **kw)

    return RunKernelManager


def enter() -> None:
    """In a kernel a sweep's worker started: end with the worker, pass the cluster's gate.

    Does nothing outside such a kernel; no gate for a run without a model or without limits.
    """
    text, scheduler = os.environ.get(LLM_VAR), os.environ.get(SCHEDULER_VAR)
    if text is None or not scheduler:
        return
    from innolab.sweep import orphans

    orphans.watch(int(os.environ.get(PARENT_VAR) or os.getppid()))
    if text == "{}":
        return
    from innolab.llm import gate as gates
    from innolab.llm.settings import LLMSettings
    from innolab.sweep.limits import DaskGate

    settings = LLMSettings.model_validate(json.loads(text))
    _held.enter_context(gates.labelled(os.environ.get(RUN_VAR)))
    limits = settings.limits()
    if limits:
        from distributed import Client

        # the kernel's client of the cluster: the default one the gate's Semaphore and Lock use
        _held.enter_context(Client(scheduler, set_as_default=True, timeout="60s"))
        key = gates.endpoint_key(settings)
        _held.enter_context(gates.installed(key, DaskGate(key, **limits)))
