"""MLAB (MLAgentBench's research agent): its response format, its action set and its research log.

Each research step answers with Reflection, Research Plan and Status, Fact Check, Thought and one
Action. The actions are MLAgentBench's: List Files, Copy File, Inspect Script Lines, Execute Script,
Understand File (a model call that answers a question about a file), Edit Script (AI) (a model call
that applies an edit instruction to a file; the observation is the diff), Undo Edit Script,
Reflection (a model call over the research log) and Final Answer (submits a file and ends the
research), plus Validate (innolab's pristine validator). The research plan and status is carried
from step to step, and every step is written to the research log (`research_log` trace events, which
the gym keeps as `research_log.md` in the run folder). After REFLECTIONS_PER_STEP reflections in a
step, the reply format offers only the actions that use a tool, so a model that would only reflect
still acts.
"""

from __future__ import annotations

import difflib
import shlex
from dataclasses import dataclass, field
from typing import Any, Literal

from innolab.agents.base import AgentState, LLMAgent
from innolab.gym.policy import Action, AgentSpec, Observation
from innolab.gym.tools import ToolCall
from innolab.llm.client import json_schema, lead_chars, payload_chars, text
from innolab.traces import Event, ResearchLog

ACTIONS = ["List Files", "Copy File", "Inspect Script Lines", "Execute Script", "Understand File",
           "Edit Script (AI)", "Undo Edit Script", "Reflection", "Validate", "Final Answer"]
ROLE = ("You are a research agent working on a task. Each step, reply with: reflection (on the "
        "last observation), research_plan_and_status (your plan: what is done, what is next), "
        "fact_check (what an observation confirmed), thought, then one action and its "
        "action_input. Actions: List Files (file: a folder, '.' for the workspace); Copy File "
        "(file, other_file: the copy); Inspect Script Lines (file, start_line, end_line); Execute "
        "Script (file: a python script); Understand File (file, request: what to look for); Edit "
        "Script (AI) (file: a script to edit or create, request: the edit, other_file: where to "
        "save, '' for file); Undo Edit Script (file); Reflection (request: what to reflect on); "
        "Validate (file: a candidate submission); Final Answer (file: the submission; ends the "
        "research). One short sentence per field.")
# characters per field: the four before the action are short enough that a reply reaches its
# action within a 512-token cap even at one token per character (a small model writing digits);
# under a smaller cap they shrink in proportion (`limits`)
LIMITS = {"reflection": 100, "research_plan_and_status": 160, "fact_check": 80, "thought": 100,
          "file": 100, "other_file": 100, "request": 240}
BEFORE_ACTION = ("reflection", "research_plan_and_status", "fact_check", "thought")
ACTION_TOKENS = 16  # the action's key and name, closing what comes before it
ANSWER_CHARS = 600


def limits(max_tokens: int) -> dict[str, int]:
    """Each field's maxLength under a reply cap.

    Those before the action as `lead_chars` sizes them (as written from 512 tokens up, smaller
    below), the action's input as written.

    Args:
        max_tokens: the reply's token cap.

    Returns:
        The characters each field may hold.
    """
    lead = lead_chars({key: LIMITS[key] for key in BEFORE_ACTION}, max_tokens, ACTION_TOKENS)
    return {**LIMITS, **lead}


def action_schema(actions: list[str], max_tokens: int = 512) -> dict:
    """A research step's reply format.

    Args:
        actions: the actions offered.
        max_tokens: the reply's token cap (the fields before the action fit it, see `limits`).

    Returns:
        The response_format (a JSON schema): the research fields, one action and its input.
    """
    size = limits(max_tokens)
    return json_schema("mlab_action", {
        "reflection": text(size["reflection"]),
        "research_plan_and_status": text(size["research_plan_and_status"]),
        "fact_check": text(size["fact_check"]),
        "thought": text(size["thought"]),
        "action": {"type": "string", "enum": actions},
        "action_input": {"type": "object", "properties": {
            "file": text(size["file"]), "other_file": text(size["other_file"]),
            "request": text(size["request"]), "start_line": {"type": "integer"},
            "end_line": {"type": "integer"}},
            "required": ["file", "other_file", "request", "start_line", "end_line"],
            "additionalProperties": False},
    }, ["reflection", "research_plan_and_status", "fact_check", "thought", "action",
        "action_input"])


