"""The task model: a folder of task.yaml, description.md, visible/, solutions/, checked on load."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from innolab.tasks import taskkit
from innolab.tasks.data import DataError, ProblemData
from innolab.tasks.data import load as load_data

TASK_ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class TaskError(ValueError):
    """A task folder or task.yaml breaks a rule; the message names the file, the field, the rule."""


class Strict(BaseModel):
    """Base of the task.yaml models: unknown fields are errors and the values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Objective(Strict):
    """The task's objective: the name of its value and whether it is maximised or minimised."""

    name: str = Field(min_length=1)
    direction: Literal["max", "min"]


class LeaderboardEntry(Strict):
    """One published result: its value, who reached it, when, where, and its status.

    `status` is "verified" (reproduced), "reported" (published, not reproduced) or "refuted"
    (published, but it fails a strict check).
    """

    value: float
    who: str = Field(min_length=1)
    year: int | None = Field(default=None, ge=1900, le=2100)
    source: str = Field(min_length=1)
    # refuted: published, but fails a strict check
    status: Literal["verified", "reported", "refuted"]


class VStar(Strict):
    """V*: the best published value, the leaderboard entries it is chosen from and a note."""

    value: float
    entries: list[LeaderboardEntry] = Field(min_length=1)
    note: str = ""

    @field_validator("value")
    @classmethod
    def nonzero(cls, value: float) -> float:
        """Check that V* is a non-zero number.

        Args:
            value: the V* given.

        Returns:
            The value itself.

        Raises:
            ValueError: V* is zero or NaN (the ratio divides by |V*|).
        """
        if value == 0 or value != value:
            raise ValueError("V* must be a non-zero number (the ratio divides by |V*|)")
        return value


class Bounds(Strict):
    """Known bounds on the objective's value (either may be absent), with a note."""

    upper: float | None = None
    lower: float | None = None
    note: str = ""


class Problem(Strict):
    """The task's check, "module:function" in the taskkit package (as MLE-bench names a grader)."""

    check: str
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("check")
    @classmethod
    def known(cls, reference: str) -> str:
        """Check that the check names a function of the taskkit package.

        Args:
            reference: the check, "module:function".

        Returns:
            The reference itself.

        Raises:
            ValueError: no such module or function (the message names them).
        """
        taskkit.resolve(reference)  # raises ValueError naming the module and the function
        return reference

    @property
    def family(self) -> str:
        """The check's module: the family of problems the task belongs to."""
        return self.check.partition(":")[0]


class Limits(Strict):
    """The limits on a submission: its size, and the evaluator's time and memory."""

    max_submission_bytes: int = Field(default=taskkit.DEFAULT_MAX_BYTES, gt=0, le=100_000_000)
    eval_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    eval_memory_mb: int = Field(default=2048, ge=256, le=65536)


class DataSpec(Strict):
    """Problem data read from an installed package by a named loader (innolab.tasks.data)."""

    loader: str
    args: dict[str, Any] = Field(default_factory=dict)


