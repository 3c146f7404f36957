"""Endpoint limits shared by every worker of a Dask cluster, Retry-After, and the local gate."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import openai
import pytest

from innolab.gym.policy import RunConfig
from innolab.llm import LLMClient, LLMError, LLMSettings
from innolab.llm import gate as gates
from innolab.llm.client import request_tokens, retry_after_s
from innolab.llm.gate import IDLE, LocalGate, admit
from innolab.runner import config_id
from innolab.sweep import limits
from innolab.traces import LLMCall
from tests.fake_llm import FakeLLM

MESSAGES = [{"role": "user", "content": "hi"}]


def llm(url: str, **extra: object) -> dict:
    """A configuration's `llm` as config.json holds it."""
    return {"base_url": url, "model": "fake", "timeout_s": 20.0, "backoff_s": 0.0, **extra}


def sweep_task(settings: dict, calls: int, run: str) -> dict:
    """What a sweep worker does: model calls inside `limits.activate`."""
    with limits.activate(settings, run=run) as gate:
        client = LLMClient(LLMSettings.model_validate(settings))
        waits = [client.chat(MESSAGES, call_index=i).wait_s for i in range(calls)]
    return {"gate": type(gate).__name__ if gate else None, "waits": waits}


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=4, processes=False,
                                 dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


def run_on_cluster(client, settings: dict, tasks: int, calls: int) -> list[dict]:
    futures = [client.submit(sweep_task, settings, calls, f"run-{i}", pure=False)
               for i in range(tasks)]
    return client.gather(futures)


def test_two_workers_hold_the_concurrency_cap_together(dask_client):
    with FakeLLM(latency_s=0.15) as server:
        free = run_on_cluster(dask_client, llm(server.base_url), tasks=8, calls=3)
        uncapped = server.max_in_flight
    assert uncapped > 2  # without a cap, 8 threads on 2 workers do overlap
    with FakeLLM(latency_s=0.15, max_concurrent=2, retry_after=1) as server:
        capped = run_on_cluster(dask_client, llm(server.base_url, max_concurrent_requests=2),
                                tasks=8, calls=3)
        assert server.max_in_flight <= 2 and server.over_cap == 0  # the endpoint's own count
        assert len(server.served()) == 24 and not server.repeated_calls()
        assert {e["run"] for e in server.log} == {f"run-{i}" for i in range(8)}
    assert {r["gate"] for r in free} == {None}
    assert {r["gate"] for r in capped} == {"DaskGate"}
    assert sum(sum(r["waits"]) for r in capped) > 1.0  # the waits are recorded


