"""CodeAct: code as action (a python or bash block per turn) in a persistent interpreter.

Observations are fed back; the agent submits a file and says when it has finished.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from innolab.agents.base import AgentState, LLMAgent
from innolab.gym.policy import Action, AgentSpec, Observation
from innolab.gym.tools import ToolCall
from innolab.llm.client import json_schema, payload_chars, text
from innolab.traces import Event

ROLE = ("You are a CodeAct agent. Each turn, act by writing code: a python or bash snippet that "
        "runs in the workspace; you will see its output. Python runs in one persistent "
        "interpreter: variables, imports and functions you define stay available in later turns. "
        "When your submission file is ready, use the submit action with its path; when done, use "
        "finish. Keep thought to one short sentence and code short.")
ACTIONS = ("python", "bash", "submit", "finish")
THOUGHT_CHARS = 160
# a workspace path; a submit action's whole argument, so it can never run into the token cap
PATH_CHARS = 80


def action_schema(actions: tuple[str, ...], max_tokens: int) -> dict:
    """CodeAct's reply format.

    A short thought, the action, the path to submit (empty otherwise) and the code to run (empty for
    submit and finish).

    Args:
        actions: the actions offered (finish only once a submission counts).
        max_tokens: the reply's token cap; each field is bounded so the reply closes within it.

    Returns:
        The response_format (a JSON schema).
    """
    return json_schema("codeact_action", {
        "thought": text(THOUGHT_CHARS),
        "action": {"type": "string", "enum": list(actions)},
        "path": text(PATH_CHARS, "the file to submit (submit only; empty otherwise)"),
        "code": text(payload_chars(max_tokens, THOUGHT_CHARS + PATH_CHARS),
                     "the code to run (python or bash)"),
    }, ["thought", "action", "path", "code"])


TOOLS_NATIVE = ("python_session", "bash", "submit")
# CodeAct ends when the agent says finish; innolab answers a finish before any accepted submission
# instead
NOT_YET = ("Nothing has been submitted yet, so finishing now would score nothing. Keep working: "
           "write the submission the task describes, check it, then submit it.")

CUT = ("Write shorter code: one part per turn (the interpreter keeps your definitions between "
       "turns), or write a file in parts and run it.")
CUT_RAN = ("Your {what} was cut at {chars} characters (the longest a reply can hold) and {then}.")
FORMAT = ('Reply with one JSON object: {"thought": ..., "action": "python|bash|submit|finish", '
          '"path": ..., "code": ...}')


@dataclass
class CodeActState(AgentState):
    """CodeAct's state.

    The conversation, the turn's number and whether a submission was accepted (finish is offered
    only then).
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    turn: int = 0
    submitted: bool = False


class CodeActAgent(LLMAgent):
    """The CodeAct scaffold: one conversation in which every model reply is an action.

    An action runs code (in a persistent interpreter by default), submits a file or finishes.
    """

    name = "codeact"
    mode = "agent"
    State = CodeActState
    memory: CodeActState

    def __init__(self, native_tools: bool = False, persistent: bool = True, **options) -> None:
        super().__init__(**options)
        self.native_tools = native_tools
        # CodeAct keeps one interpreter
        self.python_tool = "python_session" if persistent else "python"

    def step(self, observation: Observation) -> Action:
        """One turn of the conversation.

        The observation joins the conversation, the model writes one action, and its code runs
        (or its file is submitted, or it finishes once a submission counts).

        Args:
            observation: the last turn's tool results.

        Returns:
            The action: one tool call, none (a reply to answer again), or done.
        """
        self.bound(observation)
        memory = self.memory
        if not memory.messages:
            memory.messages = [{"role": "system", "content": self.system_prompt(ROLE)},
                               {"role": "user", "content": observation.task_description}]
            memory.turn = 0
        elif observation.results:
            shown = "Observation:\n" + self.describe_results(observation.results)
            memory.messages.append({"role": "user", "content": shown})
            accepted = any(r.name == "submit" and r.ok for r in observation.results)
            memory.submitted = memory.submitted or accepted
        turn = memory.turn
        memory.turn += 1
        if self.native_tools:
            from innolab.gym.tools import TOOL_SPECS

            wanted = {self.python_tool if name == "python_session" else name
                      for name in TOOLS_NATIVE}
            specs = [s for s in TOOL_SPECS if s["function"]["name"] in wanted]
            completion = self.chat(self.context(memory.messages), tools=specs)
            memory.messages.append({"role": "assistant", "content": completion.text or json.dumps(
                completion.tool_calls)})
            calls = [ToolCall(f"t{turn}-{i}", c["name"], json.loads(c["arguments"] or "{}"))
                     for i, c in enumerate(completion.tool_calls)]
            events = [self.llm_event(completion, "act")]
            return self.action(calls, completion, events, done=not calls)
        events: list[Event] = []
        # a refused finish or a repetition loop is answered and asked again within the step
        for _ in range(3):
            # finish once a submission counts
            actions = ACTIONS if memory.submitted else ACTIONS[:-1]
            schema = action_schema(actions, self.settings.max_tokens)
            reply, completion = self.ask(self.context(memory.messages), schema)
            memory.messages.append({"role": "assistant", "content": completion.text})
            events.append(self.llm_event(completion, "act"))
            if self.repeats(completion.text):
                self.break_repetition(memory.messages)
                continue
            if reply is None or reply.get("action") not in ACTIONS:
                memory.messages.append({"role": "user", "content": FORMAT})
                return self.action([], completion, events)
            kind, code = reply["action"], str(reply.get("code", ""))
            if kind in ("python", "bash") and "code" in self.cut:
                # cut code runs as it was cut, as CodeAct's reference implementation (OpenHands)
                # closes an unclosed code block and runs it: its error, and this note, come back
                memory.messages.append({"role": "user", "content": CUT_RAN.format(
                    what="code", chars=self.cut["code"], then="ran as it was cut") + " " + CUT})
            if kind != "finish":
                break
            if memory.submitted:
                return self.action([], completion, events, done=True)
            memory.messages.append({"role": "user", "content": NOT_YET})
        else:
            return self.action([], completion, events)
        if kind == "submit" and "path" in self.cut:  # the submit tool says whether it names a file
            memory.messages.append({"role": "user", "content": CUT_RAN.format(
                what="path", chars=self.cut["path"], then="was submitted as it was cut")
                + " Give the submission's path only."})
        if kind == "submit":
            arguments = {"path": str(reply.get("path", "")).strip() or "submission.json"}
        else:
            arguments = {"code": code} if kind == "python" else {"command": code}
        tool = self.python_tool if kind == "python" else kind
        return self.action([ToolCall(f"t{turn}", tool, arguments)], completion, events)


class CodeActOptions(BaseModel):
    """CodeAct's options: native tool calls or JSON actions, a persistent interpreter or not."""

    model_config = ConfigDict(extra="forbid")

    native_tools: bool = Field(default=False, description="CodeAct: ask for native tool calls "
                               "instead of a JSON action (an endpoint that supports them)")
    persistent: bool = Field(default=True, description="CodeAct: one persistent Python "
                             "interpreter per run (False: each action in a fresh one)")


AGENT = AgentSpec(name="codeact", factory=CodeActAgent, mode="agent", options=CodeActOptions,
                  description="CodeAct: code as the action, in a persistent interpreter")
