"""The GymTask protocol: what the gym reads of a task, whichever benchmark the task comes from."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from innolab.gym.policy import RunConfig
from innolab.gym.sandbox import Sandbox
from innolab.metrics import Direction

Compute = Literal["cpu", "gpu", "gpu-if-available"]


@runtime_checkable
class GymTask(Protocol):
    """A task as the gym sees it.

    Required: its id, the description the agent reads, the objective's direction, the compute it
    asks for, the files its sandbox receives and the pristine checker's files. Three abilities are
    optional and have a default here: `data_dir` (None: no data mounted), `workspace_rules`
    (None: the scaffold's own rules) and `collect` (no artefacts). A task defined above the gym
    subclasses `GymTask` to inherit them (EXP-Bench's task does); the improvable task
    (`innolab.tasks.model.Task`) lies below the gym, cannot import it, and declares the same
    abilities itself: it satisfies the protocol structurally.
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
        """The compute its sandbox needs: "cpu", "gpu" (an error without), "gpu-if-available"."""
        ...

    def visible_files(self) -> dict[str, bytes]:
        """Every file the sandbox's workspace receives; nothing hidden.

        Returns:
            The files' contents by workspace-relative path.
        """
        ...

    def validator_files(self) -> dict[str, bytes]:
        """The pristine checker, run outside the agent's reach.

        Returns:
            validate.py and the files it reads, by path relative to the checker's folder.
        """
        ...

    @property
    def data_dir(self) -> Path | None:
        """A folder of data files mounted read-only beside the workspace (`../data`), or None.

        Its files never enter the workspace, a checkpoint or a workspace snapshot; commands find
        it as `../data` from the workspace and in $INNOLAB_DATA_DIR. None (the default): no data.
        """
        return None

    @property
    def workspace_rules(self) -> str | None:
        """What the workspace holds and how answers count, as the scaffolds show it.

        None (the default): the scaffold's own rules.
        """
        return None

    def collect(self, sandbox: Sandbox, run_dir: Path, config: RunConfig) -> list[str]:
        """Keep artefacts of the final workspace in the run folder once the loop has ended.

        Args:
            sandbox: The run's sandbox, still open, holding the final workspace.
            run_dir: The run folder.
            config: The run's configuration.

        Returns:
            The run-relative paths of what was kept; by default nothing is kept.
        """
        return []
