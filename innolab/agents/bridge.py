"""External agent frameworks in the gym: a policy whose agent owns its loop in a process of its own.

`FrameworkPolicy` starts the framework (a driver module, run as `python -m innolab.agents.confine
DRIVER`) with the run's tools over MCP (innolab.agents.mcp_tools: streamable HTTP on loopback, a
run-scoped token) and the run's model behind a gateway (innolab.llm.gateway: a run-scoped key,
never the real API key). Each step it waits for the framework's next tool calls and hands them to
the run loop, which runs them as it runs every scaffold's (dispatcher, budgets and time limits,
trace, checkpoint, provenance, pristine validator); their results go back to the framework at the
next step. Every model call the framework makes is an `llm_call` event of the step it falls in,
and counts against the run's token and cost budgets: the gateway refuses a request once one of
them (or the wall clock) is spent, before the model is called (status 402, naming the budget),
and the run then ends with that budget's reason.

The framework's process is confined where the machine allows (innolab.agents.confine: a user of its
own where innolab is root, a HOME and working folder of its own outside the run folder, the tasks'
folders hidden; where it cannot be, it is not started, unless the run was made allowing it to run
unconfined: ALLOW_UNCONFINED_VAR=1, recorded as `allow_unconfined` in config.json's policy_args);
`framework.json` records what held, with the resolved tool-call mode, the gateway's context and
where it came from.

The framework's end is the run's: its process exiting normally ends the run as `agent_finished`;
raising (a non-zero exit) as `agent_error`, with its traceback in the trace; its model failing for
good behind the gateway (retries spent: the framework is answered 502) as `llm_error`, with the
cause; the run's budget running out (or a request the gateway refused for it) as the budget
says. Its processes are killed with the run, and nothing of it outlives the run (`close`; a
warden, innolab.gym.leftovers, where the runner is killed). A killed run resumes from its
checkpointed workspace and trace with the framework started afresh: what the framework cannot
restore (its own memory) is said in the trace's `run_resumed` event (`resume_note`), and in the
task it is given.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import secrets
import signal
import stat
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from innolab.agents import confine
from innolab.agents.base import AgentState, LLMAgent
from innolab.agents.mcp_tools import MCP_TOOLS, Bridge, ToolServer
from innolab.gym.leftovers import MARKER_VARIABLE, Warden, mark
from innolab.gym.policy import Action, AgentFailed, Observation
from innolab.llm.errors import LLMError
from innolab.llm.gateway import BUDGETS, Budget, Gateway, Served
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
COUNTS_FILE = "framework.json"  # its settings as resolved, then the gateway's and MCP's counts
OWN_COUNTS_FILE = "framework_counts.json"  # the framework's own counts (from its working folder)
TASK_FILE = "framework_task.md"
STOP_GRACE_S = 5.0
# why a tool call after the run's end is refused, by the run's end reason
ENDED = {**{reason: f"{words}: no more tool calls" for reason, words in BUDGETS.items()},
         "steps": "the run's step limit is reached (its setting: max_steps): no more tool calls",
         "stalled": "the run ended: it stalled (steps without a tool call)",
         "agent_finished": "the run has finished: no more tool calls",
         "llm_error": "the run ended: its model failed",
         "agent_error": "the run ended: the framework failed"}
# a run may run its framework unconfined only where this is 1 when it is made (config.json records
# it: its policy_args' allow_unconfined); elsewhere a framework that cannot be confined is refused
ALLOW_UNCONFINED_VAR = "INNOLAB_ALLOW_UNCONFINED"
SECRET_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET", "_PASSWORD")  # left out of its env
LIBRARIES = ("mcp", "openai", "litellm")  # what the frameworks speak through (versions recorded)


@dataclass
class FrameworkState(AgentState):
    """What a framework run keeps beyond the scaffolds' bookkeeping.

    `starts`: how many times the framework was started (1 + the resumes); `steps`: the steps
    it made (tool calls handed to the run loop, one step per batch). `llm_calls` (the next call
    index) counts the calls recorded in the trace by the checkpoint: failed and cancelled ones
    too, so that a resumed run's indices neither repeat nor leave a gap.
    """

    starts: int = 0
    steps: int = 0


def unconfined_allowed() -> bool:
    """Whether runs made now may run their framework unconfined (ALLOW_UNCONFINED_VAR=1)."""
    return os.environ.get(ALLOW_UNCONFINED_VAR) == "1"


def library_versions() -> dict[str, str | None]:
    """The installed versions of the libraries the frameworks speak through (None: absent)."""
    found: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


class FrameworkPolicy(LLMAgent):
    """A policy that runs an external agent framework in its own process.

    Attributes:
        driver: The module run as the framework (it reads the run's addresses from its
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
        self._tokens_left: int | None = None
        self._cost_left: float | None = None
        self._refused: str | None = None
        self._failure: LLMError | None = None
        self._resumed = False
        self._run_dir: Path | None = None
        self._folder: Path | None = None
        self._warden: Warden | None = None
        self._undumpable: confine.Undumpable | None = None
        self._settings: dict[str, Any] = {}

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
            The framework's next calls (run concurrently by the run loop); done when it exited;
            none when the gateway refused a request for the budget (the run loop then ends the
            run with that budget's reason).

        Raises:
            AgentFailed: The framework exited with an error (its traceback in the exception).
        """
        self.workspace_rules = observation.workspace_rules
        remaining = observation.remaining_s
        with self._events_lock:
            self._deadline = None if remaining is None else time.monotonic() + remaining
            self._tokens_left = getattr(observation, "remaining_tokens", None)
            self._cost_left = getattr(observation, "remaining_cost_usd", None)
        self._bridge.deliver(observation.results)
        if self._process is None:
            self._start(observation)
        while True:
            self._raise_failure()
            if self._refused is not None:  # a budget is spent: the run loop ends the run so
                if self._refused == "wall_clock" and self._deadline is not None:
                    time.sleep(max(0.0, self._deadline - time.monotonic()))
                return self._action([])
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
                self._raise_failure()  # it ended on the model's failure: llm_error
                if self._refused is not None:  # it ended on the refusal: the budget ends the run
                    return self._action([])
                if code == 0:
                    return self._action([], done=True)
                refused = self._refusal(code)
                with self._events_lock:
                    tokens, cost, self._tokens, self._cost = self._tokens, self._cost, 0, 0.0
                error = AgentFailed(refused or
                                    f"the framework's process exited with status {code}",
                                    self._log_tail(), tokens=tokens, cost_usd=cost)
                error.events = self._drain()  # type: ignore[attr-defined]
                raise error
            if self._deadline is not None and time.monotonic() >= self._deadline:
                return self._action([])  # the run loop ends the run: its budget is spent

    def _refusal(self, code: int) -> str | None:
        """Why the framework was not started: it cannot be confined (innolab.agents.confine)."""
        if code != confine.REFUSED or self._folder is None:
            return None
        refused = _read_json(self._folder / confine.STATUS_FILE).get("refused")
        return refused if isinstance(refused, str) else None

    def _action(self, calls: list[Any], done: bool = False) -> Action:
        with self._events_lock:
            tokens, cost, self._tokens, self._cost = self._tokens, self._cost, 0, 0.0
        return Action(list(calls), done=done, tokens=tokens, cost_usd=cost, events=self._drain())

    def _drain(self) -> list[Event]:
        """The calls recorded since the last step, and the call index after them advanced.

        `memory.llm_calls` counts the calls handed to the trace (failed and cancelled ones too):
        what the checkpoint after this step holds, so a resume numbers on from there.
        """
        with self._events_lock:
            events, self._events = self._events, []
        for event in events:
            if isinstance(event, LLMCall) and event.call_index is not None:
                self.memory.llm_calls = max(self.memory.llm_calls, event.call_index + 1)
        return events

    # ------------------------------------------------------------------------ the gateway's calls

    def _record(self, served: Served) -> None:
        """An `llm_call` event for each request the gateway numbered: its usage counts."""
        completion = served.completion
        purpose = f"framework:{self.driver.rsplit('.', 1)[-1]}" + (
            " (tool calls emulated)" if served.emulated else "")
        with self._events_lock:
            if completion is not None:
                self._events.append(LLMCall(purpose=purpose, **completion.event()))
                self._tokens += completion.prompt_tokens + completion.completion_tokens
                self._cost += completion.cost_usd
                return
            partial = served.partial
            usage = {}
            if served.cancelled:  # what it had used when its client went away
                prompt = int(partial.get("prompt_tokens") or 0)
                reply = int(partial.get("completion_tokens") or 0)
                price_in, price_out = self.client.settings.prices()
                usage = {"prompt_tokens": prompt, "completion_tokens": reply,
                         "cost_usd": (prompt * price_in + reply * price_out) / 1e6,
                         "response": partial.get("response") or None}
                self._tokens += prompt + reply
                self._cost += usage["cost_usd"]
            self._events.append(LLMCall(purpose=purpose, failed=True, cached=False,
                                        cancelled=served.cancelled, error=served.error,
                                        **usage, **served.sent))

    def _model_failed(self, error: LLMError) -> None:
        """The gateway saw the model fail for good: the step ends, and the run (`llm_error`)."""
        self._failure = self._failure or error
        self._bridge.wake()

    def _raise_failure(self) -> None:
        """End the run as `llm_error` with the cause, where the model failed behind the gateway.

        The failed call's event is the run loop's (from the error: its cause and what was sent,
        under the framework's purpose), not recorded twice; the calls before it are the trace's
        at the run's end (`flush_events`).

        Raises:
            LLMError: The model's failure.
        """
        error = self._failure
        if error is None:
            return
        index = error.sent.get("call_index")
        with self._events_lock:
            for event in self._events:
                if isinstance(event, LLMCall) and event.failed and event.call_index == index:
                    self._events.remove(event)
                    error.sent = {**error.sent, "purpose": event.purpose}
                    break
        if index is not None:
            self.memory.llm_calls = max(self.memory.llm_calls, int(index) + 1)
        raise error

    def _budget(self) -> Budget:
        """What is left of the run's budget now: as of the step, less the calls since."""
        with self._events_lock:
            tokens = None if self._tokens_left is None else self._tokens_left - self._tokens
            cost = None if self._cost_left is None else self._cost_left - self._cost
            return Budget(deadline=self._deadline, tokens_left=tokens, cost_left=cost)

    def _budget_refused(self, reason: str) -> None:
        """The gateway refused a request for a spent budget: the step ends, and the run."""
        self._refused = reason
        self._bridge.wake()

    # ---------------------------------------------------------------------------- the process

    def task_prompt(self, observation: Observation) -> str:
        """What the framework is asked to do: the run's role and rules, then the task."""
        parts = [self.system_prompt(ROLE), "# The task\n\n" + observation.task_description]
        if self._resumed:
            parts.insert(0, RESUMED)
        return "\n\n".join(parts)

    def _start(self, observation: Observation) -> None:
        run_dir = Path(self.cache_path).parent if self.cache_path else Path.cwd()
        self._run_dir = run_dir
        mode = self.options.get("tool_call_mode", "auto")
        self._gateway = Gateway(self.client.settings, self.client,
                                first_index=self.memory.llm_calls, record=self._record,
                                budget=self._budget, refused=self._budget_refused,
                                failed=self._model_failed,
                                emulate_tools=None if mode == "auto" else mode == "emulated",
                                context_tokens=self.options.get("context_tokens"))
        base_url = self._gateway.start()
        self._tools = ToolServer(self._bridge)
        mcp_url = self._tools.start()
        task = self.task_prompt(observation)
        (run_dir / TASK_FILE).write_text(task, encoding="utf-8")  # the run's record of it
        _end_earlier(run_dir / PID_FILE)  # a killed run's framework, should it have outlived it
        steps, marker = self._private_folder(task)
        assert self._folder is not None
        home = self._folder / "home"
        env = driver_environment(base_url, self._gateway.key, self.client.settings.model,
                                 mcp_url, self._tools.token, self._folder / TASK_FILE,
                                 self.options, home)
        env.update({confine.PARENT_VAR: str(os.getpid()), confine.PLAN_VAR: json.dumps(steps),
                    MARKER_VARIABLE: marker})
        self.memory.starts += 1
        log = (run_dir / LOG_FILE).open("ab")
        log.write(f"\n--- start {self.memory.starts}: python -m {self.driver}\n".encode())
        log.flush()
        if os.geteuid() != 0:  # no other user to run it as: keep it out of this process
            self._undumpable = confine.Undumpable().__enter__()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "innolab.agents.confine", self.driver], env=env,
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=home,
            start_new_session=True)
        log.close()
        self._log = run_dir / LOG_FILE
        (run_dir / PID_FILE).write_text(json.dumps(
            {"pid": self._process.pid, "start": _start_time(self._process.pid)}),
            encoding="utf-8")
        self._settings = {
            "tool_call_mode": self._gateway.tool_call_mode, "tool_call_mode_given": mode,
            "context_tokens": self._gateway.context_tokens(),
            "context_source": self._gateway.context_source,
            "allow_unconfined": self.allow_unconfined,
            "folder": str(self._folder),  # its private folder (gone with the run)
            "libraries": library_versions()}
        self._write_counts()

    def _private_folder(self, task: str) -> tuple[dict[str, Any], str]:
        """The framework's own folder (outside the run folder), its plan and its marker.

        Where innolab is root: a user id of its own for it (innolab.gym.userids), its HOME and
        working folder owned by that user, the tasks' folders, and of a checkout all but what its
        Python needs, hidden (innolab.agents.confine).
        A warden removes the folder and ends every process of it when the run ends, however it
        ends.
        """
        from innolab.gym.userids import agent_id

        folder = confine.private_folder()
        marker = secrets.token_hex(8)
        uid = agent_id() if os.geteuid() == 0 else None
        mark(folder, uid=uid, marker=marker)
        self._folder = folder
        self._warden = Warden(uid, marker, [folder])
        self._warden.start()
        home = folder / "home"
        home.mkdir(mode=0o700)
        (folder / TASK_FILE).write_text(task, encoding="utf-8")
        (folder / TASK_FILE).chmod(0o644)
        if uid is not None:
            folder.chmod(0o711)  # the framework's user may pass to its home, not list this
            os.chown(home, uid, uid)
        steps = confine.plan(uid, home, folder, confine.known_answers(),
                             (self.driver,)) if uid is not None else {
            "uid": None, "home": str(home), "folder": str(folder), "expose": [], "hide": [],
            "unreachable": []}
        steps["allow_unconfined"] = self.allow_unconfined
        return steps, marker

    @property
    def allow_unconfined(self) -> bool:
        """Whether the run lets the framework run unconfined (its `allow_unconfined`)."""
        return bool(self.options.get("allow_unconfined", False))

    def _log_tail(self) -> str:
        try:
            text = self._log.read_text(encoding="utf-8", errors="replace")
        except (OSError, AttributeError):
            return ""
        return text[text.rfind("\n--- start "):][-20000:]

    def close(self, reason: str | None = None) -> None:
        """End the framework with the run: calls waiting are answered, its processes killed.

        Args:
            reason: Why the run ended (a tool call waiting, or made after, is told so).
        """
        self._bridge.close(ENDED.get(reason or "", "the run has ended: no more tool calls"))
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
            if self._run_dir is not None:
                (self._run_dir / PID_FILE).unlink(missing_ok=True)
        if self._undumpable is not None:
            self._undumpable.__exit__(None, None, None)
            self._undumpable = None
        for server in (self._tools, self._gateway):  # the gateway once its calls are recorded
            if server is not None:
                server.close()
        if self._folder is not None:
            self._settings["confinement"] = _read_json(self._folder / confine.STATUS_FILE)
            own = _read_json(self._folder / "home" / OWN_COUNTS_FILE)
            if own and self._run_dir is not None:
                (self._run_dir / OWN_COUNTS_FILE).write_text(json.dumps(own) + "\n",
                                                             encoding="utf-8")
        if self._warden is not None:  # its processes ended, its folder removed
            self._warden.stop()
            self._warden = None
        if self._gateway is not None and process is not None:
            self._write_counts({"gateway_requests": self._gateway.served,
                                "gateway_refused": dict(self._gateway.refusals),
                                "gateway_cancelled": self._gateway.cancelled,
                                "mcp_calls": self._bridge.calls, "starts": self.memory.starts,
                                # what the gateway learnt of the model (its fold's factor; the
                                # context where a refusal named a smaller one)
                                "tokens_per_estimate": self._gateway.tokens_per_estimate,
                                "context_at_end": self._gateway.context_tokens(),
                                "context_source_at_end": self._gateway.context_source})
        self._tools = self._gateway = None
        self._folder = None

    def _write_counts(self, counts: dict[str, Any] | None = None) -> None:
        if self._run_dir is not None:
            (self._run_dir / COUNTS_FILE).write_text(
                json.dumps({**(counts or {}), **self._settings}) + "\n", encoding="utf-8")

    def flush_events(self) -> list[Event]:
        """The model calls recorded since the last step (those in flight when the run ended)."""
        return self._drain()


def _read_json(path: Path, limit: int = 65536) -> dict[str, Any]:
    """A small JSON object the framework's process wrote (never through a link; {}: none).

    Only numbers, strings, booleans and None are kept, each at the top level.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return {}
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return {}
        data = handle.read(limit + 1)
    try:
        value = json.loads(data) if len(data) <= limit else None
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items()
            if v is None or isinstance(v, bool | int | float | str | list)}


def _start_time(pid: int) -> int | None:
    """A process's start time (clock ticks after boot), which a reused pid does not share."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text[text.rindex(")") + 2:].split()[19])
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
    innolab's own model settings nor any that names a key, token, secret or password (the real
    key never reaches the framework); the frameworks' telemetry off; its HOME, caches and
    temporary files in its own folder.
    """
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("INNOLAB_LLM_", "OPENAI_", "ANTHROPIC_", "LITELLM_"))
            and not k.endswith(SECRET_SUFFIXES)}
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
            "XDG_CACHE_HOME": str(home / ".cache"), "TMPDIR": str(home),
            "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
