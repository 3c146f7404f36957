"""Sweeps: spec validation, and real Dask clusters executing the run notebook with papermill against
the scripted OpenAI-compatible server (LocalCluster, a SIGKILLed worker, an external scheduler) and
the embedded model."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest
import yaml

from innolab import results, runner, sweep
from innolab.gym.policy import RunConfig
from innolab.rundir import RunDir
from innolab.runlock import RunLock, boot_id
from innolab.sweep import SpecError, load_spec
from innolab.traces import AnyEvent, read_events
from tests.fake_llm import FakeLLM

# the scripted policies are registered agents of the tests' own (the gym builds only those)
pytestmark = pytest.mark.usefixtures("test_agents")

BIN = Path(sys.executable).parent
BASE = {"task": "circle-packing-26", "agent": "codeact", "budget": "20s", "runtime": "local"}


# -------------------------------------------------------------------------------------------- specs


def spec_error(data: dict, overrides: list[str] | None = None) -> str:
    with pytest.raises(SpecError) as caught:
        load_spec(data, overrides)
    return str(caught.value)


def test_bad_specs_name_the_field_and_the_rule():
    assert "base.agent" in spec_error({"name": "x", "base": {**BASE, "agent": "gpt"}})
    assert "grid.temperature" in spec_error(
        {"name": "x", "base": BASE, "grid": {"temperature": [0.5, 3.0]}}
    )
    assert "temperature[1]" in spec_error(
        {"name": "x", "base": BASE, "grid": {"temperature": [0.5, 3.0]}}
    )
    assert "'colour' is not a run field" in spec_error(
        {"name": "x", "base": BASE, "grid": {"colour": [1]}}
    )
    assert "at least one level" in spec_error(
        {"name": "x", "base": BASE, "grid": {"temperature": []}}
    )
    assert "listed twice" in spec_error(
        {"name": "x", "base": BASE, "grid": {"temperature": [0.5, 0.5]}}
    )
    assert "seeds" in spec_error({"name": "x", "base": BASE, "seeds": [1, 1]})
    assert "base.task: required" in spec_error({"name": "x", "base": {"agent": "aide"}})
    assert "also fixed in base" in spec_error(
        {"name": "x", "base": BASE, "grid": {"agent": ["aide", "mlab"]}}
    )
    assert "base.budget" in spec_error({"name": "x", "base": {**BASE, "budget": "12 parsecs"}})
    assert "base.colour" in spec_error({"name": "x", "base": {**BASE, "colour": "red"}})
    assert "name" in spec_error({"name": "a b/c", "base": BASE})
    assert "write KEY=VALUE" in spec_error({"name": "x", "base": BASE}, ["budget"])
    assert "--set colour" in spec_error({"name": "x", "base": BASE}, ["colour=red"])


def test_spec_file_errors(tmp_path):
    assert "no such spec file" in spec_error(str(tmp_path / "missing.yaml"))  # type: ignore[arg-type]
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    with pytest.raises(SpecError, match="is a mapping"):
        load_spec(listed)


def test_set_overrides_a_base_field_and_pins_a_factor(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "base": {**BASE, "budget": "12h"},
                "grid": {"temperature": [0.25, 0.5, 0.75, 1.0]},
                "seeds": [0, 1, 2],
            }
        )
    )
    spec = load_spec(path, ["budget=20s", "temperature=0.5", "seeds=[4]"])
    assert (
        spec.base.budget == "20s"
        and spec.base.temperature == 0.5
        and spec.grid == {}
        and spec.seeds == [4]
    )
    full = load_spec(path)
    configurations = sweep.expand(full)
    assert len(configurations) == 12
    assert [c.levels["temperature"] for c in configurations[:3]] == [0.25, 0.25, 0.25]
    again = sweep.expand(load_spec(path))
    assert [c.config_id for c in configurations] == [c.config_id for c in again]  # stable ids
    assert len({c.config_id for c in configurations}) == 12


def test_a_prior_solution_is_a_file_beside_the_spec_never_a_known_solution(tmp_path):
    (tmp_path / "priors").mkdir()
    (tmp_path / "priors" / "start.py").write_text("print('prior')\n")
    path = tmp_path / "p.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": "p", "base": BASE, "grid": {"prior_solution": [None, "priors/start.py"]}}
        )
    )
    scratch, prior = sweep.expand(load_spec(path))
    assert scratch.parameters["prior_solution"] is None
    assert Path(prior.parameters["prior_solution"]) == (tmp_path / "priors" / "start.py").resolve()
    with pytest.raises(SpecError, match="known solutions never enter a sandbox"):
        sweep.expand(load_spec({"name": "p", "base": {**BASE, "prior_solution": "baseline-grid"}}))


def test_shipped_specs_are_valid(tmp_path):
    shipped = sorted((Path(__file__).parents[1] / "data" / "sweeps").glob("*.yaml"))
    names = {p.stem for p in shipped}
    assert {
        "time_budget",
        "backbone",
        "temperature",
        "prior_solution",
        "innovation_prompt",
        "main_results",
    } <= names
    for path in shipped:
        spec = load_spec(path)
        assert spec.name == path.stem
        small = load_spec(path, ["budget=20s", "seeds=[0]"])
        assert small.base.budget == "20s"


def test_backbones_map_to_endpoints_by_prefix(tmp_path, monkeypatch):
    spec = load_spec(Path(__file__).parents[1] / "data" / "sweeps" / "backbone.yaml")
    for name in ("GEMINI_25_PRO", "GPT_5", "DEEPSEEK_V31"):
        monkeypatch.delenv(f"{name}_BASE_URL", raising=False)
    with pytest.raises(SpecError, match="set GEMINI_25_PRO_BASE_URL and GEMINI_25_PRO_MODEL"):
        sweep.expand(spec)
    for name, model in (
        ("GEMINI_25_PRO", "gemini-2.5-pro"),
        ("GPT_5", "gpt-5"),
        ("DEEPSEEK_V31", "deepseek-v3.1"),
    ):
        monkeypatch.setenv(f"{name}_BASE_URL", f"http://{name.lower()}.invalid/v1")
        monkeypatch.setenv(f"{name}_MODEL", model)
        monkeypatch.setenv(f"{name}_API_KEY", "sk-secret")
    configurations = sweep.expand(spec)
    assert len(configurations) == 12  # 3 backbones x 3 seeds, then the baseline's row x 3 seeds
    assert [c.config["model_reported"] for c in configurations[9:]] == ["none"] * 3
    from innolab.runner import config_from_parameters

    config = config_from_parameters(configurations[3].parameters)
    assert config.llm.model == "gpt-5" and config.llm.api_key_env == "GPT_5_API_KEY"
    assert config.endpoint == "gpt_5.invalid" and "sk-secret" not in json.dumps(config.as_dict())


# ---------------------------------------------------------------------------- the run folder's lock

HOLDER = """
import sys, time
from pathlib import Path
from innolab.runlock import RunLock, boot_id
with RunLock(Path(sys.argv[1]), heartbeat_s=0.4, stale_s=4.0):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
print("released", flush=True)
"""


def holding(run_dir: Path, seconds: float) -> subprocess.Popen:
    """Another process that holds run_dir's lock (heartbeat every 0.4 s, stale after 4 s) for
    `seconds`, once it printed "held"."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run_dir), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def scripted_run() -> RunConfig:
    return RunConfig(
        task="circle-packing-26",
        policy="tests.gym_policies:ScriptedPolicy",
        policy_args={"steps": 3},
        max_steps=10,
        wall_clock_s=120,
    )


