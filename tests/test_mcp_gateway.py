"""The run's tools over MCP and the run's model gateway, each on its own.

The MCP server lists the scaffolds' own tool specifications, hands each call to the bridge (a
thread plays the run loop here), answers bad arguments and calls after the run with a tool error,
refuses a client without the run's token, and serves the same tools over stdio. The gateway
refuses a client without the run's key and a request past the budget, caps every request's
`max_tokens`, emulates tool calls (plain and streamed) under a JSON schema, folds a conversation
beyond the model's context, and records each request it sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
import time
from typing import Any

import httpx
import pytest

from innolab.agents.mcp_tools import MCP_TOOLS, Bridge, ToolServer, tool_specs
from innolab.gym.tools import TOOL_SPECS, ToolResult
from innolab.llm.client import LLMClient, estimate_tokens
from innolab.llm.gateway import Budget, Gateway
from innolab.llm.settings import LLMSettings
from tests.fake_llm import FakeLLM

# ---------------------------------------------------------------------------------------- MCP


def run_loop(bridge: Bridge, stop: threading.Event) -> threading.Thread:
    """A stand-in for the run loop: each call taken is answered with its tool's name and args."""
    def serve() -> None:
        while not stop.is_set():
            calls = bridge.take(0.1)
            bridge.deliver([ToolResult(c.id, c.name, f"ran {c.name} {json.dumps(c.arguments)}",
                                       True) for c in calls])
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


async def _session_calls(url: str, token: str, calls: list[tuple[str, dict]]) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
            streamable_http_client(url, http_client=http) as (read, write, _), \
            ClientSession(read, write) as session:
        await session.initialize()
        listed = (await session.list_tools()).tools
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
        return listed, results


def test_the_mcp_server_serves_the_scaffolds_tools_each_call_a_step():
    bridge, stop = Bridge(), threading.Event()
    server = ToolServer(bridge)
    url = server.start()
    loop = run_loop(bridge, stop)
    try:
        listed, results = asyncio.run(_session_calls(url, server.token, [
            ("bash", {"command": "echo hi"}),
            ("write_file", {"path": "a.txt"}),  # content is required
            ("bash", {"command": "echo hi", "colour": "red"}),  # not a field of bash
        ]))
    finally:
        stop.set()
        loop.join()
    specs = {s["function"]["name"]: s["function"] for s in TOOL_SPECS}
    assert [t.name for t in listed] == list(MCP_TOOLS)
    for tool in listed:  # the same names, descriptions and schemas the scaffolds use
        assert tool.description == specs[tool.name]["description"]
        assert tool.inputSchema == specs[tool.name]["parameters"]
    ran, missing, extra = results
    assert not ran.isError and ran.content[0].text == 'ran bash {"command": "echo hi"}'
    assert missing.isError and "content" in missing.content[0].text
    assert extra.isError and "colour" in extra.content[0].text
    assert bridge.calls == 1  # only the good call reached the run loop
    server.close()


def test_a_call_after_the_run_ended_is_a_tool_error_and_a_stranger_is_refused():
    bridge = Bridge()
    server = ToolServer(bridge)
    url = server.start()
    try:
        bridge.close("the run's wall-clock budget is spent: no more tool calls")
        _, (late,) = asyncio.run(_session_calls(url, server.token, [("bash", {"command": "ls"})]))
        assert late.isError and "budget is spent" in late.content[0].text
        stranger = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                              headers={"Authorization": "Bearer guess"}, timeout=10)
        assert stranger.status_code == 401
    finally:
        server.close()


def test_the_tools_over_stdio_relay_to_the_runs_server():
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    bridge, stop = Bridge(), threading.Event()
    server = ToolServer(bridge)
    url = server.start()
    loop = run_loop(bridge, stop)

    async def over_stdio() -> Any:
        params = StdioServerParameters(command=sys.executable,  # the token never in argv
                                       args=["-m", "innolab.agents.mcp_tools", url],
                                       env={**os.environ, "INNOLAB_MCP_TOKEN": server.token})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            return listed, await session.call_tool("list_files", {"path": "."})

    try:
        listed, result = asyncio.run(over_stdio())
    finally:
        stop.set()
        loop.join()
        server.close()
    assert [t.name for t in listed] == list(MCP_TOOLS)
    assert result.content[0].text == 'ran list_files {"path": "."}'


# ------------------------------------------------------------------------------------ gateway


