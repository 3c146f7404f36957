"""Headless execution of innolab's parameterized notebooks with papermill (`innolab reproduce`).

Within `forked_kernels`, their kernels are forked from one server that loaded their imports once.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import papermill

from innolab.forkserver import ForkServer, provisioner_class
from innolab.paths import notebooks_dir, project_root
from innolab.rundir import RunDir

KERNEL_NAME = "python3"
# not compared between a kernel's environment and its scope's: what jupyter_client adds to a
# kernel's environment itself, and what names the step a test runner is at (it changes each step)
VOLATILE_VARS = ("JPY_", "PYTEST_CURRENT_TEST")


def ipc_kernel_manager() -> type:
    """The kernel manager innolab executes notebooks with: its kernels talk over IPC sockets.

    Unix-domain sockets in Jupyter's runtime folder instead of TCP on 127.0.0.1: no port to race
    for, nothing another user of the machine can connect to, and no "Kernel is running over TCP
    without encryption" warning from every kernel that starts. Each manager's sockets have a name
    of their own (jupyter_client's default, "kernel-ipc-<n>" in the working directory, would be
    shared by the kernels a sweep's workers start side by side in the notebooks' folder), and
    they are removed when the kernel is shut down. Its clients are ready when IOPub carries
    their info request's idle status (innolab.kernel_client), not after 0.2 s of silence.

    Returns:
        A subclass of jupyter_client's AsyncKernelManager (nbclient's default) with IPC transport.
    """
    import uuid

    from jupyter_client.manager import AsyncKernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from traitlets import CaselessStrEnum, default

    from innolab.kernel_client import ReadyClients

    class IPCKernelManager(ReadyClients, AsyncKernelManager):
        """nbclient's kernel manager, over IPC sockets of its own in Jupyter's runtime folder."""

        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        @default("ip")
        def _ip_default(self) -> str:
            if self.transport != "ipc":
                return super()._ip_default()
            folder = Path(jupyter_runtime_dir())
            folder.mkdir(parents=True, exist_ok=True)
            return str(folder / f"innolab-{uuid.uuid4().hex[:16]}-ipc")

    return IPCKernelManager


@functools.cache
def record_engine() -> str:
    """The papermill engine innolab executes notebooks with, registered on first use: its name.

    nbclient's engine (papermill's default), writing the executed copy about half as often.
    Papermill writes it as execution starts, as each cell (markdown too) starts and again as it
    ends, during a long cell's output (every 30 s) and at the end; each write is validated, a few
    milliseconds each, as much in all as a short notebook's cells. This engine leaves out the
    writes at a cell's end and at a markdown cell's start: the next code cell's start writes the
    cells before it done, so the copy on disk always shows the cells done and the one running,
    and the end writes it whole, failed or not.
    """
    from papermill.engines import NBClientEngine, papermill_engines

    name = "innolab-record"

    class RecordEngine(NBClientEngine):
        """nbclient's engine, writing the executed copy as each code cell starts, not as it ends."""

        @classmethod
        def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, **kwargs: Any) -> Any:
            save, start, complete = nb_man.save, nb_man.cell_start, nb_man.cell_complete
            quiet = [False]

            def saved(**arguments: Any) -> None:
                if not quiet[0]:
                    save(**arguments)

            def unsaved(hook: Callable[..., Any]) -> Callable[..., Any]:
                def call(cell: Any, *arguments: Any, **named: Any) -> Any:
                    quiet[0] = hook is complete or cell.get("cell_type") != "code"
                    try:
                        return hook(cell, *arguments, **named)
                    finally:
                        quiet[0] = False
                return call

            nb_man.save = saved
            nb_man.cell_start, nb_man.cell_complete = unsaved(start), unsaved(complete)
            try:
                return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)
            finally:  # notebook_complete writes it whole
                nb_man.save, nb_man.cell_start, nb_man.cell_complete = save, start, complete

    papermill_engines.register(name, RecordEngine)
    return name


