"""The problem-family registry: every family from one entry-point group, or a task folder's module.

A problem family is a module of checks that enters its tasks' sandboxes: public check functions
(strict: finite values, shapes, types, sizes, zero tolerance where exact; a reported score is never
read), `OUTCOMES` (each check's outcome descriptor and its distance up to the family's symmetries,
for N_out), `HOSTILE` (each check's hostile inputs, for `innolab tasks check`'s fuzzing) and,
optionally, a search template for the baseline. It imports the numeric libraries and taskkit's core
only (`from .core import ...`), so it runs unchanged in a sandbox (as `taskkit/<name>.py`) and on
the host (loaded into `innolab.tasks.taskkit`'s namespace).

Families are found in one place:

* installed distributions declare a `FamilySpec` in the entry-point group `innolab.families`
  (`[project.entry-points."innolab.families"] tiles = "mypackage:FAMILY"`); innolab's own
  families register there exactly so (pyproject.toml);
* a task folder may carry its family's module beside task.yaml (`<folder>/<module>.py` for the
  check `<module>:<function>`), with an optional template named in the module
  (`BASELINE_TEMPLATE = "file.py"`, beside it).

The sandbox's validator (`Task.visible_files`), the hidden evaluator's worker, `innolab tasks
check`, novelty's outcome axis and the baseline all ask this registry. An entry point that fails to
load is listed as broken with its error, and a task naming it is refused with that error: never a
crash.
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from innolab.tasks import taskkit
from innolab.tasks.taskkit.core import Outcome, split_reference

GROUP = "innolab.families"
KIT = Path(taskkit.__file__).resolve().parent
PACKAGE = taskkit.__name__

_lock = threading.Lock()
_loaded: dict[str, Registered] | None = None
_modules: dict[tuple[str, str], ModuleType] = {}


class FamilyError(ValueError):
    """A family that is not registered, does not load, or breaks a family's rules."""


@dataclass(frozen=True)
class FamilySpec:
    """A problem family's declaration (what an `innolab.families` entry point names).

    Attributes:
        name: The family's name: the module name its tasks' checks use ("tiles" for
            "tiles:tile_square").
        module: The checks module's file (it enters every sandbox of the family's tasks).
        baseline: The baseline's search template for the family (None: the baseline refuses
            its tasks, naming the family).
        description: One line on what the family's tasks ask.
    """

    name: str
    module: Path
    baseline: Path | None = None
    description: str = ""


@dataclass(frozen=True)
class Family:
    """A loaded problem family.

    Attributes:
        spec: Its declaration.
        module: The checks module, loaded in taskkit's namespace.
        origin: Where it comes from: "innolab", a distribution's name, or "task folder DIR".
    """

    spec: FamilySpec
    module: ModuleType
    origin: str

    @property
    def name(self) -> str:
        """The family's name (its checks' module name)."""
        return self.spec.name

    @property
    def source(self) -> bytes:
        """The checks module's bytes, as a sandbox receives them (`taskkit/<name>.py`)."""
        return Path(self.spec.module).read_bytes()

    def checks(self) -> list[str]:
        """The module's check functions: its `CHECKS`, else every public function it defines."""
        declared = getattr(self.module, "CHECKS", None)
        if declared is not None:
            return sorted(str(name) for name in declared)
        return sorted(name for name, value in vars(self.module).items()
                      if not name.startswith("_") and callable(value)
                      and getattr(value, "__module__", None) == self.module.__name__
                      and not isinstance(value, type))

    def check(self, function: str) -> Callable[..., float]:
        """One check function of the family.

        Args:
            function: Its name.

        Returns:
            The function.

        Raises:
            FamilyError: The family has no such public function.
        """
        found = getattr(self.module, function, None)
        if (function.startswith("_") or not callable(found) or isinstance(found, type)
                or function not in self.checks()):
            raise FamilyError(f"family {self.name!r} ({self.origin}) has no check function "
                              f"{function!r}; its checks: {', '.join(self.checks()) or 'none'}")
        return found  # type: ignore[no-any-return]

    def outcome(self, function: str) -> Outcome | None:
        """How one check's solutions are compared (`OUTCOMES`), or None when not declared."""
        found: dict[str, Outcome] = getattr(self.module, "OUTCOMES", {}) or {}
        return found.get(function)

    def hostile(self, function: str, params: dict[str, Any]) -> dict[str, str]:
        """The family's hostile inputs for one check: submissions every check must reject.

        Args:
            function: The check's name.
            params: The task's check parameters.

        Returns:
            Each hostile submission's JSON text by its label; {} when the family declares none.
        """
        maker = (getattr(self.module, "HOSTILE", {}) or {}).get(function)
        return dict(maker(params)) if maker is not None else {}

    @property
    def template_file(self) -> Path | None:
        """The baseline's search template, where the family has one."""
        if self.spec.baseline is not None:
            return Path(self.spec.baseline)
        named = getattr(self.module, "BASELINE_TEMPLATE", None)
        if isinstance(named, str) and named:
            return Path(self.spec.module).resolve().parent / named
        return None

    def template(self) -> str | None:
        """The baseline's search template's source (None: the family has none).

        Raises:
            FamilyError: The family names a template file that cannot be read.
        """
        file = self.template_file
        if file is None:
            return None
        try:
            return file.read_text(encoding="utf-8")
        except OSError as error:
            raise FamilyError(f"family {self.name!r}: its baseline template {file.name} cannot "
                              f"be read ({error.strerror})") from None


