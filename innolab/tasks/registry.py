"""The task registry: built-in task folders, a user's own folders, and other benchmarks' tasks.

A task is named by its id (a folder shipped in the package, then one under $INNOLAB_TASK_PATH), by
its folder's path, or as `<scheme>:<reference>`: a task of another benchmark, loaded by the scheme
its package registers in the entry point group `innolab.task_schemes` (EXP-Bench's is declared in
pyproject.toml). The registry names no such benchmark itself: they lie above it.
"""

from __future__ import annotations

import os
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Protocol, TypeAlias

from innolab.tasks.model import Task, TaskError

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"
SCHEME_GROUP = "innolab.task_schemes"

# A registered scheme's task: its scheme types it (the gym reads it as innolab.gym.task.GymTask).
SchemeTask: TypeAlias = Any


def builtin_ids() -> list[str]:
    """The ids of the task folders shipped in the package, sorted."""
    return sorted(p.name for p in BUILTIN_DIR.iterdir() if (p / "task.yaml").is_file())


@cache
def _builtin(task_id: str) -> Task:
    return Task.load(BUILTIN_DIR / task_id, builtin=True)


def user_task_dirs() -> list[Path]:
    """The folders in $INNOLAB_TASK_PATH (os.pathsep-separated), each holding task folders."""
    return [Path(p) for p in os.environ.get("INNOLAB_TASK_PATH", "").split(os.pathsep) if p]


def load_task(path: str | Path) -> Task:
    """A user's task folder, loaded and validated.

    Args:
        path: The task's folder.

    Returns:
        The task.

    Raises:
        TaskError: A folder or task.yaml that breaks a rule (the message names the field).
    """
    return Task.load(Path(path))


class TaskScheme(Protocol):
    """What a benchmark registers for its `<scheme>:<reference>` tasks (a module or an object).

    Such a task is a gym task, judged by its benchmark's own tools, not by the hidden evaluator.
    """

    def load_task(self, reference: str, **options: Any) -> SchemeTask:
        """The task a reference names, with the options it needs."""
        ...

    def resolve_options(self, reference: str, **options: Any) -> dict[str, Any]:
        """The task's options settled once, as a run's config records them."""
        ...


@cache
def schemes() -> dict[str, EntryPoint]:
    """The registered schemes, read from the installed packages' metadata.

    A scheme's module is imported only when one of its tasks is asked for.

    Returns:
        The entry points of the group `innolab.task_schemes` by scheme name, each naming the
        module (or object) that is the scheme.
    """
    return {point.name: point for point in entry_points(group=SCHEME_GROUP)}


def scheme_of(task_ref: str) -> str | None:
    """The registered scheme a task reference names (`<scheme>:<reference>`), or None."""
    scheme, colon, _ = str(task_ref).partition(":")
    return scheme if colon and scheme in schemes() else None


def _scheme(name: str) -> TaskScheme:
    loaded: TaskScheme = schemes()[name].load()
    return loaded


def resolve_task_options(task_ref: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """A task's options settled once, for a run's config.

    Args:
        task_ref: The task's id, path or `<scheme>:<reference>`.
        options: The options given (a scheme's task: those its scheme takes).

    Returns:
        The options as the scheme resolves them; {} for a task of no scheme.

    Raises:
        TaskError: Options given to a task that takes none.
        ValueError: Options the task's scheme refuses (its message names the option).
    """
    scheme = scheme_of(task_ref)
    if scheme is None:
        if options:
            raise TaskError(f"task_options: task {task_ref!r} takes none (got {sorted(options)})")
        return {}
    return _scheme(scheme).resolve_options(str(task_ref).partition(":")[2], **(options or {}))


def get_task(
    task_id_or_path: str | Path, options: dict[str, Any] | None = None
) -> Task | SchemeTask:
    """A task by id, folder path or `<scheme>:<reference>`.

    Args:
        task_id_or_path: A built-in id, then one under $INNOLAB_TASK_PATH; a folder path; or a
            registered scheme's reference.
        options: What a scheme's task needs (an EXP-Bench task: its repository's clone and the
            data folder); other tasks take none.

    Returns:
        The task: an improvable task, or the scheme's own task (a gym task).

    Raises:
        TaskError: An unknown task, options given to a task that takes none, or a task folder
            that breaks a rule.
        ValueError: Options the task's scheme refuses.
    """
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
    prefix, colon, _ = text.partition(":")
    hint = (
        f"; no task scheme {prefix!r} is registered (registered: {sorted(schemes()) or 'none'}; "
        f"a scheme is an entry point of the group {SCHEME_GROUP}, installed with its package)"
        if colon and prefix.isidentifier()
        else ""
    )
    raise TaskError(f"unknown task {text!r}; known: {', '.join(builtin_ids())}{hint}")


def list_tasks() -> list[Task]:
    """Every improvable task: the built-in ones, then those under $INNOLAB_TASK_PATH's folders."""
    tasks = [_builtin(i) for i in builtin_ids()]
    for folder in user_task_dirs():
        tasks += [load_task(p) for p in sorted(folder.iterdir()) if (p / "task.yaml").is_file()]
    return tasks