def test_a_waiting_executor_never_fails_a_live_run(tmp_path, caplog):
    """The holder stays alive for 2.5 times the staleness limit: the second executor waits (and says
    so), does not take over, and starts the run once the holder lets go. (Staleness 4 s against
    beats every 0.4 s: a beat delayed by more than 3 s on a busy machine would be needed to make the
    live holder look stale.)"""
    caplog.set_level(logging.WARNING, logger="innolab.runlock")
    run_dir = tmp_path / "run"
    holder = holding(run_dir, 10.0)
    began = time.monotonic()
    outcome = runner.run_or_resume(
        scripted_run(), run_dir, novelty=None, show_progress=False, heartbeat_s=0.4, stale_s=4.0
    )
    waited = time.monotonic() - began
    assert holder.wait(timeout=30) == 0 and holder.stdout.read().strip() == "released"
    assert waited > 9.0 and outcome["valid"], outcome
    assert "waiting for" in caplog.text and "its run is executing in pid" in caplog.text
    assert "done waiting" in caplog.text
    assert "took over" not in caplog.text
    assert not (run_dir / "heartbeat.json").exists()  # released: nobody is executing it


def test_a_stopped_holder_is_taken_over_and_ends_when_it_wakes(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="innolab.runlock")
    holder = holding(tmp_path, 60.0)
    try:
        os.kill(holder.pid, signal.SIGSTOP)  # alive, flock held, no heartbeat any more
        began = time.monotonic()
        with RunLock(tmp_path, heartbeat_s=0.4, stale_s=4.0) as lock:
            assert 4.0 <= time.monotonic() - began < 30
            assert "took over" in caplog.text and "it still holds flock" in caplog.text
            assert json.loads((tmp_path / "heartbeat.json").read_text())["pid"] == os.getpid()
            os.kill(
                holder.pid, signal.SIGCONT
            )  # it wakes, finds its lock taken over at its next beat, and ends
            assert holder.wait(timeout=20) == -signal.SIGKILL
            assert holder.stdout.read() == "" and lock.owned()
            time.sleep(1.0)
            assert json.loads((tmp_path / "heartbeat.json").read_text())["pid"] == os.getpid()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_holder_on_another_machine_is_waited_for_while_it_beats_and_taken_over_when_it_stops(
    tmp_path, caplog
):
    """Where flock does not reach (another machine on a shared folder) the heartbeat alone
    decides."""
    caplog.set_level(logging.WARNING, logger="innolab.runlock")
    folder = RunDir(tmp_path)
    folder.lock.touch()
    stop = threading.Event()
    last: list[float] = []

    def beat() -> None:
        beat = 0
        while not stop.is_set():
            last.append(time.monotonic())
            folder.heartbeat.write_text(
                json.dumps(
                    {
                        "pid": 4242,
                        "host": "elsewhere",
                        "boot": "another-kernel",
                        "time": time.time() - 3600,
                        "beat": beat,
                        "token": "t",
                    }
                )
            )
            beat += 1
            time.sleep(0.3)

    beating = threading.Thread(target=beat)
    beating.start()
    threading.Timer(3.0, stop.set).start()
    began = time.monotonic()
    try:
        with RunLock(tmp_path, heartbeat_s=0.5, stale_s=3.0):
            now = time.monotonic()
            assert stop.is_set() and 2.9 <= now - began < 30  # waited while it beat...
            assert now - last[-1] >= 3.0  # ...and then for stale_s more
            assert (
                "pid 4242 on host elsewhere" in caplog.text
                and "flock does not reach" in caplog.text
            )
    finally:
        stop.set()
        beating.join()