@dataclass(frozen=True)
class Registered:
    """One entry of the group: the family it declares, or why it could not be loaded.

    Attributes:
        name: The entry point's name (the family's).
        value: What the entry point names (`module:object`).
        distribution: The distribution that declares it.
        version: That distribution's version.
        family: The loaded family (None when broken).
        error: Why it could not be loaded (None when it loaded).
    """

    name: str
    value: str
    distribution: str | None
    version: str | None
    family: Family | None
    error: str | None = None

    @property
    def broken(self) -> bool:
        """Whether the entry failed to load."""
        return self.family is None

    def as_dict(self) -> dict[str, Any]:
        """The entry as `innolab tasks families --json` prints it."""
        family = self.family
        return {"name": self.name, "distribution": self.distribution, "version": self.version,
                "entry_point": self.value, "broken": self.broken, "error": self.error,
                "checks": family.checks() if family else [],
                "baseline_template": bool(family and family.template_file is not None),
                "description": family.spec.description if family else ""}


def _load_module(name: str, path: Path) -> ModuleType:
    """Load a family's checks module from its file into taskkit's namespace (cached by content).

    Built-in families are taskkit's own modules; any other file is executed as
    `innolab.tasks.taskkit.<name>` (so `from .core import ...` resolves to taskkit's core) and kept
    apart from sys.modules, so that two task folders may carry different modules of one name.
    """
    path = Path(path).resolve()
    if path.parent == KIT:
        return importlib.import_module(f"{PACKAGE}.{path.stem}")
    key = (name, hashlib.sha256(path.read_bytes()).hexdigest())
    if key in _modules:
        return _modules[key]
    qualified = f"{PACKAGE}.{name}"
    module = ModuleType(qualified)
    module.__file__, module.__package__ = str(path), PACKAGE
    code = compile(path.read_bytes(), str(path), "exec")  # no bytecode cache beside a task's file
    previous = sys.modules.get(qualified)
    sys.modules[qualified] = module  # during its execution only (dataclasses look it up)
    try:
        exec(code, module.__dict__)
    finally:
        if previous is None:
            sys.modules.pop(qualified, None)
        else:
            sys.modules[qualified] = previous
    _modules[key] = module
    return module


def load_family(spec: FamilySpec, origin: str) -> Family:
    """Load a declared family: its module, checked against the family's rules.

    Args:
        spec: The declaration.
        origin: Where it comes from (a distribution's name, "task folder DIR").

    Returns:
        The family.

    Raises:
        FamilyError: A name that is not a module name, a missing module file, or a module that
            fails to import, defines no check or declares outcomes or hostile inputs of checks
            it does not define.
    """
    try:
        split_reference(f"{spec.name}:check")
    except ValueError:
        raise FamilyError(f"family {spec.name!r}: a family's name is its checks' module name, a "
                          "Python name other than core") from None
    module_file = Path(spec.module)
    if not module_file.is_file():
        raise FamilyError(f"family {spec.name!r}: its module {module_file} is not a file")
    try:
        module = _load_module(spec.name, module_file)
    except FamilyError:
        raise
    except (Exception, SystemExit) as error:  # a family's import may raise anything, SystemExit
        # included (a module that exits when imported): reported by name, never a silent exit
        raise FamilyError(f"family {spec.name!r} ({origin}): its module {module_file.name} fails "
                          f"to import: {type(error).__name__}: {error}") from None
    family = Family(spec, module, origin)
    checks = family.checks()
    if not checks:
        raise FamilyError(f"family {spec.name!r} ({origin}): {module_file.name} defines no public "
                          "check function")
    for table in ("OUTCOMES", "HOSTILE"):
        unknown = sorted(set(getattr(module, table, {}) or {}) - set(checks))
        if unknown:
            raise FamilyError(f"family {spec.name!r} ({origin}): {table} names {unknown}, which "
                              f"are not its check functions ({', '.join(checks)})")
    return family


