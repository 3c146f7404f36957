"""`innolab tasks new`: a task folder a researcher fills, passing `innolab tasks check` as written.

The folder holds task.yaml (its ledger one dated entry to fill), description.md, a family module
beside task.yaml (its check, outcome descriptor, hostile inputs and baseline template: the pieces
every family has, innolab.tasks.families), two known solutions and a baseline solution, each with
its method card, recorded by the hidden evaluator when the folder is written. The example problem
is a Golomb ruler (marks at distinct pairwise differences, the length minimised): exact integers,
small, with room to improve; replace it with your own.
"""

from __future__ import annotations

import datetime
import re
import shutil
from pathlib import Path

from innolab.tasks.families import registered
from innolab.tasks.model import TASK_ID_PATTERN, TaskError

MARKS = 8

TASK_YAML = """\
id: {id}
title: "{id}: a Golomb ruler with {marks} marks (replace with your own problem)"
domain: Combinatorial
objective: {{name: ruler length, direction: min}}
problem: {{check: "{family}:golomb_ruler", params: {{marks: {marks}}}}}
v_star:
  note: >-
    TO FILL: the ledger. Each entry is a published value with its holder, source and the date it was first
    published or seen (YYYY-MM-DD, YYYY-MM or YYYY); status verified only where the task folder holds the
    construction and `innolab tasks check` accepts it. The entry below is this folder's own known solution,
    written by `innolab tasks new` on {today}: replace it with the best published value.
  entries:
    - {{value: {value}, digits: 0, holder: "TO FILL (now: this folder's own solution greedy-restarts)", source: "TO FILL (now: innolab tasks new)", date: {today}, status: reported}}
bounds:
  note: "TO FILL: a proven bound, as a ledger entry of kind lower_bound with its source and date"
compute: cpu
default_budget_s: 600
limits: {{max_submission_bytes: 100000, eval_timeout_s: 60}}
"""

DESCRIPTION = """\
# A Golomb ruler with {marks} marks

Place {marks} marks at integer positions on a ruler, the first at 0, so that **no two pairs of marks are
the same distance apart**. **Minimise the ruler's length** (its last mark).

## Submission

A JSON file with one field, `marks`: {marks} JSON **integers**, strictly increasing, the first 0.

## Rules (exact integers)

* {marks} marks, strictly increasing, starting at 0;
* all pairwise differences distinct.

**Score**: the last mark (minimise). `python validate.py submission.json` checks a candidate.
"""