def test_a_dead_holder_on_this_machine_frees_the_folder_at_once(tmp_path):
    holder = holding(tmp_path, 60.0)
    holder.kill()
    holder.wait()
    assert (
        json.loads((tmp_path / "heartbeat.json").read_text())["pid"] == holder.pid
    )  # fresh, but flock is free
    began = time.monotonic()
    with RunLock(tmp_path, heartbeat_s=5.0, stale_s=60.0):
        assert time.monotonic() - began < 5


def test_a_holder_rewrites_a_removed_heartbeat_and_ends_when_another_holder_names_itself(tmp_path):
    lost = threading.Event()
    folder = RunDir(tmp_path)
    with RunLock(tmp_path, heartbeat_s=0.3, stale_s=3.0, on_lost=lost.set) as lock:
        # removed by someone else: still ours, written again at the next beat
        folder.heartbeat.unlink()
        assert wait_for(folder.heartbeat.is_file, 10)
        assert lock.owned() and not lost.is_set()
        mine = json.loads(folder.heartbeat.read_text())
        folder.heartbeat.write_text(
            json.dumps({**mine, "host": "elsewhere", "token": "theirs"})
        )  # taken over
        assert lost.wait(timeout=5) and not lock.owned()
        assert (
            json.loads(folder.heartbeat.read_text())["token"] == "theirs"
        )  # its heartbeat left alone
        time.sleep(1.0)
        assert json.loads(folder.heartbeat.read_text())["token"] == "theirs"