@pytest.fixture
def upstream():
    with FakeLLM() as server:
        yield server


def make_gateway(server: FakeLLM, **kwargs: Any) -> tuple[Gateway, list]:
    settings = LLMSettings(base_url=server.base_url, model="fake", max_tokens=96, backoff_s=0.0)
    served: list = []
    gateway = Gateway(settings, LLMClient(settings), record=served.append, **kwargs)
    gateway.start()
    return gateway, served


def chat(gateway: Gateway, body: dict, key: str | None = None) -> httpx.Response:
    return httpx.post(f"{gateway.url}/chat/completions", json=body, timeout=60,
                      headers={"Authorization": f"Bearer {key or gateway.key}"})


TOOLS = [{"type": "function", "function": spec} for spec in tool_specs()]


def test_the_gateway_refuses_strangers_and_requests_past_the_budget(upstream):
    spent = Budget(deadline=time.monotonic() - 1)
    gateway, served = make_gateway(upstream, budget=lambda: spent)
    try:
        assert chat(gateway, {"messages": []}, key="sk-real").status_code == 401
        models = httpx.get(f"{gateway.url}/models", timeout=10,
                           headers={"Authorization": f"Bearer {gateway.key}"}).json()
        assert [m["id"] for m in models["data"]] == ["fake"]
        late = chat(gateway, {"model": "x", "messages": [{"role": "user", "content": "hi"}]})
        assert late.status_code == 402 and "wall-clock budget is spent" in late.text
        assert not served and not [r for r in upstream.requests if "messages" in r]
    finally:
        gateway.close()


def test_the_gateway_caps_tokens_numbers_calls_and_emulates_tool_calls(upstream):
    gateway, served = make_gateway(upstream, emulate_tools=True)
    try:
        body = {"model": "anything", "max_tokens": 4000, "tools": TOOLS,
                "messages": [{"role": "system", "content": "You are an agent."},
                             {"role": "user", "content": "Pack the circles."}]}
        first = chat(gateway, body).json()
        (call,) = first["choices"][0]["message"]["tool_calls"]
        assert call["function"]["name"] == "python_session"
        assert "circles" in json.loads(call["function"]["arguments"])["code"]
        # the tool's result and a second turn: the call and the result rendered as text
        body["messages"] += [first["choices"][0]["message"],
                             {"role": "tool", "tool_call_id": call["id"], "name": call["function"]
                              ["name"], "content": "wrote 26 circles"}]
        body["stream"] = True
        with httpx.stream("POST", f"{gateway.url}/chat/completions", json=body, timeout=60,
                          headers={"Authorization": f"Bearer {gateway.key}"}) as streamed:
            lines = [line for line in streamed.iter_lines() if line.startswith("data: ")]
        assert lines[-1] == "data: [DONE]"
        delta = json.loads(lines[0][6:])["choices"][0]["delta"]
        assert delta["tool_calls"][0]["function"]["name"] == "submit"
    finally:
        gateway.close()
    sent = [r for r in upstream.requests if "messages" in r]
    assert [r["max_tokens"] for r in sent] == [96, 96]  # capped at the run's reply cap
    assert all("tools" not in r and r["response_format"]["json_schema"]["name"] == "tool_call"
               for r in sent)
    second = sent[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[0]["content"].startswith("You act by calling tools.")  # then the framework's
    assert "Result of python_session:\nwrote 26 circles" in second[-1]["content"]
    assert [s.completion.call_index for s in served] == [0, 1]
    assert len({r["seed"] for r in sent}) == 2  # each call seeded anew by the run's rule


def test_a_conversation_beyond_the_context_is_folded_not_refused(upstream):
    gateway, served = make_gateway(upstream, context_tokens=400)
    try:
        messages = [{"role": "system", "content": "You are an agent."},
                    {"role": "user", "content": "The task."}]
        for turn in range(30):
            messages += [{"role": "assistant", "content": f"step {turn} " + "x" * 200},
                         {"role": "user", "content": f"observation {turn}"}]
        reply = chat(gateway, {"messages": messages})
    finally:
        gateway.close()
    assert reply.status_code == 200
    sent = [r for r in upstream.requests if "messages" in r][-1]["messages"]
    assert sent[:2] == messages[:2] and "were folded to fit" in sent[2]["content"]
    assert len(sent) < len(messages) and sent[-1] == messages[-1]
    assert served[0].folded > 0


def _turns(n: int, chars: int = 200) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": "You are an agent."},
                {"role": "user", "content": "The task."}]
    for turn in range(n):
        messages += [{"role": "assistant", "content": f"step {turn} " + "x" * chars},
                     {"role": "user", "content": f"observation {turn}"}]
    return messages


