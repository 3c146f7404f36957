"""Sampling that varies and replays: per-call seeds and cache keys, the settings sent in every
llm_call event, and runs that stop calling tools end as stalled instead of looping."""

import json
from pathlib import Path

import tests.fake_llm as fake_llm
from innolab import runner, traces
from innolab.llm.client import LLMClient, call_seed
from innolab.llm.settings import LLMSettings
from tests.fake_llm import FakeLLM


def reflect_forever(request, code=""):
    reply = {
        "reflection": "thinking",
        "research_plan_and_status": "1. think",
        "fact_check": "none",
        "thought": "reflect",
        "action": "Reflection",
        "action_input": {"file": "x", "content": ""},
    }
    return {"role": "assistant", "content": json.dumps(reply)}


def test_mlab_that_only_reflects_ends_stalled_and_never_loops_on_the_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(fake_llm, "play", reflect_forever)
    with FakeLLM() as server:
        config = runner.agent_config(
            "mlab",
            "circle-packing-26",
            temperature=0.7,
            seed=3,
            budget_s=120,
            max_steps=200,
            settings={"base_url": server.base_url, "model": "fake", "backoff_s": 0.0},
        )
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    events = traces.read_events(Path(outcome["run_dir"]))
    calls = [e for e in events if e.type == "llm_call"]
    # Reflection is a model call now (over the research log), and a step may ask again after one: 5
    # idle steps still end the run, each call numbered, seeded anew, sent once and never served from
    # the cache
    assert outcome["reason"] == "stalled" and 5 <= len(calls) <= 5 * 6
    assert [e.call_index for e in calls] == list(range(len(calls)))
    assert len({e.seed for e in calls}) == len(calls) and all(e.temperature == 0.7 for e in calls)
    assert not any(e.cached for e in calls) and len(server.requests) == len(calls)


def test_identical_requests_sample_anew_and_replay_exactly(tmp_path):
    from innolab.llm.cache import ResponseCache

    with FakeLLM() as server:
        client = LLMClient(
            LLMSettings(base_url=server.base_url, model="fake", seed=7),
            ResponseCache(tmp_path / "c.sqlite"),
        )
        messages = [{"role": "user", "content": "same question"}]
        first, second = client.chat(messages, call_index=0), client.chat(messages, call_index=1)
        again = client.chat(messages, call_index=1)
    assert (
        not first.cached and not second.cached and again.cached
    )  # a new call samples, a replayed one repeats
    sent = [r["seed"] for r in server.requests]
    assert sent == [call_seed(7, 0), call_seed(7, 1)] and sent[0] != sent[1]
    assert first.event()["seed"] == call_seed(7, 0) and again.event()["call_index"] == 1


def test_the_settings_in_force_are_settled_once_and_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("INNOLAB_LLM_TEMPERATURE", "0.3")
    monkeypatch.setenv("INNOLAB_LLM_API_KEY", "sk-secret-never-written")
    with FakeLLM() as server:
        config = runner.agent_config(
            "codeact",
            "circle-packing-26",
            seed=4,
            budget_s=120,
            max_steps=6,
            settings={"base_url": server.base_url, "model": "fake"},
            initial_solution="print('prior')\n",
            prior_name="grid",
        )
        monkeypatch.setenv(
            "INNOLAB_LLM_TEMPERATURE", "1.5"
        )  # changed after settling: must not take effect
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    folder = Path(outcome["run_dir"])
    written = json.loads((folder / "config.json").read_text())
    assert "extra" not in written and "settings" not in written["policy_args"]
    assert (
        written["llm"]["temperature"] == 0.3
        and written["llm"]["seed"] == 4
        and "api_key" not in written["llm"]
    )
    assert (
        written["endpoint"] == server.base_url.split("//")[1].split("/")[0]
        and written["model_reported"] == "fake"
    )
    assert (
        written["prior_solution"]["name"] == "grid"
        and len(written["prior_solution"]["sha256"]) == 64
    )
    assert (
        "sk-secret"
        not in (folder / "config.json").read_text() + (folder / "trace.jsonl").read_text()
    )
    events = traces.read_events(folder)
    assert events[0].config == written
    assert all(e.temperature == 0.3 for e in events if e.type == "llm_call")
