"""The task model: a folder of task.yaml, description.md, visible/, solutions/, checked on load."""

from __future__ import annotations

import datetime
import json
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from innolab.tasks import families, frontier, taskkit
from innolab.tasks.data import DataError, ProblemData
from innolab.tasks.data import load as load_data
from innolab.tasks.frontier import PAPER_DATE, LedgerEntry, VStarAsOf

__all__ = ["PAPER_DATE", "LedgerEntry", "Task", "TaskError", "TaskSpec", "VStarAsOf"]

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


class VStar(Strict):
    """The task's ledger (`entries`: records and proven bounds, dated) and a note on it.

    `value` may be declared; V* itself is derived from the ledger (V* as of today), so a declared
    value must equal it. The old form of an entry (`who`, `year`) still loads: `who` is the
    holder, a year a year-precision date (innolab.tasks.frontier).
    """

    value: float | None = None
    entries: list[LedgerEntry] = Field(min_length=1)
    note: str = ""

    @model_validator(mode="before")
    @classmethod
    def migrate(cls, raw: Any) -> Any:
        """Read entries of the old form: `who` becomes `holder`, `year` a year-precision date.

        Args:
            raw: The v_star mapping as given.

        Returns:
            The mapping with its entries in the current form.

        Raises:
            ValueError: An old entry with both `who` and `holder`, or `year` and `date`.
        """
        if not isinstance(raw, dict) or not isinstance(raw.get("entries"), list):
            return raw
        entries = []
        for i, entry in enumerate(raw["entries"]):
            if isinstance(entry, dict) and ("who" in entry or "year" in entry):
                entry = dict(entry)
                for old, new in (("who", "holder"), ("year", "date")):
                    if old in entry:
                        if new in entry:
                            raise ValueError(
                                f"entries.{i}: '{old}' (the old form) and '{new}' both given"
                            )
                        entry[new] = entry.pop(old)
                if entry.get("date") is None:
                    raise ValueError(
                        f"entries.{i}.date: required (YYYY-MM-DD, YYYY-MM or YYYY: when the value "
                        "was first published or seen)"
                    )
            entries.append(entry)
        return {**raw, "entries": entries}

    @field_validator("value")
    @classmethod
    def nonzero(cls, value: float | None) -> float | None:
        """A declared V* is a non-zero number (the ratio divides by |V*|).

        Args:
            value: The declared V*, or None.

        Returns:
            The value.

        Raises:
            ValueError: Zero or NaN.
        """
        if value is not None and (value == 0 or value != value):
            raise ValueError("V* must be a non-zero number (the ratio divides by |V*|)")
        return value


class Bounds(Strict):
    """Words on bounds that are not ledger entries (trivial ones, or why none is known).

    Proven bounds with a source and a date are ledger entries of kind lower_bound/upper_bound.
    """

    note: str = ""

    @model_validator(mode="before")
    @classmethod
    def no_numbers(cls, raw: Any) -> Any:
        """Reject the old form's numbers: a bound is now a dated ledger entry.

        Args:
            raw: The bounds mapping as given.

        Returns:
            The mapping.

        Raises:
            ValueError: `upper` or `lower` given.
        """
        if isinstance(raw, dict):
            for name in ("upper", "lower"):
                if raw.get(name) is not None:
                    raise ValueError(
                        f"bounds.{name}: a proven bound is a ledger entry now: add it to "
                        f"v_star.entries with kind {name}_bound, its source and its date "
                        "(a trivial bound belongs in bounds.note)"
                    )
        return raw


