"""The run's budgets and the framework's confinement, through the gateway and the bridge.

A run's token and cost budgets (`token_budget`, `cost_budget_usd`) are settings recorded in
config.json and held by the run loop for a scaffold (the run ends at the step that spends them)
and per request by the gateway for a framework (402 naming the budget, before the model is
called; the run then ends with that budget's reason). A client that disconnects cancels the
upstream request, which is recorded as cancelled. Bad requests get 400 naming the field. The
framework's process, where innolab is root, cannot read the runner's environment or the real key,
write the run folder, read the shipped tasks' solutions, or call the embedded model without the
gateway.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from innolab import runner, runspec, traces
from innolab.agents.bridge import ENDED, FrameworkPolicy
from innolab.gym.policy import RunConfig
from innolab.llm.cache import request_key
from innolab.llm.client import Completion, LLMClient
from innolab.llm.gateway import ENDPOINT_CONTEXT, Gateway, Served
from innolab.llm.settings import LLMSettings
from tests.fake_llm import FakeLLM
from tests.framework_limits_drivers import SECRET, build_bridge

ROOT = Path(__file__).resolve().parent.parent
PER_CALL = 150  # FakeLLM's usage of every reply: 100 prompt + 50 completion tokens


def wait_for(condition: Any, what: str, limit_s: float = 60.0) -> None:
    """Poll until `condition()` holds (a bound on a wait, not a measurement)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"waited {limit_s:g} s for {what}"
        time.sleep(0.02)


# ------------------------------------------------------------------------------------ settings


def test_token_and_cost_budgets_are_run_settings_recorded_in_config_json(tmp_path):
    settings = runspec.schema()(agent="codeact", base_url="http://127.0.0.1:9/v1", model="m",
                                token_budget=5000, cost_budget_usd=0.25)
    config = runner.resolve(settings)
    assert (config.max_tokens, config.max_cost_usd) == (5000, 0.25)
    folder = runner.create_run(config, tmp_path / "run")
    recorded = json.loads((folder / "config.json").read_text())
    assert (recorded["max_tokens"], recorded["max_cost_usd"]) == (5000, 0.25)
    unset = runner.resolve(runspec.schema()(agent="codeact", base_url="http://127.0.0.1:9/v1"))
    assert unset.max_tokens is None and unset.max_cost_usd is None  # no limit
    for bad in ({"token_budget": 0}, {"cost_budget_usd": -1.0}):
        with pytest.raises(runspec.SettingsError, match=next(iter(bad))):
            runspec.validate_settings({"agent": "codeact", **bad})


def test_a_scaffold_run_ends_at_its_token_budget(tmp_path):
    """CodeAct on the scripted server: its first call spends more than the budget: `tokens`."""
    with FakeLLM() as server:
        config = runner.resolve(runspec.schema()(
            agent="codeact", base_url=server.base_url, model="fake", budget="120s",
            token_budget=PER_CALL - 50))
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    assert outcome["reason"] == "tokens"
    trace = traces.Trace.read(Path(outcome["run_dir"]))
    assert len(trace.llm_calls) == 1  # the step that spent it was the last
    assert trace.finished.budget["used_tokens"] == PER_CALL


# ---------------------------------------------------------------------- the gateway's budgets


def run_bridge(config: RunConfig, run_dir: Path) -> dict[str, Any]:
    """Execute a test run of the bridge (its policy built here: it is no registered agent)."""
    from innolab.gym.run import create_run, execute

    return execute(create_run(config, run_dir), build_bridge, show_progress=False)


def bridge_config(driver: str, url: str, **more: Any) -> RunConfig:
    """A run of the bridge with a test driver (an unregistered policy, named by its path)."""
    llm = LLMSettings(base_url=url, model="fake", backoff_s=0.0, price_in=1000.0,
                      price_out=1000.0).model_dump(exclude={"api_key"})
    return RunConfig(task="circle-packing-26", policy="innolab.agents.bridge:FrameworkPolicy",
                     agent="test-framework", policy_args={"driver": driver, **UNCONFINED},
                     llm=llm, wall_clock_s=120.0, **more)


# where innolab is not root the framework cannot be confined (no other user): its tests allow it
# to run unconfined there, as a researcher would have to; as root (CI) they do not
UNCONFINED = {"allow_unconfined": True} if os.geteuid() != 0 else {}


