"""A third party's agent for innolab: packs equal circles on a grid, a row count per step.

It lives in its own distribution and reaches innolab only through the agent interface
(innolab.gym.policy) and the entry-point group `innolab.agents`.
"""

import json

from pydantic import BaseModel, Field

from innolab.gym.policy import Action, AgentSpec, Observation
from innolab.gym.tools import ToolCall


class GridOptions(BaseModel):
    """The agent's own options."""

    rows: int = Field(default=5, ge=1, le=20, description="grid-walker: rows of the first grid")


class GridWalker:
    """Writes an n-circle grid (then one with a row more), submitting each in the next step."""

    name = "grid-walker"

    def __init__(self, rows: int = 5, n: int = 26) -> None:
        self.rows, self.n, self.steps = rows, n, 0

    def step(self, observation: Observation) -> Action:
        rows = self.rows + self.steps // 2
        name = f"grid{rows}.json"
        self.steps += 1
        if self.steps % 2 == 0:  # the grid written in the last step
            return Action([ToolCall("s", "submit", {"path": name})], done=self.steps >= 6)
        cols = -(-self.n // rows)
        cell = 0.5 / max(rows, cols)  # half a grid cell: centres 2 cells apart, radii just under
        circles = [[(2 * c + 1) * cell, (2 * k + 1) * cell, cell * (1 - 1e-9)]
                   for k in range(rows) for c in range(cols)][: self.n]
        return Action([ToolCall("w", "write_file",
                                {"path": name, "content": json.dumps({"circles": circles})})])

    def state(self) -> dict:
        return {"steps": self.steps}

    def load_state(self, state: dict) -> None:
        self.steps = int(state["steps"])


AGENT = AgentSpec(name="grid-walker", factory=GridWalker, mode="no model", needs_model=False,
                  options=GridOptions, description="a grid packing, one more row per step")