def warm(_argument: Any = None) -> None:
    """Load what the kernel server of `forked_kernels` holds before its first fork.

    The imports the analysis notebooks share (innolab.forkserver calls it by name). Modules only:
    nothing enters a notebook's namespace.

    Args:
        _argument: The server's JSON argument (none).
    """
    import matplotlib.pyplot  # noqa: F401
    import pandas
    from IPython import display  # noqa: F401

    from innolab import paper, results  # noqa: F401
    from innolab.analysis import baseline, frontier, main_results, plots, runs, sweeps  # noqa: F401

    # pandas chooses its display's column limit as it is imported: 20 in a Jupyter kernel, 0 (the
    # terminal's width) elsewhere, as here; a kernel forked from here shows frames as one imported
    # in the kernel would
    pandas.set_option("display.max_columns", 20)


def kernel_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """Return the environment a notebook's kernel gets from `execute`.

    This process's (or `env`), with matplotlib's backend Agg unless one is set (no display needed).
    """
    env = dict(os.environ if env is None else env)
    env.setdefault("MPLBACKEND", "Agg")
    return env


@dataclass
class _ForkScope:
    """One `forked_kernels` scope: the environment it was entered in; its server once started."""

    env: dict[str, str]
    server: ForkServer | None = None
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def matches(self, env: dict[str, str]) -> bool:
        """Whether a kernel with this environment may fork from the scope's server."""
        return _stable(env) == _stable(self.env)

    def fork_server(self) -> ForkServer | None:
        """The scope's server, started (again) if it is not running; None once the scope ended."""
        with self.lock:
            if self.closed:
                return None
            if self.server is not None and not self.server.alive():
                self.server.close()
                self.server = None
            if self.server is None:
                self.server = ForkServer("innolab.notebooks:warm", None, self.env)
            return self.server

    def close(self) -> None:
        """End the scope: its server ends, and no kernel forks from it any more."""
        with self.lock:
            self.closed = True
            server, self.server = self.server, None
        if server is not None:
            server.close()


def _stable(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith(VOLATILE_VARS)}


_scopes: list[_ForkScope] = []
_scopes_lock = threading.Lock()


@contextlib.contextmanager
def forked_kernels() -> Iterator[None]:
    """Fork each notebook's kernel, within it, from a server that loaded their imports once.

    Within it `execute` forks the kernel from one server that loaded the analysis notebooks'
    imports (`warm`; innolab.forkserver), instead of starting a new interpreter. Each kernel is
    still a fresh process for one notebook, shut down after it; what it saves is the start-up and
    imports of each (about 2 s of CPU). The server is started at the first kernel and ends with
    the scope. Only a kernel whose environment is the one the scope was entered in is forked (the
    server's imports saw that one: a `PYTHONPATH` or `INNOLAB_ROOT` set later starts its kernel as
    usual); a scope entered inside another with the same environment uses the outer one's server.
    Scopes are the process's, not a thread's.

    What a forked kernel cannot show as a new one does: modules changed on disk while the scope
    lasts (enter it for a sequence of executions, `innolab reproduce`, not for an editing
    session); warnings that `warm`'s imports raise (they go to the server's standard error, once);
    a submodule used without its import (loaded already); a matplotlibrc in the notebook's folder
    (matplotlib read its settings where the server started); its process name (`innolab-kernel`)
    and parent (the server). The analysis notebooks' outputs are the same either way
    (tests/test_notebooks.py compares a forked kernel with a new one).
    """
    scope = _ForkScope(kernel_env())
    with _scopes_lock:
        _scopes.append(scope)
    try:
        yield
    finally:
        with _scopes_lock:
            _scopes.remove(scope)
        scope.close()


def keep_forked_kernels() -> None:
    """Enter `forked_kernels` for the rest of this process's life (a worker's initializer)."""
    import atexit

    scope = forked_kernels()
    scope.__enter__()
    atexit.register(scope.__exit__, None, None, None)


def _fork_server_for(env: dict[str, str]) -> ForkServer | None:
    """Return the server a kernel with this environment forks from (None: start it as usual).

    The outermost open scope's whose environment it is.
    """
    with _scopes_lock:
        scope = next((s for s in _scopes if s.matches(env)), None)
    return scope.fork_server() if scope is not None else None  # None too once it has ended


