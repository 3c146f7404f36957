"""The GymTask protocol: what the gym reads of a task, whichever benchmark the task comes from."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from innolab.gym.policy import RunConfig
from innolab.gym.sandbox import Sandbox
from innolab.metrics import Direction

Compute = Literal["cpu", "gpu", "gpu-if-available"]
COMPUTES: tuple[Compute, ...] = ("cpu", "gpu", "gpu-if-available")


@runtime_checkable
class GymTask(Protocol):
    """A task as the gym sees it: its id, the description the agent reads, the objective's direction, the
    compute it asks for, the files its sandbox receives and the pristine checker's files.

    Two abilities are optional and have a default here: `workspace_rules` (None: the scaffold's own rules) and
    `collect` (no artefacts). A task defined above the gym subclasses `GymTask` to inherit them (EXP-Bench's
    task does); the improvable task (`innolab.tasks.model.Task`) lies below the gym, cannot import it, and
    declares the same defaults itself, so it satisfies the protocol structurally.
    """

    @property
    def id(self) -> str:
        """The task's name in run configs and run folder names."""
        ...

    @property
    def description(self) -> str:
        """What the agent is told, as its first observation."""
        ...

    @property
    def direction(self) -> Direction:
        """The objective's direction: "max" or "min"."""
        ...

    @property
    def compute(self) -> Compute:
        """The compute its sandbox needs: "cpu", "gpu" (an error without one) or "gpu-if-available"."""
        ...

    def visible_files(self) -> dict[str, bytes]:
        """Every file the sandbox's workspace receives, by workspace-relative path; nothing hidden."""
        ...

    def validator_files(self) -> dict[str, bytes]:
        """The pristine checker (validate.py and what it reads), run outside the agent's reach."""
        ...

    @property
    def workspace_rules(self) -> str | None:
        """What the workspace holds and how answers count, shown by the scaffolds; None: their own rules."""
        return None

    def collect(self, sandbox: Sandbox, run_dir: Path, config: RunConfig) -> list[str]:
        """Keep artefacts of the final workspace in the run folder once the loop ends; returns their
        run-relative paths (by default none are kept)."""
        return []
