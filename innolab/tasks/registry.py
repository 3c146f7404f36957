"""The task registry: built-in task folders shipped in the package, a user's own folders loaded by path, and
tasks of other benchmarks named `<scheme>:<reference>` (loaded by the benchmark's own module)."""

from __future__ import annotations

import importlib
import os
from functools import cache
from pathlib import Path
from typing import Any

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


# Benchmarks whose tasks the gym runs beside the improvable ones: `<scheme>:<reference>` names a module, imported
# only when such a task is asked for, with `load_task(reference, **options)` and `resolve_options(reference,
# **options)`. Such tasks are judged by their benchmark's own tools, not scored by the hidden evaluator.
SCHEMES = {"expbench": "innolab.expbench.gym_task"}


def scheme_of(task_ref: str) -> str | None:
    scheme, colon, _ = str(task_ref).partition(":")
    return scheme if colon and scheme in SCHEMES else None


def resolve_task_options(task_ref: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """A task's options settled once, for a run's config (a `<scheme>:` task's module checks and resolves them;
    other tasks take none)."""
    scheme = scheme_of(task_ref)
    if scheme is None:
        if options:
            raise TaskError(f"task_options: task {task_ref!r} takes none (got {sorted(options)})")
        return {}
    module = importlib.import_module(SCHEMES[scheme])
    return module.resolve_options(str(task_ref).partition(":")[2], **(options or {}))


def get_task(task_id_or_path: str | Path, options: dict[str, Any] | None = None) -> Task:
    """A task by id (built-in, then $INNOLAB_TASK_PATH), by folder path, or `<scheme>:<reference>` with the
    options that scheme needs (an EXP-Bench task: its repository clone and the data folder)."""
    text = str(task_id_or_path)
    scheme = scheme_of(text)
    if scheme is not None:
        return importlib.import_module(SCHEMES[scheme]).load_task(text.partition(":")[2], **(options or {}))
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
