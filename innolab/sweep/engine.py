"""The sweep engine: each configuration's run notebook executed once, as one Dask task.

Dask schedules (a LocalCluster of worker processes by default, or any running scheduler); each task
executes notebooks/20_agent_run.ipynb into `DIR/runs/<config id>/`, which starts the run or resumes
it from its checkpoint. A finished configuration (its run scored) is never submitted again; a task
whose worker dies is rescheduled by Dask and its run resumes; the run folder's lock
(innolab.runlock) keeps a dying worker's kernel and its successor apart: the successor waits while
the holder's heartbeat is fresh, however long, and never fails a live run.

The driver may die at any moment (SIGKILL included): the same command run again skips every scored
configuration and resumes the others from their checkpoints, and the workers of its LocalCluster end
with it (innolab.sweep.orphans). A cost cap (`budget.max_cost_usd`, `--max-cost`) keeps new runs
from starting once the sweep's spend reaches it; `retry_failed` reruns the failed configurations
only, each earlier attempt kept in its folder (innolab.sweep.state).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tqdm.auto import tqdm

from innolab import __version__
from innolab.results import collect, read_manifest
from innolab.runspec import schema
from innolab.sweep import state
from innolab.sweep.spec import Configuration, SpecError, SweepSpec, expand, load_spec

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def sweeps_root() -> Path:
    """The default folder of sweeps: results/sweeps/ of the project."""
    from innolab.paths import project_root

    return project_root() / "results" / "sweeps"


def plan(
    spec: SweepSpec | str | Path | dict[str, Any],
    output: Path | None = None,
    overrides: list[str] | None = None,
    max_cost_usd: float | None = None,
) -> tuple[SweepSpec, Path, list[Configuration]]:
    """The validated spec, its folder and its configurations, written to the folder's manifest.

    Args:
        spec: A spec, a YAML file or a mapping.
        output: The sweep folder (default results/sweeps/<name>/).
        overrides: `--set K=V` overrides.
        max_cost_usd: The sweep's cost cap, instead of the spec's `budget.max_cost_usd`.

    Returns:
        The spec, the folder and the configurations (each resolved, with its id).

    Raises:
        innolab.sweep.spec.SpecError: A bad spec, or a folder holding another sweep.
    """
    if max_cost_usd is not None:
        overrides = [*(overrides or []), f"budget.max_cost_usd={max_cost_usd!r}"]
    if not isinstance(spec, SweepSpec) or overrides:
        settings = type(spec).settings if isinstance(spec, SweepSpec) else schema()
        spec = load_spec(
            spec.model_dump(exclude_unset=True) if isinstance(spec, SweepSpec) else spec,
            overrides,
            settings,
        )
    folder = Path(output or sweeps_root() / spec.name).resolve()
    configurations = expand(spec)
    _write_manifest(folder, spec, configurations)
    return spec, folder, configurations


def run(
    spec: SweepSpec | str | Path | dict[str, Any],
    output: Path | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    overrides: list[str] | None = None,
    show_progress: bool = True,
    max_cost_usd: float | None = None,
    retry_failed: bool = False,
    retry_attempts: int = 1,
) -> Path:
    """Run every configuration of the spec that has no scored run yet, then collect the tables.

    With a cost cap no run starts once the sweep's spend (every attempt's recorded cost, the runs in
    flight included) reaches it; the runs in flight end at their own budgets and the manifest
    records that the sweep stopped for cost. A rerun with a higher cap goes on where it stopped.

    Args:
        spec: A spec, a YAML file or a mapping.
        output: The sweep folder (default results/sweeps/<name>/).
        workers: LocalCluster worker processes (default: `default_workers`); never more than
            configurations to run (a worker and its kernels cost seconds of CPU to start).
        scheduler: The address of a running Dask scheduler (default: a LocalCluster).
        overrides: `--set K=V` overrides.
        show_progress: Whether to show a progress bar (and the dashboard's address).
        max_cost_usd: The sweep's cost cap in USD (default: the spec's `budget.max_cost_usd`).
        retry_failed: Run only the configurations whose run failed (`state.failed`: an error, or
            a model that stayed unreachable; a spent budget or a stall is a result), each as a new
            attempt, the failed one kept under its folder's attempts/.
        retry_attempts: With retry_failed, the most retries a configuration gets in all (its
            attempts: at most 1 + retry_attempts).

    Returns:
        The sweep folder.

    Raises:
        innolab.sweep.spec.SpecError: A bad spec, or a folder holding another sweep.
        ValueError: retry_attempts below 1.
    """
    if retry_attempts < 1:
        raise ValueError(f"retry_attempts: must be at least 1, got {retry_attempts}")
    spec, folder, configurations = plan(spec, output, overrides, max_cost_usd)
    manifest = read_manifest(folder) or {}
    errors = {e["config_id"]: e.get("error") for e in manifest.get("configurations", [])}
    for configuration in configurations:
        state.finish_archive(folder / "runs" / configuration.config_id)
    if retry_failed:
        todo = [c for c in configurations  # never one that something still executes
                if state.failed(folder / "runs" / c.config_id, errors.get(c.config_id))
                and state.attempts_made(folder / "runs" / c.config_id) <= retry_attempts
                and not state.running(folder / "runs" / c.config_id)]
    else:
        todo = [c for c in configurations if not finished(folder / "runs" / c.config_id)]
    sweep = _Sweep(folder, spec.budget.max_cost_usd, retry_attempts if retry_failed else 0,
                   errors)
    sweep.record_stop(None)
    if todo and not sweep.over_cap():
        embedded = _embedded_url(todo, scheduler)
        with _client(scheduler, worker_count(workers, todo), todo) as client:
            if show_progress and client.dashboard_link:
                print(f"Dask dashboard: {client.dashboard_link}", file=sys.stderr)
            sweep.execute(client, todo, embedded, show_progress, spec.name)
    elif todo:
        sweep.record_stop(len(todo))
    _record_errors(folder, sweep.outcomes)
    collect(folder)
    return folder


REFERENCE_SPEC = "offline.yaml"


def reference_sweep(output: Path | None = None, show_progress: bool = True) -> Path:
    """`make reproduce`'s offline sweep (data/sweeps/offline.yaml, the embedded model).

    Args:
        output: The root its results/sweeps/offline/ goes under (default: the project).
        show_progress: Whether to show a progress bar.

    Returns:
        The sweep folder (its trajectory also written as trajectory.csv), packed
        (innolab.sweep.pack: checkpoints and caches dropped, no machine path) to be committed
        whole: every tool and notebook opens it.
    """
    from innolab.paths import data_dir, project_root
    from innolab.results import trajectory
    from innolab.sweep.pack import pack

    target = (output or project_root()).resolve() / "results" / "sweeps" / "offline"
    folder = run(data_dir() / "sweeps" / REFERENCE_SPEC, output=target, show_progress=show_progress)
    trajectory(folder).to_csv(folder / "trajectory.csv", index=False)
    pack(folder, root=output)
    return folder


def finished(run_dir: Path) -> bool:
    """Whether a configuration is done: its run finished and was scored (score.json comes last).

    Args:
        run_dir: The configuration's run folder.

    Returns:
        True when the run's score.json exists.
    """
    return state.scored(run_dir)


def worker_count(asked: int | None, configurations: list[Configuration]) -> int:
    """How many LocalCluster workers a sweep starts for the configurations it has to run.

    Args:
        asked: The workers asked for (None: `default_workers`).
        configurations: The configurations to run.

    Returns:
        Never more than configurations: a worker and its kernels cost seconds of CPU to start.
    """
    return min(asked, len(configurations)) if asked else default_workers(configurations)


def default_workers(configurations: list[Configuration]) -> int:
    """Worker processes for this machine: its cores divided by the CPUs one run may use.

    A run may use a Docker sandbox's CPU limit, or one core with the local runtime.

    Args:
        configurations: The configurations to run.

    Returns:
        At least one worker, and at most one per configuration.
    """
    from innolab.gym.docker_sandbox import DockerLimits

    cores = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    )
    per_run = max(
        DockerLimits().cpus if c.parameters.get("runtime") == "docker" else 1.0
        for c in configurations
    )
    return max(1, min(len(configurations), int(cores // per_run)))


def run_configuration(
    parameters: dict[str, Any],
    config: dict[str, Any],
    config_id: str,
    novelty: str | None,
    run_dir: str,
    embedded_url: str | None,
    kernel_attempts: int = 3,
) -> dict[str, Any]:
    """One Dask task: execute the run notebook for one configuration (it starts or resumes the run).

    The notebook gets the configuration the sweep resolved and hashed (`config`, config.json's
    fields) and runs it as it is, checking its id; the run's settings (`parameters`) go with it as
    the notebook's record. The run folder is the truth, not the task: the task succeeds when the run
    is finished and scored, whoever finished it (Dask may execute a task twice; the folder's lock
    keeps two executions apart, the second waiting for the first as long as it lives). A kernel
    that dies or fails to start (port races, lost messages) is infrastructure: the notebook is
    executed again and resumes the run. An exception raised by the notebook's own code is the run's
    failure and is returned, not retried.

    Args:
        parameters: The run's settings (notebook 20's parameters).
        config: The resolved configuration, as config.json holds it.
        config_id: Its id (the notebook checks it).
        novelty: The back end of N (None: N is not computed).
        run_dir: The configuration's run folder.
        embedded_url: The sweep's embedded-model server (None: none).
        kernel_attempts: How many times a dead or unstarted kernel is replaced.

    Returns:
        The configuration's id and its error (None when the run finished and was scored).
    """
    from papermill.exceptions import PapermillExecutionError

    from innolab.notebooks import execute_run_notebook

    error: str | None = None
    with _limits(config.get("llm"), config_id) as pool:
        for _attempt in range(kernel_attempts):
            try:
                with _kernel(pool, config.get("llm"), config_id) as manager:
                    execute_run_notebook(
                        {
                            **parameters,
                            "config": config,
                            "config_id": config_id,
                            "novelty": novelty,
                            "embedded_url": embedded_url,
                            "show_progress": False,  # no one watches a sweep run's kernel
                        },
                        Path(run_dir),
                        kernel_manager=manager,
                    )
                error = None
                break
            except PapermillExecutionError as failure:
                error = f"{failure.ename}: {failure.evalue}"[:500]
                break
            except Exception as failure:  # the kernel, not the run: execute again (it resumes)
                error = f"{type(failure).__name__}: {failure}"[:500]
    if finished(Path(run_dir)):
        return {"config_id": config_id, "error": None}
    return {"config_id": config_id, "error": error or "the run was not scored"}


@contextmanager
def _limits(llm: dict[str, Any] | None, config_id: str) -> Iterator[Any]:
    """The endpoint's limits, shared by the cluster's workers, around one task.

    Yields this worker's pool of kernels started ahead (innolab.sweep.pool; None off a cluster).
    """
    from innolab.sweep.pool import worker_pool

    try:
        from innolab.sweep import limits
    except ImportError:  # no shared limits in this installation
        yield worker_pool()
        return
    with limits.activate(llm, run=config_id):
        yield worker_pool()


@contextmanager
def _kernel(pool: Any, llm: dict[str, Any] | None, config_id: str) -> Iterator[Any]:
    """A fresh kernel for one execution of the run notebook, handed the run (None: no pool).

    The run's model requests are made in the notebook's kernel, a process under this worker's
    (innolab.sweep.pool, started ahead of need): it gets the run's settings and id and joins the
    cluster's gate (innolab.sweep.kernel), executes this one notebook and is shut down after.
    """
    if pool is None:
        yield None
        return
    kernel = pool.take()
    try:
        kernel.hand_over(llm, config_id)
        yield kernel.manager
    finally:
        pool.retire(kernel)


class _Sweep:
    """One execution of a sweep's configurations: submission under the cost cap, retries, outcomes.

    Attributes:
        folder: The sweep folder.
        cap: The cost cap in USD (None: none).
        retries: The most retries a failed configuration gets in all (0: none).
        errors: Each configuration's recorded error (updated as runs end).
        outcomes: Each configuration's outcome in this execution (its error, or None).
    """

    def __init__(self, folder: Path, cap: float | None, retries: int,
                 errors: dict[str, str | None]) -> None:
        self.folder = folder
        self.cap = cap
        self.retries = retries
        self.errors = dict(errors)
        self.outcomes: dict[str, dict[str, Any]] = {}
        self.ledger = state.Ledger(folder)

    def run_dir(self, configuration: Configuration) -> Path:
        """The configuration's run folder."""
        return self.folder / "runs" / configuration.config_id

    def over_cap(self) -> bool:
        """Whether the sweep's spend so far reached its cost cap."""
        return self.cap is not None and self.ledger.spent() >= self.cap

    def record_stop(self, not_started: int | None) -> None:
        """Record in the manifest that the sweep stopped for its cost cap (None: it did not)."""
        manifest = read_manifest(self.folder)
        if manifest is None:
            return
        manifest["stopped_for_cost"] = None if not_started is None else {
            "max_cost_usd": self.cap, "cost_usd": self.ledger.spent(),
            "not_started": not_started, "time": time.time()}
        state.write_manifest(self.folder, manifest)

    def execute(self, client: Any, todo: list[Configuration], embedded: str | None,
                show_progress: bool, name: str) -> None:
        """Run the configurations on the cluster.

        Without a cap every configuration is submitted at once; with one, no more are in flight
        than the cluster has threads, and none is submitted once the spend reached the cap.
        """
        from distributed import as_completed

        queue = deque(todo)
        retrying = {c.config_id for c in todo} if self.retries else set()
        in_flight: dict[str, Configuration] = {}
        futures = as_completed()
        with tqdm(total=len(todo), desc=f"sweep {name}", unit="run",
                  disable=not show_progress) as bar:
            while queue or in_flight:
                while queue and len(in_flight) < self._slots(client):
                    if self.over_cap():
                        self.record_stop(len(queue))
                        queue.clear()
                        break
                    configuration = queue.popleft()
                    if configuration.config_id in retrying:
                        self._archive(configuration)
                    future = self._submit(client, configuration, embedded)
                    futures.add(future)
                    in_flight[future.key] = configuration
                if not in_flight:
                    break
                future = next(futures)
                configuration = in_flight.pop(future.key)
                identifier = configuration.config_id
                try:
                    outcome = future.result()
                except Exception as error:  # KilledWorker after Dask's allowed failures...
                    outcome = {"config_id": identifier,
                               "error": f"{type(error).__name__}: {error}"[:500]}
                # a result kept on a worker would be recomputed if that worker died later
                future.release()
                self.outcomes[identifier] = outcome
                self.errors[identifier] = outcome.get("error")
                run_dir = self.run_dir(configuration)
                failed = state.failed(run_dir, outcome.get("error"))
                if failed:  # why, in one line, as it happens (the run's own lines are in its
                    # run.ipynb): its end cause (the model's error and host) or its error
                    tqdm.write(f"run {identifier} failed: "
                               f"{state.cause(run_dir, outcome.get('error'))}", file=sys.stderr)
                if (self.retries and failed
                        and state.attempts_made(run_dir) <= self.retries):
                    retrying.add(identifier)
                    queue.appendleft(configuration)
                    bar.total += 1
                bar.update(1)

    def _slots(self, client: Any) -> int:
        if self.cap is None:
            return sys.maxsize
        return max(1, sum(client.nthreads().values()))

    def _archive(self, configuration: Configuration) -> None:
        run_dir = self.run_dir(configuration)
        if run_dir.is_dir() and state.attempts_made(run_dir) > len(state.archived(run_dir)):
            state.archive_attempt(run_dir, self.errors.get(configuration.config_id))
            self.ledger.forget(run_dir)
        self.errors[configuration.config_id] = None

    def _submit(self, client: Any, configuration: Configuration, embedded: str | None) -> Any:
        attempt = state.attempts_made(self.run_dir(configuration))
        return client.submit(
            run_configuration,
            configuration.parameters,
            configuration.config,
            configuration.config_id,
            configuration.novelty,
            str(self.run_dir(configuration)),
            embedded,
            # a retry is another task (a key of its own: never the failed attempt's result)
            key=f"innolab-run-{configuration.config_id}-{attempt}",
            pure=False,
            resources={"GPU": 1} if _needs_gpu(configuration) else None,
        )


