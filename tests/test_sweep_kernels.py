"""A sweep worker's kernels started ahead (innolab.sweep.pool, innolab.forkserver): each run's
kernel is fresh, handed only its own run, and no kernel outlives its pool or its worker."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from innolab import notebooks
from innolab.gym.leftovers import read_mark, reap
from innolab.paths import notebooks_dir
from innolab.sweep import kernel
from innolab.sweep.pool import PREFIX, KernelPool

ROOT = Path(__file__).resolve().parents[1]
# what a cell prints: its kernel's process, session, folder, run id, and the names it finds
PROBE = ("import json, os\n"
         "print(json.dumps({'pid': os.getpid(), 'session': os.getsid(0), 'cwd': os.getcwd(),\n"
         f"    'run': os.environ.get({kernel.RUN_VAR!r}), 'names': sorted(globals())}}))")


def notebook(folder: Path, *cells: str) -> Path:
    source = folder / "probe.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells]),
                   source)
    return source


def printed(executed: Path, cell: int = -1) -> dict:
    """The JSON the notebook's cell printed."""
    outputs = nbformat.read(executed, as_version=4).cells[cell].outputs
    return json.loads("".join(o["text"] for o in outputs if o.get("name") == "stdout"))


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def gone(pids: list[int], timeout_s: float = 60.0) -> bool:
    """Whether every process ended within the timeout (a zombie counts as ended)."""
    return waited_for(lambda: not any(alive(p) for p in pids), timeout_s)


def waited_for(condition, timeout_s: float = 60.0) -> bool:
    """Whether the condition came true within the timeout (looked at every 0.2 s)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def our_folders(root: Path | None = None) -> set[Path]:
    """The kernel folders this process owns in the temporary folder."""
    found = Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*")
    return {f for f in found if (read_mark(f) or {}).get("pid") == os.getpid()}


def pool_processes(root: int) -> list[int]:
    """The fork server under a process, its kernels (forks of it) and their evaluator servers (not
    the process's own); a process that has ended meanwhile (a zombie, or gone) is none of them."""
    found = []
    for process in psutil.Process(root).children(recursive=True):
        try:
            command = " ".join(process.cmdline())
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
        ours = "innolab.tasks.evaluator_server" in command and process.ppid() in found
        if "innolab.forkserver" in command or ours:  # (psutil lists a parent before its children)
            found.append(process.pid)
    return found


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "launched"])
def test_each_run_gets_a_fresh_kernel_handed_its_run_only(tmp_path, fork):
    """Two runs in a row on one pool: the second kernel is another process that knows nothing of
    the first run's variables; each sees its own run's id and the notebook's folder, leads its own
    session, starts its cells at execution count 1, and holds no name a kernel started by nbclient
    would not (the handover and the start-up leave none)."""
    source = notebook(tmp_path, "secret = 42\n" + PROBE, "print(json.dumps('secret' in globals()))")
    seen = []
    pool = KernelPool(tmp_path, ahead=1, fork=fork)
    try:
        for run in ("run-a", "run-b"):
            taken = pool.take()
            taken.hand_over({}, run)
            if run == "run-b":
                source = notebook(tmp_path, PROBE, "print(json.dumps('secret' in globals()))")
            executed = tmp_path / f"{run}.ipynb"
            notebooks.execute(source, executed, kernel_manager=taken.manager)
            pool.retire(taken)
            cells = nbformat.read(executed, as_version=4).cells
            assert [c.execution_count for c in cells] == [1, 2]
            seen.append((printed(executed, 0), printed(executed, 1)))
    finally:
        pool.close()
    (first, _), (second, knows_secret) = seen
    assert first["pid"] != second["pid"] and not knows_secret
    assert (first["run"], second["run"]) == ("run-a", "run-b")
    assert kernel.RUN_VAR not in os.environ and kernel.LLM_VAR not in os.environ
    for probe in (first, second):
        assert probe["session"] == probe["pid"] and probe["cwd"] == str(tmp_path)
    cold = tmp_path / "cold.ipynb"  # a kernel nbclient starts itself, for its names
    notebooks.execute(notebook(tmp_path, PROBE), cold)
    assert second["names"] == printed(cold)["names"]


def test_kernels_started_ahead_are_shut_down_with_their_pool(tmp_path):
    """The kernels started ahead and never used, the one retired after its run, the fork server,
    the kernels' evaluator servers: none is left once the pool closes, nor any of their folders."""
    pool = KernelPool(tmp_path, ahead=2)
    try:
        taken = pool.take()
        taken.hand_over({}, "run")
        notebooks.execute(notebook(tmp_path, PROBE), tmp_path / "run.ipynb",
                          kernel_manager=taken.manager)
        pool.retire(taken)
        # the server, the two kernels started ahead in the taken one's place and their evaluators
        assert waited_for(lambda: len(pool_processes(os.getpid())) >= 5)
        processes, folders = pool_processes(os.getpid()), our_folders()
        assert taken.folder in folders or not taken.folder.exists()
    finally:
        pool.close()
    assert gone(processes)
    assert not [f for f in folders if f.exists()]