ACTING = [a for a in ACTIONS if a != "Reflection"]  # the actions that use a tool


def edit_schema(max_tokens: int) -> dict:
    """Edit Script (AI)'s reply format: the whole new script.

    Args:
        max_tokens: the reply's token cap; the script is bounded so the reply closes within it.

    Returns:
        The response_format (a JSON schema).
    """
    return json_schema("mlab_edit", {"content": text(payload_chars(max_tokens, 0))}, ["content"])


ANSWER_SCHEMA = json_schema("mlab_answer", {"answer": text(ANSWER_CHARS)}, ["answer"])
FILE_LIMIT = 6000  # characters of a file shown to a helper call
CUT = ("The file is unchanged. Make it shorter, or split it: put a part in another file (Edit "
       "Script (AI) with that file and other_file) and import it from this one.")
# Reflection takes no tool: after this many in a step, the next action must use one
REFLECTIONS_PER_STEP = 1
READER_ROLE = "You read a file and answer a question about it, briefly."
EDITOR_ROLE = "You edit a Python script as instructed and return the whole new script."
REFLECTOR_ROLE = "You reflect on a research log and answer briefly."


@dataclass
class Pending:
    """What the next step completes.

    A file read for Understand File, Inspect Script Lines or Edit Script (AI) (`file`, the
    `request`, where an edit is saved, the lines to show), or an applied edit (its `diff`, shown
    with the write's outcome).
    """

    kind: Literal["understand", "inspect", "edit", "edited"]
    file: str = ""
    request: str = ""
    save: str = ""
    start: int | None = 1
    end: int | None = 0
    diff: str = ""


@dataclass
class MlabState(AgentState):
    """MLAB's state.

    The conversation, the research step's number, whether a Final Answer awaits its outcome, the
    research plan and status, the research log, each file's versions before its edits (for Undo Edit
    Script) and what the next step completes.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0
    final: bool = False
    plan: str = ""
    log: list[str] = field(default_factory=list)
    backups: dict[str, list[str]] = field(default_factory=dict)
    pending: Pending | None = None

    @classmethod
    def decode(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The nested fields of `values` as their types, the pending step included.

        Args:
            values: the state as JSON data.

        Returns:
            `values`, its summary and pending step read as their types.
        """
        values = super().decode(values)
        if values.get("pending"):
            values["pending"] = Pending(**values["pending"])
        else:
            values["pending"] = None
        return values