def forking_kernel_manager() -> type:
    """Return `ipc_kernel_manager()` whose kernel forks from a `forked_kernels` scope's server.

    The open scope whose environment is the kernel's own, if any (else it starts as usual).
    """
    import uuid

    forking = provisioner_class()

    class ScopeProvisioner(forking):  # type: ignore[misc, valid-type]
        """Forks from the scope's server that matches the kernel's environment."""

        async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
            self.server = _fork_server_for(dict(kwargs.get("env") or os.environ))
            return await super().launch_kernel(cmd, **kwargs)

    class ForkingKernelManager(ipc_kernel_manager()):  # type: ignore[misc]
        """IPC transport; the kernel forked where a scope's server matches it."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.kernel_id = self.kernel_id or uuid.uuid4().hex
            self.provisioner = ScopeProvisioner(kernel_id=self.kernel_id,
                                                kernel_spec=self.kernel_spec, parent=self)

    return ForkingKernelManager


class NotebookError(ValueError):
    """A notebook name or parameter that innolab cannot run."""


@dataclass(frozen=True)
class NotebookRun:
    """One executed notebook: its source, its executed copy and the parameters it ran with."""

    name: str
    source: Path
    executed: Path
    parameters: dict[str, Any]


def analysis_notebooks(directory: Path | None = None) -> list[Path]:
    """The notebooks `innolab reproduce` runs: `NN_*.ipynb`, minus those whose metadata opts out.

    A notebook opts out with ``{"innolab": {"reproduce": false}}`` in its metadata (for example
    one that launches an agent run rather than an analysis).
    """
    directory = directory or notebooks_dir()
    found = []
    for path in sorted(directory.glob("[0-9][0-9]_*.ipynb")):
        metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        if metadata.get("innolab", {}).get("reproduce", True):
            found.append(path)
    return found


def output_dirs(output: Path) -> tuple[Path, Path]:
    """results/ and figures/ under one output root."""
    return output / "results", output / "figures"


def execute(
    source: Path,
    executed: Path,
    parameters: dict[str, Any] | None = None,
    timeout_s: int = 600,
    kernel_manager_class: type | None = None,
    kernel_manager: Any = None,
) -> NotebookRun:
    """Execute one notebook with papermill, injecting parameters into its `parameters` cell.

    A `kernel_manager_class` starts its kernel (None: `ipc_kernel_manager()`, or within
    `forked_kernels` a kernel forked from its server), unless a `kernel_manager` holds one started
    already (nbclient's `km`: it executes the notebook in that kernel, and leaves it to its owner to
    shut down).
    """
    if not source.is_file():
        raise NotebookError(f"notebook {source} does not exist")
    parameters = dict(parameters or {})
    executed.parent.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MPLBACKEND", "Agg")  # the kernel inherits it (`kernel_env`)
    if kernel_manager_class is None:
        with _scopes_lock:
            scoped = bool(_scopes) and kernel_manager is None
        kernel_manager_class = forking_kernel_manager() if scoped else ipc_kernel_manager()
    papermill.execute_notebook(
        str(source),
        str(executed),
        parameters=parameters,
        kernel_name=KERNEL_NAME,
        cwd=str(source.parent),
        progress_bar=False,
        execution_timeout=timeout_s,
        engine_name=record_engine(),
        kernel_manager_class=kernel_manager_class,
        **({"km": kernel_manager} if kernel_manager is not None else {}),
    )
    _relativise_papermill_paths(executed)
    return NotebookRun(source.stem, source, executed, parameters)


def _relativise_papermill_paths(executed: Path) -> None:
    """Papermill records absolute input and output paths.

    Keep them relative to the project (portable copies).
    """
    notebook = nbformat.read(executed, as_version=4)
    recorded = notebook.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if recorded.get(key):
            recorded[key] = os.path.relpath(recorded[key], project_root())
    nbformat.write(notebook, executed)


def reproduce(
    only: Iterable[str] | None = None,
    output: Path | None = None,
    extra_parameters: dict[str, Any] | None = None,
    show_progress: bool = True,
) -> list[NotebookRun]:
    """Run the analysis notebooks; each writes to output/results and output/figures.

    The executed copy of each notebook is kept beside its outputs, in ``output/results/notebooks/``.
    ``only`` selects notebooks by name, with or without the ``NN_`` prefix or the ``.ipynb`` suffix.
    Their kernels are forked from one server (`forked_kernels`).
    """
    output = (output or project_root()).resolve()
    results_dir, figures_dir = output_dirs(output)
    notebooks = analysis_notebooks()
    if only:
        wanted = list(only)
        chosen = [nb for nb in notebooks if any(_matches(nb, w) for w in wanted)]
        unknown = [w for w in wanted if not any(_matches(nb, w) for nb in notebooks)]
        if unknown:
            names = ", ".join(nb.stem for nb in notebooks)
            raise NotebookError(f"--only: no analysis notebook named {unknown}; known: {names}")
        notebooks = chosen
    from tqdm.auto import tqdm  # here: the kernel server (`warm`) must not choose its display

    runs = []
    with forked_kernels():
        for nb in tqdm(notebooks, desc="reproduce", unit="notebook", disable=not show_progress):
            # Relative to the notebook's folder (its working directory), so that executed copies
            # hold no machine path.
            declared = papermill.inspect_notebook(str(nb))  # extras only where they are declared
            parameters = {
                "results_dir": os.path.relpath(results_dir, nb.parent),
                "figures_dir": os.path.relpath(figures_dir, nb.parent),
                **{k: v for k, v in (extra_parameters or {}).items() if k in declared},
            }
            runs.append(execute(nb, results_dir / "notebooks" / nb.name, parameters))
    return runs


def _matches(notebook: Path, name: str) -> bool:
    name = name.removesuffix(".ipynb")
    return notebook.stem == name or notebook.stem.split("_", 1)[1] == name


RUN_NOTEBOOK_20 = "20_agent_run.ipynb"


def execute_run_notebook(parameters: dict[str, Any], run_dir: Path,
                         timeout_s: int = 24 * 3600,
                         kernel_manager_class: type | None = None,
                         kernel_manager: Any = None) -> Path:
    """One run through notebooks/20_agent_run.ipynb, its executed copy kept as the run's record.

    Executing it again resumes the run, or only reports it when it has finished.

    Args:
        parameters: the notebook's parameters (`run_dir` is set from the next argument).
        run_dir: the run folder.
        timeout_s: the notebook's time limit.
        kernel_manager_class: the kernel manager to start its kernel with (None: nbclient's).
        kernel_manager: a kernel manager whose kernel is started already, to execute it in.

    Returns:
        The executed copy (<run>/run.ipynb).
    """
    folder = RunDir(Path(run_dir).resolve())
    folder.root.mkdir(parents=True, exist_ok=True)
    source = notebooks_dir() / RUN_NOTEBOOK_20
    execute(source, folder.notebook, {**parameters, "run_dir": str(folder.root)},
            timeout_s=timeout_s, kernel_manager_class=kernel_manager_class,
            kernel_manager=kernel_manager)
    return folder.notebook


DEMO_AGENTS = ("aide", "mlab", "codeact", "baseline")  # the built-in scaffolds and the baseline
RUN_NOTEBOOK = "01_run_agent.ipynb"


def side_by_side_workers() -> int:
    """How many notebooks `innolab reproduce` executes at once (analysis notebooks, demo runs).

    At most two, one per core on a 2-core machine, as a sweep's runs: the embedded model each demo
    run starts in its kernel uses one thread (innolab.llm.local.default_threads), so two runs side
    by side on two cores do not wait for each other.

    Returns:
        2 where this process has two cores or more, else 1.
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return 2 if (cores or 1) >= 2 else 1


def side_by_side(function: Callable[..., Any], calls: list[dict[str, Any]],
                 workers: int | None = None,
                 initializer: Callable[[], None] | None = None) -> Iterator[Any]:
    """Call `function` once per keyword set, `workers` at a time, each in a process of its own.

    Processes, not threads: papermill changes the process's working folder while a notebook runs.
    They are spawned, so a script that calls this at its top level needs Python's
    `if __name__ == "__main__":` guard.

    Args:
        function: A module-level function (it is pickled to the workers).
        calls: Its keyword arguments, one set per call.
        workers: Calls at once (None: `side_by_side_workers()`).
        initializer: A module-level function each worker process calls first
            (`keep_forked_kernels`: its notebooks' kernels forked from one server per worker).

    Yields:
        Each call's result, in the order of `calls`.

    Raises:
        NotebookError: `workers` below 1.
        Exception: The first call's error, in that order; the calls not started never start and
            those running finish first. An interrupt (or a caller that stops iterating) kills the
            workers and what they started at once: a kernel runs in a session of its own, which
            the terminal's interrupt does not reach.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = side_by_side_workers() if workers is None else workers
    if workers < 1:
        raise NotebookError(f"workers: {workers} is not a positive number of processes")
    if not calls:
        return
    pool = ProcessPoolExecutor(min(workers, len(calls)),
                               mp_context=multiprocessing.get_context("spawn"),
                               initializer=initializer)
    try:
        jobs = [pool.submit(function, **call) for call in calls]
        for index, job in enumerate(jobs):
            result = job.result()
            if index == len(jobs) - 1:
                pool.shutdown(wait=True)  # the workers are gone when the last result is given
            yield result
    except Exception:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    except BaseException:
        started = list(getattr(pool, "_processes", None) or {})  # the workers' process ids
        pool.shutdown(wait=False, cancel_futures=True)
        _kill_trees(started)
        raise


def _kill_trees(pids: list[int]) -> None:
    """Kill these processes and everything they started, now."""
    import contextlib

    import psutil

    for pid in pids:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(pid)
            for process in [*root.children(recursive=True), root]:
                with contextlib.suppress(psutil.Error):
                    process.kill()


def run_demos(output: Path | None = None, budget: str = "60s", agents: Iterable[str] = DEMO_AGENTS,
              extra_parameters: dict[str, Any] | None = None, show_progress: bool = True,
              workers: int | None = None) -> Path:
    """One short run per scaffold through notebooks/01_run_agent.ipynb.

    Its executed copy is kept in each run folder. Runs go `workers` at a time (`side_by_side`),
    none beside anything else innolab runs: their budgets are wall clock.

    Args:
        output: the project folder the runs and the table go to (default: this project).
        budget: each run's wall-clock budget.
        agents: the scaffolds.
        extra_parameters: further parameters of the notebook.
        show_progress: show a progress bar.
        workers: runs at once (None: side_by_side_workers()).

    Returns:
        output/results/demo_runs.csv: one row per run (in the order of `agents`) with its trace's
        summary.
    """
    import pandas as pd

    output = (output or project_root()).resolve()
    results_dir, _ = output_dirs(output)
    agents = list(agents)
    calls = [{"agent": agent, "budget": budget, "output": output,
              "extra_parameters": dict(extra_parameters or {})} for agent in agents]
    from tqdm.auto import tqdm

    rows = []
    with tqdm(total=len(agents), desc="demo runs", unit="run", disable=not show_progress) as bar:
        for row in side_by_side(_demo_run, calls, workers):
            rows.append(row)
            bar.update()
    table = results_dir / "demo_runs.csv"
    table.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(table, index=False)
    return table


def _demo_run(agent: str, budget: str, output: Path,
              extra_parameters: dict[str, Any]) -> dict[str, Any]:
    """One demo run of `agent` (a run folder of its own under output/results/runs/); its row."""
    import time

    from innolab import traces

    results_dir, figures_dir = output_dirs(output)
    name = f"demo-{time.strftime('%Y%m%d-%H%M%S')}-{agent}"
    for attempt in range(1, 100):  # the same agent twice in one second: a folder of its own each
        run_dir = RunDir(results_dir / "runs" / (name if attempt == 1 else f"{name}-{attempt}"))
        try:
            run_dir.root.mkdir(parents=True)
            break
        except FileExistsError:
            continue
    else:
        raise NotebookError(f"no free run folder named {name}[-N] under {results_dir / 'runs'}")
    source = notebooks_dir() / RUN_NOTEBOOK
    execute(source, run_dir.notebook, {
        "agent": agent, "budget": budget,
        "run_dir": os.path.relpath(run_dir.root, source.parent),
        "results_dir": os.path.relpath(results_dir, source.parent),
        "figures_dir": os.path.relpath(figures_dir, source.parent),
        **extra_parameters})
    trace = traces.Trace.read(run_dir.root)
    score = run_dir.read_score() or {}
    return {"agent": agent, "run": run_dir.name, "complete": trace.finished is not None,
            "steps": len(trace.tool_steps), "llm_calls": len(trace.llm_calls),
            "valid": bool(score.get("valid")), "score": score.get("score"),
            "reason": trace.end_reason, "summary": traces.summary(run_dir.root)}