def test_a_killed_worker_leaves_no_kernel(tmp_path):
    """A worker killed (SIGKILL) while one kernel runs and others wait: its fork server ends, so do
    all its kernels, and the reaper removes their marked folders."""
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from innolab.sweep.pool import KernelPool
        pool = KernelPool(Path({str(tmp_path)!r}), ahead=2)
        taken = pool.take()
        taken.hand_over({{}}, "run")
        pool.fill()
        print("ready", flush=True)
        time.sleep(600)
    """)
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert worker.stdout.readline().strip() == "ready"
        # the server, the kernel handed a run, one started ahead at least
        assert waited_for(lambda: len(pool_processes(worker.pid)) >= 3)
        processes = pool_processes(worker.pid)
        assert len(list(tmp_path.glob(f"{PREFIX}*"))) >= 2
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    assert gone(processes)
    reaped = reap(tmp_path)
    assert reaped.folders and not list(tmp_path.glob(f"{PREFIX}*"))


def test_a_kernel_is_warm_with_what_the_run_notebook_imports():
    """`warm` loads every module the run notebook's cells import (a kernel forked from the server
    has them at birth), and starts no thread (a fork keeps only the calling one)."""
    source = json.loads((notebooks_dir() / notebooks.RUN_NOTEBOOK_20).read_text(encoding="utf-8"))
    wanted = set()
    for cell in source["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.Import):
                wanted |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                wanted |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    assert wanted
    probe = ("import json, sys, threading\n"
             "from innolab.sweep.kernel import warm\n"
             "warm()\n"
             f"print(json.dumps([sorted(m for m in {sorted(wanted)!r} if m in sys.modules), "
             "threading.active_count()]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=True, cwd=ROOT)
    loaded, threads = json.loads(done.stdout.splitlines()[-1])
    missing = {m for m in wanted - set(loaded) if m.rsplit(".", 1)[0] not in loaded}
    assert not missing and threads == 1


def test_a_kernel_that_refuses_its_run_says_why(tmp_path):
    """A handover that fails in the kernel (its settings not JSON) is an error naming the cause, and
    the next kernel is fresh."""
    from innolab.sweep.pool import KernelStartError

    pool = KernelPool(tmp_path, ahead=1, scheduler="tcp://127.0.0.1:1")
    try:
        taken = pool.take()
        with pytest.raises(KernelStartError, match=r"refused its run: .*Error"):
            taken.hand_over({"max_concurrent_requests": "many", "model": 1}, "run")
        pool.retire(taken)
        again = pool.take()
        again.hand_over({}, "run")
        pool.retire(again)
    finally:
        pool.close()


def test_a_run_in_a_forked_kernel_loads_nothing_on_first_use(tmp_path):
    """A scripted run executed in a kernel forked from a sweep worker's server imports no module
    that the kernel had not at the cell's start (loaded by `warm` in the server: each would cost
    every run its import), the kernel inherited the server's heap frozen (gc.freeze: no
    collection of the kernel walks it), and it evaluated through a server the fork server's
    spawner forked for it (no interpreter of its own importing the evaluator)."""
    from tests.fake_llm import FakeLLM

    with FakeLLM() as server:
        parameters = {"task": "circle-packing-26", "agent": "codeact", "budget": "120s",
                      "runtime": "local", "base_url": server.base_url, "model": "fake",
                      "seed": 0}
        cell = ("import gc, json, sys\n"
                "before = set(sys.modules)\n"
                "from pathlib import Path\n"
                "from innolab import runner\n"
                f"config = runner.config_from_parameters({parameters!r})\n"
                f"runner.run_or_resume(config, Path({str(tmp_path / 'run')!r}), novelty='ast')\n"
                "from innolab.tasks import evaluator_server as es\n"
                "print(json.dumps({'loaded': sorted(set(sys.modules) - before),\n"
                "                  'frozen': gc.get_freeze_count(),\n"
                "                  'spawned': isinstance(es._server.process, es.Spawned)}))")
        pool = KernelPool(tmp_path, ahead=1, tasks=[{"task": "circle-packing-26"}])
        try:
            taken = pool.take()
            taken.hand_over({}, "run")
            executed = tmp_path / "executed.ipynb"
            notebooks.execute(notebook(tmp_path, cell), executed, kernel_manager=taken.manager)
            pool.retire(taken)
        finally:
            pool.close()
    seen = printed(executed)
    assert (tmp_path / "run" / "score.json").is_file()
    assert seen["loaded"] == [], "add these to innolab.sweep.kernel.warm"
    assert seen["frozen"] > 10_000
    assert seen["spawned"], "the kernel's environment differs from the spawner's beyond PLUMBING"
