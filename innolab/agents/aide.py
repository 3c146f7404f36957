"""AIDE: tree search over whole programs (draft, debug, improve) with a journal of nodes.

A workflow: the procedure is fixed, the model writes the programs.

Each node is a complete program that must write submission.json. Its metric comes from the task's
validator (the `validate` tool's verdict), never from the model's reading of the output. The search
policy is AIDE's (`aide_journal.SearchPolicy`); every prompt carries the journal's memory (each
earlier node's plan, validator outcome and score), the task description, and for an improvement the
best node's code.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from innolab.agents.aide_journal import Journal, Node, SearchPolicy
from innolab.agents.base import AgentState, LLMAgent
from innolab.gym.policy import Action, AgentSpec, Observation
from innolab.gym.tools import ToolCall
from innolab.llm.client import json_schema, lead_chars, payload_chars, text
from innolab.traces import Event

ROLE = ("You are an expert solving a task by writing complete Python programs. Each program must "
        "write submission.json in the format the task describes. Reply with a short plan (a "
        "sentence or two) and the full program, kept short.")
PLAN_CHARS = 300
# what a plan leaves to the program's start at one token per character: the plan keeps PLAN_CHARS
# from a 512-token cap up and shrinks below it (`lead_chars`; 104 characters at 256)
PROGRAM_TOKENS = 104


def node_schema(max_tokens: int) -> dict:
    """The reply format of an AIDE node: a short plan and the whole program.

    Args:
        max_tokens: the reply's token cap; the program's length is bounded so the reply closes
            within it, and the plan so that the program starts within it (PROGRAM_TOKENS).

    Returns:
        The response_format (a JSON schema).
    """
    plan = lead_chars({"plan": PLAN_CHARS}, max_tokens, PROGRAM_TOKENS)["plan"]
    code = text(payload_chars(max_tokens, plan))
    return json_schema("aide_node", {"plan": text(plan), "code": code}, ["plan", "code"])


CLEAR = "import os\nif os.path.exists('submission.json'):\n    os.remove('submission.json')\n"
INSTRUCTIONS = {
    "draft": ("Write a first complete program, with a plan that differs from the earlier nodes' "
              "where there are any."),
    "debug": "This program failed. Fix it and return the whole corrected program.",
    "improve": ("This program is valid. Improve its score with one focused change and return the "
                "whole program."),
}
CUT_RAN = ("Your program was cut at {chars} characters (the longest a reply can hold) and ran as "
           "it was cut. Write a shorter program: fewer lines, no comments, the same method.")


Phase = Literal["generate", "execute", "evaluate"]


@dataclass
class AideState(AgentState):
    """AIDE's state.

    The phase of its newest node (generate a program, run it, have it validated), the journal
    (serialised as its list of nodes) and the objective's direction as last observed.
    """

    phase: Phase = "generate"
    journal: Journal = field(default_factory=Journal)
    direction: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The state as plain JSON data, the journal as its list of nodes.

        Returns:
            The state's fields, `journal` serialised by `Journal.to_list`.
        """
        return {**super().to_json(), "journal": self.journal.to_list()}

    @classmethod
    def decode(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The nested fields of `values` as their types, the journal included.

        Args:
            values: the state as JSON data.

        Returns:
            `values`, its summary and journal read as their types.
        """
        values = super().decode(values)
        values["journal"] = Journal.from_list(values.get("journal") or [])
        return values


class AideAgent(LLMAgent):
    """The AIDE scaffold: a tree search over whole programs.

    Each node is a program the model drafts, debugs or improves from a parent; the search policy
    picks the next node, and the validator's verdict on each node guides it.
    """

    name = "aide"
    mode = "workflow"
    State = AideState
    memory: AideState

    def __init__(self, num_drafts: int = 2, debug_prob: float = 0.5, max_debug_depth: int = 3,
                 **options: Any) -> None:
        super().__init__(**options)
        self.policy = SearchPolicy(num_drafts=num_drafts, debug_prob=debug_prob,
                                   max_debug_depth=max_debug_depth)

    @property
    def journal(self) -> Journal:
        """The journal of the nodes tried so far (part of the state)."""
        return self.memory.journal

    def prompt(self, stage: str, parent: Node | None, journal: Journal,
               description: str) -> list[dict[str, str]]:
        """The messages of one AIDE step.

        Role, task, the journal's memory, the parent's code and the instruction.

        Args:
            stage: "draft", "debug" or "improve".
            parent: the node debugged or improved (None for a draft).
            journal: the journal, for its memory.
            description: the task's description.

        Returns:
            The system and user messages.
        """
        parts = [description]
        memory = journal.summary()
        if memory:
            parts.append("Memory (the solutions tried so far, with the validator's verdict):\n"
                         f"{memory}")
        if parent is not None:
            parts.append(f"Node {parent.id}'s program:\n```python\n{parent.code}\n```")
            if stage == "debug":
                parts.append(f"Its output:\n{parent.output[-1500:]}")
            else:
                parts.append(f"Its validator score: {parent.metric!r}")
        parts.append(INSTRUCTIONS[stage])
        return [{"role": "system", "content": self.system_prompt(ROLE)},
                {"role": "user", "content": "\n\n".join(parts)}]

    # ------------------------------------------------------------------------------------ the loop

    def step(self, observation: Observation) -> Action:
        """One phase of the newest node.

        Generate a program and run it, have what it wrote validated, or read the verdict (submitting
        a node that is the best so far).

        Args:
            observation: the last step's results (the run's or the validation's).

        Returns:
            The action: run the program (cut or not), validate, or submit.
        """
        self.bound(observation)
        memory = self.memory
        memory.direction = observation.direction
        journal = memory.journal
        if memory.phase == "execute":  # the node's program ran: validate what it wrote
            node = journal.nodes[-1]
            node.output += self.describe_results(observation.results)
            node.ran = bool(observation.results and observation.results[0].ok)
            memory.phase = "evaluate"
            validate = ToolCall(f"n{node.id}-v", "validate", {"path": "submission.json"})
            return self.action([validate], None, [])
        if memory.phase == "evaluate":
            node = journal.nodes[-1]
            verdict = observation.results[0].extra.get("verdict", {}) if observation.results else {}
            node.valid = bool(node.ran and verdict.get("valid"))
            node.metric = verdict.get("score") if node.valid else None
            node.evaluated = True
            if not node.valid:
                errors = "; ".join(verdict.get("errors", ["no verdict"]))[:800]
                node.output += "\nvalidator: " + errors
            events = [journal.event(node)]
            best = journal.best(observation.direction)
            memory.phase = "generate"
            # a valid node is submitted when it is the best so far, or when the checker gives no
            # score (the latest valid answer counts)
            if node.valid and (node.metric is None or (best is not None and best.id == node.id)):
                submit = ToolCall(f"n{node.id}-s", "submit", {"path": "submission.json"},
                                  source=node.code)
                return self.action([submit], None, events)
            return self._generate(observation, journal, events)
        return self._generate(observation, journal, [])

    def _generate(self, observation: Observation, journal: Journal, events: list[Event]) -> Action:
        if self.initial_solution and not journal.nodes:
            parent, plan, code, completion = None, "prior solution", self.initial_solution, None
        else:
            rng = random.Random((self.settings.seed or 0) * 100_003 + len(journal.nodes))
            stage, parent = journal.choose(self.policy, observation.direction, rng)
            messages = self.prompt(stage, parent, journal, observation.task_description)
            reply, completion = self.ask(messages, node_schema(self.settings.max_tokens))
            events = [*events, self.llm_event(completion, stage)]
            plan = str((reply or {}).get("plan", ""))
            code = str((reply or {}).get("code", "")) if reply else completion.text
        node = Node(id=len(journal.nodes), parent=parent.id if parent else None, plan=plan[:2000],
                    code=code)
        journal.nodes.append(node)
        if completion is not None and "code" in self.cut:
            # a cut program runs like any other, as AIDE runs what its code extraction returned
            # once its retries are spent: the error it raises, with the note, is what the debug
            # stage reads (and the run keeps stepping when a small model's drafts run long)
            node.output = CUT_RAN.format(chars=self.cut["code"]) + "\n"
        self.memory.phase = "execute"
        run = ToolCall(f"n{node.id}", "python", {"code": CLEAR + code})
        return self.action([run], completion, events)


class AideOptions(BaseModel):
    """AIDE's search policy (Jiang et al.): how many drafts, how often and how deep to debug."""

    model_config = ConfigDict(extra="forbid")

    num_drafts: int = Field(default=2, ge=1, le=50, description="AIDE: drafts before improving")
    debug_prob: float = Field(default=0.5, ge=0.0, le=1.0,
                              description="AIDE: probability of debugging a buggy leaf")
    max_debug_depth: int = Field(default=3, ge=0, le=20,
                                 description="AIDE: debug steps in a row on one branch")


AGENT = AgentSpec(name="aide", factory=AideAgent, mode="workflow", options=AideOptions,
                  description="AIDE: a tree search over whole programs (draft, debug, improve)")
