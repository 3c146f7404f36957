"""External agent frameworks in the gym: a policy whose agent owns its loop in a process of its own.

`FrameworkPolicy` starts the framework (a driver module, run as `python -m DRIVER`) with the
run's tools over MCP (innolab.agents.mcp_tools: streamable HTTP on loopback, a run-scoped token)
and the run's model behind a gateway (innolab.llm.gateway: a run-scoped key, never the real API
key). Each step it waits for the framework's next tool calls and hands them to the run loop, which
runs them as it runs every scaffold's (dispatcher, budgets and time limits, trace, checkpoint,
provenance, pristine validator); their results go back to the framework at the next step. Every
model call the framework makes is an `llm_call` event of the step it falls in, and counts against
the run's token and cost budgets.

The framework's end is the run's: its process exiting normally ends the run as `agent_finished`;
raising (a non-zero exit) as `agent_error`, with its traceback in the trace; the run's budget
running out as the budget says. Its processes are killed with the run, and nothing of it outlives
the run (`close`). A killed run resumes from its checkpointed workspace and trace with the
framework started afresh: what the framework cannot restore (its own memory) is said in the
trace's `run_resumed` event (`resume_note`), and in the task it is given.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from innolab.agents.base import AgentState, LLMAgent
from innolab.agents.mcp_tools import MCP_TOOLS, Bridge, ToolServer
from innolab.gym.policy import Action, AgentFailed, Observation
from innolab.llm.gateway import Budget, Gateway, Served
from innolab.traces import Event, LLMCall

ROLE = (
    "You work on an improvable task in a sandboxed workspace, through the run's tools: run shell "
    "commands (bash), Python in a persistent session (python_session), read, write and list "
    "files, validate a candidate and submit it. Aim for a valid submission first, then a better "
    "one: only what you submit counts."
)
RESUMED = ("This run was resumed from a checkpoint: the workspace holds the work done before, but "
           "this session does not remember it. Look at the files first.")
RESUME_NOTE = ("the framework was started afresh: its own memory (conversation, plans) before "
               "the checkpoint is not restored; the workspace and the trace are")
LOG_FILE = "framework.log"
PID_FILE = "framework.pid"  # the framework's process (and group), while it runs
COUNTS_FILE = "framework.json"  # the gateway's and the MCP server's counts, when the run ends
# The framework's process dies with the runner's (Linux: the parent-death signal, set by the child
# itself, which then checks its parent is still the runner), then runs the driver as __main__.
LAUNCH = (
    "import ctypes, os, runpy, signal, sys\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "if os.getppid() != int(os.environ['INNOLAB_PARENT_PID']):\n"
    "    sys.exit(1)\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # its finally blocks still run\n"
    "driver = sys.argv.pop(1)\n"
    "runpy.run_module(driver, run_name='__main__', alter_sys=True)\n"
)
HOME_DIR = "framework-home"  # the framework process's HOME (removed when the run ends)
STOP_GRACE_S = 5.0


@dataclass
class FrameworkState(AgentState):
    """What a framework run keeps beyond the scaffolds' bookkeeping.

    `starts`: how many times the framework was started (1 + the resumes); `steps`: the steps
    it made (tool calls handed to the run loop, one step per batch).
    """

    starts: int = 0
    steps: int = 0


class FrameworkPolicy(LLMAgent):
    """A policy that runs an external agent framework in its own process.

    Attributes:
        driver: The module run as `python -m DRIVER` (it reads the run's addresses from its
            environment: `driver_environment`).
        options: The framework's own options, handed to the driver as JSON.
    """

    name = "framework"
    mode = "framework"
    State: ClassVar[type[AgentState]] = FrameworkState
    memory: FrameworkState

    def __init__(self, driver: str, options: dict[str, Any] | None = None,
                 **settings: Any) -> None:
        """Make the policy; the framework starts at the first step.

        Args:
            driver: The driver module.
            options: The framework's options.
            **settings: LLMAgent's (the run's model settings, cache, prompts).
        """
        super().__init__(**settings)
        self.driver, self.options = driver, dict(options or {})
        self.resume_note: str | None = None
        self._bridge = Bridge()
        self._tools: ToolServer | None = None
        self._gateway: Gateway | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._events: list[Event] = []
        self._events_lock = threading.Lock()
        self._tokens = 0
        self._cost = 0.0
        self._deadline: float | None = None
        self._resumed = False

    # ------------------------------------------------------------------------------ state

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from a checkpoint: the framework starts afresh, and the trace says so."""
        super().load_state(state)
        self._resumed = True
        self.resume_note = RESUME_NOTE

    # ------------------------------------------------------------------------------ stepping

    def step(self, observation: Observation) -> Action:
        """Hand the last results back, then wait for the framework's next tool calls.

        Args:
            observation: The last step's results and what is left of the budget.

        Returns:
            The framework's next calls (run concurrently by the run loop); done when it exited.

        Raises:
            AgentFailed: The framework exited with an error (its traceback in the exception).
        """
        self.workspace_rules = observation.workspace_rules
        remaining = observation.remaining_s
        self._deadline = None if remaining is None else time.monotonic() + remaining
        self._bridge.deliver(observation.results)
        if self._process is None:
            self._start(observation)
        while True:
            wait = 1.0 if self._deadline is None else min(1.0, self._deadline - time.monotonic())
            calls = self._bridge.take(max(wait, 0.0))
            if calls:
                self.memory.steps += 1
                return self._action(calls)
            code = self._process.poll() if self._process is not None else 0
            if code is not None:
                time.sleep(0.05)
                calls = self._bridge.take(0)
                if calls:  # made just before it exited: never run, it is gone
                    self._bridge.close("the framework's process ended")
                if code == 0:
                    return self._action([], done=True)
                error = AgentFailed(f"the framework's process exited with status {code}",
                                    self._log_tail())
                error.events = self._drain()  # type: ignore[attr-defined]
                raise error
            if self._deadline is not None and time.monotonic() >= self._deadline:
                return self._action([])  # the run loop ends the run: its budget is spent

    def _action(self, calls: list[Any], done: bool = False) -> Action:
        with self._events_lock:
            tokens, cost, self._tokens, self._cost = self._tokens, self._cost, 0, 0.0
        return Action(list(calls), done=done, tokens=tokens, cost_usd=cost, events=self._drain())

    def _drain(self) -> list[Event]:
        with self._events_lock:
            events, self._events = self._events, []
        return events

    # ------------------------------------------------------------------------ the gateway's calls

    def _record(self, served: Served) -> None:
        """An `llm_call` event for each request the gateway sent to the model."""
        completion = served.completion
        purpose = f"framework:{self.driver.rsplit('.', 1)[-1]}" + (
            " (tool calls emulated)" if served.emulated else "")
        with self._events_lock:
            if completion is None:
                self._events.append(LLMCall(purpose=purpose, failed=True, cached=False,
                                            error=served.error, **served.sent))
                return
            self._events.append(LLMCall(purpose=purpose, **completion.event()))
            self._tokens += completion.prompt_tokens + completion.completion_tokens
            self._cost += completion.cost_usd
            self.memory.llm_calls = max(self.memory.llm_calls, (completion.call_index or 0) + 1)

    def _budget(self) -> Budget:
        return Budget(deadline=self._deadline)

    # ---------------------------------------------------------------------------- the process

    def task_prompt(self, observation: Observation) -> str:
        """What the framework is asked to do: the run's role and rules, then the task."""
        parts = [self.system_prompt(ROLE), "# The task\n\n" + observation.task_description]
        if self._resumed:
            parts.insert(0, RESUMED)
        return "\n\n".join(parts)

    def _start(self, observation: Observation) -> None:
        run_dir = Path(self.cache_path).parent if self.cache_path else Path.cwd()
        mode = self.options.get("tool_call_mode", "auto")
        self._gateway = Gateway(self.client.settings, self.client,
                                first_index=self.memory.llm_calls, record=self._record,
                                budget=self._budget,
                                emulate_tools=None if mode == "auto" else mode == "emulated")
        base_url = self._gateway.start()
        self._tools = ToolServer(self._bridge)
        mcp_url = self._tools.start()
        task_file = run_dir / "framework_task.md"
        task_file.write_text(self.task_prompt(observation), encoding="utf-8")
        home = run_dir / HOME_DIR  # the framework's home: what it writes stays with the run
        home.mkdir(exist_ok=True)
        env = driver_environment(base_url, self._gateway.key, self.client.settings.model,
                                 mcp_url, self._tools.token, task_file, self.options, home)
        self.memory.starts += 1
        log = (run_dir / LOG_FILE).open("ab")
        log.write(f"\n--- start {self.memory.starts}: python -m {self.driver}\n".encode())
        log.flush()
        _end_earlier(run_dir / PID_FILE)  # a killed run's framework, should it have outlived it
        env["INNOLAB_PARENT_PID"] = str(os.getpid())
        self._process = subprocess.Popen([sys.executable, "-c", LAUNCH, self.driver], env=env,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         cwd=run_dir, start_new_session=True)
        log.close()
        self._log = run_dir / LOG_FILE
        (run_dir / PID_FILE).write_text(json.dumps(
            {"pid": self._process.pid, "start": _start_time(self._process.pid)}),
            encoding="utf-8")

    def _log_tail(self) -> str:
        try:
            text = self._log.read_text(encoding="utf-8", errors="replace")
        except (OSError, AttributeError):
            return ""
        return text[text.rfind("\n--- start "):][-20000:]

    def close(self) -> None:
        """End the framework with the run: calls waiting are answered, its processes killed."""
        self._bridge.close("the run has ended (its budget is spent, or it finished): no more "
                           "tool calls")
        process = self._process
        if process is not None and process.poll() is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        if process is not None:
            _signal_group(process.pid, signal.SIGKILL)  # what it left in its group
            shutil.rmtree(self._log.parent / HOME_DIR, ignore_errors=True)
            (self._log.parent / PID_FILE).unlink(missing_ok=True)
        for server in (self._tools, self._gateway):  # the gateway once its calls are recorded
            if server is not None:
                server.close()
        if self._gateway is not None and process is not None:
            counts = {"gateway_requests": self._gateway.served, "mcp_calls": self._bridge.calls,
                      "starts": self.memory.starts}
            (self._log.parent / COUNTS_FILE).write_text(json.dumps(counts) + "\n",
                                                         encoding="utf-8")
        self._tools = self._gateway = None

    def flush_events(self) -> list[Event]:
        """The model calls recorded since the last step (those in flight when the run ended)."""
        return self._drain()


