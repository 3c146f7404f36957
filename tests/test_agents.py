"""The three scaffolds on one abstraction, driven by a scripted OpenAI-compatible server and by the
local model."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.runner import agent_config, replay
from tests.fake_llm import FakeLLM

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ["aide", "mlab", "codeact"]


def start(config, tmp_path, **options):
    return Path(runner.start(config, tmp_path / "run", show_progress=False, **options)["run_dir"])


def fake_config(agent, url, runtime="local", **extra):
    return agent_config(
        agent,
        "circle-packing-26",
        budget_s=300,
        runtime=runtime,
        max_steps=12,
        settings={
            "base_url": url,
            "model": "fake",
            "backoff_s": 0.0,
            "timeout_s": 2.0,
            "max_retries": 6,
        },
        **extra,
    )


def check_valid_scored_run(run_dir):
    events = traces.read_events(run_dir)
    assert events[0].type == "run_started" and events[-2].type == "run_finished"
    assert events[-1].type == "score" and sum(e.type == "score" for e in events) == 1
    score = events[-1]
    assert score.valid and score.score == pytest.approx(26 / 12, rel=1e-9)
    assert any(e.type == "llm_call" for e in events)
    return events


@pytest.mark.parametrize("agent", AGENTS)
def test_scaffold_reaches_a_valid_scored_submission_local(agent, tmp_path):
    with FakeLLM() as server:
        outcome = runner.start(
            fake_config(agent, server.base_url), tmp_path / "run", show_progress=False
        )
    run_dir = Path(outcome["run_dir"])
    events = check_valid_scored_run(run_dir)
    if agent == "aide":
        nodes = [e for e in events if e.type == "node"]
        assert nodes and nodes[0].valid and nodes[0].metric == pytest.approx(26 / 12, rel=1e-9)


@pytest.mark.docker
@pytest.mark.parametrize("agent", AGENTS)
def test_scaffold_reaches_a_valid_scored_submission_docker(
    agent, tmp_path, docker_client, base_image
):
    with FakeLLM() as server:
        run_dir = start(fake_config(agent, server.base_url, runtime="docker"), tmp_path)
    check_valid_scored_run(run_dir)


def test_codeact_with_native_tool_calls(tmp_path):
    with FakeLLM() as server:
        run_dir = start(fake_config("codeact", server.base_url, native_tools=True), tmp_path)
    check_valid_scored_run(run_dir)


@pytest.mark.parametrize("agent", AGENTS)
def test_faults_are_retried_and_traced(agent, tmp_path):
    with FakeLLM(["429", "500", "timeout", "malformed", "drop"], slow_s=3.0) as server:
        outcome = runner.start(
            fake_config(agent, server.base_url), tmp_path / "run", show_progress=False
        )
    run_dir = Path(outcome["run_dir"])
    events = check_valid_scored_run(run_dir)
    retried = [a for e in events if e.type == "llm_call" for a in e.attempts]
    assert len(retried) == 5, retried


def test_unreachable_model_ends_the_run_cleanly(tmp_path):
    with FakeLLM(["500"] * 50) as server:
        config = fake_config("codeact", server.base_url)
        config.llm = config.llm.model_copy(update={"max_retries": 1})
        outcome = runner.start(config, tmp_path / "run", show_progress=False)
    events = traces.read_events(Path(outcome["run_dir"]))
    assert outcome["reason"] == "llm_error" and not outcome["valid"]
    assert events[-2].type == "run_finished" and any(
        e.failed for e in events if e.type == "llm_call"
    )


def test_kill_and_resume_repeats_no_llm_call(tmp_path):
    import json

    # Each program sleeps 1 s, so a kill right after an llm_call event lands inside that step,
    # before its checkpoint.
    with FakeLLM(program_sleep_s=1.0) as server:
        config = fake_config("aide", server.base_url)
        config.max_steps = 6
        run_dir = runner.create_run(config, tmp_path / "run")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"]
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        trace = run_dir / "trace.jsonl"
        while not trace.exists() or trace.read_bytes().count(b'"llm_call"') < 2:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait()
        done = subprocess.run(
            [*command, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
    events = traces.read_events(run_dir)
    calls = [e for e in events if e.type == "llm_call"]
    requests = [json.dumps(r, sort_keys=True) for r in server.requests]
    assert len(requests) == len(set(requests)), "a request reached the endpoint twice"
    assert sum(e.cached for e in calls) >= 1, "the redone step should have been served by the cache"
    assert any(e.type == "run_resumed" for e in events) and events[-1].type == "run_finished"


def test_replay_needs_no_endpoint(tmp_path):
    with FakeLLM() as server:
        first = runner.start(
            fake_config("codeact", server.base_url), tmp_path / "run", show_progress=False
        )
        run_dir = Path(first["run_dir"])
    outcome = replay(run_dir)  # the server is gone: every answer must come from the cache
    assert outcome["score"] == first["score"]
    events = traces.read_events(Path(outcome["run_dir"]))
    assert all(e.cached for e in events if e.type == "llm_call")


EMBEDDED_SEEDS = {
    "aide": 0,
    "mlab": 5,
    "codeact": 6,
}  # mlab seed 5 once spent every call inside one string field; codeact seed 6 writes digits up to
# the cap in every reply: 3 tool calls with a 512-token reply cap, 6-7 with the embedded model's 256


@pytest.mark.parametrize("agent", AGENTS)
def test_every_scaffold_takes_real_steps_on_the_embedded_model(agent, tmp_path):
    """`innolab run --agent A --task circle-packing-26 --max-steps 3 --runtime local --seed S`
    on the embedded model makes a complete trace in which every step's reply reached a tool (3 tool
    calls in 3 steps), within the embedded reply cap, and no reply comes from the cache (every
    call of a fresh run is a new sample). Bounded by steps, not by the clock, so the count does
    not depend on the machine's load; the counts within 60 s of wall clock are a timing,
    measured by tests/benchmarks/bench_stepping.py (results/bench/bench_stepping.json)."""
    pytest.importorskip("xllamacpp")
    from innolab.llm.settings import EMBEDDED_MAX_TOKENS
    from tests.benchmarks.stepping import measure

    result = measure(agent, EMBEDDED_SEEDS[agent], tmp_path, budget_s=900, max_steps=3)
    assert result.reason == "steps", result.reason
    events = traces.read_events(result.run_dir)
    assert events[0].type == "run_started" and [e.type for e in events[-2:]] == [
        "run_finished",
        "score",
    ]
    assert result.tool_calls >= 3, (result, traces.summary(result.run_dir))
    # the embedded model's own reply cap, recorded and kept
    assert events[0].config["llm"]["max_tokens"] == EMBEDDED_MAX_TOKENS == 256
    calls = [e for e in events if e.type == "llm_call" and not e.failed]
    assert max(e.completion_tokens for e in calls) <= EMBEDDED_MAX_TOKENS
    assert calls and not any(e.cached for e in calls)
    assert len({e.call_index for e in calls}) == len(calls) and len({e.seed for e in calls}) == len(
        calls
    )