class Problem(Strict):
    """The task's check, "module:function": a problem family's module and its check function.

    The family is found when the task's folder is loaded (innolab.tasks.families: a registered
    family, or a module beside task.yaml), as MLE-bench names a competition's grade function.
    """

    check: str
    params: dict[str, Any] = Field(default_factory=dict)

    @field_validator("check")
    @classmethod
    def known(cls, reference: str) -> str:
        """Check the reference's form (the family itself is found with the task's folder).

        Args:
            reference: the check, "module:function".

        Returns:
            The reference itself.

        Raises:
            ValueError: not two Python names, a private function or a reserved module name.
        """
        taskkit.split_reference(reference)  # raises ValueError naming the rule
        return reference

    @property
    def function(self) -> str:
        """The check function's name."""
        return self.check.partition(":")[2]

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
    """A task.yaml, validated: identity, objective, check, ledger (v_star), limits and data."""

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
        """The ledger holds together; V* (as of today) is its best record, checked if declared.

        The best reproduced value is the best verified record: a record whose published
        construction innolab's own evaluator accepts (`innolab tasks check` re-runs it; the rule
        is in innolab.tasks.frontier), None when there is none.

        Returns:
            The specification itself.

        Raises:
            ValueError: A ledger rule broken (innolab.tasks.frontier.check_ledger), a declared
                V* that is not the best record, or a reproduced value not the best verified
                record.
        """
        entries, direction = self.v_star.entries, self.objective.direction
        try:
            frontier.check_ledger(entries, direction)
        except frontier.FrontierError as error:
            named = str(error).replace("field 'entries", "field 'v_star.entries")
            raise ValueError(named) from None
        records = [e for e in entries if e.kind == "record" and e.status != "refuted"]
        best = max if direction == "max" else min
        v_star = best(e.value for e in records)
        if v_star == 0:
            raise ValueError("V* (the best record) must be non-zero (the ratio divides by |V*|)")
        if self.v_star.value is not None and self.v_star.value != v_star:
            raise ValueError(
                f"v_star.value {self.v_star.value!r} must be the best published entry "
                f"({v_star!r}, {direction}imise); leave it out: V* is derived from the ledger"
            )
        verified = [e.value for e in records if e.status == "verified"]
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

    def __init__(self, root: Path, spec: TaskSpec, builtin: bool,
                 family_module: Path | None = None) -> None:
        self.root = root
        self.spec = spec
        self.builtin = builtin
        self.family_module = family_module

    @classmethod
    def load(cls, root: str | Path, builtin: bool = False,
             family_module: str | Path | None = None) -> Task:
        """Load and validate a task folder.

        Args:
            root: The task's folder.
            builtin: Whether it ships in the package.
            family_module: The family's module file, given where the registry cannot be read
                (the hidden evaluator's isolated worker); None finds it (innolab.tasks.families).

        Returns:
            The task.

        Raises:
            TaskError: A missing file, or a task.yaml field that breaks a rule (named).
        """
        root = Path(root).resolve()  # a relative folder stays right when a solution runs in its own
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
            message = first["msg"].removeprefix("Value error, ")
            if message.startswith("field '"):  # a rule that names its own field, below `field`
                inner, _, message = message.removeprefix("field '").partition("': ")
                field = inner if field == "(top level)" else f"{field}.{inner}"
            raise TaskError(f"{spec_file}: field '{field}': {message}") from None
        if spec.id != root.name:
            raise TaskError(
                f"{spec_file}: field 'id': {spec.id!r} must equal the folder name {root.name!r}"
            )
        if not (root / "description.md").is_file():
            raise TaskError(f"{root}: missing description.md (what the agent reads)")
        task = cls(root, spec, builtin, None if family_module is None else Path(family_module))
        try:
            task.family  # noqa: B018 (found now: a task whose family is unknown is refused on load)
        except families.FamilyError as error:
            raise TaskError(f"{spec_file}: field 'problem.check': {error}") from None
        for i, entry in enumerate(spec.v_star.entries):
            if entry.construction is not None and task.construction_file(entry) is None:
                raise TaskError(
                    f"{spec_file}: field 'v_star.entries.{i}.construction': "
                    f"{entry.construction!r} is not a regular file in the task's folder"
                )
        return task

    def construction_file(self, entry: LedgerEntry) -> Path | None:
        """The file holding an entry's published construction.

        Args:
            entry: A ledger entry.

        Returns:
            The file, or None when the entry names none, or names a link, a missing file or a
            path that leaves the task's folder.
        """
        if entry.construction is None:
            return None
        path = self.root / entry.construction
        inside = path.resolve().is_relative_to(self.root.resolve())
        return path if inside and path.is_file() and not path.is_symlink() else None

    @cached_property
    def family(self) -> families.Family:
        """The task's problem family (innolab.tasks.families): its checks, outcome, template.

        Raises:
            innolab.tasks.families.FamilyError: No family of the check's module is registered or
                beside task.yaml, it does not load, or it lacks the check function.
        """
        return families.family_for(self.spec.problem.check, self.root, self.family_module)

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
    def ledger(self) -> list[LedgerEntry]:
        """The dated ledger: every record and proven bound, as written in task.yaml."""
        return list(self.spec.v_star.entries)

    @property
    def ledger_hash(self) -> str:
        """sha256 of the ledger's canonical JSON, 12 hex digits (innolab.tasks.frontier)."""
        return frontier.ledger_hash(self.spec.v_star.entries)

    def v_star_as_of(self, date: datetime.date | str) -> VStarAsOf:
        """V* as of a date: the best non-refuted record dated on or before it.

        A month- or year-precision date counts from the first day of its period (the rule in
        innolab.tasks.frontier); among equal values the earliest entry holds V*.

        Args:
            date: The date: a `datetime.date`, an ISO date (YYYY-MM-DD, YYYY-MM, YYYY) or
                "today".

        Returns:
            V*, the date asked and the entry that holds it.

        Raises:
            TaskError: Not a date, or a date before the ledger's first record.
        """
        try:
            day = frontier.as_date(date)
        except frontier.FrontierError as error:
            raise TaskError(f"{self.id}: {error}") from None
        entry = frontier.best_as_of(self.spec.v_star.entries, "record", self.direction, day)
        if entry is None:
            first = min(e.date for e in self.spec.v_star.entries if e.kind == "record")
            raise TaskError(
                f"{self.id}: field 'as_of': no record is dated on or before {day} "
                f"(the ledger starts {first})"
            )
        return VStarAsOf(entry.value, day, entry)

    @property
    def v_star(self) -> float:
        """V*, the best published value: V* as of today."""
        return self.v_star_as_of(frontier.utc_today()).value

    def tie_margin(self, as_of: datetime.date | str | None = None) -> float:
        """The gain at or below which a value ties with V* rather than beating it.

        Half a unit of V*'s last published digit (V* published to six decimals stands for an
        interval of ±5e-7) plus min_improvement · |V*| (the least improvement beyond it that
        counts), plus the metric's sampling error where the family measures on a finite test set
        (`sampling_margin`).

        Args:
            as_of: The date of V* (None: today).

        Returns:
            The tie margin, in the objective's units.
        """
        v_star = self.v_star_as_of(frontier.utc_today() if as_of is None else as_of)
        return (self.spec.min_improvement * abs(v_star.value) + v_star.entry.tie_margin
                + self.sampling_margin(v_star.value))

    def sampling_margin(self, v_star: float) -> float:
        """The part of the tie margin that is the metric's sampling error on a finite test set.

        A family whose objective is measured on a sample (prediction on hidden labels) declares it
        (`TIE_MARGINS` in its module: z_99 · SE at V*); others add nothing.

        Args:
            v_star: V*.

        Returns:
            The margin, in the objective's units (0 for a family that declares none).
        """
        margins = getattr(self.family.module, "TIE_MARGINS", {}) or {}
        rule = margins.get(self.spec.problem.function)
        return float(rule(self.problem_params, v_star)) if rule is not None else 0.0

    def bound_as_of(self, date: datetime.date | str) -> LedgerEntry | None:
        """The tightest proven bound on the far side of V* dated on or before a date.

        Args:
            date: The date (as in `v_star_as_of`).

        Returns:
            The bound's entry (an upper bound when maximising, a lower one when minimising), or
            None when none is known.

        Raises:
            TaskError: Not a date.
        """
        try:
            day = frontier.as_date(date)
        except frontier.FrontierError as error:
            raise TaskError(f"{self.id}: {error}") from None
        side = frontier.far_side(self.direction)
        return frontier.best_as_of(self.spec.v_star.entries, side, self.direction, day)

    @property
    def bound(self) -> LedgerEntry | None:
        """The proven bound on the far side of V* as of today (None: none known)."""
        return self.bound_as_of(frontier.utc_today())

    def headroom_closed(self, v: float, as_of: datetime.date | str | None = None) -> float:
        """(V − V*) / (B − V*): the share of the headroom to the proven bound B that V closes.

        Args:
            v: The value V.
            as_of: The date of V* and B (None: today).

        Returns:
            The share; NaN with no bound or no headroom left (B = V*).
        """
        day = frontier.utc_today() if as_of is None else as_of
        bound = self.bound_as_of(day)
        return frontier.headroom_closed(
            v, self.v_star_as_of(day).value, None if bound is None else bound.value
        )

    def no_headroom(self, as_of: datetime.date | str | None = None) -> list[str]:
        """What has no headroom left: the task, or the parts (instances) whose V* is the bound.

        Args:
            as_of: The date (None: today).

        Returns:
            The task's id when V* equals the bound, else the names of the parts where the entry
            holding V* equals the bound's part (e.g. ta45 of job-shop-taillard-41-50); [] when
            no bound is known.
        """
        day = frontier.utc_today() if as_of is None else as_of
        bound, v_star = self.bound_as_of(day), self.v_star_as_of(day)
        if bound is None:
            return []
        if bound.value == v_star.value:
            return [self.id]
        mine, theirs = v_star.entry.parts or {}, bound.parts or {}
        return [name for name, value in mine.items() if theirs.get(name) == value]

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
        """The hidden evaluator's check parameters: task.yaml's, those from data, the hidden ones.

        The hidden ones (a prediction task's test labels) never enter a sandbox: the sandbox's
        validator receives `visible_params`.
        """
        return {**self.visible_params, **self.problem_data.hidden_params}

    @property
    def visible_params(self) -> dict[str, Any]:
        """The check parameters the sandbox's validator receives: task.yaml's, then data's."""
        return {**self.spec.problem.params, **self.problem_data.params}

    @property
    def data_dir(self) -> Path | None:
        """The folder of visible data files mounted read-only beside the workspace (`../data`).

        Its files never enter the workspace, a checkpoint or a workspace snapshot. None: the
        task has no data files.
        """
        return self.problem_data.files

    def data_files(self) -> dict[str, bytes]:
        """The visible data files' contents by "data/<name>" (what the leak scan reads)."""
        folder = self.data_dir
        if folder is None:
            return {}
        return {f"data/{p.relative_to(folder)}": p.read_bytes()
                for p in sorted(folder.rglob("*")) if p.is_file()}

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
            **{f"taskkit/{name}": (kit / name).read_bytes() for name in ("__init__.py", "core.py")},
            f"taskkit/{self.spec.problem.family}.py": self.family.source,
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
            "params": self.visible_params,
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