FAMILY = '''\
"""Golomb rulers: integer marks with distinct pairwise differences; score the length (exact).

A problem family of its own, beside its task's task.yaml: it enters the task's sandboxes as
`taskkit/{family}.py`, so it imports numpy and taskkit's core only.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import numpy as np

from .core import Invalid, Outcome, exact_integer, hostile_variants, only_keys, violations

BASELINE_TEMPLATE = "{family}_baseline.py"  # the baseline's search, beside this file


def _marks(data: dict[str, Any], marks: int) -> list[int]:
    only_keys(data, ("marks",))
    value = data["marks"]
    if not isinstance(value, list) or len(value) != marks:
        got = f"{{len(value)}} entries" if isinstance(value, list) else type(value).__name__
        raise Invalid(f"marks must be a list of {{marks}} integers, got {{got}}")
    return [exact_integer(m, f"marks[{{i}}]", 40) for i, m in enumerate(value)]


def golomb_ruler(data: dict[str, Any], marks: int) -> float:
    """Check a Golomb ruler; score its length (minimise).

    Args:
        data: The submission: {{"marks": [0, a_1, ..., a_(m-1)]}}.
        marks: The number of marks m.

    Returns:
        The last mark.

    Raises:
        Invalid: The submission breaks a rule (every violation listed).
    """
    ruler = _marks(data, marks)
    if ruler[0] != 0:
        raise Invalid(f"marks[0] must be 0, got {{ruler[0]}}")
    violations("increasing marks", [f"marks[{{i + 1}}] = {{b}} is not above marks[{{i}}] = {{a}}"
                                    for i, (a, b) in enumerate(pairwise(ruler)) if b <= a])
    seen: dict[int, tuple[int, int]] = {{}}
    repeated = []
    for j in range(len(ruler)):
        for i in range(j):
            d = ruler[j] - ruler[i]
            if d in seen:
                repeated.append(f"marks {{i}} and {{j}} are {{d}} apart, as marks {{seen[d][0]}} "
                                f"and {{seen[d][1]}}")
            seen.setdefault(d, (i, j))
    violations("distinct differences", repeated)
    return float(ruler[-1])


SCALE = ("Golomb rulers: the marks over the length, up to reversal (a -> L - a); 100 x the mean "
         "distance of matched marks over the mean gap")


def _describe(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    ruler = np.array(_marks(data, int(params["marks"])), dtype=np.float64)
    return ruler / max(ruler[-1], 1.0)


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    gap = 1.0 / max(len(a) - 1, 1)
    best = min(np.abs(a - b).mean(), np.abs(a - (1.0 - b[::-1])).mean())
    return float(min(100.0, 100.0 * best / gap))


OUTCOMES = {{"golomb_ruler": Outcome(_describe, _distance, SCALE)}}


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    marks = int(params["marks"])
    powers = [2**i - 1 for i in range(marks)]  # a valid ruler: each entry is corrupted in turn
    out = hostile_variants("marks", powers)
    out["a repeated difference"] = json.dumps({{"marks": list(range(marks))}})
    out["not starting at 0"] = json.dumps({{"marks": [p + 1 for p in powers]}})
    out["a float mark"] = json.dumps({{"marks": [0.0, *powers[1:]]}})
    return out


CHECKS = ("golomb_ruler",)
HOSTILE = {{"golomb_ruler": _hostile}}
'''

TEMPLATE = '''\
"""Baseline search for Golomb rulers: randomised greedy rulers, restarted until the time limit.

Usage: python3 {family}_baseline.py --seed S --time T [--warm BEST.json] --out OUT.json
Reads task.json (the number of marks); writes --out whenever the length drops.
"""

import time

START = time.time()
# ruff: noqa: E402

import argparse
import json
import os
import random


def greedy(marks, rng, skip):
    """Marks placed one by one at the first position keeping differences distinct, some skipped."""
    ruler, diffs, position = [0], set(), 0
    while len(ruler) < marks:
        position += 1
        new = {{position - m for m in ruler}}
        if new & diffs or len(new) < len(ruler) or rng.random() < skip:
            continue
        diffs |= new
        ruler.append(position)
    return ruler


def main():
    """Restart the randomised greedy until the time limit; keep the shortest ruler."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--warm", default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open("task.json") as handle:
        marks = int(json.load(handle)["params"]["marks"])
    rng = random.Random(args.seed)
    best = None
    if args.warm and os.path.exists(args.warm):
        with open(args.warm) as handle:
            best = json.load(handle)["marks"]
    while time.time() - START < args.time * 0.9:
        ruler = greedy(marks, rng, rng.random() * 0.3)
        if best is None or ruler[-1] < best[-1]:
            best = ruler
            with open(args.out + ".tmp", "w") as handle:
                json.dump({{"marks": best}}, handle)
            os.replace(args.out + ".tmp", args.out)
            print(f"length {{best[-1]}}", flush=True)


if __name__ == "__main__":
    main()
'''

SOLVE = '''\
"""{title}."""

import argparse
import json{random}


def greedy(marks, rng, skip):
    """Marks placed one by one at the first position keeping differences distinct, some skipped."""
    ruler, diffs, position = [0], set(), 0
    while len(ruler) < marks:
        position += 1
        new = {{position - m for m in ruler}}
        if new & diffs or len(new) < len(ruler) or rng.random() < skip:
            continue
        diffs |= new
        ruler.append(position)
    return ruler


def main():
    """Write a ruler of the task's number of marks."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=None)
    args = parser.parse_args()
    marks = {marks}
{body}
    with open(args.out, "w") as handle:
        json.dump({{"marks": ruler}}, handle)


if __name__ == "__main__":
    main()
'''

