"""AIDE: tree search over whole programs (draft, debug, improve) with a journal of nodes; workflow mode.

Each node is a complete program that must write submission.json. Its metric comes from the task's validator
(the `validate` tool's verdict), never from the model's reading of the output. Node selection is greedy: improve
the best valid node; with probability `debug_prob` debug a buggy leaf whose debug depth is below the limit.
"""

from __future__ import annotations

import random
from typing import Any

from innolab.agents.base import LLMAgent
from innolab.gym.policy import Action, Observation
from innolab.gym.tools import ToolCall
from innolab.llm.client import json_schema

ROLE = ("You are an expert solving an optimisation task by writing complete Python programs. Each program must "
        "compute a candidate and write it to submission.json in the format the task describes. Reply with a short "
        "plan and the full program.")
SCHEMA = json_schema("aide_node", {"plan": {"type": "string"}, "code": {"type": "string"}}, ["plan", "code"])
CLEAR = "import os\nif os.path.exists('submission.json'):\n    os.remove('submission.json')\n"


class AideAgent(LLMAgent):
    name = "aide"
    mode = "workflow"

    def __init__(self, num_drafts: int = 2, debug_prob: float = 0.5, max_debug_depth: int = 3,
                 **options: Any) -> None:
        super().__init__(**options)
        self.num_drafts, self.debug_prob, self.max_debug_depth = num_drafts, debug_prob, max_debug_depth

    # ------------------------------------------------------------------ the journal (plain data in memory)

    def _journal(self) -> list[dict[str, Any]]:
        return self.memory.setdefault("journal", [])

    def _best(self, direction: str) -> dict[str, Any] | None:
        valid = [n for n in self._journal() if n["valid"] and n["metric"] is not None]
        if not valid:
            return None
        return (max if direction == "max" else min)(valid, key=lambda n: n["metric"])

    def _choose(self) -> tuple[str, dict[str, Any] | None]:
        journal = self._journal()
        rng = random.Random((self.settings.seed or 0) * 100_003 + len(journal))
        drafts = [n for n in journal if n["stage"] == "draft"]
        if len(drafts) < self.num_drafts and not (self.initial_solution and not journal):
            return "draft", None
        children = {n["parent"] for n in journal}
        buggy = [n for n in journal
                 if n["buggy"] and n["id"] not in children and n["debug_depth"] < self.max_debug_depth]
        if buggy and rng.random() < self.debug_prob:
            return "debug", rng.choice(buggy)
        best = self._best(self.memory.get("direction", "max"))
        return ("improve", best) if best else ("draft", None)

    def _prompt(self, stage: str, parent: dict[str, Any] | None, description: str) -> list[dict[str, str]]:
        user = description
        if stage == "debug" and parent:
            user += (f"\n\nThis program failed:\n```python\n{parent['code']}\n```\nIts output:\n"
                     f"{parent['output'][-1500:]}\nFix it and return the whole corrected program.")
        elif stage == "improve" and parent:
            user += (f"\n\nThis program is valid with score {parent['metric']}:\n```python\n{parent['code']}\n```\n"
                     "Improve the score and return the whole improved program.")
        else:
            user += "\n\nWrite a first complete program."
        return [{"role": "system", "content": self.system_prompt(ROLE)}, {"role": "user", "content": user}]

    # ------------------------------------------------------------------------------------------ the loop

    def step(self, observation: Observation) -> Action:
        self.bound(observation)
        memory = self.memory
        memory["direction"] = observation.direction
        phase = memory.get("phase", "generate")
        journal = self._journal()
        if phase == "execute":  # the node's program ran: validate what it wrote
            node = journal[-1]
            node["output"] = self.describe_results(observation.results)
            node["ran"] = bool(observation.results and observation.results[0].ok)
            memory["phase"] = "evaluate"
            return self.action([ToolCall(f"n{node['id']}-v", "validate", {"path": "submission.json"})], None, [])
        if phase == "evaluate":
            node = journal[-1]
            verdict = observation.results[0].extra.get("verdict", {}) if observation.results else {}
            node["valid"] = bool(node["ran"] and verdict.get("valid"))
            node["metric"] = verdict.get("score") if node["valid"] else None
            node["buggy"] = not node["valid"]
            if not node["valid"]:
                node["output"] += "\nvalidator: " + "; ".join(verdict.get("errors", ["no verdict"]))[:800]
            events = [{"type": "node", **{k: v for k, v in node.items() if k != "output"}}]
            best = self._best(observation.direction)
            memory["phase"] = "generate"
            if node["valid"] and best is node:
                submit = ToolCall(f"n{node['id']}-s", "submit", {"path": "submission.json"}, source=node["code"])
                return self.action([submit], None, events)
            return self._generate(observation, events)
        return self._generate(observation, [])

    def _generate(self, observation: Observation, events: list[dict[str, Any]]) -> Action:
        journal = self._journal()
        if self.initial_solution and not journal:
            stage, parent, plan, code, completion = "draft", None, "prior solution", self.initial_solution, None
        else:
            stage, parent = self._choose()
            reply, completion = self.ask(self._prompt(stage, parent, observation.task_description), SCHEMA)
            events = [*events, self.llm_event(completion, stage)]
            plan = str((reply or {}).get("plan", ""))
            code = str((reply or {}).get("code", "")) if reply else completion.text
        node = {"id": len(journal), "parent": parent["id"] if parent else None, "stage": stage, "plan": plan[:2000],
                "code": code, "debug_depth": (parent["debug_depth"] + 1) if stage == "debug" and parent else 0,
                "ran": False, "valid": False, "metric": None, "buggy": False, "output": ""}
        journal.append(node)
        self.memory["phase"] = "execute"
        return self.action([ToolCall(f"n{node['id']}", "python", {"code": CLEAR + code})], completion, events)