class TaskSpec(Strict):
    """task.yaml: the task's id, title, domain, objective, check, V* and the run's settings.

    Besides: the reproduced and the paper's V*, known bounds, the compute it needs (cpu or gpu),
    the default budget, the least improvement that counts, the limits and the problem data.
    """

    id: str = Field(pattern=TASK_ID_PATTERN)
    title: str = Field(min_length=1)
    domain: str = Field(min_length=1)
    objective: Objective
    problem: Problem
    v_star: VStar
    v_star_reproduced: float | None = None
    paper_v_star: float | None = None
    bounds: Bounds = Bounds()
    compute: Literal["cpu", "gpu"] = "cpu"
    default_budget_s: int = Field(gt=0)
    min_improvement: float = Field(default=1e-9, ge=0, le=0.1)
    limits: Limits = Limits()
    data: DataSpec | None = None

    @model_validator(mode="after")
    def v_star_is_the_published_frontier(self) -> TaskSpec:
        """V* is the best published value (reported or reproduced), the best reproduced one beside.

        Returns:
            The specification itself.

        Raises:
            ValueError: A V* that is not the best entry, or a reproduced value not the best
                verified entry.
        """
        values = [e.value for e in self.v_star.entries if e.status != "refuted"]
        best = max if self.objective.direction == "max" else min
        if self.v_star.value not in values:
            raise ValueError(
                f"v_star.value {self.v_star.value!r} must be one of its leaderboard entries"
            )
        if self.v_star.value != best(values):
            raise ValueError(
                f"v_star.value {self.v_star.value!r} must be the best published entry "
                f"({best(values)!r}, {self.objective.direction}imise)"
            )
        verified = [e.value for e in self.v_star.entries if e.status == "verified"]
        if verified and self.v_star_reproduced != best(verified):
            raise ValueError(
                f"v_star_reproduced must be the best verified entry, {best(verified)!r}"
            )
        if self.v_star_reproduced is not None and self.v_star_reproduced not in verified:
            raise ValueError("v_star_reproduced must be one of the entries with status 'verified'")
        return self


# The visible validator's script, byte for byte as every recorded run's sandbox received it.
VALIDATE_PY = "\n".join(
    [
        '"""Validator: python validate.py SUBMISSION.json prints {"valid", "score", "errors"};'
        ' 0 iff valid."""',
        "",
        "import pathlib",
        "import sys",
        "",
        "sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))"
        "  # the taskkit package lies beside this file",
        "",
        "import taskkit  # noqa: E402",
        "",
        'if __name__ == "__main__":',
        '    taskkit.main_from_config("task.json")',
        "",
    ]
)


