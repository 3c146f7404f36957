"""The LLM layer against a scripted OpenAI-compatible server: retries, cache, parsing, settings,
bounded fields."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from innolab.llm import LLMClient, LLMError, LLMSettings
from innolab.llm.cache import ResponseCache
from innolab.llm.client import (
    MIN_PAYLOAD_CHARS,
    has_lengths,
    json_schema,
    parse_json_object,
    parse_json_prefix,
    payload_chars,
    string_fields,
    text,
    without_lengths,
)
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
    replay = LLMClient(
        settings("http://127.0.0.1:9/v1"), ResponseCache(tmp_path / "c.sqlite"), replay_only=True
    )
    assert replay.chat(MESSAGES).text == "hello"
    with pytest.raises(LLMError, match="replay"):
        replay.chat([{"role": "user", "content": "something new"}])


def test_cost_from_the_price_table():
    with FakeLLM() as server:
        completion = LLMClient(settings(server.base_url, price_in=2.0, price_out=10.0)).chat(
            MESSAGES
        )
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
        ('{broken} then {"ok": true}', {"ok": True}),
    ],
)
def test_robust_json_parser(text, expected):
    assert parse_json_object(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"thought": "x", "action": "python", "code": "print(10111',
            {"thought": "x", "action": "python", "code": "print(10111"},
        ),
        ('{"a": {"file": "x.py", "req', {"a": {"file": "x.py"}}),
        ("no object", None),
        ('{"', None),
    ],
)
def test_a_reply_cut_at_the_cap_is_read_as_far_as_it_goes(text, expected):
    assert parse_json_prefix(text) == expected


def test_parser_says_when_there_is_no_object():
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object("just prose")


# ---------------------------------------------------------------------------- bounded string fields

BOUNDED = json_schema(
    "probe",
    {"thought": text(40), "action": {"type": "string", "enum": ["python", "bash"]}},
    ["thought", "action"],
)
RAMBLE = [
    {
        "role": "user",
        "content": "In thought, count from 1 to 500 in full: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...",
    }
]


def test_string_limits_and_payload_sizes():
    from innolab.llm.client import STRUCTURE_TOKENS, lead_chars

    assert text(40, "why") == {"type": "string", "maxLength": 40, "description": "why"}
    fields = {"a": 100, "b": 300}
    assert lead_chars(fields, 512, 16) == fields  # they fit: as written
    small = lead_chars(fields, 256, 16)  # in proportion, within the room at one token a character
    assert small == {"a": 48, "b": 144} and sum(small.values()) <= 256 - STRUCTURE_TOKENS - 16
    assert lead_chars(fields, 40, 16) == {"a": 8, "b": 8}  # no room: the floor
    with pytest.raises(ValueError, match="max_chars"):
        text(0)
    assert (
        payload_chars(4096, 160)
        > payload_chars(512, 160)
        > payload_chars(512, 1000)
        >= MIN_PAYLOAD_CHARS
    )
    nested = json_schema(
        "n", {"a": text(10), "b": {"type": "object", "properties": {"c": text(5)}}}, ["a", "b"]
    )
    assert [f["maxLength"] for f in string_fields(nested)] == [10, 5] and has_lengths(nested)
    assert not has_lengths(without_lengths(nested)) and has_lengths(
        nested
    )  # a copy: the original keeps them


def test_the_embedded_server_enforces_max_length():
    """The grammar that the embedded server makes of a JSON schema honours maxLength: a model told
    to ramble in a field stops at the limit and closes the reply, far below the token cap
    (unbounded, the same greedy request rambles on)."""
    pytest.importorskip("xllamacpp")
    client = LLMClient(LLMSettings(max_tokens=200, temperature=0.0, seed=1))
    bounded = client.chat(RAMBLE, response_format=BOUNDED)
    reply = parse_json_object(bounded.text)
    assert len(reply["thought"]) <= 40 and reply["action"] in ("python", "bash")
    assert bounded.completion_tokens < 80
    free = client.chat(RAMBLE, response_format=without_lengths(BOUNDED))
    assert (
        free.completion_tokens > bounded.completion_tokens
        and len(free.text) > len(bounded.text) + 40
    )


class NoLengthsEndpoint:
    """An OpenAI-compatible endpoint whose strict mode rejects maxLength (as some hosted APIs do),
    or every schema."""

    def __init__(self, reject_every_schema: bool = False) -> None:
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                schema = body.get("response_format")
                if schema and (reject_every_schema or "maxLength" in json.dumps(schema)):
                    reason = (
                        "response_format is not supported"
                        if reject_every_schema
                        else "'maxLength' is not permitted"
                    )
                    return self._send(
                        400,
                        {
                            "error": {
                                "message": f"Invalid schema for response_format: {reason}",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                message = {
                    "role": "assistant",
                    "content": json.dumps({"thought": "ok", "action": "bash"}),
                }
                return self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "fake",
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("reject_every_schema", [False, True])
def test_an_endpoint_rejecting_max_length_gets_the_schema_without_it(reject_every_schema):
    endpoint = NoLengthsEndpoint(reject_every_schema)
    try:
        client = LLMClient(settings(endpoint.url))
        first = client.chat(MESSAGES, response_format=BOUNDED)
        client.chat(MESSAGES, response_format=BOUNDED)
    finally:
        endpoint.close()
    assert parse_json_object(first.text) == {"thought": "ok", "action": "bash"}
    sent = [r.get("response_format") for r in endpoint.requests]
    if (
        reject_every_schema
    ):  # without limits first, then without a schema: two refusals, then plain requests
        assert [a["error"] for a in first.attempts] == [
            "maxLength unsupported",
            "response_format unsupported",
        ]
        assert sent[1] == without_lengths(BOUNDED) and sent[2:] == [None, None]
    else:  # the schema stays, only its limits go, for the rest of the client's calls
        assert [a["error"] for a in first.attempts] == ["maxLength unsupported"]
        assert sent == [BOUNDED, without_lengths(BOUNDED), without_lengths(BOUNDED)]


def test_the_embedded_model_threads_are_fixed_unless_set(monkeypatch):
    from innolab.llm import local

    monkeypatch.delenv("INNOLAB_LOCAL_MODEL_THREADS", raising=False)
    monkeypatch.setattr(local.os, "getloadavg", lambda: (0.1, 0.1, 0.1))
    assert (
        local.default_threads() == 1
    )  # whatever the load: a seed's replies depend on the thread count
    monkeypatch.setenv("INNOLAB_LOCAL_MODEL_THREADS", "2")
    assert local.default_threads() == 2
    for wrong in ("0", "two"):
        monkeypatch.setenv("INNOLAB_LOCAL_MODEL_THREADS", wrong)
        with pytest.raises(LLMError, match="INNOLAB_LOCAL_MODEL_THREADS"):
            local.default_threads()


def test_the_embedded_model_has_its_own_reply_cap(monkeypatch):
    """Resolved for the embedded model, a reply is capped at EMBEDDED_MAX_TOKENS unless a cap is
    given (argument or variable); an endpoint keeps 512; settings read back keep what was
    written."""
    import os

    from innolab import runner
    from innolab.llm.settings import EMBEDDED_MAX_TOKENS

    for name in [n for n in os.environ if n.startswith("INNOLAB_LLM")]:
        monkeypatch.delenv(name)
    assert EMBEDDED_MAX_TOKENS == 256
    assert LLMSettings.from_env().max_tokens == EMBEDDED_MAX_TOKENS
    assert LLMSettings.from_env(max_tokens=1024).max_tokens == 1024
    assert LLMSettings.from_env(base_url="http://127.0.0.1:9/v1").max_tokens == 512
    assert LLMSettings().max_tokens == 512  # as a config.json written before reads back
    config = runner.config_from_parameters({})
    assert config.as_dict()["llm"]["max_tokens"] == EMBEDDED_MAX_TOKENS
    given = runner.config_from_parameters({"max_tokens": 512})
    assert given.as_dict()["llm"]["max_tokens"] == 512
    monkeypatch.setenv("INNOLAB_LLM_MAX_TOKENS", "300")
    assert LLMSettings.from_env().max_tokens == 300
    monkeypatch.setenv("INNOLAB_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("INNOLAB_LLM_MAX_TOKENS")
    assert LLMSettings.from_env().max_tokens == 512


def test_the_scripted_server_injects_seeded_faults_and_logs_runs():
    from innolab.llm import gate

    def faults_met(seed):
        rates = {"429": 0.2, "500": 0.2, "drop": 0.1}
        with FakeLLM(fault_rates=rates, seed=seed, retry_after=0, latency_s=(0.0, 0.01)) as server:
            client = LLMClient(settings(server.base_url, max_retries=10))
            with gate.labelled("run-a"):
                for i in range(10):
                    client.chat(MESSAGES, call_index=i)
            assert len(server.served()) == 10 and not server.repeated_calls()
            assert {e["run"] for e in server.log} == {"run-a"}
            return [e["fault"] for e in server.log]

    first = faults_met(3)
    assert first == faults_met(3) and first != faults_met(4)  # seeded
    assert {"429", "500", "drop"} <= set(first)
    with pytest.raises(ValueError, match="fault_rates"):
        FakeLLM(fault_rates={"fire": 0.1})


def test_the_scripted_server_has_a_concurrency_cap_of_its_own():
    with FakeLLM(latency_s=1.0, max_concurrent=1, retry_after=2) as server:
        # a timeout well above the reply's 1 s latency: only the cap can fail a request here
        busy, other = (LLMClient(settings(server.base_url, max_retries=0).model_copy(
            update={"timeout_s": 20.0})) for _ in range(2))
        other._sdk()  # made before: its request comes while the first is in flight
        first = threading.Thread(target=busy.chat, args=(MESSAGES,))
        first.start()
        while not server.in_flight:
            time.sleep(0.01)
        with pytest.raises(LLMError, match="429") as caught:
            other.chat(MESSAGES, call_index=1)
        first.join()
    assert server.over_cap == 1 and server.max_in_flight == 2
    assert [e["status"] for e in server.log] == [200, 429]
    assert caught.value.sent["attempts"][0]["error"].startswith("RateLimitError")