def _start_time(pid: int) -> int | None:
    """A process's start time (clock ticks after boot), which a reused pid does not share."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _end_earlier(pid_file: Path) -> None:
    """Kill the process group a pid file names, where that process still runs (the same one)."""
    try:
        known = json.loads(pid_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    pid = known.get("pid")
    if isinstance(pid, int) and known.get("start") is not None \
            and _start_time(pid) == known["start"]:
        _signal_group(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def driver_environment(base_url: str, key: str, model: str, mcp_url: str, token: str,
                       task_file: Path, options: dict[str, Any], home: Path) -> dict[str, str]:
    """The environment a framework's driver starts with.

    The gateway's URL and run key (in the OpenAI variables too, so a framework's default client
    finds them), the MCP server's URL and token, the task's file and the options; no variable of
    innolab's own model settings (the real key never reaches the framework); the frameworks'
    telemetry off.
    """
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("INNOLAB_LLM_", "OPENAI_", "ANTHROPIC_", "LITELLM_"))
            and not k.endswith("_API_KEY")}
    return {**keep,
            "INNOLAB_GATEWAY_URL": base_url, "INNOLAB_GATEWAY_KEY": key,
            "INNOLAB_GATEWAY_MODEL": model, "INNOLAB_MCP_URL": mcp_url,
            "INNOLAB_MCP_TOKEN": token, "INNOLAB_TASK_FILE": str(task_file),
            "INNOLAB_FRAMEWORK_OPTIONS": json.dumps(options),
            "INNOLAB_MCP_TOOLS": ",".join(MCP_TOOLS),
            "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": key,
            # offline and quiet: litellm's cost map from its package, no tracing or telemetry
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_AGENTS_DISABLE_TRACING": "1",
            "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", "MSWEA_CONFIGURED": "true",
            "MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(home / "mini-swe-agent"),
            "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_CACHE_HOME": str(home / ".cache"), "PYTHONUNBUFFERED": "1"}