def _estimate(messages: list[dict]) -> int:
    return sum(estimate_tokens(json.dumps(m)) for m in messages)


def test_the_fold_learns_the_models_own_count_from_its_replies():
    """A model that counts twice innolab's estimate (1.75 characters a token): its first reply's
    usage raises the factor, so the next conversation, within the room by the estimate but not by
    the model's count, is folded before it is sent, and never refused."""
    with FakeLLM(chars_per_token=1.75, context_tokens=3000) as server:
        gateway, served = make_gateway(server, context_tokens=3000)
        try:
            first = _turns(4)  # about 300 tokens by the estimate, 600 by the model's count
            assert chat(gateway, {"messages": first}).status_code == 200
            assert 1.9 < gateway.tokens_per_estimate < 2.1
            second = _turns(20)  # within the room by the estimate, twice it by the model's count
            assert 0.5 * (3000 - 96) < _estimate(second) < 0.97 * (3000 - 96)
            assert chat(gateway, {"messages": second}).status_code == 200
        finally:
            gateway.close()
    sent = [r for r in server.requests if "messages" in r]
    assert len(sent) == 2 and sent[0]["messages"] == first
    assert "were folded to fit" in sent[1]["messages"][2]["content"]
    assert server.prompt_tokens(sent[1]) <= 3000 - 96  # within the context by the model's count
    assert [s.folded > 0 for s in served] == [False, True]


def test_a_growing_conversation_keeps_its_cut_while_it_fits(upstream):
    """Once folded, the next requests of the conversation keep the same cut (the same prefix, so
    the server's prompt cache stays warm) until they outgrow the room; then a new cut leaves room
    to grow again."""
    gateway, served = make_gateway(upstream, context_tokens=3000)
    try:
        for turns in (40, 41, 42, 70):
            assert chat(gateway, {"messages": _turns(turns)}).status_code == 200
    finally:
        gateway.close()
    sent = [r["messages"] for r in upstream.requests if "messages" in r]
    dropped = [s.folded for s in served]
    assert dropped[0] > 0 and dropped[0] == dropped[1] == dropped[2] < dropped[3]
    assert sent[1][:len(sent[0])] == sent[0] and sent[2][:len(sent[1])] == sent[1]
    room = (3000 - 96) * 0.97
    assert _estimate(sent[0]) <= 0.7 * room + 30 and _estimate(sent[3]) <= 0.7 * room + 30
    assert all(_estimate(m) <= room for m in sent)


def test_a_request_the_model_refuses_for_its_context_is_folded_again_and_sent_once_more():
    """The estimate fits, the model (llama.cpp's words) says the request is over its context: the
    factor rises by what it said, the conversation is folded again and sent once more under the
    same number, and the refusal is the first of the reply's attempts; a second refusal in a row
    is the model's failure (502), never a loop."""
    with FakeLLM(faults=["context"], chars_per_token=1.75, context_tokens=3000) as server:
        gateway, served = make_gateway(server, context_tokens=3000)
        try:
            messages = _turns(20)
            reply = chat(gateway, {"messages": messages})
        finally:
            gateway.close()
    assert reply.status_code == 200, reply.text
    first, again = [r for r in server.requests if "messages" in r]
    assert first["messages"] == messages and first["seed"] == again["seed"]  # one call, resent
    assert "were folded to fit" in again["messages"][2]["content"]
    assert server.prompt_tokens(again) <= 3000 - 96
    assert gateway.tokens_per_estimate >= 1.05 * server.prompt_tokens(first) / _estimate(messages)
    (one,) = served
    assert one.completion is not None and one.completion.call_index == 0 and one.folded > 0
    refusal = one.completion.attempts[0]
    assert "exceeds the available context size (3000 tokens)" in refusal["error"]
    assert refusal["refolded"]
    # a refusal that names a smaller context than the one assumed: the gateway takes it
    with FakeLLM(faults=["context"], chars_per_token=3.5, context_tokens=1500) as server:
        gateway, served = make_gateway(server, context_tokens=3000)
        try:
            reply = chat(gateway, {"messages": _turns(20)})
        finally:
            gateway.close()
    assert reply.status_code == 200, reply.text
    assert gateway.context_tokens() == 1500
    assert gateway.context_source == "the model's refusal of a request"
    assert server.prompt_tokens([r for r in server.requests if "messages" in r][-1]) <= 1500
    with FakeLLM(faults=["context", "context"], chars_per_token=1.75,
                 context_tokens=3000) as server:
        gateway, served = make_gateway(server, context_tokens=3000)
        try:
            reply = chat(gateway, {"messages": _turns(20)})
        finally:
            gateway.close()
    assert reply.status_code == 502 and "context size" in reply.json()["error"]["message"]
    assert len([r for r in server.requests if "messages" in r]) == 2
    assert [s.completion for s in served] == [None]