class Task:
    """A loaded task folder; its hidden parts (solutions, the evaluator's settings) stay outside.

    It is a gym task: it satisfies the protocol `innolab.gym.task.GymTask` structurally (the gym
    lies above the tasks and is not imported here), and its optional abilities keep their
    defaults: no workspace rules of its own, no artefacts collected at the end of a run.

    Attributes:
        root: The task's folder.
        spec: Its task.yaml, validated.
        builtin: Whether it ships in the package.
        workspace_rules: None: the scaffolds' own rules apply.
    """

    workspace_rules: str | None = None

    def __init__(self, root: Path, spec: TaskSpec, builtin: bool) -> None:
        self.root = root
        self.spec = spec
        self.builtin = builtin

    @classmethod
    def load(cls, root: str | Path, builtin: bool = False) -> Task:
        """Load and validate a task folder.

        Args:
            root: The task's folder.
            builtin: Whether it ships in the package.

        Returns:
            The task.

        Raises:
            TaskError: A missing file, or a task.yaml field that breaks a rule (named).
        """
        root = Path(root)
        spec_file = root / "task.yaml"
        if not spec_file.is_file():
            raise TaskError(
                f"{root}: no task.yaml (a task is a folder with task.yaml, description.md, "
                "visible/)"
            )
        try:
            raw = yaml.safe_load(spec_file.read_text(encoding="utf-8"))
        except yaml.YAMLError as error:
            raise TaskError(f"{spec_file}: not valid YAML: {error}") from None
        if not isinstance(raw, dict):
            raise TaskError(f"{spec_file}: must be a mapping of fields")
        try:
            spec = TaskSpec.model_validate(raw)
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "(top level)"
            raise TaskError(f"{spec_file}: field '{field}': {first['msg']}") from None
        if spec.id != root.name:
            raise TaskError(
                f"{spec_file}: field 'id': {spec.id!r} must equal the folder name {root.name!r}"
            )
        if not (root / "description.md").is_file():
            raise TaskError(f"{root}: missing description.md (what the agent reads)")
        return cls(root, spec, builtin)

    @property
    def id(self) -> str:
        """The task's id (its folder's name)."""
        return self.spec.id

    @property
    def direction(self) -> Literal["max", "min"]:
        """The objective's direction."""
        return self.spec.objective.direction

    @property
    def compute(self) -> Literal["cpu", "gpu"]:
        """The compute its sandbox needs."""
        return self.spec.compute

    @property
    def v_star(self) -> float:
        """V*, the best published value."""
        return self.spec.v_star.value

    @property
    def description(self) -> str:
        """description.md: what the agent reads."""
        return (self.root / "description.md").read_text(encoding="utf-8")

    @property
    def visible_dir(self) -> Path:
        """The folder of files the sandbox receives beside the validator."""
        return self.root / "visible"

    @property
    def solutions_dir(self) -> Path:
        """The folder of known solutions (hidden)."""
        return self.root / "solutions"

    @cached_property
    def problem_data(self) -> ProblemData:
        """Parameters that come from data rather than task.yaml (job-shop instances).

        Also the data's own published numbers (bounds), which are hidden.

        Raises:
            TaskError: Data its loader cannot read.
        """
        if self.spec.data is None:
            return ProblemData({})
        try:
            return load_data(self.spec.data.loader, self.spec.data.args)
        except DataError as error:
            raise TaskError(f"{self.root / 'task.yaml'}: field 'data': {error}") from None

    @property
    def problem_params(self) -> dict[str, Any]:
        """The check's parameters: task.yaml's, then those from data."""
        return {**self.spec.problem.params, **self.problem_data.params}

    def visible_files(self) -> dict[str, bytes]:
        """Everything that enters a sandbox.

        Solutions, V*, the leaderboard and the data's published bounds stay outside.

        Returns:
            The description, the validator (the taskkit core, the task's own check module and its
            configuration) and the files of visible/, by workspace-relative path.
        """
        kit = Path(taskkit.__file__).resolve().parent
        files = {
            "description.md": self.description.encode(),
            "validate.py": VALIDATE_PY.encode(),
            **{
                f"taskkit/{name}": (kit / name).read_bytes()
                for name in ("__init__.py", "core.py", f"{self.spec.problem.family}.py")
            },
            "task.json": json.dumps(self.validator_config(), sort_keys=True).encode(),
        }
        if self.visible_dir.is_dir():
            for p in sorted(self.visible_dir.rglob("*")):
                if p.is_file() and "__pycache__" not in p.parts:
                    files[str(p.relative_to(self.visible_dir))] = p.read_bytes()
        return files

    def validator_files(self) -> dict[str, bytes]:
        """The pristine validator alone: what the gym's dev scoring runs, out of the agent's reach.

        Returns:
            validate.py, task.json and the taskkit files, by path.
        """
        return {
            k: v
            for k, v in self.visible_files().items()
            if k == "validate.py" or k == "task.json" or k.startswith("taskkit/")
        }

    def collect(self, sandbox: Any, run_dir: Path, config: Any) -> list[str]:
        """Keep artefacts of the final workspace: none (the submissions are the outcome).

        Returns:
            [] (nothing kept).
        """
        return []

    def validator_config(self) -> dict[str, Any]:
        """What the visible validator needs (no V*, no bounds).

        Returns:
            The task's id, check, its parameters, the size limit and the direction.
        """
        return {
            "id": self.id,
            "check": self.spec.problem.check,
            "params": self.problem_params,
            "max_bytes": self.spec.limits.max_submission_bytes,
            "direction": self.direction,
        }

    def write_visible(self, destination: Path) -> list[Path]:
        """Materialise the visible part into a folder (what a sandbox's workspace receives).

        Args:
            destination: The folder.

        Returns:
            The files written.
        """
        written = []
        for name, content in self.visible_files().items():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            written.append(target)
        return written

    def solution_names(self) -> list[str]:
        """The names of the known solutions (folders holding a solve.py), sorted."""
        if not self.solutions_dir.is_dir():
            return []
        return sorted(p.name for p in self.solutions_dir.iterdir() if (p / "solve.py").is_file())
