"""The sweep engine: each configuration's run notebook executed once, as one Dask task.

Dask schedules (a LocalCluster of worker processes by default, or any running scheduler); each task
executes notebooks/20_agent_run.ipynb into `DIR/runs/<config id>/`, which starts the run or resumes
it from its checkpoint. A finished configuration (its run scored) is never submitted again; a task
whose worker dies is rescheduled by Dask and its run resumes; the run folder's lock
(innolab.runlock) keeps a dying worker's kernel and its successor apart: the successor waits while
the holder's heartbeat is fresh, however long, and never fails a live run.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tqdm.auto import tqdm

from innolab import __version__
from innolab.results import MANIFEST, collect, read_manifest
from innolab.rundir import RunDir, write_atomic
from innolab.runspec import RunSettings
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
) -> tuple[SweepSpec, Path, list[Configuration]]:
    """The validated spec, its folder and its configurations, written to the folder's manifest.

    Args:
        spec: A spec, a YAML file or a mapping.
        output: The sweep folder (default results/sweeps/<name>/).
        overrides: `--set K=V` overrides.

    Returns:
        The spec, the folder and the configurations (each resolved, with its id).

    Raises:
        innolab.sweep.spec.SpecError: A bad spec, or a folder holding another sweep.
    """
    if not isinstance(spec, SweepSpec) or overrides:
        settings = type(spec).settings if isinstance(spec, SweepSpec) else RunSettings
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
) -> Path:
    """Run every configuration of the spec that has no finished run yet, then collect the tables.

    Args:
        spec: A spec, a YAML file or a mapping.
        output: The sweep folder (default results/sweeps/<name>/).
        workers: LocalCluster worker processes (default: `default_workers`).
        scheduler: The address of a running Dask scheduler (default: a LocalCluster).
        overrides: `--set K=V` overrides.
        show_progress: Whether to show a progress bar (and the dashboard's address).

    Returns:
        The sweep folder.

    Raises:
        innolab.sweep.spec.SpecError: A bad spec, or a folder holding another sweep.
    """
    spec, folder, configurations = plan(spec, output, overrides)
    pending = [c for c in configurations if not finished(folder / "runs" / c.config_id)]
    outcomes: dict[str, dict[str, Any]] = {}
    if pending:
        embedded = _embedded_url(pending, scheduler)
        with _client(scheduler, workers or default_workers(pending), pending) as client:
            if show_progress and client.dashboard_link:
                print(f"Dask dashboard: {client.dashboard_link}", file=sys.stderr)
            outcomes = _execute(client, folder, pending, embedded, show_progress, spec.name)
    _record_errors(folder, outcomes)
    collect(folder)
    return folder


REFERENCE_SPEC = "offline.yaml"


def reference_sweep(output: Path | None = None, show_progress: bool = True) -> Path:
    """`make reproduce`'s offline sweep (data/sweeps/offline.yaml, the embedded model).

    Args:
        output: The root its results/sweeps/offline/ goes under (default: the project).
        show_progress: Whether to show a progress bar.

    Returns:
        The sweep folder (its trajectory also written as trajectory.csv).
    """
    from innolab.paths import data_dir, project_root
    from innolab.results import trajectory

    target = (output or project_root()).resolve() / "results" / "sweeps" / "offline"
    folder = run(data_dir() / "sweeps" / REFERENCE_SPEC, output=target, show_progress=show_progress)
    trajectory(folder).to_csv(folder / "trajectory.csv", index=False)
    return folder


def finished(run_dir: Path) -> bool:
    """Whether a configuration is done: its run finished and was scored (score.json comes last).

    Args:
        run_dir: The configuration's run folder.

    Returns:
        True when the run's score.json exists.
    """
    return RunDir(run_dir).score.is_file()


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
    for _attempt in range(kernel_attempts):
        try:
            execute_run_notebook(
                {
                    **parameters,
                    "config": config,
                    "config_id": config_id,
                    "novelty": novelty,
                    "embedded_url": embedded_url,
                },
                Path(run_dir),
            )
            error = None
            break
        except PapermillExecutionError as failure:
            error = f"{failure.ename}: {failure.evalue}"[:500]
            break
        except Exception as failure:  # the kernel, not the run: execute again (the run resumes)
            error = f"{type(failure).__name__}: {failure}"[:500]
    if finished(Path(run_dir)):
        return {"config_id": config_id, "error": None}
    return {"config_id": config_id, "error": error or "the run was not scored"}


def _execute(
    client: Any,
    folder: Path,
    pending: list[Configuration],
    embedded: str | None,
    show_progress: bool,
    name: str,
) -> dict[str, dict[str, Any]]:
    from distributed import as_completed

    futures = []
    for configuration in pending:
        gpu = _needs_gpu(configuration)
        futures.append(
            client.submit(
                run_configuration,
                configuration.parameters,
                configuration.config,
                configuration.config_id,
                configuration.novelty,
                str(folder / "runs" / configuration.config_id),
                embedded,
                key=f"innolab-run-{configuration.config_id}",
                pure=False,
                resources={"GPU": 1} if gpu else None,
            )
        )
    outcomes: dict[str, dict[str, Any]] = {}
    with tqdm(
        total=len(futures), desc=f"sweep {name}", unit="run", disable=not show_progress
    ) as bar:
        for future in as_completed(futures):
            identifier = future.key.removeprefix("innolab-run-")
            try:
                outcomes[identifier] = future.result()
            except (
                Exception
            ) as error:  # KilledWorker after Dask's allowed failures, a lost scheduler...
                outcomes[identifier] = {
                    "config_id": identifier,
                    "error": f"{type(error).__name__}: {error}"[:500],
                }
            # a result kept on a worker would be recomputed if that worker died later
            future.release()
            bar.update(1)
    return outcomes


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
        with Client(scheduler, timeout="30s") as client:
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
            resources={"GPU": gpus // workers} if gpus >= workers else None,
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


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

    It holds the spec and every configuration (id, notebook parameters, factor levels). A folder
    holds one sweep: running another spec into it is an error.
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
        errors = {c["config_id"]: c.get("error") for c in recorded["configurations"]}
    else:
        errors = {}
    manifest = {
        "name": spec.name,
        "innolab": __version__,
        "spec": spec.model_dump(mode="json"),
        "factors": spec.factors(),
        "configurations": [{**asdict(c), "error": errors.get(c.config_id)} for c in configurations],
    }
    write_atomic(folder / MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode())


def _record_errors(folder: Path, outcomes: dict[str, dict[str, Any]]) -> None:
    manifest = read_manifest(folder)
    if manifest is None:
        return
    for configuration in manifest["configurations"]:
        outcome = outcomes.get(configuration["config_id"])
        if outcome is not None:
            configuration["error"] = outcome.get("error")
        elif finished(folder / "runs" / configuration["config_id"]):
            configuration["error"] = None
    write_atomic(folder / MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode())


def status(folder: Path) -> dict[str, Any]:
    """How far a sweep is: each configuration finished, interrupted, failed or pending.

    Interrupted: a run folder, not finished; failed: an error recorded; pending: no run folder yet.

    Args:
        folder: The sweep folder.

    Returns:
        The sweep's name, each state's count, and each configuration's state, levels and error.

    Raises:
        innolab.sweep.spec.SpecError: The folder holds no sweep.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    if manifest is None:
        raise SpecError(f"{folder} is not a sweep folder (no {MANIFEST})")
    states = {}
    for configuration in manifest["configurations"]:
        run_dir = folder / "runs" / configuration["config_id"]
        if finished(run_dir):
            state = "finished"
        elif configuration.get("error"):
            state = "failed"
        elif RunDir(run_dir).exists():
            state = "interrupted"
        else:
            state = "pending"
        states[configuration["config_id"]] = {
            "state": state,
            "levels": configuration["levels"],
            "error": configuration.get("error"),
        }
    counts = {
        s: sum(v["state"] == s for v in states.values())
        for s in ("finished", "interrupted", "failed", "pending")
    }
    return {"name": manifest["name"], "configurations": len(states), **counts, "runs": states}
