"""EXP-Bench's tasks (Kon et al., arXiv 2505.24785): loader, task types, mask lists, statistics.

The data stay where the user keeps them (`--data DIR` or `$INNOLAB_EXPBENCH_DIR`): one
`<paper>_complete_final.json` per paper under `outputs/logs/<conference>/<paper>/`, and the paper
metadata (JSON Lines) under `logs/<conference>/`. A task is identified by (conference, paper id,
index in the paper's `questions`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

TaskType = Literal["T1", "T2", "T3"]
DATA_VARIABLE = "INNOLAB_EXPBENCH_DIR"
WORKSPACE_PREFIX = "/workspace/"  # how task files write paths inside the agent's container


class ExpBenchError(ValueError):
    """Missing or malformed EXP-Bench data; the message names the file and the field."""


@dataclass(frozen=True)
class ExpTask:
    """One EXP-Bench task, with upstream's field fallbacks applied and its nested design unwrapped.

    Attributes:
        conference: The conference's folder name.
        paper_id: The paper's id.
        index: The task's index in the paper's `questions`.
        question: The question (or hypothesis).
        method: The method to follow.
        agent_instructions: Upstream's instructions to the agent.
        expected_outcome: The expected outcome.
        design: The experimental design (variables, constants...).
        requirements: The setup steps (a list), or the method where none are given.
        source: The implementing scripts.
        masked_source: The files masked from the agent (T1 tasks), or None.
        mode: The way `source` is run (T2 tasks), or None.
        no_answer: Upstream's no_answer field, or None.
        subsection: The paper's subsection the task comes from, or None.
        repository: The task repository's URL, or None.
        raw: The task's JSON as upstream wrote it.
    """

    conference: str
    paper_id: str
    index: int
    question: str
    method: str
    agent_instructions: str
    expected_outcome: str
    design: dict[str, Any]
    requirements: list[str] | str
    source: list[str]
    masked_source: list[str] | None
    mode: str | None
    no_answer: str | None
    subsection: str | None
    repository: str | None
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def id(self) -> str:
        """The task's id, `<conference>/<paper id>/<index>`."""
        return f"{self.conference}/{self.paper_id}/{self.index}"

    @property
    def type(self) -> TaskType:
        """T1: has `masked_source`; T2: `source` and `mode`; T3: neither (no implementing code)."""
        if self.masked_source is not None:
            return "T1"
        if self.source and self.mode is not None:
            return "T2"
        return "T3"

    @property
    def mask_list(self) -> list[str]:
        """Files removed from the clone before the agent starts.

        `masked_source`, else `source`, plus README.md (paths relative to the repository root).
        """
        files = self.masked_source if self.masked_source is not None else self.source
        relative = [p[len(WORKSPACE_PREFIX):] if p.startswith(WORKSPACE_PREFIX) else p.lstrip("/")
                    for p in files]
        return [*dict.fromkeys([*relative, "README.md"])]


def data_dir(given: str | Path | None = None) -> Path:
    """Find the EXP-Bench data folder.

    Args:
        given: The folder; None takes $INNOLAB_EXPBENCH_DIR.

    Returns:
        The folder.

    Raises:
        ExpBenchError: No folder is given or set (the message says how to get the data), or it
            is not an EXP-Bench data folder.
    """
    chosen = given or os.environ.get(DATA_VARIABLE)
    if not chosen:
        raise ExpBenchError(f"no EXP-Bench data: pass --data DIR or set ${DATA_VARIABLE} "
                            "(the data are upstream's "
                            "Just-Curieous/Curie, folder benchmark/exp_bench, commit 8309def9)")
    path = Path(chosen)
    if not (path / "outputs" / "logs").is_dir():
        raise ExpBenchError(
            f"{path}: not an EXP-Bench data folder (no outputs/logs/<conference>/<paper>/)")
    return path