def absent(problem: str) -> None:
    """Fail where CI requires the frameworks to run (INNOLAB_REQUIRE_AGENTS=1), else skip."""
    if os.environ.get("INNOLAB_REQUIRE_AGENTS") == "1":
        pytest.fail(f"INNOLAB_REQUIRE_AGENTS=1 but {problem}")
    pytest.skip(problem)


@pytest.mark.parametrize(("limit", "reason", "words"), [
    ({"max_tokens": 2 * PER_CALL + 1}, "tokens", "token budget is spent"),
    ({"max_cost_usd": 0.3 + 1e-6}, "cost", "cost budget is spent"),  # 0.15 USD a call
])
def test_a_framework_run_ends_at_its_budget_the_gateway_refusing_with_402(
        limit, reason, words, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with FakeLLM() as server:
        outcome = run_bridge(bridge_config("tests.framework_spend", server.base_url, **limit),
                             tmp_path / "run")
        sent = [r for r in server.requests if "messages" in r]
    run_dir = Path(outcome["run_dir"])
    assert outcome["reason"] == reason, (run_dir / "framework.log").read_text()[-2000:]
    own = json.loads((run_dir / "framework_counts.json").read_text())
    assert own["refused_status"] == 402 and words in own["refused_message"]
    assert f"its setting: {'token_budget' if reason == 'tokens' else 'cost_budget_usd'}" in \
        own["refused_message"]
    trace = traces.Trace.read(run_dir)
    # three calls: the budget allows two and a bit; the third goes past it, the fourth is refused
    # before the model is called (one request over at most)
    assert len(sent) == len(trace.llm_calls) == own["model_calls"] == 3
    assert [c.call_index for c in trace.llm_calls] == [0, 1, 2]
    assert trace.finished.budget["used_tokens"] == 3 * PER_CALL
    counts = json.loads((run_dir / "framework.json").read_text())
    assert counts["gateway_requests"] == 3 and counts["gateway_refused"] == {reason: 1}
    assert counts["tool_call_mode"] == "native" and counts["tool_call_mode_given"] == "auto"
    assert counts["context_tokens"] == ENDPOINT_CONTEXT and "default" in counts["context_source"]
    assert set(counts["libraries"]) == {"mcp", "openai", "litellm"}


def test_a_tool_call_after_the_run_ended_says_which_budget():
    policy = FrameworkPolicy("tests.framework_spend", settings=LLMSettings(
        base_url="http://127.0.0.1:9/v1", model="fake"))
    for reason, words in (("tokens", "token budget"), ("cost", "cost budget"),
                          ("wall_clock", "wall-clock budget"), ("steps", "step limit")):
        policy._bridge.closed = None
        policy.close(reason=reason)
        assert words in policy._bridge.closed and ENDED[reason] == policy._bridge.closed
        late = policy._bridge.call("bash", {"command": "ls"})
        assert late.error == ENDED[reason]


def test_a_resumed_framework_numbers_its_calls_on_without_a_repeat_or_a_gap():
    """The checkpoint's call count is that of the calls in the trace, failed ones included: a call
    recorded after the last step (not yet in the trace) is numbered again after a resume."""
    policy = FrameworkPolicy("tests.framework_spend", settings=LLMSettings(
        base_url="http://127.0.0.1:9/v1", model="fake"))

    def done(index: int) -> Served:
        return Served(Completion("ok", [], 100, 50, 0.0, False, f"k{index}", call_index=index))

    policy._record(Served(None, "boom", {"call_index": 0, "seed": 1}))  # a failed call
    policy._record(done(1))
    stepped = policy._action([])
    assert [e.call_index for e in stepped.events] == [0, 1] and stepped.events[0].failed
    policy._record(done(2))  # after the step: not in the trace at its checkpoint
    checkpoint = policy.state()
    assert checkpoint["llm_calls"] == 2
    resumed = FrameworkPolicy("tests.framework_spend", settings=LLMSettings(
        base_url="http://127.0.0.1:9/v1", model="fake"))
    resumed.load_state(checkpoint)
    assert resumed.memory.llm_calls == 2  # its gateway's first index: 0, 1 in the trace, then 2


# ------------------------------------------------------------------------- the gateway itself


@pytest.fixture
def gateway_on():
    made: list[Gateway] = []

    def make(server: FakeLLM, **kwargs: Any) -> tuple[Gateway, list[Served]]:
        settings = LLMSettings(base_url=server.base_url, model="fake", max_tokens=96,
                               backoff_s=0.0)
        served: list[Served] = []
        gateway = Gateway(settings, LLMClient(settings), record=served.append, **kwargs)
        gateway.start()
        made.append(gateway)
        return gateway, served

    yield make
    for gateway in made:
        gateway.close()


@pytest.mark.parametrize(("body", "field"), [
    ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": "many"}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": -5}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 1.5},
     "max_completion_tokens"),
    ({"messages": ["hi"]}, "messages[0]"),
    ({"messages": [{"content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": "hi"}],
      "tools": [{"type": "function", "function": {"description": "no name"}}]},
     "tools[0].function.name"),
    ({"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "function": {}}]}]},
     "messages[0].tool_calls[0].function.name"),
    ({"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}, "stream"),
    ({"messages": [{"role": "user", "content": "hi"}], "stop": 5}, "stop"),
    ({"messages": [{"role": "user", "content": "hi"}], "stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"messages": [{"role": "user", "content": "hi"}], "stop": ["a", None]}, "stop"),
])
def test_a_bad_request_gets_400_naming_the_field_and_the_rule(body, field, gateway_on):
    with FakeLLM() as server:
        gateway, served = gateway_on(server)
        reply = httpx.post(f"{gateway.url}/chat/completions", json=body, timeout=30,
                           headers={"Authorization": f"Bearer {gateway.key}"})
        assert not [r for r in server.requests if "messages" in r]
    assert reply.status_code == 400
    assert reply.json()["error"]["message"].startswith(f"{field}:")
    assert not served and gateway.next_index == 0  # not numbered: the model was not called


def test_a_requests_stop_sequences_reach_the_model_its_cache_key_and_its_record(gateway_on):
    """smolagents' CodeAgent sends stop sequences: they are sent on, keyed and recorded."""
    stop = ["<end_code>", "Observation:"]
    with FakeLLM() as server:
        gateway, served = gateway_on(server)
        for body in ({"messages": [{"role": "user", "content": "hi"}], "stop": stop},
                     {"messages": [{"role": "user", "content": "hi"}], "stop": "END"},
                     {"messages": [{"role": "user", "content": "hi"}]}):
            reply = httpx.post(f"{gateway.url}/chat/completions", json=body, timeout=30,
                               headers={"Authorization": f"Bearer {gateway.key}"})
            assert reply.status_code == 200, reply.text
        sent = [r for r in server.requests if "messages" in r]
    assert [r.get("stop") for r in sent] == [stop, "END", None]
    assert [s.completion.stop for s in served] == [stop, "END", None]
    events = [traces.LLMCall(purpose="framework", **s.completion.event()) for s in served]
    assert [e.stop for e in events] == [stop, "END", None]
    assert "stop" not in served[2].completion.event()  # a call without one records as before
    client = LLMClient(gateway.settings)
    plain = client.request([{"role": "user", "content": "hi"}], call_index=0)
    stopped = client.request([{"role": "user", "content": "hi"}], call_index=0, stop="END")
    assert "stop" not in plain and stopped["stop"] == "END"
    assert request_key(plain) != request_key(stopped)  # the cache key includes it


def test_the_gateway_records_its_resolved_mode_and_where_its_context_came_from(gateway_on):
    with FakeLLM() as server:
        gateway, _ = gateway_on(server)  # an endpoint whose /v1/models reports no context
        assert gateway.tool_call_mode == "native"
        assert gateway.context_tokens() == ENDPOINT_CONTEXT > 4096
        assert "reports none" in gateway.context_source
        given, _ = gateway_on(server, context_tokens=2048, emulate_tools=True)
        assert given.context_tokens() == 2048 and given.context_source == "given"
        assert given.tool_call_mode == "emulated"


@pytest.fixture
def long_reply(monkeypatch):
    """`play` answers plain requests with a long text (so that it streams in many pieces)."""
    import tests.fake_llm as fake

    real = fake.play

    def play(request: dict, code: str = fake.SOLUTION_CODE) -> dict:
        reply = real(request, code)
        if reply.get("content") == "hello":
            return {"role": "assistant", "content": "word " * 400}
        return reply

    monkeypatch.setattr(fake, "play", play)


@pytest.mark.usefixtures("long_reply")
def test_a_client_that_disconnects_cancels_the_upstream_request_and_it_is_recorded(gateway_on):
    """The scripted server streams its reply piece by piece, held after the first piece; the
    client goes away meanwhile: the gateway closes its upstream request, the server sees its
    connection closed before the end, and the call is recorded as cancelled, its usage so far."""
    hold = threading.Event()
    with FakeLLM(stream_pieces=400, stream_delay_s=0.005, hold=hold) as server:
        gateway, served = gateway_on(server)
        client = socket.create_connection(("127.0.0.1", int(gateway.url.split(":")[2][:-3])))
        body = json.dumps({"messages": [{"role": "user", "content": "x" * 2000}]}).encode()
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\n"
                       b"Authorization: Bearer " + gateway.key.encode() +
                       b"\r\nContent-Type: application/json\r\nContent-Length: " +
                       str(len(body)).encode() + b"\r\n\r\n" + body)
        wait_for(lambda: server.log and server.log[-1].get("pieces", 0) >= 1,
                 "the first piece of the reply")
        client.close()  # the client goes away before its reply
        wait_for(lambda: gateway.cancelled == 1, "the gateway to see its client gone")
        hold.set()  # the server goes on; the gateway reads one more piece and closes
        wait_for(lambda: server.cancelled == 1, "the server to see its connection closed")
        wait_for(lambda: served, "the call's record")
        entry = server.log[-1]
    assert entry["cancelled"] and entry["pieces"] < 400  # the generation stopped early
    (call,) = served
    assert call.cancelled and call.completion is None and call.sent["call_index"] == 0
    assert call.partial["completion_tokens"] >= 1 and call.partial["prompt_tokens"] > 0
    assert gateway.next_index == 1  # it kept its number


def test_a_cancelled_call_is_an_llm_call_event_with_its_status_and_usage():
    """The bridge's record of a cancelled call: failed, cancelled, its tokens so far counted."""
    policy = FrameworkPolicy("tests.framework_spend", settings=LLMSettings(
        base_url="http://127.0.0.1:9/v1", model="fake", price_in=1000.0, price_out=1000.0))
    policy._record(Served(None, "cancelled: the caller went away", {"call_index": 4, "seed": 9},
                          cancelled=True, partial={"prompt_tokens": 120, "completion_tokens": 7,
                                                   "response": "word word"}))
    action = policy._action([])
    (event,) = action.events
    assert event.cancelled and event.failed and event.call_index == 4
    assert (event.prompt_tokens, event.completion_tokens, event.response) == (120, 7,
                                                                              "word word")
    assert action.tokens == 127 and action.cost_usd == pytest.approx(127 * 1000 / 1e6)


# ------------------------------------------------------------------------------ the frameworks


def test_the_leak_scan_reads_the_gateways_own_prompt_texts():
    from innolab.gym.agent_view import policy_texts
    from innolab.llm.gateway import FOLD_NOTE, TOOLS_PROMPT

    texts = policy_texts("innolab.agents.frameworks:OpenAIAgentsAgent", {})
    assert texts["innolab.llm.gateway.TOOLS_PROMPT"] == TOOLS_PROMPT
    assert texts["innolab.llm.gateway.FOLD_NOTE"] == FOLD_NOTE


def test_mini_swe_agents_template_vars_describe_the_sandbox_not_the_host():
    from innolab.agents.frameworks.miniswe_driver import SandboxEnvironment

    class Tools:
        def __init__(self) -> None:
            self.calls: list[dict] = []

        def call(self, name: str, arguments: dict) -> tuple[str, bool]:
            self.calls.append(arguments)
            return ("Linux\nsandbox-7\n6.1.0-box\n#1 SMP box\nx86_64\n\n[exit code 0]", False)

    tools = Tools()
    environment = SandboxEnvironment(tools)  # type: ignore[arg-type]
    found = environment.get_template_vars(extra=1)
    assert {k: found[k] for k in ("system", "node", "release", "version", "machine")} == {
        "system": "Linux", "node": "sandbox-7", "release": "6.1.0-box",
        "version": "#1 SMP box", "machine": "x86_64"}
    assert found["extra"] == 1
    environment.get_template_vars()
    assert len(tools.calls) == 1  # asked of the sandbox once


def test_the_framework_records_the_libraries_it_speaks_through_in_config_json():
    pytest.importorskip("smolagents")
    import importlib.metadata

    config = runner.resolve(runspec.schema()(agent="smolagents",
                                             base_url="http://127.0.0.1:9/v1", model="m"))
    versions = config.policy_args["library_versions"]
    assert versions["mcp"] == importlib.metadata.version("mcp")
    assert versions["openai"] == importlib.metadata.version("openai")


# --------------------------------------------------------------------------- the confinement


def test_the_framework_process_cannot_read_the_key_write_the_run_or_read_solutions(tmp_path):
    """The runner (a process of its own, the real key in its environment from its start) runs a
    probe as its framework; what the probe could do is what innolab's confinement says."""
    with FakeLLM() as server:
        config = bridge_config("tests.framework_probe", server.base_url)
        from innolab.gym.run import create_run

        run_dir = create_run(config, tmp_path / "run")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "INNOLAB_LLM_API_KEY": SECRET,
               "PROBE_RUN_DIR": str(run_dir)}
        code = ("import sys; from tests.framework_limits_drivers import execute_bridge; "
                "execute_bridge(sys.argv[1])")
        done = subprocess.run([sys.executable, "-c", code, str(run_dir)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    confinement = json.loads((run_dir / "framework.json").read_text())["confinement"]
    if confinement.get("refused"):  # as root, yet not confined: the run was refused
        absent(f"the framework could not be confined here: {confinement['why']}")
    report = json.loads(json.loads((run_dir / "framework_counts.json").read_text())["report"])
    assert not report["own_environ_has_secret"]  # never handed to it
    if os.geteuid() != 0:
        assert confinement["user"] == "innolab's" and "root" in confinement["why"]
        assert report["parent_environ"].startswith("refused")  # the runner is undumpable
        return
    assert report["uid"] == confinement["uid"] != 0
    for attempt in ("parent_environ", "parent_memory", "write_run_folder", "append_trace",
                    "read_solutions", "root_home", "git_show_solution", "git_ls_tree_solutions",
                    "git_folder", "read_scores", "read_data", "read_solvers"):
        assert report[attempt].startswith("refused"), (attempt, report[attempt])
    assert not (run_dir / "planted.txt").exists()
    assert traces.Trace.read(run_dir).finished is not None  # the trace intact
    from innolab.gym.leftovers import sandbox_pids

    assert not sandbox_pids(confinement["uid"], None)  # nothing of it outlived the run


@pytest.mark.parametrize("allowed", [False, True])
def test_a_framework_that_cannot_be_confined_is_refused_unless_the_run_allows_it(
        allowed, tmp_path, monkeypatch):
    """Where the framework's mount namespace cannot be made (here: a plan whose first mount
    fails), or innolab is not root, it would run as innolab's user, unconfined: it is not started
    and the run ends saying why, unless the run allows it (allow_unconfined: recorded)."""
    from innolab.agents import confine

    real = confine.plan

    def failing(*args: Any, **kwargs: Any) -> dict[str, Any]:
        steps = real(*args, **kwargs)
        return {**steps, "expose": [["/nonexistent-innolab-folder", ["x"]], *steps["expose"]]}

    monkeypatch.setattr(confine, "plan", failing)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("PROBE_RUN_DIR", str(tmp_path / "run"))
    with FakeLLM() as server:
        config = bridge_config("tests.framework_probe", server.base_url)
        config.policy_args["allow_unconfined"] = allowed
        outcome = run_bridge(config, tmp_path / "run")
    run_dir = Path(outcome["run_dir"])
    counts = json.loads((run_dir / "framework.json").read_text())
    confinement = counts["confinement"]
    assert confinement["user"] == "innolab's" and confinement["why"]
    assert counts["allow_unconfined"] is allowed
    assert json.loads((run_dir / "config.json").read_text())["policy_args"][
        "allow_unconfined"] is allowed
    if not allowed:
        assert outcome["reason"] == "agent_error"
        (failed,) = [e for e in traces.read_events(run_dir) if e.type == "agent_error"]
        assert failed.error.startswith("the framework was not started: it cannot be confined")
        assert confinement["why"] in failed.error and "allow_unconfined=true" in failed.error
        assert confinement["refused"] == failed.error
        assert not (run_dir / "framework_counts.json").exists()  # its driver never ran
        return
    assert outcome["reason"] == "agent_finished"
    assert "refused" not in confinement
    report = json.loads(json.loads((run_dir / "framework_counts.json").read_text())["report"])
    assert report["uid"] == os.geteuid()  # innolab's user: what the setting allowed


@pytest.mark.parametrize("allowed", [None, "0", "1"])
def test_a_framework_run_records_whether_it_may_run_unconfined(allowed, monkeypatch):
    pytest.importorskip("smolagents")
    from innolab.agents.bridge import ALLOW_UNCONFINED_VAR
    from innolab.agents.registry import build_policy

    if allowed is None:
        monkeypatch.delenv(ALLOW_UNCONFINED_VAR, raising=False)
    else:
        monkeypatch.setenv(ALLOW_UNCONFINED_VAR, allowed)
    config = runner.resolve(runspec.schema()(agent="smolagents",
                                             base_url="http://127.0.0.1:9/v1", model="m"))
    assert config.policy_args.get("allow_unconfined", False) is (allowed == "1")
    monkeypatch.delenv(ALLOW_UNCONFINED_VAR, raising=False)  # a resume reads config.json
    policy = build_policy(config, Path("/nonexistent-run"))
    assert policy.allow_unconfined is (allowed == "1")


def test_the_framework_cannot_call_the_embedded_model_without_the_gateway(tmp_path,
                                                                          monkeypatch):
    """The embedded server requires a key only innolab holds: the probe's direct call is refused
    (401) and, as its own user, it cannot read the key's file."""
    from innolab.llm import local

    try:
        url = local.start()
    except Exception as error:  # no embedded model installed
        pytest.skip(f"the embedded model is not available: {error}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("PROBE_EMBEDDED_URL", url)
    monkeypatch.setenv("PROBE_EMBEDDED_KEY_FILE", str(local.key_file(url)))
    monkeypatch.setenv("PROBE_RUN_DIR", str(tmp_path / "run"))
    with FakeLLM() as server:
        outcome = run_bridge(bridge_config("tests.framework_probe", server.base_url),
                             tmp_path / "run")
    run_dir = Path(outcome["run_dir"])
    report = json.loads(json.loads((run_dir / "framework_counts.json").read_text())["report"])
    assert report["embedded_without_key"] == 401
    assert httpx.post(f"{url}/chat/completions", timeout=120, json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1},
        headers={"Authorization": f"Bearer {local.api_key()}"}).status_code == 200
    confinement = json.loads((run_dir / "framework.json").read_text())["confinement"]
    if confinement["user"] == "own":  # as its own user it cannot read innolab's key file
        assert report["embedded_key_file"].startswith("refused: PermissionError")


def test_a_sweep_plan_bounds_each_run_by_its_token_and_cost_budgets(tmp_path):
    from innolab.sweep.preview import preview

    plan = preview({"name": "budgets", "base": {
        "agent": "codeact", "task": "circle-packing-26", "base_url": "http://127.0.0.1:9/v1",
        "model": "m", "token_budget": 1000, "cost_budget_usd": 0.5}}, output=tmp_path / "sweep")
    (run,) = plan.runs
    assert (run.tokens.value, run.tokens.rule) == (1000, "the run's token budget")
    assert (run.cost.value, run.cost.rule) == (0.5, "the run's cost budget")


def test_a_model_that_fails_behind_the_gateway_ends_the_framework_run_as_llm_error(
        tmp_path, monkeypatch):
    """The scripted server fails every request (500): once the client's retries are spent the
    gateway answers the framework 502 and the run ends as llm_error with the cause, not as
    whatever the framework does next; the failed call is one llm_call event, as the gateway
    counted it."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with FakeLLM(fault_rates={"500": 1.0}) as server:
        outcome = run_bridge(bridge_config("tests.framework_spend", server.base_url),
                             tmp_path / "run")
    run_dir = Path(outcome["run_dir"])
    assert outcome["reason"] == "llm_error", (run_dir / "framework.log").read_text()[-2000:]
    calls = traces.Trace.read(run_dir).llm_calls
    counts = json.loads((run_dir / "framework.json").read_text())
    assert len(calls) == counts["gateway_requests"] == 1
    assert calls[0].failed and "500" in (calls[0].error or "")
    assert calls[0].purpose == "framework:framework_spend"
