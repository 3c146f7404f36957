"""Three agent frameworks innolab did not write, run in the gym through the scripted server.

smolagents, the OpenAI Agents SDK and mini-swe-agent each run their own loop in a process of
their own, on the run's tools over MCP and the run's model through the gateway (native tool calls,
and tool calls the gateway emulates under a JSON schema); each run is a run: scored on both
novelty axes from its reproducing program, every model call an `llm_call` event that the gateway
and the framework count alike. A framework that raises ends its run as `agent_error` with its
traceback; a killed framework run (a stub driver, and mini-swe-agent itself) resumes with its note;
nothing of it outlives the run. A sweep of the three and CodeAct holds a shared cap of 1 request in
flight and stops at its cost cap, then goes on under a higher one. Where CI requires the optional
extra (INNOLAB_REQUIRE_AGENTS=1), a test that needs it fails rather than skips when it is missing.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from innolab import runner, runspec, traces
from innolab.gym.policy import RunConfig
from tests.fake_llm import FakeLLM
from tests.gym_policies import pythonpath

# the bridge with a test driver is a registered agent of the tests' own (test-framework)
pytestmark = pytest.mark.usefixtures("test_agents")

ROOT = Path(__file__).resolve().parent.parent
# where innolab is not root a framework cannot be confined (no other user to run it as): its
# tests allow it to run unconfined there (innolab.agents.confine); as root (CI) they do not
UNCONFINED = {"allow_unconfined": True} if os.geteuid() != 0 else {}
FRAMEWORKS = {"smolagents": "smolagents", "openai-agents": "openai-agents",
              "mini-swe-agent": "mini-swe-agent"}


# the optional extra innolab[agents]: skipped where it is missing, failed where CI requires it
# (INNOLAB_REQUIRE_AGENTS=1; the fixture `agents_extra` of tests/conftest.py)
needs_extra = pytest.mark.usefixtures("agents_extra")


def framework_config(agent: str, url: str, mode: str, **more: object) -> RunConfig:
    # openai-agents ends a run with a reply that calls no tool, which a constrained (emulated)
    # reply never is: its own max_turns ends it
    extra = {"max_turns": 4} if agent == "openai-agents" else {}
    settings = runspec.schema()(agent=agent, base_url=url, model="fake", budget="180s",
                                max_steps=12, tool_call_mode=mode, **extra, **more)
    config = runner.resolve(settings)
    config.policy_args.update(UNCONFINED)
    return config


@needs_extra
@pytest.mark.parametrize("mode", ["native", "emulated"])
@pytest.mark.parametrize("agent", list(FRAMEWORKS))
def test_a_framework_run_is_scored_and_every_model_call_is_counted_alike(agent, mode, tmp_path):
    with FakeLLM() as server:
        config = framework_config(agent, server.base_url, mode)
        outcome = runner.start(config, tmp_path / "run", novelty="ast", show_progress=False)
        served = [r for r in server.requests if "messages" in r]
    run_dir = Path(outcome["run_dir"])
    assert outcome["reason"] == "agent_finished", (run_dir / "framework.log").read_text()[-3000:]
    score = json.loads((run_dir / "score.json").read_text())
    assert score["valid"] and score["novelty"] is not None and score["novelty_out"] is not None
    assert score["source_status"] == "reproduces"  # N from the program that wrote it
    trace = traces.Trace.read(run_dir)
    calls = trace.llm_calls
    counts = json.loads((run_dir / "framework.json").read_text())
    own = json.loads((run_dir / "framework_counts.json").read_text())
    assert len(calls) == len(served) == counts["gateway_requests"] == own["model_calls"] >= 2
    if agent == "smolagents":  # its Monitor's token totals: the usage the gateway returned
        assert (own["input_tokens"], own["output_tokens"]) == (
            sum(c.prompt_tokens for c in calls), sum(c.completion_tokens for c in calls))
    assert [c.call_index for c in calls] == list(range(len(calls)))  # numbered, none cached
    assert all(c.purpose.startswith("framework:") and not c.cached for c in calls)
    assert all(c.purpose.endswith("(tool calls emulated)") == (mode == "emulated")
               for c in calls)
    if mode == "emulated":  # the model was asked for a constrained reply, not given tools
        assert all("tools" not in r and r["response_format"]["json_schema"]["name"] ==
                   "tool_call" for r in served)
    assert {"submit"} <= {e.tool for e in trace.tool_calls}
    assert counts["mcp_calls"] == len(trace.tool_calls)  # each MCP call was a step's call
    recorded = json.loads((run_dir / "config.json").read_text())
    assert recorded["policy_args"]["framework_version"] == importlib.metadata.version(agent)
    _nothing_left(run_dir)


@needs_extra
def test_a_framework_run_that_ends_on_its_wall_clock_has_every_count_recorded(tmp_path):
    """openai-agents with emulated tool calls (each reply calls a tool, so only its max_turns
    would end it, set high) runs until the run's wall clock: innolab stops it (SIGTERM), and its
    own count is written all the same. A call in flight at the end is cancelled: the gateway
    counted it and the trace records it (a failed, cancelled llm_call), but the SDK never saw it
    answered (RunHooks.on_llm_end), so the framework's own count is the calls that were answered;
    a request refused for the spent clock (402) is neither counted nor recorded."""
    with FakeLLM(latency_s=0.3) as server:
        settings = runspec.schema()(agent="openai-agents", base_url=server.base_url,
                                    model="fake", budget="15s", max_steps=1000,
                                    tool_call_mode="emulated", max_turns=10_000)
        config = runner.resolve(settings)
        config.policy_args.update(UNCONFINED)
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    run_dir = Path(outcome["run_dir"])
    assert outcome["reason"] == "wall_clock", (run_dir / "framework.log").read_text()[-3000:]
    calls = traces.Trace.read(run_dir).llm_calls
    counts = json.loads((run_dir / "framework.json").read_text())
    own = json.loads((run_dir / "framework_counts.json").read_text())
    assert len(calls) == counts["gateway_requests"] >= 2  # every request the gateway numbered
    cancelled = [c for c in calls if c.cancelled]
    assert len(cancelled) == counts["gateway_cancelled"] <= 1
    assert own["model_calls"] == len([c for c in calls if not c.failed]) >= 2
    assert own["model_calls"] == counts["gateway_requests"] - len(cancelled)
    _nothing_left(run_dir)


@needs_extra
def test_mini_swe_agent_stopped_inside_its_model_query_writes_its_count(tmp_path):
    """mini-swe-agent retries a model query on any exception, SystemExit too (tenacity): the
    SystemExit of innolab's SIGTERM was retried until SIGKILL and no count was written. Its
    replies take 12 s, so the clock (20 s) ends the run while it waits for one: the SIGTERM
    finds it inside the query or its retry's wait; its count (of the queries it began) is
    written all the same."""
    with FakeLLM(latency_s=12.0) as server:
        settings = runspec.schema()(agent="mini-swe-agent", base_url=server.base_url,
                                    model="fake", budget="20s", max_steps=1000)
        config = runner.resolve(settings)
        config.policy_args.update(UNCONFINED)
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    run_dir = Path(outcome["run_dir"])
    log = (run_dir / "framework.log").read_text()
    assert outcome["reason"] == "wall_clock", log[-3000:]
    calls = traces.Trace.read(run_dir).llm_calls
    assert any(c.cancelled for c in calls)  # the SIGTERM found it inside a query
    own = json.loads((run_dir / "framework_counts.json").read_text())
    # it counts a query when it begins it: the one cut by the clock too
    assert own["model_calls"] == len(calls) == json.loads(
        (run_dir / "framework.json").read_text())["gateway_requests"]
    assert "queries it began" in own["counted_from"]
    _nothing_left(run_dir)


def _framework_of(run_dir: Path) -> tuple[Path, int | None]:
    """The private folder of the run's last framework start (framework.json) and its user id
    (its home's owner, while it exists; else what the confinement recorded; None: innolab's)."""
    counts = json.loads((run_dir / "framework.json").read_text())
    folder = Path(counts["folder"])
    assert folder.name.startswith("innolab-ws-framework-"), folder
    try:
        uid: int | None = (folder / "home").stat().st_uid
    except OSError:
        uid = (counts.get("confinement") or {}).get("uid")
    return folder, None if uid in (None, os.geteuid()) else uid


def _framework_processes(folder: Path, uid: int | None) -> list[int]:
    """The live processes of a framework: its own user's, or any whose environment names its
    private folder's task file (every process it starts inherits that, innolab's user or not)."""
    needle = f"INNOLAB_TASK_FILE={folder / 'framework_task.md'}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                stat = (entry / "stat").read_text()
                if stat[stat.rindex(")") + 2] in "ZX":
                    continue
                if (uid is not None and entry.stat().st_uid == uid) or needle in (
                        entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _nothing_left(run_dir: Path, *starts: tuple[Path, int | None]) -> None:
    """No process and no private folder of the run's framework (each start given, and the last
    one's from framework.json) is left, nor its pid file."""
    for folder, uid in {*starts, _framework_of(run_dir)}:
        assert not _framework_processes(folder, uid), folder
        assert not folder.exists(), folder
    assert not (run_dir / "framework.pid").exists()