def repositories(root: Path) -> dict[tuple[str, str], str]:
    """Read each paper's task repository URL from the paper metadata.

    Args:
        root: The data folder.

    Returns:
        The URL (`code_url`, else `reproduce_eval.code`) by (conference, paper id).

    Raises:
        ExpBenchError: A metadata line is not JSON.
    """
    found: dict[tuple[str, str], str] = {}
    for conference_dir in sorted((root / "logs").glob("*")):
        for path in sorted(conference_dir.glob("*.json")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as error:
                    raise ExpBenchError(f"{path}:{number}: not a JSON line: {error}") from None
                url = record.get("code_url") or (record.get("reproduce_eval") or {}).get("code")
                if url:
                    found[(conference_dir.name, str(record["id"]))] = url
    return found


def _task(conference: str, paper_id: str, index: int, raw: dict[str, Any], repository: str | None,
          where: str) -> ExpTask:
    if not isinstance(raw, dict):
        raise ExpBenchError(f"{where}: questions[{index}] must be an object")
    design = raw.get("design_complexity") or {}
    if isinstance(design, dict) and set(design) == {"design_complexity"}:
        design = design["design_complexity"]  # 41 tasks wrap it one level deeper
    question = raw.get("question") or raw.get("hypothesis")
    if not question:
        raise ExpBenchError(f"{where}: questions[{index}] has neither question nor hypothesis")

    def strings(key: str) -> list[str]:
        value = raw.get(key) or []
        return [str(v) for v in value] if isinstance(value, list) else [str(value)]

    return ExpTask(
        conference=conference, paper_id=paper_id, index=index, question=str(question),
        method=str(raw.get("method", "")),
        agent_instructions=str(raw.get("agent_instructions") or ""),
        expected_outcome=str(raw.get("expected_outcome", "")),
        design=design if isinstance(design, dict) else {},
        requirements=raw.get("requirements") or str(raw.get("method", "")),
        source=strings("source"),
        masked_source=strings("masked_source") if "masked_source" in raw else None,
        mode=raw.get("mode"), no_answer=raw.get("no_answer"),
        subsection=raw.get("subsection_source"), repository=repository, raw=raw)


def load(root: str | Path | None = None) -> list[ExpTask]:
    """Load every task.

    Args:
        root: The data folder; None takes $INNOLAB_EXPBENCH_DIR.

    Returns:
        The tasks, ordered by conference, paper id and index.

    Raises:
        ExpBenchError: No data folder, a malformed file (naming it and the field), or no tasks.
    """
    root = data_dir(root)
    urls = repositories(root)
    tasks: list[ExpTask] = []
    for path in sorted((root / "outputs" / "logs").glob("*/*/*_complete_final.json")):
        conference, paper_id = path.parent.parent.name, path.parent.name
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ExpBenchError(f"{path}: not valid JSON: {error}") from None
        questions = document.get("questions") if isinstance(document, dict) else None
        if not isinstance(questions, list):
            raise ExpBenchError(f"{path}: expected an object with a `questions` list")
        for index, raw in enumerate(questions):
            tasks.append(_task(conference, paper_id, index, raw, urls.get((conference, paper_id)),
                               str(path)))
    if not tasks:
        raise ExpBenchError(f"{root}: no <paper>_complete_final.json under outputs/logs/")
    return tasks


def get(tasks: list[ExpTask], task_id: str) -> ExpTask:
    """Find a task by its id.

    Args:
        tasks: The tasks.
        task_id: The id, `<conference>/<paper id>/<index>`.

    Returns:
        The task.

    Raises:
        ExpBenchError: No task has that id.
    """
    for task in tasks:
        if task.id == task_id:
            return task
    raise ExpBenchError(f"no EXP-Bench task {task_id!r} (ids are <conference>/<paper id>/<index>)")


def stats(tasks: list[ExpTask]) -> dict[str, Any]:
    """Recompute the dataset's statistics from the tasks.

    Args:
        tasks: The tasks.

    Returns:
        Counts of tasks, papers, types, tasks with a repository and with a nested design, and
        the same per conference.
    """
    types = Counter(t.type for t in tasks)
    per_conference: dict[str, Any] = {}
    for conference in sorted({t.conference for t in tasks}):
        mine = [t for t in tasks if t.conference == conference]
        kinds = Counter(t.type for t in mine)
        per_conference[conference] = {
            "tasks": len(mine), "papers": len({t.paper_id for t in mine}),
            "types": {k: kinds.get(k, 0) for k in ("T1", "T2", "T3")}}
    return {"tasks": len(tasks), "papers": len({(t.conference, t.paper_id) for t in tasks}),
            "types": {k: types.get(k, 0) for k in ("T1", "T2", "T3")},
            "with_repository": sum(t.repository is not None for t in tasks),
            "nested_design": sum("design_complexity" in (t.raw.get("design_complexity") or {})
                                 for t in tasks),
            "conferences": per_conference}
