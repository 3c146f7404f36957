"""The task registry: built-in task folders shipped in the package, a user's own folders loaded by path, and
tasks of other benchmarks named `<scheme>:<reference>` (loaded by the scheme their package registers)."""

from __future__ import annotations

import os
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from innolab.tasks.model import Task, TaskError

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


def builtin_ids() -> list[str]:
    return sorted(p.name for p in BUILTIN_DIR.iterdir() if (p / "task.yaml").is_file())


@cache
def _builtin(task_id: str) -> Task:
    return Task.load(BUILTIN_DIR / task_id, builtin=True)


def user_task_dirs() -> list[Path]:
    """Folders listed in $INNOLAB_TASK_PATH (os.pathsep-separated), each holding task folders."""
    return [Path(p) for p in os.environ.get("INNOLAB_TASK_PATH", "").split(os.pathsep) if p]


def load_task(path: str | Path) -> Task:
    """A user's task folder, loaded and validated."""
    return Task.load(Path(path))


SCHEME_GROUP = "innolab.task_schemes"
SchemeTask: TypeAlias = Any  # a registered scheme's task, typed by its scheme (the gym reads it as a GymTask)


class TaskScheme(Protocol):
    """What a benchmark registers for its `<scheme>:<reference>` tasks (a module or an object): the task for a
    reference, and the task options settled once for a run's config. Such a task is a gym task
    (innolab.gym.task.GymTask), judged by its benchmark's own tools, not by the hidden evaluator."""

    def load_task(self, reference: str, **options: Any) -> SchemeTask: ...

    def resolve_options(self, reference: str, **options: Any) -> dict[str, Any]: ...


@cache
def schemes() -> dict[str, EntryPoint]:
    """The registered schemes by name: the entry points of the group `innolab.task_schemes`, each naming the
    module (or object) that is the scheme, declared by the packages above the tasks (pyproject.toml declares
    EXP-Bench's) and read from the installed packages' metadata. A scheme's module is imported only when one
    of its tasks is asked for."""
    return {point.name: point for point in entry_points(group=SCHEME_GROUP)}


def scheme_of(task_ref: str) -> str | None:
    """The registered scheme a task reference names (`<scheme>:<reference>`), or None."""
    scheme, colon, _ = str(task_ref).partition(":")
    return scheme if colon and scheme in schemes() else None


def _scheme(name: str) -> TaskScheme:
    loaded: TaskScheme = schemes()[name].load()
    return loaded


def resolve_task_options(task_ref: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """A task's options settled once, for a run's config (a `<scheme>:` task's scheme checks and resolves them;
    other tasks take none). Raises TaskError for options given to a task that takes none."""
    scheme = scheme_of(task_ref)
    if scheme is None:
        if options:
            raise TaskError(f"task_options: task {task_ref!r} takes none (got {sorted(options)})")
        return {}
    return _scheme(scheme).resolve_options(str(task_ref).partition(":")[2], **(options or {}))


def get_task(task_id_or_path: str | Path, options: dict[str, Any] | None = None) -> Task | SchemeTask:
    """A task by id (built-in, then $INNOLAB_TASK_PATH), by folder path, or `<scheme>:<reference>` with the
    options that scheme needs (a registered scheme's task, which its scheme types; the gym reads every task
    through innolab.gym.task.GymTask). Raises TaskError for an unknown task or options it does not take."""
    text = str(task_id_or_path)
    scheme = scheme_of(text)
    if scheme is not None:
        return _scheme(scheme).load_task(text.partition(":")[2], **(options or {}))
    if options:
        raise TaskError(f"task {text!r} takes no task options (got {sorted(options)})")
    if os.sep in text or Path(text).is_dir():
        return load_task(text)
    if text in builtin_ids():
        return _builtin(text)
    for folder in user_task_dirs():
        if (folder / text / "task.yaml").is_file():
            return load_task(folder / text)
    raise TaskError(f"unknown task {text!r}; known: {', '.join(builtin_ids())}")


def list_tasks() -> list[Task]:
    tasks = [_builtin(i) for i in builtin_ids()]
    for folder in user_task_dirs():
        tasks += [load_task(p) for p in sorted(folder.iterdir()) if (p / "task.yaml").is_file()]
    return tasks