def bridge_config(driver: str, url: str, **more: object) -> RunConfig:
    """A run of the bridge with a test driver (the tests' registered agent test-framework)."""
    from innolab.llm.settings import LLMSettings

    llm = LLMSettings(base_url=url, model="fake", backoff_s=0.0).model_dump(exclude={"api_key"})
    return RunConfig(task="circle-packing-26", policy="innolab.agents.bridge:FrameworkPolicy",
                     agent="test-framework", policy_args={"driver": driver, **UNCONFINED},
                     llm=llm, wall_clock_s=120.0, **more)


def test_a_framework_that_raises_ends_its_run_as_agent_error_with_its_traceback(
        tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with FakeLLM() as server:
        outcome = runner.start(bridge_config("tests.framework_crash", server.base_url),
                               tmp_path / "run", novelty="ast", show_progress=False)
    run_dir = Path(outcome["run_dir"])
    assert outcome["reason"] == "agent_error"
    events = traces.read_events(run_dir)
    (failed,) = [e for e in events if e.type == "agent_error"]
    assert "exited with status 1" in failed.error
    assert "RuntimeError: boom: the framework failed after submitting" in failed.traceback
    # what it did before is kept and scored
    assert outcome["valid"] and [e.tool for e in events if e.type == "tool_call"] == [
        "python_session", "submit"]
    assert events[-2].type == "run_finished" and events[-1].type == "score"


def test_the_runs_exit_status_for_a_framework_error_is_documented(tmp_path, monkeypatch):
    from innolab.cli.runs import END_STATUSES, RUN_EPILOG

    assert END_STATUSES["agent_error"] not in (0, 2, 4, 5)
    assert f"{END_STATUSES['agent_error']} the agent failed" in RUN_EPILOG


def test_a_killed_framework_run_resumes_and_leaves_nothing_behind(tmp_path, monkeypatch):
    """SIGKILL the runner mid-run: its framework dies with it; the resume starts the framework
    afresh, says what it could not restore, and the run ends at its budget with nothing left."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    with FakeLLM() as server:
        config = bridge_config("tests.framework_hang", server.base_url)
        config.wall_clock_s = 20.0
        run_dir = runner.create_run(config, tmp_path / "run")
        killed = _run_then_kill(
            run_dir, pythonpath(), lambda: (run_dir / "checkpoint" / "state.json").exists(), 120)
        outcome = runner.resume(run_dir, novelty=None, show_progress=False)
    assert outcome["reason"] == "wall_clock"
    events = traces.read_events(run_dir)
    (resumed,) = [e for e in events if e.type == "run_resumed"]
    assert resumed.note and "memory" in resumed.note
    assert json.loads((run_dir / "framework.json").read_text())["starts"] == 2
    assert "resumed from a checkpoint" in (run_dir / "framework_task.md").read_text()
    _nothing_left(run_dir, killed)


@needs_extra
def test_a_killed_mini_swe_agent_run_resumes_and_leaves_nothing_behind(tmp_path, monkeypatch):
    """mini-swe-agent itself, killed with its runner while its second model call is answered
    (the scripted server holds that reply): it dies with the runner; the resume reaps what the
    killed run left, starts mini-swe-agent afresh with the note of what it lost (its own
    memory), and the run ends as mini-swe-agent ends it, scored; no process or folder of either
    execution is left."""
    import shutil
    import tempfile

    # the runs' temporary folder (workspaces, validators: both executions'), one the sandbox's
    # own user may pass, as the system's is
    temp = Path(tempfile.mkdtemp(prefix="frameworks-kill-"))
    temp.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    try:
        _kill_and_resume_mini_swe_agent(tmp_path, temp)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _kill_and_resume_mini_swe_agent(tmp_path: Path, temp: Path) -> None:
    # the second request's reply comes after 60 s: the runner is killed while it waits
    with FakeLLM(faults=["", "timeout"], slow_s=60) as server:
        config = framework_config("mini-swe-agent", server.base_url, "native")
        run_dir = runner.create_run(config, tmp_path / "run")
        killed = _run_then_kill(  # once it has a checkpoint and its second model call is asked
            run_dir, str(ROOT), lambda: (run_dir / "checkpoint" / "state.json").exists()
            and sum("messages" in r for r in server.requests) >= 2, 300)
        # the killed run's folders are removed by its warden or, where the warden has not yet, by
        # the resume's reaper: which of the two comes first is a race, so only the end is checked
        outcome = runner.resume(run_dir, novelty="ast", show_progress=False)
    assert outcome["reason"] == "agent_finished", (run_dir / "framework.log").read_text()[-3000:]
    assert outcome["valid"]
    events = traces.read_events(run_dir)
    (resumed,) = [e for e in events if e.type == "run_resumed"]
    assert resumed.note and "memory" in resumed.note and "afresh" in resumed.note
    assert json.loads((run_dir / "framework.json").read_text())["starts"] == 2
    assert "resumed from a checkpoint" in (run_dir / "framework_task.md").read_text()
    assert [e.tool for e in events if e.type == "tool_call"].count("submit") >= 1
    # nothing of either execution is left: no process of either framework, no folder of theirs
    _nothing_left(run_dir, killed)
    assert sorted(p.name for p in temp.iterdir()) == []


@pytest.mark.parametrize(
    ("required", "code", "says"),
    [("1", 1, "INNOLAB_REQUIRE_AGENTS=1 but the optional extra innolab[agents] is not installed "
              "(smolagents)"),
     ("", 0, "1 skipped")])
def test_framework_tests_fail_when_ci_requires_the_missing_extra(required, code, says):
    """With smolagents missing (its distribution hidden from importlib.metadata in a pytest of
    its own), a test that needs the extra fails where INNOLAB_REQUIRE_AGENTS=1, else skips."""
    script = ("import importlib.metadata as metadata, sys\n"
              "import pytest\n"
              "real = metadata.version\n"
              "def version(name):\n"
              "    if name == 'smolagents':\n"
              "        raise metadata.PackageNotFoundError(name)\n"
              "    return real(name)\n"
              "metadata.version = version\n"
              "sys.exit(pytest.main(['tests/test_frameworks.py', '-q', '-p', 'no:cacheprovider',"
              " '-k', 'test_a_missing_extra_or_a_present_one']))\n")
    env = {**os.environ, "INNOLAB_REQUIRE_AGENTS": required}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == code and says in done.stdout, done.stdout[-2000:]


@needs_extra
def test_a_missing_extra_or_a_present_one():
    """The extra is installed (what the requirement test runs: skipped or failed without it)."""
    assert all(importlib.metadata.version(d) for d in FRAMEWORKS.values())


def _run_then_kill(run_dir: Path, python_path: str, ready: Callable[[], bool],
                   bound_s: float) -> tuple:
    """Execute the run in a runner process until `ready`, check that its framework is seen alive,
    SIGKILL the runner and wait for the framework to end with it (its parent-death signal).

    Returns:
        The killed framework's identity (`_framework_of`).
    """
    first = subprocess.Popen([sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"],
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": python_path},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + bound_s  # a bound on a hang, not a measurement
    while not ready():
        assert first.poll() is None, first.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the run never reached the point of its kill"
        time.sleep(0.1)
    framework = json.loads((run_dir / "framework.pid").read_text())["pid"]
    killed = _framework_of(run_dir)
    assert framework in _framework_processes(*killed)  # the check sees a live framework
    first.send_signal(signal.SIGKILL)
    first.wait()
    for _ in range(200):
        if _state(framework) in "ZX":
            return killed
        time.sleep(0.05)
    pytest.fail("the framework outlived its killed runner")


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "X"
    return stat[stat.rindex(")") + 2]


def test_a_missing_extra_is_a_clear_error_naming_the_install_command(monkeypatch):
    from innolab.agents import frameworks

    monkeypatch.setattr(frameworks, "framework_version", lambda distribution: None)
    with pytest.raises(runspec.SettingsError, match=r"innolab\[agents\]"):
        runner.resolve(runspec.schema()(agent="smolagents"))


@needs_extra
def test_a_sweep_of_the_three_frameworks_and_a_scaffold_holds_its_shared_cap(tmp_path):
    """One spec: the three frameworks and CodeAct, two workers sharing a cap of 1 request in
    flight (the server's own count, over both executions) and a cost cap. At $0.01 (each call
    costs $0.015 here: 100 prompt and 50 reply tokens at $100 per million) the two first runs
    start, the cap is reached when one ends, and the other two are not started: the state says
    so (stopped for cost). Again under $50, the sweep goes on where it stopped; the runs table,
    SweepView and notebook 25 take the frameworks' runs as they take the scaffolds'."""
    import yaml

    from innolab import notebooks, results
    from innolab.sweep import state
    from innolab.viewer.views import SweepView

    bin_dir = Path(sys.executable).parent
    folder = tmp_path / "sweep"
    agents = ["smolagents", "codeact", "openai-agents", "mini-swe-agent"]  # the grid's order
    with FakeLLM(latency_s=0.05, max_concurrent=1) as server:
        spec = tmp_path / "frameworks.yaml"
        spec.write_text(yaml.safe_dump({
            "name": "frameworks",
            "base": {"task": "circle-packing-26", "runtime": "local", "budget": "120s",
                     "max_steps": 12, "base_url": server.base_url, "model": "fake",
                     "novelty": "ast", "max_concurrent_requests": 1},
            "grid": {"agent": agents},
            "budget": {"max_cost_usd": 0.01}}))
        env = {**os.environ, "INNOLAB_LLM_PRICE_IN": "100", "INNOLAB_LLM_PRICE_OUT": "100",
               "PYTHONPATH": str(ROOT)}

        def sweep(*more: str, status: int = 0) -> None:
            done = subprocess.run([str(bin_dir / "innolab"), "sweep", "run", str(spec),
                                   "--workers", "2", "--output", str(folder), *more],
                                  capture_output=True, text=True, timeout=1200, env=env, cwd=ROOT)
            assert done.returncode == status, (done.stdout + done.stderr)[-3000:]

        sweep(status=3)  # stopped at its cost cap (innolab sweep run's exit status 3)
        stopped = state.status(folder)
        by_agent = {r["levels"]["agent"]: r for r in stopped["runs"].values()}
        assert {a: by_agent[a]["state"] for a in agents} == {
            "smolagents": "scored", "codeact": "scored",
            "openai-agents": "stopped_for_cost", "mini-swe-agent": "stopped_for_cost"}
        assert stopped["stopped_for_cost"] and stopped["max_cost_usd"] == 0.01
        assert stopped["cost_usd"] >= 2 * 2 * 0.015  # two runs of at least two calls each
        manifest = json.loads((folder / "sweep.json").read_text())
        assert manifest["stopped_for_cost"]["not_started"] == 2
        never = [cid for cid, r in stopped["runs"].items() if r["state"] == "stopped_for_cost"]
        assert not any((folder / "runs" / cid).exists() for cid in never)  # never started
        table = results.runs(folder)
        assert sorted(table.loc[table["complete"], "agent"]) == ["codeact", "smolagents"]
        sweep("--max-cost", "50")  # a higher cap: it goes on where it stopped
        assert server.max_in_flight == 1 and server.over_cap == 0  # the cap held, by its count
    assert state.status(folder)["counts"]["scored"] == 4
    assert json.loads((folder / "sweep.json").read_text())["stopped_for_cost"] is None
    table = results.runs(folder)
    assert sorted(table["agent"]) == ["codeact", "mini-swe-agent", "openai-agents", "smolagents"]
    assert table["complete"].all() and table["valid"].all()
    assert ((table["cost_usd"] - 0.015 * table["llm_calls"]).abs() < 1e-9).all()  # per call
    assert table["novelty"].notna().all() and table["novelty_out"].notna().all()
    view = SweepView(tmp_path / "sweep")
    assert view.factors == ["agent"] and len(view.labels) == 4
    executed = notebooks.execute(ROOT / "notebooks" / "25_success_and_prompt.ipynb",
                                 tmp_path / "25.ipynb",
                                 {"sweep_dir": str(tmp_path / "sweep"),
                                  "results_dir": str(tmp_path / "results"),
                                  "figures_dir": str(tmp_path / "figures"),
                                  "n_resamples": 200}, timeout_s=600)
    rates = (tmp_path / "results" / "25_success_and_prompt")
    written = {p.name for p in rates.glob("*.csv")}
    assert written and executed.executed.is_file()
    success = next(p for p in rates.glob("success*.csv"))
    assert {"smolagents", "openai-agents", "mini-swe-agent"} <= set(
        success.read_text().replace(",", "\n").split())


@needs_extra
@pytest.mark.docker
@pytest.mark.parametrize("agent", list(FRAMEWORKS))
def test_a_framework_run_in_the_docker_runtime(agent, tmp_path, docker_client, base_image):
    """The framework on the host, its tool calls in the run's container (no network there)."""
    with FakeLLM() as server:
        config = framework_config(agent, server.base_url, "native", runtime="docker")
        outcome = runner.start(config, tmp_path / "run", novelty="ast", show_progress=False)
    run_dir = Path(outcome["run_dir"])
    assert outcome["reason"] == "agent_finished", (run_dir / "framework.log").read_text()[-3000:]
    score = json.loads((run_dir / "score.json").read_text())
    assert score["valid"] and score["source_status"] == "reproduces"
    assert json.loads((run_dir / "config.json").read_text())["runtime"] == "docker"
