"""Test drivers for the execution environment: scripted policies issuing tool calls (not a
feature)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from innolab.gym.policy import Action, AgentSpec, Observation
from innolab.gym.tools import ToolCall

# A valid circle-packing-26 submission: 26 equal circles on a 6 × 5 grid.
GRID = [
    [(2 * c + 1) / 12, (2 * k + 1) / 12, 1 / 12 * (1 - 1e-12)] for k in range(5) for c in range(6)
][:26]


class ScriptedPolicy:
    """Step k writes step-k.txt (and checks the previous file is there); the last steps submit a
    packing."""

    name = "scripted"

    def __init__(
        self, steps: int = 6, sleep_s: float = 0.0, submit: bool = True, calls_per_step: int = 1
    ) -> None:
        self.steps, self.sleep_s, self.submit, self.calls_per_step = (
            steps,
            sleep_s,
            submit,
            calls_per_step,
        )
        self.next = 0
        self.seen: list[int] = []

    def step(self, observation: Observation) -> Action:
        assert observation.step == self.next, f"policy at {self.next}, loop at {observation.step}"
        if self.next >= self.steps:
            return Action(done=True)
        k = self.next
        self.seen.append(k)
        self.next += 1
        if self.submit and k == self.steps - 2:
            return Action(
                [
                    ToolCall(
                        f"c{k}-w",
                        "write_file",
                        {"path": "packing.json", "content": json.dumps({"circles": GRID})},
                    )
                ],
                tokens=10,
            )
        if self.submit and k == self.steps - 1:
            return Action(
                [
                    ToolCall(f"c{k}-v", "validate", {"path": "packing.json"}),
                    ToolCall(f"c{k}-s", "submit", {"path": "packing.json"}),
                ],
                tokens=10,
            )
        count = "$(ls step-*.txt 2>/dev/null | wc -l)"
        command = f"test {count} -eq {k} && sleep {self.sleep_s} && echo {k} > step-{k}.txt"
        calls = [
            ToolCall(
                f"c{k}-{i}", "bash", {"command": command if i == 0 else f"sleep {self.sleep_s}"}
            )
            for i in range(self.calls_per_step)
        ]
        return Action(calls, tokens=10)

    def state(self) -> dict[str, Any]:
        return {"next": self.next, "seen": self.seen}

    def load_state(self, state: dict[str, Any]) -> None:
        self.next, self.seen = state["next"], list(state["seen"])


class CallPolicy:
    """Issues a fixed list of tool calls, one per step (the isolation suite's adversary), then
    finishes."""

    name = "calls"

    def __init__(self, calls: list[list[Any]]) -> None:
        self.calls = calls  # [[tool name, arguments], ...]
        self.next = 0

    def step(self, observation: Observation) -> Action:
        if self.next >= len(self.calls):
            return Action(done=True)
        name, arguments = self.calls[self.next]
        self.next += 1
        return Action([ToolCall(f"a{self.next}", name, arguments)])

    def state(self) -> dict[str, Any]:
        return {"next": self.next}

    def load_state(self, state: dict[str, Any]) -> None:
        self.next = state["next"]


class GatedPolicy(CallPolicy):
    """CallPolicy that, before finishing, waits until a file exists (a test holds it running)."""

    name = "gated"

    def __init__(self, calls: list[list[Any]], gate: str) -> None:
        super().__init__(calls)
        self.gate = gate

    def step(self, observation: Observation) -> Action:
        import time
        from pathlib import Path

        if self.next >= len(self.calls):
            while not Path(self.gate).exists():
                time.sleep(0.05)
        return super().step(observation)


# ------------------------------------------------------------------------- as registered agents

# The gym builds a run's policy only through the agent registry: these policies are registered
# agents of a test distribution (its metadata in TEST_AGENTS, put on the path by the fixture
# `test_agents` and, for a subprocess, by `pythonpath()`).
ROOT = Path(__file__).resolve().parent.parent
TEST_AGENTS = ROOT / "tests" / "data" / "plugins" / "innolab-test-agents"


def pythonpath() -> str:
    """A subprocess's PYTHONPATH: the project (for `tests.*`) and the test agents' metadata."""
    return os.pathsep.join([str(ROOT), str(TEST_AGENTS)])


SCRIPTED = AgentSpec(name="scripted", factory=ScriptedPolicy, mode="no model", needs_model=False)
CALLS = AgentSpec(name="scripted-calls", factory=CallPolicy, mode="no model", needs_model=False)
GATED = AgentSpec(name="scripted-gated", factory=GatedPolicy, mode="no model", needs_model=False)
