"""Agents whose declarations break innolab's registry rules (and one that shares an option).

Each is a do-nothing policy; what matters is its options model.
"""

from pydantic import BaseModel, Field

from innolab.gym.policy import Action, AgentSpec, Observation


class Idle:
    """Ends at its first step."""

    name = "idle"

    def __init__(self, **options: object) -> None:
        self.options = options

    def step(self, observation: Observation) -> Action:
        return Action([], done=True)

    def state(self) -> dict:
        return {}

    def load_state(self, state: dict) -> None:
        pass


class ColumnOptions(BaseModel):
    valid: bool = Field(default=True, description="named like the runs table's column")


class SettingOptions(BaseModel):
    seed: int = Field(default=1, description="named like the run setting")


class ParamOptions(BaseModel):
    figures_dir: str = Field(default="figs", description="named like notebook 20's parameter")


class TypedOptions(BaseModel):
    rows: str = Field(default="five", description="grid-walker's rows is an int")
    persistent: str = Field(default="yes", description="codeact's persistent is a bool")


class SharedOptions(BaseModel):
    rows: int = Field(default=3, ge=2, le=8, description="shared-walker: rows, 2 to 8")


def _agent(name: str, options: type[BaseModel]) -> AgentSpec:
    return AgentSpec(name=name, factory=Idle, mode="no model", needs_model=False,
                     options=options, description="ends at once")


COLUMN = _agent("column-walker", ColumnOptions)
SETTING = _agent("setting-walker", SettingOptions)
PARAM = _agent("param-walker", ParamOptions)
TYPED = _agent("typed-walker", TypedOptions)
SHARED = _agent("shared-walker", SharedOptions)