class MlabAgent(LLMAgent):
    """The MLAB (MLAgentBench) scaffold: a research agent with a plan, a log and file actions.

    Each research step answers with its reflection, research plan and status, fact check, thought
    and one of MLAgentBench's actions (list, inspect, understand, edit or run files, the final
    answer), with innolab's Validate beside them.
    """

    name = "mlab"
    mode = "agent"
    State = MlabState
    memory: MlabState

    def step(self, observation: Observation) -> Action:
        """One research step.

        Complete what the last step started (an answer about a file, its lines, an edit), then ask
        for the next research step and act on it.

        Args:
            observation: the last step's tool results.

        Returns:
            The action: the research step's tool call, or done once a Final Answer was accepted.
        """
        self.bound(observation)
        memory = self.memory
        if not memory.messages:
            memory.messages = [{"role": "system", "content": self.system_prompt(ROLE)},
                               {"role": "user", "content": observation.task_description}]
        if memory.final:  # Final Answer ends the research once its submission was accepted
            if any(r.name == "submit" and r.ok for r in observation.results):
                return self.action([], None, [], done=True)
            memory.final = False
        events: list[Event] = []
        pending, memory.pending = memory.pending, None
        kind = pending.kind if pending else None
        if kind == "edit":  # the file was read: have the model apply the instruction, then write it
            return self._apply_edit(pending, observation, events)
        if kind == "understand":
            text = self._answer(pending, self._file_text(observation), events)
        elif kind == "inspect":
            text = self._lines(pending, self._file_text(observation))
        elif kind == "edited":
            text = pending.diff + "\n" + self.describe_results(observation.results)
        elif memory.turn == 0:
            text = ""
        else:
            text = self.describe_results(observation.results)
        return self._research(text, events)

    # ---------------------------------------------------------------------------- the research step

    def _research(self, observation_text: str, events: list[Event]) -> Action:
        memory = self.memory
        completion = None
        # an observation to show before the next call (not after a broken repetition)
        observed = True
        reflections = 0
        for _ in range(REFLECTIONS_PER_STEP + 2):
            if observed and memory.turn > 0:
                self._log_observation(observation_text, events)
                shown = self._observation_message(observation_text)
                memory.messages.append({"role": "user", "content": shown})
            observed = True
            memory.turn += 1
            allowed = ACTIONS if reflections < REFLECTIONS_PER_STEP else ACTING
            # after REFLECTIONS_PER_STEP reflections, the step acts
            reply, completion = self.ask(self.context(memory.messages),
                                         action_schema(allowed, self.settings.max_tokens))
            memory.messages.append({"role": "assistant", "content": completion.text})
            events.append(self.llm_event(completion, "research step"))
            if self.repeats(completion.text):  # a loop of identical steps: dropped, and asked again
                self.break_repetition(memory.messages)
                memory.turn -= 1
                observed = False
                continue
            if reply is None or reply.get("action") not in allowed:
                observation_text = ("Answer with one JSON object in the research format; action "
                                    f"must be one of {allowed}.")
                continue
            memory.plan = str(reply.get("research_plan_and_status", ""))[:3000]
            self._log_step(reply, events)
            if reply["action"] != "Reflection":
                return self._act(reply, completion, events)
            reflections += 1
            observation_text = self._reflect(reply, events)
        memory.pending = None
        return self.action([], completion, events)

    def _observation_message(self, text: str) -> str:
        plan = self.memory.plan or "(none yet)"
        return f"Observation:\n{text}\n\nYour research plan and status so far:\n{plan}"

    def _act(self, reply: dict[str, Any], completion, events: list[Event]) -> Action:
        memory = self.memory
        turn = memory.turn
        given = reply.get("action_input") or {}
        file = str(given.get("file", "")).strip()
        other = str(given.get("other_file", "")).strip()
        request = str(given.get("request", ""))
        action = reply["action"]
        call = None
        if action == "List Files":
            call = ToolCall(f"m{turn}", "list_files", {"path": file or "."})
        elif action == "Copy File":
            command = f"cp -- {shlex.quote(file)} {shlex.quote(other)}"
            call = ToolCall(f"m{turn}", "bash", {"command": command})
        elif action == "Execute Script":
            command = f"python3 {shlex.quote(file or 'solve.py')}"
            call = ToolCall(f"m{turn}", "bash", {"command": command})
        elif action == "Validate":
            call = ToolCall(f"m{turn}", "validate", {"path": file or "submission.json"})
        elif action == "Final Answer":
            call = ToolCall(f"m{turn}", "submit", {"path": file or "submission.json"})
            memory.final = True
        elif action == "Undo Edit Script":
            backups = memory.backups.get(file) or []
            if not backups:
                return self._research(f"There is no edit of {file!r} to undo.", events)
            previous = backups.pop()
            call = ToolCall(f"m{turn}", "write_file", {"path": file, "content": previous})
        else:  # Understand File, Inspect Script Lines, Edit Script (AI): read the file first
            kinds = {"Understand File": "understand", "Inspect Script Lines": "inspect",
                     "Edit Script (AI)": "edit"}
            memory.pending = Pending(kinds[action], file=file or "solve.py", request=request,
                                     save=other or file or "solve.py",
                                     start=given.get("start_line", 1), end=given.get("end_line", 0))
            call = ToolCall(f"m{turn}", "read_file", {"path": file or "solve.py"})
        return self.action([call], completion, events)

    # ------------------------------------------------------------------------- helper model calls

    def _file_text(self, observation: Observation) -> str | None:
        result = observation.results[0] if observation.results else None
        return result.output if result is not None and result.ok else None

    def _answer(self, pending: Pending, text: str | None, events: list[Event]) -> str:
        if text is None:
            return f"Could not read {pending.file}."
        question = pending.request or "What does this file do?"
        messages = [{"role": "system", "content": READER_ROLE},
                    {"role": "user", "content": f"File {pending.file}:\n```\n{text[:FILE_LIMIT]}\n"
                                                f"```\n\nQuestion: {question}"}]
        reply, completion = self.ask(messages, ANSWER_SCHEMA)
        events.append(self.llm_event(completion, "understand file"))
        return str((reply or {}).get("answer", completion.text))

    @staticmethod
    def _lines(pending: Pending, text: str | None) -> str:
        if text is None:
            return f"Could not read {pending.file}."
        lines = text.splitlines()
        start = max(1, int(pending.start or 1))
        end = int(pending.end or 0) or min(len(lines), start + 99)
        shown = "\n".join(f"{n}: {line}" for n, line in enumerate(lines[start - 1:end], start))
        return f"Lines {start}-{end} of {pending.file} ({len(lines)} lines):\n{shown}"

    def _apply_edit(self, pending: Pending, observation: Observation,
                    events: list[Event]) -> Action:
        before = self._file_text(observation) or ""
        messages = [{"role": "system", "content": EDITOR_ROLE},
                    {"role": "user", "content": f"Script {pending.file}:\n```python\n"
                                                f"{before[:FILE_LIMIT]}\n```\n\n"
                                                f"Edit instruction: {pending.request}"}]
        reply, completion = self.ask(messages, edit_schema(self.settings.max_tokens))
        events.append(self.llm_event(completion, "edit script"))
        save = pending.save
        if "content" in self.cut:  # a cut script is never saved
            note = self.cut_note(f"edited script for {save}", self.cut["content"], CUT)
            return self._research(note, events)
        after = str((reply or {}).get("content", completion.text))
        self.memory.backups.setdefault(save, []).append(before)
        diff = "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                            after.splitlines(keepends=True),
                                            f"{pending.file} (before)", f"{save} (after)"))
        self.memory.pending = Pending("edited", diff=f"The edited file is saved to {save}. Diff:\n"
                                                     f"{diff[-4000:] or '(no change)'}")
        write = ToolCall(f"m{self.memory.turn}-e", "write_file", {"path": save, "content": after})
        return self.action([write], completion, events)

    def _reflect(self, reply: dict[str, Any], events: list[Event]) -> str:
        log = "\n".join(self.memory.log)[-FILE_LIMIT:]
        request = str((reply.get("action_input") or {}).get("request", "")) or "what to try next"
        messages = [{"role": "system", "content": REFLECTOR_ROLE},
                    {"role": "user", "content": f"Research log:\n{log or '(empty)'}\n\n"
                                                f"Reflect on: {request}"}]
        answer, completion = self.ask(messages, ANSWER_SCHEMA)
        events.append(self.llm_event(completion, "reflection"))
        return str((answer or {}).get("answer", completion.text))

    # ------------------------------------------------------------------------------ research log

    def _log_step(self, reply: dict[str, Any], events: list[Event]) -> None:
        entry = (f"## Step {self.memory.turn}\n\nReflection: {reply.get('reflection', '')}\n\n"
                 f"Research Plan and Status: {reply.get('research_plan_and_status', '')}\n\n"
                 f"Fact Check: {reply.get('fact_check', '')}\n\n"
                 f"Thought: {reply.get('thought', '')}\n\n"
                 f"Action: {reply['action']} {reply.get('action_input') or {}}\n")
        self.memory.log.append(entry)
        events.append(ResearchLog(entry=entry))

    def _log_observation(self, text: str, events: list[Event]) -> None:
        entry = f"\nObservation:\n```\n{text[-2000:]}\n```\n"
        self.memory.log.append(entry)
        events.append(ResearchLog(entry=entry))


AGENT = AgentSpec(name="mlab", factory=MlabAgent, mode="agent",
                  description="MLAB (MLAgentBench): a research agent with a plan, a log and "
                  "file actions")
