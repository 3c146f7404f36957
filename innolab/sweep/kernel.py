"""What runs inside a sweep's run kernel: its start ahead of need, and the handover of its one run.

A sweep's task executes the run notebook with papermill: the run, and every model request it
makes, lives in a Jupyter kernel, a process under the Dask worker, where no Dask worker is. The
worker starts its kernels ahead of need (innolab.sweep.pool), forked from a process that loaded what
a run notebook loads (`load`, innolab.forkserver), with an IPython startup file that calls
`prepare`: the kernel watches the process that launched it (innolab.sweep.orphans), ending with it
however it ends (a worker that closes itself when its driver died leaves no kernel), so that
neither the start nor the imports are on a run's path. Each kernel executes one run and is shut
down: when the worker hands it a run, it executes `enter` there, silently (no cell of the notebook,
no execution count): the run's model settings and id go into the kernel's environment, and the
kernel's requests then pass the cluster's gate (innolab.sweep.limits.DaskGate), jointly with every
other worker's, and carry the run's id.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from types import ModuleType
from typing import Any

from innolab import forkserver

LLM_VAR = "INNOLAB_SWEEP_LLM"  # the run's model settings (config.json's llm), as JSON
RUN_VAR = "INNOLAB_RUN_ID"  # the run's id (its configuration's)
SCHEDULER_VAR = "DASK_SCHEDULER_ADDRESS"  # where distributed.get_client() finds the cluster
# the worker that starts the kernel (or its fork server): its parent, as it was when launched (a
# kernel whose parent died while it started finds itself reparented by the time `prepare` runs, and
# must end at once)
PARENT_VAR = forkserver.PARENT_VAR
# the IPython startup file's code: no name is left in the notebook's namespace
STARTUP = "__import__('innolab.sweep.kernel', fromlist=['prepare']).prepare()\n"

_held = contextlib.ExitStack()  # the kernel's gate, held for the kernel's life


def prepare() -> None:
    """As a sweep's kernel starts: watch its worker, load what a run loads, start an evaluator.

    The evaluator is the hidden evaluator's server (innolab.tasks.evaluator_server), forked by the
    fork server's spawner where the kernel was forked (`load`). Does nothing outside such a kernel
    (no PARENT_VAR).
    """
    parent = os.environ.get(PARENT_VAR)
    if not parent:
        return
    from innolab.sweep import orphans

    orphans.watch(int(parent))
    warm()
    from innolab.tasks import evaluator_server

    evaluator_server.start_ahead()  # the run's first evaluation finds it started


def warm() -> tuple[ModuleType, ...]:
    """Import the modules a run notebook loads: its own imports, and what a run loads on first use.

    Modules only: nothing enters the notebook's namespace (its import cell binds its names).

    Returns:
        The modules.
    """
    # notebooks/20_agent_run.ipynb's import cell (a test keeps the two alike), then what a run
    # loads on first use (a second or more of a cold kernel's run): the model client, the run loop
    # and its sandbox, the scaffolds, the scoring and the task families' checks, the progress
    # bar's lock (multiprocessing's)
    import multiprocessing.synchronize

    import openai
    import pandas
    import scipy.optimize
    import scipy.spatial.distance
    from IPython import display

    from innolab import runner, runspec, scoring, traces
    from innolab.agents import aide, baseline, bridge, codeact, mlab
    from innolab.analysis import runs
    from innolab.gym import agent_view, policy, run
    from innolab.gym import local as local_sandbox
    from innolab.llm import client, gateway, local
    from innolab.tasks import builtin_families, leaks

    runspec.schema()  # the agents' registry and the run schema: composed once per process
    # a run table's first write loads pandas' CSV writer and its Arrow strings' conversion
    pandas.DataFrame({"text": ["-"]}).to_csv(io.StringIO())
    # the model client's resources load as they are first used: touched here, nothing sent
    sdk = openai.OpenAI(api_key="-", base_url="http://127.0.0.1:9/v1", max_retries=0)
    _ = (sdk.chat.completions, sdk.models)
    sdk.close()
    return (display, runner, runspec, traces, runs, policy, local, openai, scipy.optimize,
            scipy.spatial.distance, scoring, aide, baseline, bridge, codeact, mlab, local_sandbox,
            run, agent_view, client, gateway, builtin_families, leaks, multiprocessing.synchronize,
            pandas)


def load(tasks: list[dict[str, Any]]) -> None:
    """Load what a sweep's fork server holds before its first fork (innolab.forkserver).

    `warm`, then `preload` of the sweep's tasks; then the hidden evaluator's spawner, which forks
    each kernel its evaluator server (innolab.tasks.evaluator_server.Spawner: no kernel starts an
    interpreter that imports the evaluator again).

    Args:
        tasks: Each {"task": its reference, "options": its task_options}.
    """
    warm()
    preload(tasks)
    from innolab.tasks import evaluator_server

    evaluator_server.start_spawner()


def preload(tasks: list[dict[str, Any]]) -> None:
    """Read what the runs of these tasks read of them first, for the kernels forked after.

    Each task as loaded, and what scoring reads of its known solutions (innolab.scoring.preload):
    files of the task, the same for every run; no run's state. A task that fails to load is left
    to the run that meets it.

    Args:
        tasks: Each {"task": its reference, "options": its task_options}.
    """
    from innolab.scoring import preload as scoring_preload
    from innolab.tasks.registry import get_task

    for entry in tasks:
        with contextlib.suppress(Exception):
            scoring_preload(get_task(entry["task"], entry.get("options") or None))


def handover(llm: dict[str, Any] | None, run: str) -> str:
    """The code a worker executes in a started kernel to hand it one run (`enter`'s call).

    Args:
        llm: The run's model settings (None: no model).
        run: The run's id.

    Returns:
        One line of Python that leaves no name in the notebook's namespace.
    """
    return (f"__import__('innolab.sweep.kernel', fromlist=['enter'])"
            f".enter({json.dumps(llm or {})!r}, {run!r})")


def enter(llm: str, run: str) -> None:
    """In a kernel a sweep's worker started: take the run, pass the cluster's gate.

    The run's settings and id go into the kernel's environment (its processes inherit them); no
    gate for a run without a model or without limits, nor off a cluster.

    Args:
        llm: The run's model settings, as JSON ("{}": no model).
        run: The run's id.
    """
    os.environ[LLM_VAR] = llm
    os.environ[RUN_VAR] = run
    scheduler = os.environ.get(SCHEDULER_VAR)
    if llm == "{}" or not scheduler:
        return
    from innolab.llm import gate as gates
    from innolab.llm.settings import LLMSettings
    from innolab.sweep.limits import DaskGate

    settings = LLMSettings.model_validate(json.loads(llm))
    _held.enter_context(gates.labelled(run))
    limits = settings.limits()
    if limits:
        from distributed import Client

        # the kernel's client of the cluster: the default one the gate's Semaphore and Lock use
        _held.enter_context(Client(scheduler, set_as_default=True, timeout="60s"))
        key = gates.endpoint_key(settings)
        _held.enter_context(gates.installed(key, DaskGate(key, **limits)))
