"""EXP-Bench's tasks (Kon et al., arXiv 2505.24785): the loader, task types, mask lists and dataset statistics.

The data stay where the user keeps them (`--data DIR` or `$INNOLAB_EXPBENCH_DIR`): one `<paper>_complete_final.json`
per paper under `outputs/logs/<conference>/<paper>/`, and the paper metadata (JSON Lines) under `logs/<conference>/`.
A task is identified by (conference, paper id, index in the paper's `questions`).
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
    """One EXP-Bench task, with upstream's field fallbacks applied and its nested design unwrapped."""

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
        return f"{self.conference}/{self.paper_id}/{self.index}"

    @property
    def type(self) -> TaskType:
        """T1: has `masked_source`; T2: has `source` and `mode`; T3: neither (no implementing script)."""
        if self.masked_source is not None:
            return "T1"
        if self.source and self.mode is not None:
            return "T2"
        return "T3"

    @property
    def mask_list(self) -> list[str]:
        """Files removed from the clone before the agent starts: `masked_source`, else `source`, plus README.md
        (paths relative to the repository root)."""
        files = self.masked_source if self.masked_source is not None else self.source
        relative = [p[len(WORKSPACE_PREFIX):] if p.startswith(WORKSPACE_PREFIX) else p.lstrip("/") for p in files]
        return [*dict.fromkeys([*relative, "README.md"])]


def data_dir(given: str | Path | None = None) -> Path:
    """The EXP-Bench data folder: the argument, else $INNOLAB_EXPBENCH_DIR; an error says how to get the data."""
    chosen = given or os.environ.get(DATA_VARIABLE)
    if not chosen:
        raise ExpBenchError(f"no EXP-Bench data: pass --data DIR or set ${DATA_VARIABLE} (the data are upstream's "
                            "Just-Curieous/Curie, folder benchmark/exp_bench, commit 8309def9)")
    path = Path(chosen)
    if not (path / "outputs" / "logs").is_dir():
        raise ExpBenchError(f"{path}: not an EXP-Bench data folder (no outputs/logs/<conference>/<paper>/)")
    return path


def repositories(root: Path) -> dict[tuple[str, str], str]:
    """(conference, paper id) -> the task repository URL: `code_url`, else `reproduce_eval.code`."""
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
        method=str(raw.get("method", "")), agent_instructions=str(raw.get("agent_instructions") or ""),
        expected_outcome=str(raw.get("expected_outcome", "")), design=design if isinstance(design, dict) else {},
        requirements=raw.get("requirements") or str(raw.get("method", "")), source=strings("source"),
        masked_source=strings("masked_source") if "masked_source" in raw else None, mode=raw.get("mode"),
        no_answer=raw.get("no_answer"), subsection=raw.get("subsection_source"), repository=repository, raw=raw)


def load(root: str | Path | None = None) -> list[ExpTask]:
    """Every task, ordered by conference, paper id and index."""
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
            tasks.append(_task(conference, paper_id, index, raw, urls.get((conference, paper_id)), str(path)))
    if not tasks:
        raise ExpBenchError(f"{root}: no <paper>_complete_final.json under outputs/logs/")
    return tasks


def get(tasks: list[ExpTask], task_id: str) -> ExpTask:
    """A task by its id `<conference>/<paper id>/<index>`."""
    for task in tasks:
        if task.id == task_id:
            return task
    raise ExpBenchError(f"no EXP-Bench task {task_id!r} (ids are <conference>/<paper id>/<index>)")


def stats(tasks: list[ExpTask]) -> dict[str, Any]:
    """Dataset statistics recomputed from the tasks: counts of tasks, papers, types, per conference."""
    types = Counter(t.type for t in tasks)
    per_conference: dict[str, Any] = {}
    for conference in sorted({t.conference for t in tasks}):
        mine = [t for t in tasks if t.conference == conference]
        kinds = Counter(t.type for t in mine)
        per_conference[conference] = {"tasks": len(mine), "papers": len({t.paper_id for t in mine}),
                                      "types": {k: kinds.get(k, 0) for k in ("T1", "T2", "T3")}}
    return {"tasks": len(tasks), "papers": len({(t.conference, t.paper_id) for t in tasks}),
            "types": {k: types.get(k, 0) for k in ("T1", "T2", "T3")},
            "with_repository": sum(t.repository is not None for t in tasks),
            "nested_design": sum("design_complexity" in (t.raw.get("design_complexity") or {}) for t in tasks),
            "conferences": per_conference}
