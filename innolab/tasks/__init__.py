"""Improvable tasks: the task model, the registry of task folders, evaluation and checks."""

from innolab.tasks.frontier import PAPER_DATE, LedgerEntry, VStarAsOf
from innolab.tasks.model import Task, TaskError, TaskSpec
from innolab.tasks.registry import builtin_ids, get_task, list_tasks, load_task

__all__ = [
    "PAPER_DATE", "LedgerEntry", "Task", "TaskError", "TaskSpec", "VStarAsOf", "builtin_ids",
    "get_task", "list_tasks", "load_task",
]