SOLUTIONS = {
    "powers-of-two": ("baseline", "Marks at 2^i - 1: every difference is distinct",
                      "    ruler = [2**i - 1 for i in range(marks)]",
                      "Marks at $2^i - 1$ for $i = 0, \\dots, m - 1$: a difference $2^j - 2^i$ "
                      "determines $i < j$, so all differences are distinct."),
    "greedy": ("reference", "Greedy: each mark at the smallest position keeping differences distinct",
               "    ruler = greedy(marks, random.Random(args.seed), 0.0)",
               "Marks are placed one by one; each goes to the smallest position whose differences "
               "to the placed marks are all new."),
    "greedy-restarts": ("reference", "Randomised greedy restarts, the shortest ruler kept",
                        "    rng = random.Random(args.seed)\n"
                        "    tries = 200 if args.quick else 20000\n"
                        "    rulers = (greedy(marks, rng, rng.random() * 0.3) for _ in range(tries))\n"
                        "    ruler = min(rulers, key=lambda r: r[-1])",
                        "The greedy ruler with each position skipped at random (probability up to "
                        "0.3), restarted many times; the shortest ruler is kept."),
}


def new_task(task_id: str, family: str | None = None, path: str | Path = ".") -> Path:
    """Write a task folder and record its known solutions with the hidden evaluator.

    Args:
        task_id: The task's id (lower-case words joined by hyphens: the folder's name).
        family: The new family's module name (None: from the id, e.g. my-task -> my_task).
        path: The folder the task folder is written in.

    Returns:
        The task folder.

    Raises:
        TaskError: A malformed id or family name, a family name already registered (a new
            family needs a name of its own), or a folder that exists.
    """
    from innolab.tasks.model import Task
    from innolab.tasks.solutions import Solution, record

    if not re.fullmatch(TASK_ID_PATTERN, task_id):
        raise TaskError(f"id: {task_id!r} must be lower-case letters and digits joined by hyphens")
    family = family or task_id.replace("-", "_")
    if not family.isidentifier() or family in ("core", "taskkit") or family.startswith("_"):
        raise TaskError(f"--family: {family!r} must be a Python name (the family's module name)")
    if family in registered():
        raise TaskError(f"--family: {family!r} is a registered family; `tasks new` writes a new "
                        "family module beside task.yaml: give it a name of its own")
    folder = Path(path).resolve() / task_id
    if folder.exists():
        raise TaskError(f"--path: {folder} exists; choose another id or folder")
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    folder.mkdir(parents=True)
    try:
        (folder / "description.md").write_text(DESCRIPTION.format(marks=MARKS), encoding="utf-8")
        (folder / f"{family}.py").write_text(FAMILY.format(family=family), encoding="utf-8")
        (folder / f"{family}_baseline.py").write_text(TEMPLATE.format(family=family),
                                                      encoding="utf-8")
        for name, (_, title, body, card) in SOLUTIONS.items():
            solution = folder / "solutions" / name
            solution.mkdir(parents=True)
            uses = "\nimport random" if "random." in body else ""
            (solution / "solve.py").write_text(
                SOLVE.format(title=title, marks=MARKS, body=body, random=uses), encoding="utf-8")
            (solution / "summary.md").write_text(f"# {title}\n\n{card}\n", encoding="utf-8")
            (solution / "pseudocode.tex").write_text(
                "\\begin{algorithmic}\n\\State " + card.replace("%", "\\%") +
                "\n\\end{algorithmic}\n", encoding="utf-8")
        # the ledger's placeholder is the best known solution's value: record them first
        (folder / "task.yaml").write_text(TASK_YAML.format(
            id=task_id, family=family, marks=MARKS, today=today, value=10**6), encoding="utf-8")
        task = Task.load(folder)
        scores = {name: record(Solution(task, name), kind).score
                  for name, (kind, *_) in SOLUTIONS.items()}
        best = int(min(s for n, s in scores.items() if SOLUTIONS[n][0] == "reference"))
        (folder / "task.yaml").write_text(TASK_YAML.format(
            id=task_id, family=family, marks=MARKS, today=today, value=best), encoding="utf-8")
        Task.load(folder)
    except Exception:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder
