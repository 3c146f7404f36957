"""A sweep that survives its endpoint and its driver: a cost cap, a driver killed by SIGKILL in the
middle and the same command run again, against the scripted server with latency, 429s with
Retry-After, 500s and dropped connections, on 2 workers sharing a cap of 1 request in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from innolab import results, sweep
from innolab.llm.client import call_seed
from innolab.sweep import state
from innolab.traces import read_events
from tests.fake_llm import FakeLLM

BIN = Path(sys.executable).parent
CONFIGURATIONS = 12  # 30 take 6.5 min on a loaded 2-core machine; 12 keep make test short
PRICE = 1000.0  # USD per million tokens, in and out: a scripted call (150 tokens) costs 0.15
CAP = 1  # requests in flight at once, for both workers together


def environment() -> dict[str, str]:
    """The driver's environment: the endpoint's prices as a user sets them (the cap: the spec)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INNOLAB_LLM_")}
    env.update(INNOLAB_LLM_PRICE_IN=str(PRICE), INNOLAB_LLM_PRICE_OUT=str(PRICE))
    return env


def write_spec(folder: Path, server: FakeLLM) -> Path:
    spec = folder / "scale.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "scale",
                "base": {
                    "task": "circle-packing-26",
                    "agent": "codeact",
                    "budget": "60s",
                    "runtime": "local",
                    "base_url": server.base_url,
                    "model": "fake",
                    "novelty": "none",
                    "max_concurrent_requests": CAP,  # shared by both workers
                },
                "seeds": list(range(CONFIGURATIONS)),
            }
        )
    )
    return spec


def command(spec: Path, out: Path, *extra: str, workers: int = 2) -> list[str]:
    return [str(BIN / "innolab"), "sweep", "run", str(spec), "--workers", str(workers),
            "--output", str(out), *extra]


def config_of_request(folder: Path) -> dict[int, str]:
    """Each request seed a configuration's run can send (its call index 0-39) -> the config id."""
    manifest = json.loads((folder / "sweep.json").read_text())
    return {
        call_seed(entry["levels"]["seed"], index): entry["config_id"]
        for entry in manifest["configurations"]
        for index in range(40)
    }


def served_by_config(server: FakeLLM, folder: Path, since: float = 0.0) -> dict[str, int]:
    """Answered (200) requests per configuration, of those that arrived after `since`."""
    owner = config_of_request(folder)
    counts: dict[str, int] = {}
    for entry in server.served():
        if entry["start"] >= since:
            identifier = entry["run"] or owner[entry["seed"]]
            counts[identifier] = counts.get(identifier, 0) + 1
    return counts


def wait_for(condition, seconds: float, poll_s: float = 0.2) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(poll_s)
    return True