def test_a_process_outside_the_workers_joins_the_cluster_gate(dask_client):
    """A run's kernel is no worker: it holds the same gate through the scheduler's client."""
    with FakeLLM(latency_s=0.15) as server:
        settings = llm(server.base_url, max_concurrent_requests=2)
        key = gates.endpoint_key(LLMSettings.model_validate(settings))
        outside = limits.DaskGate(key, max_concurrent_requests=2)
        with gates.installed(key, outside):
            futures = [dask_client.submit(sweep_task, settings, 2, f"w{i}", pure=False)
                       for i in range(4)]
            client = LLMClient(LLMSettings.model_validate(settings))
            threads = [threading.Thread(target=client.chat, args=(MESSAGES,),
                                        kwargs={"call_index": i}) for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            dask_client.gather(futures)
        assert server.max_in_flight <= 2 and len(server.served()) == 12


def test_requests_per_minute_spaces_requests_across_workers(dask_client):
    with FakeLLM() as server:
        run_on_cluster(dask_client, llm(server.base_url, requests_per_minute=300), tasks=4,
                       calls=2)
        starts = sorted(e["start"] for e in server.log)
    # admitted one per 60 / 300 s; each reaches the server within a delay D of its admission,
    # so the i-th arrival comes at least i * 0.2 - D after the first (D: 0.15 s on a busy machine)
    assert len(starts) == 8
    assert all(t - starts[0] >= i * 0.2 - 0.15 for i, t in enumerate(starts)), [
        round(t - starts[0], 3) for t in starts]
    assert starts[-1] - starts[0] >= 7 * 0.2 - 0.15


def test_local_gate_without_dask_caps_concurrency_and_paces_tokens():
    assert not limits.in_worker()
    with FakeLLM(latency_s=0.1) as server:
        settings = llm(server.base_url, max_concurrent_requests=2)
        results: list[dict] = []
        threads = [threading.Thread(target=lambda i=i: results.append(
            sweep_task(settings, 2, f"local-{i}"))) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.max_in_flight <= 2 and len(server.served()) == 12
    assert {r["gate"] for r in results} == {"LocalGate"}
    # a client alone, with limits in its settings, uses the process's gate too
    with FakeLLM() as server:
        settings = LLMSettings.model_validate(llm(server.base_url, tokens_per_minute=60_000,
                                                  max_tokens=400))
        client = LLMClient(settings)
        tokens = request_tokens(client.request(MESSAGES))
        for i in range(3):
            client.chat(MESSAGES, call_index=i)
        starts = [e["start"] for e in server.log]
    assert isinstance(gates.gate_for(settings), LocalGate)
    assert starts[2] - starts[0] >= 2 * tokens * 60 / 60_000 - 0.02


def test_retry_after_is_honoured_and_counted_as_waiting():
    with FakeLLM(["429"], retry_after=1) as server:
        completion = LLMClient(LLMSettings.model_validate(llm(server.base_url))).chat(MESSAGES)
        first, second = server.log
    assert second["start"] - first["end"] >= 1.0
    assert completion.attempts[0]["retry_after_s"] == 1.0
    assert completion.wait_s >= 1.0 and completion.latency_s >= completion.wait_s
    event = LLMCall(purpose="step", **completion.event())
    assert event.wait_s >= 1.0 and not event.failed


def test_a_rate_limit_is_waited_for_within_the_run_budget_not_failed():
    """Six 429s with Retry-After, more than max_retries (4): a run with a deadline waits them out
    (waiting, not failing); a call with no deadline to bound the waits still gives up."""
    with FakeLLM(["429"] * 6, retry_after=0.1) as server:
        client = LLMClient(LLMSettings.model_validate(llm(server.base_url)))
        client.deadline = time.monotonic() + 30
        completion = client.chat(MESSAGES)
        assert len(server.log) == 7
    assert len(completion.attempts) == 6 and completion.wait_s >= 0.6
    assert all(a["retry_after_s"] == 0.1 for a in completion.attempts)
    with (FakeLLM(["429"] * 6, retry_after=0.1) as server,
          pytest.raises(LLMError, match="after 5 attempt")):
        LLMClient(LLMSettings.model_validate(llm(server.base_url))).chat(MESSAGES)
    with FakeLLM(["500"] * 6) as server:  # no Retry-After: each failure counts, deadline or not
        client = LLMClient(LLMSettings.model_validate(llm(server.base_url)))
        client.deadline = time.monotonic() + 30
        with pytest.raises(LLMError, match="after 5 attempt"):
            client.chat(MESSAGES)


def test_retry_after_holds_every_request_through_the_gate():
    with FakeLLM(["503"], retry_after=0.8) as server:
        settings = llm(server.base_url, max_concurrent_requests=4)
        first = threading.Thread(target=sweep_task, args=(settings, 1, "a"))
        first.start()
        time.sleep(0.3)  # the 503 has come: the other run's request waits out the same hold
        sweep_task(settings, 1, "b")
        first.join()
        b = next(e for e in server.log if e["run"] == "b")
    assert b["start"] - server.log[0]["end"] >= 0.8 - 0.05


def test_retry_after_forms():
    def error(value: str, status: int = 429) -> openai.APIStatusError:
        request = httpx.Request("POST", "http://endpoint/v1/chat/completions")
        response = httpx.Response(status, headers={"Retry-After": value}, request=request)
        return openai.APIStatusError("limited", response=response, body=None)

    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after_s(error("2.5")) == 2.5
    assert retry_after_s(error(format_datetime(now + timedelta(seconds=7), usegmt=True)),
                         now) == 7.0
    assert retry_after_s(error("soon")) is None
    assert retry_after_s(error("3", status=500)) is None  # only 429 and 503 ask to wait
    assert retry_after_s(error("99999")) == 600.0


def test_without_retry_after_backs_off_with_jitter():
    waits: list[float] = []
    with FakeLLM(["429", "500"]) as server:
        settings = LLMSettings(base_url=server.base_url, model="fake", backoff_s=0.2)
        completion = LLMClient(settings, sleep=waits.append).chat(MESSAGES)
    assert 0.1 <= waits[0] <= 0.3 and 0.2 <= waits[1] <= 0.6
    assert completion.wait_s == pytest.approx(sum(waits))
    assert "retry_after_s" not in completion.attempts[0]


def test_a_deadline_ends_the_wait_for_a_limit_as_an_llm_error():
    with FakeLLM() as server:
        settings = LLMSettings.model_validate(llm(server.base_url, requests_per_minute=1))
        client = LLMClient(settings)
        client.chat(MESSAGES)  # the next may start a minute later
        client.deadline = time.monotonic() + 0.3
        with pytest.raises(LLMError, match="limits") as caught:
            client.chat(MESSAGES, call_index=1)
        # it waited to the deadline: the run ends by its budget, not by a failed call
        assert time.monotonic() >= client.deadline and len(server.log) == 1
    assert caught.value.sent["wait_s"] >= 0.25 and caught.value.sent["call_index"] == 1
    assert LLMCall(failed=True, **caught.value.sent).latency_s >= 0.25


def test_the_pace_admits_evenly():
    pace, wait = admit(dict(IDLE), 100.0, 500, requests_per_minute=60, tokens_per_minute=None)
    assert wait == 0.0 and pace["next_request"] == 101.0
    assert admit(pace, 100.4, 500, 60, None)[1] == pytest.approx(0.6)
    pace, _ = admit(dict(IDLE), 100.0, 3000, None, 6000)  # half a minute's tokens
    assert admit(pace, 110.0, 1, None, 6000)[1] == pytest.approx(20.0)
    assert admit(dict(IDLE), 0.0, 10**9, None, 10)[1] == 0.0  # too large a request goes alone


def test_limits_are_validated_and_change_no_config_id(monkeypatch):
    with pytest.raises(ValueError, match="max_concurrent_requests"):
        LLMSettings(max_concurrent_requests=0)
    with pytest.raises(ValueError, match="requests_per_minute"):
        LLMSettings(requests_per_minute=1.5)
    monkeypatch.setenv("INNOLAB_LLM_TOKENS_PER_MINUTE", "many")
    with pytest.raises(ValueError, match="INNOLAB_LLM_TOKENS_PER_MINUTE"):
        LLMSettings.from_env()
    monkeypatch.setenv("INNOLAB_LLM_TOKENS_PER_MINUTE", "90000")
    monkeypatch.setenv("INNOLAB_LLM_MAX_CONCURRENT_REQUESTS", "8")
    limited = LLMSettings.from_env()
    assert limited.limits() == {"max_concurrent_requests": 8, "tokens_per_minute": 90000}
    plain = LLMSettings(max_tokens=limited.max_tokens)  # the same model settings, no limits
    assert "tokens_per_minute" not in plain.model_dump()  # unset: config.json as before
    ids = {config_id(RunConfig(task="circle-packing-26", policy="m:f", llm=s.model_dump()))
           for s in (plain, limited.model_copy(update={"api_key_env": plain.api_key_env}))}
    assert len(ids) == 1
    assert RunConfig(task="t", policy="m:f", llm=limited.model_dump()).as_dict()["llm"][
        "max_concurrent_requests"] == 8  # recorded in config.json, but not in the id


def test_a_spec_states_the_limits_for_its_runs_and_the_ids_stay(monkeypatch):
    from innolab.sweep.spec import SpecError, expand, parse_spec

    for name in ("MAX_CONCURRENT_REQUESTS", "REQUESTS_PER_MINUTE", "TOKENS_PER_MINUTE"):
        monkeypatch.delenv(f"INNOLAB_LLM_{name}", raising=False)
    base = {"task": "circle-packing-26", "agent": "codeact", "base_url": "http://127.0.0.1:9/v1",
            "model": "fake", "budget": "10s"}
    spec = {"name": "capped", "base": {**base, "max_concurrent_requests": 8,
                                       "requests_per_minute": 500},
            "include": [{"agent": "baseline", "base_url": None, "model": None}]}
    with pytest.warns(UserWarning, match="max_concurrent_requests, requests_per_minute"):
        capped = expand(parse_spec(spec))
    plain = expand(parse_spec({**spec, "base": base}))
    agent, control = (c.config for c in capped)
    assert agent["llm"]["max_concurrent_requests"] == 8
    assert agent["llm"]["requests_per_minute"] == 500
    assert "tokens_per_minute" not in agent["llm"]  # unset: not written
    assert control["llm"] is None  # the baseline has no requests to pace (the warning says so)
    assert [c.config_id for c in capped] == [c.config_id for c in plain]
    monkeypatch.setenv("INNOLAB_LLM_MAX_CONCURRENT_REQUESTS", "2")  # the spec wins over the env
    with pytest.warns(UserWarning):
        assert expand(parse_spec(spec))[0].config["llm"]["max_concurrent_requests"] == 8
    with pytest.raises(SpecError, match="max_concurrent_requests"):
        parse_spec({**spec, "base": {**base, "max_concurrent_requests": 0}})
    with pytest.raises(SpecError, match="cannot be a factor"):
        parse_spec({**spec, "grid": {"requests_per_minute": [100, 500]}})


def test_each_run_hands_its_own_environment_to_its_kernels_only(tmp_path):
    """Two runs at once on one worker (a worker with two threads): neither touches the worker's
    environment, and the kernel each run is handed sees that run's id."""
    import nbformat

    from innolab import notebooks
    from innolab.sweep import kernel
    from innolab.sweep.pool import KernelPool

    source = tmp_path / "run.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import os\nprint(os.environ.get({kernel.RUN_VAR!r}))")]), source)
    pool = KernelPool(tmp_path, ahead=2, scheduler="tcp://127.0.0.1:1")
    try:
        first, second = pool.take(), pool.take()
        seen = {}
        for run, taken in (("run-a", first), ("run-b", second)):
            taken.hand_over({}, run)
            assert kernel.RUN_VAR not in os.environ and kernel.LLM_VAR not in os.environ
            executed = tmp_path / f"{run}.ipynb"
            notebooks.execute(source, executed, kernel_manager=taken.manager)
            seen[run] = nbformat.read(executed, as_version=4).cells[0].outputs[0]["text"].strip()
            pool.retire(taken)
    finally:
        pool.close()
    assert seen == {"run-a": "run-a", "run-b": "run-b"}


def test_a_kernel_watches_the_worker_that_launched_it_not_its_parent_now(monkeypatch):
    """A kernel whose parent died while it started is reparented before `prepare` runs: it must
    watch the pid it was launched by (and so end at once), not whichever process adopted it."""
    from innolab.sweep import kernel, orphans

    watched = []
    monkeypatch.setattr(orphans, "watch", watched.append)
    monkeypatch.setattr(kernel, "warm", lambda: ())
    monkeypatch.setenv(kernel.PARENT_VAR, "424242")
    kernel.prepare()
    assert watched == [424242] and watched[0] != os.getppid()
    monkeypatch.delenv(kernel.PARENT_VAR)
    kernel.prepare()  # not a sweep's kernel: nothing watched
    assert watched == [424242]