def test_a_tool_choice_is_sent_on_to_native_tool_calls_and_required_by_the_emulation(upstream):
    """smolagents sends tool_choice="required": never dropped, nor a named function."""
    named = {"type": "function", "function": {"name": "submit"}}
    messages = [{"role": "user", "content": "Pack the circles."}]
    native, _ = make_gateway(upstream)
    emulating, served = make_gateway(upstream, emulate_tools=True)
    try:
        for choice in ("required", named, "auto"):
            reply = chat(native, {"messages": messages, "tools": TOOLS, "tool_choice": choice})
            assert reply.status_code == 200, reply.text
        sent = [r for r in upstream.requests if "messages" in r]
        assert [r.get("tool_choice") for r in sent] == ["required", named, None]
        assert all(r["tools"] for r in sent)
        for choice in ("required", named):
            reply = chat(emulating, {"messages": messages, "tools": TOOLS, "tool_choice": choice})
            (call,) = reply.json()["choices"][0]["message"]["tool_calls"]
        assert call["function"]["name"] == "submit"  # the named function: the only one allowed
        required, chosen = [r for r in upstream.requests if "messages" in r][3:]
        alternatives = required["response_format"]["json_schema"]["schema"]["anyOf"]
        assert len(alternatives) == len(TOOLS)
        assert all(a["required"] == ["name", "arguments"] for a in alternatives)  # a call
        schema = chosen["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["name"]["enum"] == ["submit"]
        assert schema["required"] == ["name", "arguments"]
        assert "tool_choice" not in required and "tool_choice" not in chosen
        assert [s.emulated for s in served] == [True, True]
        for choice, words in (("sometimes", "is required"),
                              ({"type": "function", "function": {"name": "fly"}}, "'fly'"),
                              ({"type": "function"}, "is required")):
            refused = chat(native, {"messages": messages, "tools": TOOLS, "tool_choice": choice})
            assert refused.status_code == 400
            message = refused.json()["error"]["message"]
            assert message.startswith("tool_choice:") and words in message
        alone = chat(native, {"messages": messages, "tool_choice": "required"})
        assert alone.status_code == 400 and "tool_choice" in alone.json()["error"]["message"]
    finally:
        native.close()
        emulating.close()


def test_an_oversized_last_message_is_cut_from_the_middle_to_fit_the_context(upstream):
    """What _fold keeps (system, first user, last message) can be over the room by itself."""
    gateway, served = make_gateway(upstream, context_tokens=2000)
    long = "BEGIN " + "".join(f"line {i}\n" for i in range(5000)) + " END"
    assert len(long) > 40_000
    messages = [{"role": "system", "content": "You are an agent."},
                {"role": "user", "content": "The task."},
                {"role": "assistant", "content": "I ran it."},
                {"role": "user", "content": long}]
    try:
        reply = chat(gateway, {"messages": messages})
    finally:
        gateway.close()
    assert reply.status_code == 200, reply.text
    sent = [r for r in upstream.requests if "messages" in r][-1]
    assert sum(estimate_tokens(json.dumps(m)) for m in sent["messages"]) <= 2000 - 96
    last = sent["messages"][-1]["content"]
    match = re.search(r"\n\[\.\.\. (\d+) characters were cut here", last)
    assert match, last[:300]
    start, end = last[:match.start()], last[last.index("...]\n") + 5:]
    assert long.startswith(start) and long.endswith(end) and start and end.endswith(" END")
    assert len(start) + int(match.group(1)) + len(end) == len(long)  # the count is exact
    assert sent["messages"][:2] == messages[:2]
    assert served[0].completion is not None