def _load_entry(point: EntryPoint) -> Registered:
    dist = getattr(point, "dist", None)
    name, version = (dist.name, dist.version) if dist is not None else (None, None)
    try:
        loaded = point.load()
        spec = loaded() if callable(loaded) and not isinstance(loaded, FamilySpec) else loaded
        if not isinstance(spec, FamilySpec):
            raise TypeError(f"{point.value} is a {type(spec).__name__}, not a FamilySpec")
        if spec.name != point.name:
            raise ValueError(f"{point.value} declares the family {spec.name!r}, registered as "
                             f"{point.name!r}")
        family = load_family(spec, name or point.value)
    except (Exception, SystemExit) as error:  # a third party's import may raise anything,
        # SystemExit included: listed as broken
        message = str(error) if isinstance(error, FamilyError) else (
            f"{type(error).__name__}: {error}")
        return Registered(point.name, point.value, name, version, None, message)
    return Registered(point.name, point.value, name, version, family)


def registered(reload: bool = False) -> dict[str, Registered]:
    """Every entry of the group `innolab.families`, loaded once per process.

    Args:
        reload: Read the installed distributions again (after installing one).

    Returns:
        The entries by name, sorted; a name two distributions declare is listed as broken.
    """
    global _loaded
    with _lock:
        if _loaded is None or reload:
            found: dict[str, Registered] = {}
            for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
                entry = _load_entry(point)
                if point.name in found:
                    first = found[point.name]
                    entry = Registered(point.name, point.value, entry.distribution,
                                       entry.version, None,
                                       f"declared twice: by {first.distribution} ({first.value}) "
                                       f"and by {entry.distribution} ({point.value})")
                found[point.name] = entry
            _loaded = found
        return dict(_loaded)


def families() -> dict[str, Family]:
    """The registered families that load, by name."""
    return {n: e.family for n, e in registered().items() if e.family is not None}


def local_module(folder: Path, name: str) -> Path | None:
    """A task folder's own family module for the module name, if it carries one.

    Args:
        folder: The task's folder.
        name: The check's module name.

    Returns:
        `<folder>/<name>.py` when it is a regular file (not a link), else None.
    """
    path = Path(folder) / f"{name}.py"
    return path if path.is_file() and not path.is_symlink() else None


def family_for(reference: str, folder: Path | None = None,
               module_file: Path | None = None) -> Family:
    """The family of a check reference: the task folder's own module, else the registry's.

    Args:
        reference: The check, "module:function".
        folder: The task's folder (None: registered families only).
        module_file: The family's module file given explicitly (the evaluator's worker, which
            starts isolated from the caller's path, is told where the family lies).

    Returns:
        The family, with the check function checked to exist.

    Raises:
        FamilyError: A malformed reference, a family no one registers or that does not load
            (naming the error), a task folder's module that shadows a registered family, or no
            such check function.
    """
    try:
        name, function = split_reference(reference)
    except ValueError as error:
        raise FamilyError(str(error)) from None
    entries = registered()
    local = Path(module_file) if module_file is not None else (
        local_module(folder, name) if folder is not None else None)
    if local is not None:
        entry = entries.get(name)
        if module_file is None and entry is not None and entry.family is not None:
            raise FamilyError(f"the task folder's {local.name} would shadow the registered family "
                              f"{name!r} ({entry.family.origin}); rename the module")
        where = f"task folder {local.parent}" if module_file is None else str(local.parent)
        family = load_family(FamilySpec(name, local), where)
    elif name in entries:
        entry = entries[name]
        if entry.family is None:
            raise FamilyError(f"family {name!r} ({entry.distribution or entry.value}) does not "
                              f"load: {entry.error}")
        family = entry.family
    else:
        known = sorted(n for n, e in entries.items() if e.family is not None)
        broken = sorted(n for n, e in entries.items() if e.family is None)
        raise FamilyError(
            f"check {reference!r}: no problem family {name!r} is registered (known: "
            f"{', '.join(known)}" + (f"; broken: {', '.join(broken)}" if broken else "") +
            f"); a family is an entry point of the group {GROUP}, or a module {name}.py beside "
            "the task's task.yaml")
    family.check(function)
    return family


def check_data(family: Family, function: str, params: dict[str, Any],
               data: dict[str, Any]) -> tuple[list[str], float | None]:
    """Check a parsed submission with a family's check (taskkit.core.run_check's rules).

    Args:
        family: The family.
        function: The check function's name.
        params: The task's check parameters.
        data: The submission.

    Returns:
        (errors, score), as taskkit.check.
    """
    return taskkit.run_check(family.check(function), params, data)


def templates() -> dict[str, str]:
    """The baseline templates of the registered families that have one, by family name."""
    out = {}
    for name, family in families().items():
        try:
            text = family.template()
        except FamilyError:
            continue
        if text is not None:
            out[name] = text
    return out