def command_line(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:
        return [f"pid {process.pid}, gone"]


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@pytest.mark.notebook
def test_cost_cap_then_a_killed_driver_then_a_rerun_score_each_configuration_once(tmp_path):
    out = tmp_path / "out"
    with FakeLLM(
        latency_s=(0.02, 0.2),
        fault_rates={"429": 0.06, "500": 0.04, "drop": 0.03},
        retry_after=1,
        seed=7,
    ) as server:
        spec = write_spec(tmp_path, server)
        env = environment()

        # 1. a cap of 0.6 USD on 1 worker: runs cost 0.45 each, so the second starts (0.45 < 0.6)
        # and no third: the sweep stops within one run's spend of its cap
        capped = subprocess.run(
            command(spec, out, "--max-cost", "0.6", workers=1),
            env=env, capture_output=True, text=True, timeout=300,
        )
        assert capped.returncode == 3, capped.stderr[-3000:]
        assert "STOPPED FOR COST" in capped.stderr
        shown = json.loads(subprocess.run(
            [str(BIN / "innolab"), "sweep", "status", str(out), "--json"],
            capture_output=True, text=True, timeout=60, check=True).stdout)
        run_cost = 3 * 150 * PRICE / 1e6
        assert shown["stopped_for_cost"] is True
        assert shown["counts"]["scored"] == 2
        assert shown["counts"]["stopped_for_cost"] == CONFIGURATIONS - 2
        assert 0.6 <= shown["cost_usd"] < 0.6 + run_cost
        first = {i for i, r in shown["runs"].items() if r["state"] == "scored"}
        from innolab.viewer import SweepView

        assert "stopped for cost" in SweepView(out).status.value
        after_cap = time.monotonic()

        # 2. a higher cap, on 2 workers: the driver is killed by SIGKILL in the middle
        driver = subprocess.Popen(command(spec, out, "--max-cost", "100"), env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            assert wait_for(lambda: state.status(out)["counts"]["running"] >= 1, 240)
            # a view opened while runs are in flight lists them with their times and follows the
            # status by itself (opened again until its reading falls on a run in flight: between
            # two runs, while kernels start, none is)
            views: list[SweepView] = []

            def opened_on_runs_in_flight() -> bool:
                if views:
                    views[-1].unwatch()
                views.append(SweepView(out))
                shown = views[-1].status.value
                return " running" in shown and "<li>" in shown

            assert wait_for(opened_on_runs_in_flight, 60, poll_s=1), views[-1].status.value
            view = views[-1]
            assert wait_for(
                lambda: (s := state.status(out))["counts"]["scored"] >= 6
                and s["counts"]["running"] >= 1,
                240,
            ), state.status(out)["counts"]
            descendants = psutil.Process(driver.pid).children(recursive=True)
            lines = {p.pid: " ".join(command_line(p)) for p in descendants}  # read while alive
            driver.send_signal(signal.SIGKILL)
            driver.wait(timeout=30)
        finally:
            if driver.poll() is None:
                driver.kill()
        killed_at = time.monotonic()
        workers = [p for p in descendants if "spawn_main" in lines[p.pid]]
        kernels = [p for p in descendants if "ipykernel" in lines[p.pid]]
        assert len(workers) == 2, lines
        # no orphan: every worker, and its kernel, ends with the driver at once; whatever else the
        # sweep had started (the runs' programs, their clean-up helpers) soon after
        assert wait_for(lambda: not any(alive(p) for p in workers + kernels), 15), [
            lines[p.pid] for p in workers + kernels if alive(p)
        ]
        assert wait_for(lambda: not any(alive(p) for p in descendants), 90), [
            lines[p.pid] for p in descendants if alive(p)
        ]
        # the view opened before the kill went on reading the status by itself: it comes to show
        # what a view opened now shows (at least 6 scored; opened, it showed fewer)
        now = SweepView(out).status.value
        assert wait_for(lambda: view.status.value == now, 30), (now, view.status.value)
        view.unwatch()
        # with every process of the killed sweep gone, its folder holds still: what it had scored,
        # and the runs it had started (in flight at the kill)
        scored_before = {c for c in shown["runs"] if state.scored(out / "runs" / c)}
        in_flight = {c for c in shown["runs"]
                     if (out / "runs" / c).is_dir() and c not in scored_before}
        # a run seen running just before the kill may have finished in the moment before it lands
        # (seen in a CI run under load): then none is in flight, and what follows still holds
        assert len(scored_before) >= 6

        # 3. the same command again: it finishes the sweep, rerunning nothing that was scored
        again = subprocess.run(command(spec, out, "--max-cost", "100"), env=env,
                               capture_output=True, text=True, timeout=600)
        assert again.returncode == 0, again.stderr[-3000:]

    table = results.runs(out)
    assert len(table) == CONFIGURATIONS and table["complete"].all()
    assert (table["end_reason"] == "agent_finished").all() and (table["attempts"] == 1).all()
    for run_dir in (out / "runs").iterdir():
        if run_dir.is_dir():
            events = read_events(run_dir)
            assert sum(e.type == "run_finished" for e in events) == 1, run_dir.name
            assert sum(e.type == "score" for e in events) == 1, run_dir.name
    # the server's own log: nothing scored before the cap or the kill was asked anything after
    assert not set(served_by_config(server, out, since=after_cap)) & first
    assert not set(served_by_config(server, out, since=killed_at)) & scored_before
    # a call answered twice belongs to a run in flight at the kill (its reply never recorded)
    owner = config_of_request(out)
    repeated = {run or owner[seed] for run, seed in server.repeated_calls()}
    assert repeated <= in_flight, (repeated, in_flight)
    # every configuration's calls were answered (3 each: python, submit, finish)
    assert set(served_by_config(server, out)) == set(table["config_id"])
    assert server.max_in_flight <= CAP, server.max_in_flight
    final = sweep.status(out)
    assert final["counts"]["scored"] == CONFIGURATIONS and not final["stopped_for_cost"]


@pytest.mark.notebook
def test_retry_failed_reruns_only_the_failed_configuration_and_keeps_its_attempt(tmp_path):
    """The endpoint answers 500 to the first 5 requests: the first run's model stays unreachable
    through its 4 retries (it ends `llm_error`: a failure, not a result); a plain rerun leaves it;
    --retry-failed runs it again as attempt 2, the first kept under attempts/1/."""
    out = tmp_path / "out"
    with FakeLLM(faults=["500"] * 5) as server:
        spec = write_spec(tmp_path, server)
        data = yaml.safe_load(spec.read_text())
        spec.write_text(yaml.safe_dump({**data, "seeds": [0, 1]}))
        env = environment()
        first = subprocess.run(command(spec, out, workers=1), env=env, capture_output=True,
                               text=True, timeout=300)
        assert first.returncode == 1, first.stderr[-3000:]
        shown = sweep.status(out)
        assert shown["counts"]["failed"] == 1 and shown["counts"]["scored"] == 1
        [failed] = [c for c, r in shown["runs"].items() if r["state"] == "failed"]
        assert shown["runs"][failed]["end_reason"] == "llm_error"
        requests = len(server.log)
        plain = subprocess.run(command(spec, out, workers=1), env=env, capture_output=True,
                               text=True, timeout=300)
        assert plain.returncode == 1 and len(server.log) == requests  # a failure is not rerun
        began = time.monotonic()
        retried = subprocess.run(command(spec, out, "--retry-failed", "--retry-attempts", "1",
                                         workers=1),
                                 env=env, capture_output=True, text=True, timeout=300)
        assert retried.returncode == 0, retried.stderr[-3000:]
        assert set(served_by_config(server, out, since=began)) == {failed}
    table = results.runs(out).set_index("config_id")
    assert table["complete"].all() and (table["end_reason"] == "agent_finished").all()
    assert table.loc[failed, "attempt"] == table.loc[failed, "attempts"] == 2
    assert (table.drop(index=failed)["attempts"] == 1).all()
    record = json.loads((out / "runs" / failed / "attempts" / "1" / "attempt.json").read_text())
    assert record["end_reason"] == "llm_error" and record["scored"]
    assert read_events(out / "runs" / failed / "attempts" / "1")[-1].type == "score"
    assert sweep.status(out)["runs"][failed]["attempts"] == 2
