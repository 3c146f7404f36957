"""A sweep worker's kernels started ahead of need: each run gets a fresh one, started and warm.

A cold kernel costs a run seconds before its first cell (the interpreter, ipykernel, and the
imports of innolab, openai and scipy). Each worker keeps `AHEAD` kernels per thread started in the
background (`KernelPool`), each forked from the worker's fork server, which loaded all of that once
(innolab.forkserver): a run takes one that is ready, and another starts while it runs. Each
kernel executes exactly one run and is then shut down (in the background): no state passes from
one run to the next. A kernel started ahead is no run: it has no run folder, makes no request and
joins no gate until a run is handed to it (innolab.sweep.kernel.enter).

Nothing outlives the worker: the fork server ends with it (end-of-file on its socket), each kernel
watches the process that launched it and ends with it (innolab.sweep.kernel.prepare), and each
kernel's folder (its IPython profile, connection file and IPC sockets, `innolab-ipython-*` in the
temporary folder) carries the worker's owner mark, so that a killed worker's is removed by the
reaper (innolab.gym.leftovers.reap). A closing worker shuts its kernels down
(`KernelsAhead.teardown`, and at the process's exit).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import tempfile
import threading
import uuid
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from innolab.forkserver import ForkServer, provisioner_class
from innolab.gym.leftovers import mark, remove_tree
from innolab.sweep.kernel import PARENT_VAR, SCHEDULER_VAR, STARTUP, handover

AHEAD = 1  # kernels started ahead per worker thread
PREFIX = "innolab-ipython-"  # one of the reaper's prefixes (innolab.gym.leftovers.PREFIXES)
READY_TIMEOUT_S = 120.0  # a started kernel's time to answer (its imports on a loaded machine)
HANDOVER_TIMEOUT_S = 120.0  # the handover's (it may join the cluster's gate)
SHUTDOWN_TIMEOUT_S = 30.0  # the most `close` waits for the kernels' shutdowns


class KernelStartError(RuntimeError):
    """A kernel started ahead died or did not answer, or refused its run."""


@dataclass
class PoolKernel:
    """One kernel started ahead: its manager (papermill's `km`), its folder, its clients.

    Attributes:
        manager: The kernel manager (jupyter_client's, IPC sockets in `folder`).
        folder: The kernel's marked folder: IPYTHONDIR, connection file, sockets.
        clients: The clients made of the manager (nbclient's among them), stopped on release.
    """

    manager: Any
    folder: Path
    clients: list[Any] = field(default_factory=list)

    def hand_over(self, llm: dict[str, Any] | None, run: str,
                  timeout_s: float = HANDOVER_TIMEOUT_S) -> None:
        """Give the kernel its run: `enter` executed silently (no output, no execution count).

        Args:
            llm: The run's model settings (None: no model).
            run: The run's id.
            timeout_s: How long the handover may take.

        Raises:
            KernelStartError: The kernel failed it.
        """
        client = self.manager.blocking_client()
        client.start_channels(hb=False)
        try:
            said: list[str] = []
            reply = client.execute_interactive(
                handover(llm, run), silent=True, store_history=False, timeout=timeout_s,
                output_hook=lambda message: said.append(str(message["content"])))
        except TimeoutError as error:
            raise KernelStartError(f"the kernel took no run within {timeout_s:g} s") from error
        finally:
            client.stop_channels()
        content = reply["content"]
        if content.get("status") != "ok":
            raise KernelStartError(f"the kernel refused its run: {content.get('ename')}: "
                                   f"{content.get('evalue')} {' '.join(said)[:300]}")

    def release(self) -> None:
        """Stop the channels of every client made of the manager (nbclient leaves them open)."""
        while self.clients:
            with contextlib.suppress(Exception):
                self.clients.pop().stop_channels()

    def shut_down(self, now: bool = False) -> None:
        """Shut the kernel down (its process and everything in its folder)."""
        self.release()
        try:
            if self.manager.has_kernel:
                self.manager.shutdown_kernel(now=now)
        except Exception:  # a dead kernel (its folder is ours to remove), or one to kill
            with contextlib.suppress(Exception):  # by its process (a pid it still holds)
                self.manager.provisioner.process.kill()
        finally:
            with contextlib.suppress(Exception):
                self.manager.cleanup_resources()
            remove_tree(self.folder)


def kernel_folder() -> Path:
    """A new kernel's folder in the temporary folder, with its IPython profile's startup file.

    It carries this process's owner mark: a killed worker's is removed by the reaper.

    Returns:
        The folder (the kernel's IPYTHONDIR; its connection file and sockets go in too).
    """
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    mark(folder)
    startup = folder / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-innolab-kernel.py").write_text(STARTUP, encoding="utf-8")
    return folder


def manager_class() -> type:
    """A kernel manager whose clients are asynchronous (nbclient's) and recorded, over IPC sockets.

    Its own methods are synchronous: the pool starts and shuts kernels down from its threads. Its
    clients are ready when IOPub carries their info request's idle status (innolab.kernel_client).
    """
    from jupyter_client.manager import KernelManager
    from traitlets import CaselessStrEnum

    from innolab.kernel_client import ReadyClients

    class PoolKernelManager(ReadyClients, KernelManager):
        """A kernel started ahead: IPC transport, asynchronous clients, each client recorded."""

        transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc", config=True)

        def __init__(self, made: list[Any], **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._made = made

        def client(self, **kwargs: Any) -> Any:
            made = super().client(**kwargs)
            self._made.append(made)
            return made

    return PoolKernelManager


class KernelPool:
    """Kernels started ahead of need in one process: `take` one per run, `retire` it after.

    Attributes:
        cwd: The kernels' working directory (the run notebook's folder, papermill's `cwd`).
        ahead: How many kernels are kept started ahead.
        scheduler: The Dask scheduler's address the kernels are given (None: none).
        fork: Whether kernels are forked from a fork server (else launched as new interpreters).
        tasks: The tasks whose files the fork server reads for its kernels (each {"task",
            "options"}: innolab.sweep.kernel.preload).
    """

    def __init__(self, cwd: Path, ahead: int = AHEAD, scheduler: str | None = None,
                 fork: bool = True, tasks: list[dict[str, Any]] | None = None) -> None:
        if ahead < 1:
            raise ValueError(f"ahead: must be at least 1, got {ahead}")
        self.cwd = Path(cwd)
        self.ahead = ahead
        self.scheduler = scheduler
        self.fork = fork
        self.tasks = list(tasks or [])
        self._server: ForkServer | None = None
        self._lock = threading.Lock()
        self._ready: deque[Future[PoolKernel]] = deque()
        self._retiring: set[Future[None]] = set()
        self._closed = False
        self._out = 0  # kernels taken and not yet retired
        # starts and shutdowns run here, off the runs' path (two: a shutdown delays no start)
        self._threads = ThreadPoolExecutor(max_workers=2, thread_name_prefix="innolab-kernels")

    def fill(self) -> None:
        """Start kernels until `ahead` are started or starting."""
        with self._lock:
            while not self._closed and len(self._ready) < self.ahead:
                self._ready.append(self._threads.submit(self._start))

    def take(self) -> PoolKernel:
        """A fresh kernel, ready, for one run (another starts in its place).

        Returns:
            The kernel: hand it its run, execute the notebook with its manager, then `retire` it.

        Raises:
            KernelStartError: It died or did not answer (the next `take` gives another).
            RuntimeError: The pool is closed.
        """
        with self._lock:
            if self._closed:
                raise RuntimeError("the kernel pool is closed")
            chosen = (next((f for f in self._ready if f.done()), None)
                      or (self._ready[0] if self._ready else self._threads.submit(self._start)))
            with contextlib.suppress(ValueError):
                self._ready.remove(chosen)
            self._out += 1
        self.fill()
        try:
            return chosen.result()
        except BaseException:
            self._returned()
            raise

    def retire(self, kernel: PoolKernel) -> None:
        """Shut a used kernel down, in the background (at once when the pool is closed).

        Args:
            kernel: A kernel `take` gave.
        """
        kernel.release()
        with self._lock:
            closed = self._closed
            if not closed:
                done = self._threads.submit(kernel.shut_down)
                self._retiring.add(done)
                done.add_done_callback(self._retiring.discard)
        if closed:
            kernel.shut_down(now=True)
        self._returned()

    def close(self, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Shut every kernel down: those started ahead (unused) and those retiring (waited for).

        A kernel still executing a run is shut down when it is retired; the fork server (its
        parent) ends after the last one.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            ready, self._ready = list(self._ready), deque()
            retiring = list(self._retiring)
        for started in ready:
            if started.cancel():
                continue
            with contextlib.suppress(Exception):
                started.result(timeout=timeout_s).shut_down(now=True)
        for done in retiring:
            with contextlib.suppress(Exception):
                done.result(timeout=timeout_s)
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._returned(0)

    def _returned(self, count: int = 1) -> None:
        """Count kernels back; once closed and none is out, end the fork server."""
        with self._lock:
            self._out -= count
            server = self._server if self._closed and self._out <= 0 else None
            if server is not None:
                self._server = None
        if server is not None:
            server.close()

    def _start(self) -> PoolKernel:
        """Start one kernel in its own marked folder and wait until it answers (it is warm then)."""
        from innolab.notebooks import KERNEL_NAME  # here: the sweep's driver never loads papermill

        folder = kernel_folder()
        made: list[Any] = []
        manager = manager_class()(made, kernel_name=KERNEL_NAME, ip=str(folder / "ipc"),
                                  connection_file=str(folder / "kernel.json"))
        kernel = PoolKernel(manager, folder, made)
        env = {**os.environ, "MPLBACKEND": os.environ.get("MPLBACKEND", "Agg"),
               PARENT_VAR: str(os.getpid()), "IPYTHONDIR": str(folder)}
        if self.scheduler:
            env[SCHEDULER_VAR] = self.scheduler
        try:
            if self.fork:  # forked from the worker's fork server, warm at birth
                manager.kernel_id = uuid.uuid4().hex
                manager.provisioner = provisioner_class()(
                    kernel_id=manager.kernel_id, kernel_spec=manager.kernel_spec, parent=manager)
                manager.provisioner.server = self._fork_server()
            # nbclient's own arguments for a kernel it starts (no history file)
            manager.start_kernel(cwd=str(self.cwd), env=env,
                                 extra_arguments=["--HistoryManager.hist_file=:memory:"])
            client = manager.blocking_client()
            client.start_channels(hb=False)
            try:
                client.wait_for_ready(timeout=READY_TIMEOUT_S)
            finally:
                client.stop_channels()
        except Exception as error:
            kernel.shut_down(now=True)
            raise KernelStartError(f"a kernel started ahead did not answer: {error}") from error
        return kernel

    def _fork_server(self) -> ForkServer:
        """The pool's fork server, started (again) when there is none alive."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the kernel pool is closed")
            if self._server is None or not self._server.alive():
                self._server = ForkServer(
                    "innolab.sweep.kernel:load", self.tasks,
                    {**os.environ, "MPLBACKEND": os.environ.get("MPLBACKEND", "Agg")})
            return self._server


_pool: KernelPool | None = None
_pool_lock = threading.Lock()


def worker_pool(worker: Any = None,
                tasks: list[dict[str, Any]] | None = None) -> KernelPool | None:
    """A Dask worker's kernel pool, made (and filled) on first use; None outside a worker.

    Args:
        worker: The worker (None: the one running this task).
        tasks: The tasks its fork server preloads, where this call makes the pool.

    Returns:
        The pool, or None off a cluster.
    """
    global _pool
    if worker is None:
        try:
            from distributed import get_worker

            worker = get_worker()
        except (ImportError, ValueError):
            return None
    with _pool_lock:
        if _pool is None:
            from innolab.paths import notebooks_dir

            _pool = KernelPool(notebooks_dir(), AHEAD * max(1, worker.state.nthreads),
                               worker.scheduler.address, tasks=tasks)
            atexit.register(_pool.close)
        pool = _pool
    pool.fill()
    return pool


def close_worker_pool() -> None:
    """Shut this process's kernel pool down (its kernels), if it has one."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None:
        atexit.unregister(pool.close)
        pool.close()


class KernelsAhead(WorkerPlugin):
    """A Dask worker plugin: a worker starts its kernels as it starts, shuts them down as it ends.

    Registered by the sweep's client (`Client.register_plugin`): on any scheduler, on workers that
    join later too.
    """

    name = "innolab-kernels-ahead"

    def __init__(self, tasks: list[dict[str, Any]] | None = None) -> None:
        """Keep the sweep's tasks, read ahead for its runs.

        Args:
            tasks: Each {"task", "options"}.
        """
        self.tasks = list(tasks or [])

    def setup(self, worker: Any) -> None:
        """Start the worker's kernels (in the background)."""
        worker_pool(worker, self.tasks)

    async def teardown(self, worker: Any) -> None:
        """Shut the worker's kernels down (waited for off the worker's event loop)."""
        import asyncio

        await asyncio.get_running_loop().run_in_executor(None, close_worker_pool)