def _needs_gpu(configuration: Configuration) -> bool:
    from innolab.tasks.registry import get_task

    parameters = configuration.parameters
    return (
        get_task(parameters["task"], parameters.get("task_options") or None).compute == "gpu"
    )


@contextmanager
def _client(scheduler: str | None, workers: int, pending: list[Configuration]) -> Iterator[Any]:
    """A Dask client.

    Of the given scheduler, or of a LocalCluster of `workers` processes (one thread each).
    """
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler, timeout="30s") as client, _kernels_ahead(client, pending):
            yield client
        return
    gpus = _gpu_count()
    with (
        _environ_kept(),
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=logging.ERROR,
            preload=["innolab.sweep.orphans"],  # workers end with a killed driver
            resources={"GPU": gpus // workers} if gpus >= workers else None,
        ) as cluster,
        Client(cluster) as client,
        _kernels_ahead(client, pending),
    ):
        yield client


@contextmanager
def _kernels_ahead(client: Any, pending: list[Configuration]) -> Iterator[None]:
    """Inside, every worker of the client's cluster keeps kernels started ahead of its runs.

    They are forked from a process that read the pending configurations' tasks. The workers'
    kernels (innolab.sweep.pool) are shut down on the way out: a remote cluster's workers outlive
    the sweep, and keep none.
    """
    from innolab.sweep.pool import KernelsAhead

    tasks = {json.dumps({"task": c.config.get("task"), "options": c.config.get("task_options")},
                        sort_keys=True) for c in pending}
    client.register_plugin(KernelsAhead([json.loads(t) for t in sorted(tasks)]),
                           name=KernelsAhead.name)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):  # a cluster gone meanwhile: its workers ended too
            client.unregister_worker_plugin(KernelsAhead.name)


