"""The LLM layer against a scripted OpenAI-compatible server: retries, cache, parsing, settings."""

import pytest

from innolab.llm import LLMClient, LLMError, LLMSettings
from innolab.llm.cache import ResponseCache
from innolab.llm.client import parse_json_object
from tests.fake_llm import FakeLLM


def settings(url, **extra):
    return LLMSettings(base_url=url, model="fake", timeout_s=1.0, backoff_s=0.0, **extra)


MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("fault", ["429", "500", "timeout", "malformed", "drop"])
def test_retries_each_fault_then_succeeds(fault):
    with FakeLLM([fault], slow_s=2.5) as server:
        client = LLMClient(settings(server.base_url))
        completion = client.chat(MESSAGES)
    assert completion.text == "hello"
    assert len(completion.attempts) == 1 and completion.attempts[0]["attempt"] == 0
    assert completion.prompt_tokens == 100 and completion.completion_tokens == 50


def test_gives_up_after_bounded_retries():
    with FakeLLM(["500"] * 10) as server:
        client = LLMClient(settings(server.base_url, max_retries=2))
        with pytest.raises(LLMError, match="3 attempt"):
            client.chat(MESSAGES)
        assert len(server.requests) == 3


def test_cache_repeats_no_call_and_replay_needs_no_endpoint(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    with FakeLLM() as server:
        client = LLMClient(settings(server.base_url), cache)
        first = client.chat(MESSAGES)
        second = client.chat(MESSAGES)
        assert len(server.requests) == 1
    assert not first.cached and second.cached and second.text == first.text
    replay = LLMClient(settings("http://127.0.0.1:9/v1"), ResponseCache(tmp_path / "c.sqlite"), replay_only=True)
    assert replay.chat(MESSAGES).text == "hello"
    with pytest.raises(LLMError, match="replay"):
        replay.chat([{"role": "user", "content": "something new"}])


def test_cost_from_the_price_table():
    with FakeLLM() as server:
        completion = LLMClient(settings(server.base_url, price_in=2.0, price_out=10.0)).chat(MESSAGES)
    assert completion.cost_usd == pytest.approx((100 * 2.0 + 50 * 10.0) / 1e6)


def test_settings_from_environment(monkeypatch):
    monkeypatch.setenv("INNOLAB_LLM_MODEL", "m1")
    monkeypatch.setenv("INNOLAB_LLM_TEMPERATURE", "0.25")
    s = LLMSettings.from_env(seed=3)
    assert s.model == "m1" and s.temperature == 0.25 and s.seed == 3
    assert LLMSettings.from_env(model="m2").model == "m2"
    with pytest.raises(ValueError, match="temperature"):
        LLMSettings(temperature=5)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure! ```json\n{"a": "x}y"}\n``` done', {"a": "x}y"}),
        ('prefix {"a": {"b": [1, 2]}} suffix {"c": 3}', {"a": {"b": [1, 2]}}),
        ('{"a": "quote \\" inside"}', {"a": 'quote " inside'}),
        ("{broken} then {\"ok\": true}", {"ok": True}),
    ],
)
def test_robust_json_parser(text, expected):
    assert parse_json_object(text) == expected


def test_parser_says_when_there_is_no_object():
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object("just prose")