def wait_for(condition, seconds: float) -> bool:
    """Whether `condition()` holds within `seconds` (polled)."""
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_a_holder_whose_beats_fail_for_a_while_keeps_its_lock(tmp_path, monkeypatch):
    """Failed beats (the write, then the check, raising OSError) are retried: the holder does not
    end itself, and beats again once the folder answers."""
    import innolab.runlock as runlock

    failures = {"write": 2, "check": 1}
    write, owned = runlock.write_atomic, RunLock.owned

    def failing_write(path, data):
        if failures["write"]:
            failures["write"] -= 1
            raise OSError(28, "No space left on device")
        return write(path, data)

    def failing_owned(self):
        if not failures["write"] and failures["check"]:
            failures["check"] -= 1
            raise OSError(5, "Input/output error")
        return owned(self)

    lost = threading.Event()
    with RunLock(tmp_path, heartbeat_s=0.3, stale_s=3.0, on_lost=lost.set) as lock:
        first = json.loads(RunDir(tmp_path).heartbeat.read_text())["beat"]
        monkeypatch.setattr(runlock, "write_atomic", failing_write)
        monkeypatch.setattr(RunLock, "owned", failing_owned)
        assert wait_for(
            lambda: json.loads(RunDir(tmp_path).heartbeat.read_text())["beat"] > first, 15
        )
        assert failures == {"write": 0, "check": 0} and not lost.is_set() and lock.owned()


def test_lock_settings_are_checked():
    with pytest.raises(ValueError, match="stale_s must exceed twice heartbeat_s"):
        RunLock(Path("x"), heartbeat_s=1.0, stale_s=1.5)
    with pytest.raises(ValueError, match="heartbeat_s must be > 0"):
        RunLock(Path("x"), heartbeat_s=0)


# -------------------------------------------------------------------------- sweeps on real clusters


def run_events(folder: Path) -> list[AnyEvent]:
    return read_events(folder)


def assert_exactly_once(folder: Path, count: int, server: FakeLLM) -> pd.DataFrame:
    table = results.runs(folder)
    assert len(table) == count and table["complete"].all(), table[
        ["config_id", "complete", "error"]
    ]
    run_dirs = sorted(p.name for p in (folder / "runs").iterdir() if p.is_dir())
    assert run_dirs == sorted(table["config_id"])  # one folder per configuration, named by its id
    for run_dir in run_dirs:
        events = run_events(folder / "runs" / run_dir)
        assert sum(e.type == "run_finished" for e in events) == 1
        assert sum(e.type == "score" for e in events) == 1
        assert (folder / "runs" / run_dir / "run.ipynb").is_file()
    bodies = [json.dumps(r, sort_keys=True) for r in server.requests]
    assert len(bodies) == len(set(bodies)), "a request reached the endpoint twice"
    return table


def test_a_sweep_starts_no_more_workers_than_configurations_to_run(tmp_path):
    """--workers 4 for one configuration left: one worker (each costs seconds of CPU to start)."""
    from innolab.sweep import engine

    spec = {"name": "one", "base": {"task": "circle-packing-26", "agent": "baseline",
                                    "budget": "5s", "runtime": "local", "novelty": "none"},
            "seeds": [0, 1, 2]}
    _, _, three = engine.plan(spec, output=tmp_path / "one")
    assert len(three) == 3
    assert engine.worker_count(4, three[:1]) == 1 and engine.worker_count(2, three) == 2
    assert engine.worker_count(None, three) == engine.default_workers(three) <= 3


def test_local_cluster_sweep_runs_each_configuration_once(tmp_path):
    with FakeLLM() as server:
        spec = {
            "name": "six",
            "base": {
                "task": "circle-packing-26",
                "budget": "8s",
                "runtime": "local",
                "base_url": server.base_url,
                "model": "fake",
                "novelty": "ast",
            },
            "grid": {"agent": ["aide", "mlab", "codeact"], "temperature": [0.25, 0.75]},
        }
        folder = sweep.run(spec, output=tmp_path / "six", workers=2, show_progress=False)
        table = assert_exactly_once(folder, 6, server)
        assert set(results.RUN_COLUMNS) <= set(table.columns)
        assert sorted(table["temperature"]) == [0.25] * 3 + [0.75] * 3
        for row in table.itertuples():
            calls = [e for e in run_events(folder / row.run_dir) if e.type == "llm_call"]
            assert calls and {e.temperature for e in calls} == {row.temperature}
        assert (
            table["valid"].all() and (table["ratio"] > -1).all() and table["novelty"].notna().all()
        )
        trajectory = results.trajectory(folder)
        assert set(results.TRAJECTORY_COLUMNS) <= set(trajectory.columns)
        assert set(trajectory["config_id"]) == set(table["config_id"])
        assert trajectory.loc[trajectory["improving"], "valid"].all()
        assert pd.read_parquet(folder / "runs.parquet").shape == table.shape
        before, requests = sorted(os.listdir(folder / "runs")), len(server.requests)
        sweep.run(spec, output=folder, workers=2, show_progress=False)  # a rerun is a no-op
        assert sorted(os.listdir(folder / "runs")) == before and len(server.requests) == requests
        assert sweep.status(folder)["counts"]["scored"] == 6
        assert not kernels_left(), "a kernel started ahead outlived its sweep"
        with pytest.raises(SpecError, match="other configurations"):
            sweep.run({**spec, "grid": {"agent": ["aide"]}}, output=folder, show_progress=False)


def kernels_left(timeout_s: float = 60.0) -> list[str]:
    """The kernels and fork servers still under this process after a while (none: [])."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = []
        for process in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                line = " ".join(process.cmdline())
                if ("ipykernel" in line or "innolab.forkserver" in line) and \
                        process.status() != psutil.STATUS_ZOMBIE:
                    left.append(line)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def kernel_holding(run_dir: Path) -> psutil.Process | None:
    """The process (a papermill kernel) that holds a run folder's lock open."""
    lock = str(RunDir(run_dir).lock.resolve())
    for process in psutil.Process().children(recursive=True):
        try:
            if any(f.path == lock for f in process.open_files()):
                return process
        except psutil.Error:
            continue
    return None


def worker_of(kernel: psutil.Process) -> psutil.Process:
    """The Dask worker a run's kernel belongs to: its parent, or its fork server's."""
    parent = kernel.parent()
    while "innolab.forkserver" in " ".join(parent.cmdline()):
        parent = parent.parent()
    return parent


def test_a_worker_killed_mid_run_still_gives_exactly_once(tmp_path):
    with FakeLLM(program_sleep_s=6) as server:
        spec = {
            "name": "kill",
            "base": {
                "task": "circle-packing-26",
                "agent": "codeact",
                "budget": "60s",
                "runtime": "local",
                "base_url": server.base_url,
                "model": "fake",
                "novelty": "ast",
            },
            "grid": {"temperature": [0.25, 0.75]},
        }
        done: dict = {}
        thread = threading.Thread(
            target=lambda: done.setdefault(
                "folder", sweep.run(spec, output=tmp_path / "kill", workers=2, show_progress=False)
            )
        )
        thread.start()
        victim_run, worker = None, None
        deadline = time.monotonic() + 120
        while (
            worker is None and time.monotonic() < deadline
        ):  # the first run whose program is executing
            for run_dir in sorted((tmp_path / "kill" / "runs").glob("*")):
                trace = run_dir / "trace.jsonl"
                if trace.is_file() and '"tool_call"' in trace.read_text():
                    kernel = kernel_holding(run_dir)
                    if kernel is not None:
                        victim_run, worker = run_dir, worker_of(kernel)
                        break
            time.sleep(0.2)
        assert worker is not None, "no run reached its first tool call"
        assert "python" in worker.name() or "dask" in " ".join(worker.cmdline())
        os.kill(worker.pid, signal.SIGKILL)
        thread.join(timeout=300)
        assert not thread.is_alive()
        folder = done["folder"]
        assert_exactly_once(folder, 2, server)
        calls = [e for e in run_events(victim_run) if e.type == "llm_call"]
        assert any(e.cached for e in calls), "the killed run did not continue from its cache"
        assert not psutil.pid_exists(worker.pid) or worker.status() == psutil.STATUS_ZOMBIE
        assert not kernels_left(), "a kernel outlived its worker or its sweep"


def test_an_external_scheduler_through_the_cli(tmp_path):
    """Two worker processes of an external scheduler run a sweep, sharing its endpoint limit."""
    scheduler_file = tmp_path / "scheduler.json"
    scheduler = subprocess.Popen(
        [
            str(BIN / "dask"),
            "scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--no-dashboard",
            "--scheduler-file",
            str(scheduler_file),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    worker = None
    try:
        deadline = time.monotonic() + 60
        address = None
        while (
            address is None and time.monotonic() < deadline
        ):  # the scheduler writes the file in more than one go
            try:
                address = json.loads(scheduler_file.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.2)
        assert address, "the dask scheduler wrote no address within 60 s"
        worker = subprocess.Popen(
            [
                str(BIN / "dask"),
                "worker",
                address,
                "--nthreads",
                "1",
                "--nworkers",
                "2",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        with FakeLLM(latency_s=0.1) as server:
            spec = tmp_path / "external.yaml"
            spec.write_text(
                yaml.safe_dump(
                    {
                        "name": "external",
                        "base": {
                            "task": "circle-packing-26",
                            "runtime": "local",
                            "budget": "60s",
                            "base_url": server.base_url,
                            "model": "fake",
                            "novelty": "ast",
                            "max_concurrent_requests": 1,  # both workers' runs share it
                        },
                        "grid": {"agent": ["codeact", "mlab"]},
                    }
                )
            )
            done = subprocess.run(
                [
                    str(BIN / "innolab"),
                    "sweep",
                    "run",
                    str(spec),
                    "--scheduler",
                    address,
                    "--output",
                    str(tmp_path / "out"),
                    "--set",
                    "budget=30s",
                ],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            assert done.stdout.strip().splitlines()[-1] == str((tmp_path / "out").resolve())
            table = assert_exactly_once(tmp_path / "out", 2, server)
            assert set(table["budget_s"]) == {30.0}
            # the limit, stated in the spec, held across the external scheduler's two workers
            # (and the kernels their run notebooks started), by the server's own count
            assert server.max_in_flight == 1
            status = subprocess.run(
                [str(BIN / "innolab"), "sweep", "status", str(tmp_path / "out")],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert "2 scored" in status.stdout
    finally:
        for process in (worker, scheduler):
            if process is not None:
                process.terminate()
                process.wait(timeout=30)


def test_bad_spec_through_the_cli(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(
        "name: bad\nbase: {task: circle-packing-26, agent: aide}\ngrid: {temperature: [0.5, 9]}\n"
    )
    done = subprocess.run(
        [str(BIN / "innolab"), "sweep", "run", str(spec), "--output", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        done.returncode == 2
        and "grid.temperature" in done.stderr
        and "less than or equal to 2" in done.stderr
    )
    assert not (tmp_path / "o").exists()


def test_embedded_model_sweep_end_to_end(tmp_path):
    """The issue's must-show: 2 agents x 2 temperatures, 20 s, local runtime, the embedded model, 2
    workers."""
    spec = tmp_path / "embedded.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "embedded",
                "base": {
                    "task": "circle-packing-26",
                    "runtime": "local",
                    "budget": "12h",
                    "novelty": "ast",
                },
                "grid": {"agent": ["codeact", "mlab"], "temperature": [0.25, 0.75]},
            }
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INNOLAB_LLM_")}
    command = [
        str(BIN / "innolab"),
        "sweep",
        "run",
        str(spec),
        "--workers",
        "2",
        "--output",
        str(tmp_path / "d"),
        "--set",
        "budget=20s",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_parquet(tmp_path / "d" / "runs.parquet")
    assert len(table) == 4 and table["complete"].all()
    assert set(results.RUN_COLUMNS) <= set(table.columns)
    assert sorted(zip(table["agent"], table["temperature"], strict=True)) == [
        ("codeact", 0.25),
        ("codeact", 0.75),
        ("mlab", 0.25),
        ("mlab", 0.75),
    ]
    assert table["model"].notna().all()
    for row in table.itertuples():
        calls = [e for e in read_events(tmp_path / "d" / row.run_dir) if e.type == "llm_call"]
        assert calls and all(e.temperature == row.temperature for e in calls)
        config = json.loads((tmp_path / "d" / row.run_dir / "config.json").read_text())
        assert config["endpoint"] == "embedded" and config["llm"]["base_url"] is None
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert again.returncode == 0
    assert len([p for p in (tmp_path / "d" / "runs").iterdir() if p.is_dir()]) == 4
    scores = pd.read_csv(
        tmp_path / "d" / "runs" / "scores.csv"
    )  # appended by concurrent runs: one header
    assert sorted(scores["run"]) == sorted(
        p.name for p in (tmp_path / "d" / "runs").iterdir() if p.is_dir()
    )


def test_a_local_cluster_leaves_the_callers_environment_as_it_was(monkeypatch):
    from innolab.sweep import engine

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    before = dict(os.environ)
    with engine._client(None, 1, []) as client:
        assert (
            client.submit(os.environ.get, "OPENBLAS_NUM_THREADS").result() == "1"
        )  # the workers' own setting
    assert dict(os.environ) == before


# ---------------------------------------------- cost cap, attempts and status, read from the folder


def test_the_sweep_budget_is_checked_and_set_from_the_command_line():
    assert "budget.max_cost_usd" in spec_error(
        {"name": "x", "base": BASE, "budget": {"max_cost_usd": -1}}
    )
    assert "budget.colour" in spec_error({"name": "x", "base": BASE, "budget": {"colour": 1}})
    spec = load_spec({"name": "x", "base": BASE}, ["budget.max_cost_usd=2.5"])
    assert spec.budget.max_cost_usd == 2.5 and spec.base.budget == "20s"
    assert load_spec({"name": "x", "base": BASE}).budget.max_cost_usd is None
    assert "greater than 0" in spec_error({"name": "x", "base": BASE}, ["budget.max_cost_usd=0"])


def trace_line(kind: str, seq: int = 0, **fields) -> str:
    return json.dumps({"v": 1, "seq": seq, "time": time.time() - 5, "type": kind, **fields}) + "\n"


def test_attempts_are_archived_in_the_run_folder_and_a_half_done_archive_is_finished(tmp_path):
    from innolab.sweep import state

    run_dir = tmp_path / "runs" / "abc"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text("{}")
    (run_dir / "trace.jsonl").write_text(
        trace_line("run_started", config={})
        + trace_line("llm_call", seq=1, cost_usd=0.25)
        + trace_line("run_finished", seq=2, reason="llm_error", budget={}, final_submission=None,
                     dev_valid=False, dev_score=None)
    )
    (run_dir / "score.json").write_text("{}")
    assert state.failed(run_dir, None) and state.attempts_made(run_dir) == 1
    ledger = state.Ledger(tmp_path)
    assert ledger.spent() == pytest.approx(0.25)
    assert state.archive_attempt(run_dir, None) == 1
    ledger.forget(run_dir)
    # archiving holds the run's lock: its files stay, nothing of the attempt does
    assert sorted(p.name for p in run_dir.iterdir()) == [".lock", ".lock.guard", "attempts"]
    first = run_dir / "attempts" / "1"
    record = json.loads((first / "attempt.json").read_text())
    assert record["end_reason"] == "llm_error" and record["cost_usd"] == pytest.approx(0.25)
    assert (first / "score.json").is_file() and state.attempts_made(run_dir) == 1
    assert ledger.spent() == pytest.approx(0.25)  # the archived attempt's spend still counts
    # a second attempt, killed half way through its archiving: finished on the next look
    (run_dir / "config.json").write_text("{}")
    (run_dir / "trace.jsonl").write_text(trace_line("llm_call", cost_usd=0.5))
    assert state.attempts_made(run_dir) == 2 and ledger.spent() == pytest.approx(0.75)
    partial = run_dir / "attempts" / "2.partial"
    partial.mkdir()
    (run_dir / "config.json").rename(partial / "config.json")
    state.finish_archive(run_dir)
    assert [p.name for p in state.archived(run_dir)] == ["1", "2"]
    assert (run_dir / "attempts" / "2" / "trace.jsonl").is_file()
    assert sorted(p.name for p in run_dir.iterdir()) == [".lock", ".lock.guard", "attempts"]


def test_status_counts_states_spend_and_a_stop_for_cost(tmp_path):
    from innolab.sweep import state

    entries = [{"config_id": c, "levels": {"seed": i}, "error": None} for i, c in
               enumerate(["scored", "failed", "running", "left"])]
    entries[1]["error"] = "RuntimeError: boom"
    state.write_manifest(tmp_path, {"name": "s", "configurations": entries,
                                    "spec": {"budget": {"max_cost_usd": 1.0}},
                                    "stopped_for_cost": {"max_cost_usd": 1.0, "cost_usd": 1.2}})
    for name, cost in (("scored", 0.7), ("failed", 0.1), ("running", 0.4)):
        folder = tmp_path / "runs" / name
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
        (folder / "trace.jsonl").write_text(trace_line("run_started", config={})
                                            + trace_line("llm_call", seq=1, cost_usd=cost))
    (tmp_path / "runs" / "scored" / "score.json").write_text("{}")
    (tmp_path / "runs" / "running" / "heartbeat.json").write_text(json.dumps(
        {"pid": os.getpid(), "host": "here", "boot": boot_id(), "time": time.time(), "beat": 0,
         "token": "t"}))
    shown = state.status(tmp_path)
    assert shown["counts"] == {"pending": 0, "running": 1, "interrupted": 0, "scored": 1,
                               "failed": 1, "stopped_for_cost": 1}
    assert shown["cost_usd"] == pytest.approx(1.2) and shown["stopped_for_cost"] is True
    assert shown["max_cost_usd"] == 1.0
    [flight] = shown["in_flight"]
    assert flight["config_id"] == "running" and 4 <= flight["elapsed_s"] < 60
    assert flight["cost_usd"] == pytest.approx(0.4)
    done = subprocess.run([str(BIN / "innolab"), "sweep", "status", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert "1 stopped for cost" in done.stdout and "STOPPED FOR COST" in done.stdout
    assert "in flight: running" in done.stdout and "$1.2000 spent of a $1 cap" in done.stdout


def test_bad_cost_cap_and_retry_attempts_through_the_cli(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump({"name": "s", "base": BASE}))
    for flags, message in ((["--max-cost", "-2"], "--max-cost: must be > 0"),
                           (["--max-cost", "lots"], "is not a number"),
                           (["--retry-failed", "--retry-attempts", "0"], "--retry-attempts")):
        done = subprocess.run([str(BIN / "innolab"), "sweep", "run", str(spec), *flags,
                               "--output", str(tmp_path / "o")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()


def test_a_run_whose_holder_is_a_zombie_is_not_running(tmp_path):
    """A killed executor that nobody has reaped (no init reaps it in a container) runs nothing."""
    from innolab.sweep.state import running

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    beat = {"pid": child.pid, "host": "h", "boot": boot_id(), "time": time.time(), "beat": 1,
            "token": "t"}
    RunDir(run_dir).heartbeat.write_text(json.dumps(beat))
    try:
        deadline = time.monotonic() + 30
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert not running(run_dir)  # its pid still answers signal 0
        os.kill(child.pid, 0)
    finally:
        child.wait()
    beat["pid"] = os.getpid()
    RunDir(run_dir).heartbeat.write_text(json.dumps(beat))
    assert running(run_dir)


def test_the_cost_cap_wins_the_exit_status_over_a_failed_run():
    """`sweep run` exits 3 when the sweep stopped at its cost cap, even with a failed run (the
    sweep is not complete); 1 for failures alone; 0 for neither."""
    from innolab.cli.sweep import exit_status

    def state(failed: int, stopped: bool) -> dict:
        return {"counts": {"failed": failed}, "stopped_for_cost": stopped}

    assert exit_status(state(1, True)) == 3
    assert exit_status(state(0, True)) == 3
    assert exit_status(state(2, False)) == 1
    assert exit_status(state(0, False)) == 0


def test_a_holder_whose_lock_was_taken_over_checks_before_it_writes(tmp_path):
    """Between two heartbeats, a holder that woke up after a take-over ends at its next write
    (runlock.still_held, called before each checkpoint and the run's end)."""
    from innolab.runlock import still_held

    lost = threading.Event()
    folder = RunDir(tmp_path)
    with RunLock(tmp_path, heartbeat_s=60.0, stale_s=600.0, on_lost=lost.set):
        still_held(tmp_path)
        assert not lost.is_set()
        mine = json.loads(folder.heartbeat.read_text())
        folder.heartbeat.write_text(json.dumps({**mine, "token": "successor"}))
        still_held(tmp_path)  # no heartbeat has run yet: the check itself notices
        assert lost.is_set()
    still_held(tmp_path / "elsewhere")  # no lock held there: nothing happens


def test_a_run_executed_twice_counts_as_failed_not_scored(tmp_path):
    from innolab.sweep import state

    run_dir = tmp_path / "runs" / "twice"
    run_dir.mkdir(parents=True)
    finished = {"reason": "steps", "budget": {}, "final_submission": None, "dev_valid": False,
                "dev_score": None}
    (run_dir / "trace.jsonl").write_text(
        trace_line("run_started", config={}) + trace_line("run_finished", seq=1, **finished)
        + trace_line("run_finished", seq=2, **finished))
    (run_dir / "score.json").write_text("{}")
    assert state.read_run(run_dir).end_reason == state.TRACE_BROKEN
    assert state.failed(run_dir, None)