@contextmanager
def _environ_kept() -> Iterator[None]:
    """Restore this process's environment after a LocalCluster.

    Dask's nanny writes its pre-spawn variables (OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, ...)
    into the parent's os.environ, and they would leak into every later child process of the caller
    (measured: a solver's --quick rerun changes its result under them).
    """
    saved = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        os.environ.update(saved)


def _gpu_count() -> int:
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return 0
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return (
        sum(line.startswith("GPU ") for line in listed.stdout.splitlines())
        if listed.returncode == 0
        else 0
    )


def _embedded_url(pending: list[Configuration], scheduler: str | None) -> str | None:
    """With no endpoint configured, one embedded-model server for the whole sweep, started here.

    Its address handed to the runs (on a remote cluster each worker starts its own: a loopback
    address would not reach it).
    """
    if scheduler and (urlparse(scheduler).hostname or "") not in LOOPBACK:
        return None
    if not any(c.config.get("endpoint") == "embedded" for c in pending):
        return None
    from innolab.llm import local

    return local.start()


def _write_manifest(folder: Path, spec: SweepSpec, configurations: list[Configuration]) -> None:
    """Write sweep.json.

    It holds the spec and every configuration (id, notebook parameters, factor levels, its error
    and attempts), and whether the sweep stopped for cost. A folder holds one sweep: running
    another spec into it is an error.
    """
    recorded = read_manifest(folder)
    ids = [c.config_id for c in configurations]
    if recorded is not None:
        before = [c["config_id"] for c in recorded["configurations"]]
        if sorted(before) != sorted(ids):
            raise SpecError(
                f"{folder} holds sweep {recorded['name']!r} with other configurations "
                f"({len(before)} recorded, {len(ids)} now, {len(set(before) & set(ids))} shared): "
                "give another --output"
            )
        kept = {c["config_id"]: c for c in recorded["configurations"]}
    else:
        kept = {}
    manifest = {
        "name": spec.name,
        "innolab": __version__,
        "spec": spec.model_dump(mode="json"),
        "factors": spec.factors(),
        "configurations": [
            {**asdict(c), "error": kept.get(c.config_id, {}).get("error"),
             "attempts": kept.get(c.config_id, {}).get("attempts", 0)}
            for c in configurations
        ],
        "stopped_for_cost": (recorded or {}).get("stopped_for_cost"),
    }
    folder.mkdir(parents=True, exist_ok=True)
    state.write_manifest(folder, manifest)


def _record_errors(folder: Path, outcomes: dict[str, dict[str, Any]]) -> None:
    """Each configuration's error (this execution's outcome) and attempts, into the manifest."""
    manifest = read_manifest(folder)
    if manifest is None:
        return
    for configuration in manifest["configurations"]:
        run_dir = folder / "runs" / configuration["config_id"]
        outcome = outcomes.get(configuration["config_id"])
        if outcome is not None:
            configuration["error"] = outcome.get("error")
        elif finished(run_dir):
            configuration["error"] = None
        configuration["attempts"] = state.attempts_made(run_dir)
    state.write_manifest(folder, manifest)


def status(folder: Path) -> dict[str, Any]:
    """How far a sweep is (innolab.sweep.state.status).

    Args:
        folder: The sweep folder.

    Returns:
        Counts by state, the spend so far, whether it stopped for cost, the runs in flight and
        each configuration's state.

    Raises:
        innolab.sweep.spec.SpecError: The folder holds no sweep.
    """
    return state.status(folder)
