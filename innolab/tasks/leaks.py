"""The leak scan: no leaderboard number, V*, bound or known solution's score in what enters a sandbox.

A task's *hidden numbers* are V* and every leaderboard entry, the reproduced V*, the paper's V*, the bounds, the
numbers its data source publishes about its instances (job-shop bounds) and every known solution's recorded
scores. Each is written in every way a float or an int is commonly printed (repr, the integer, rounded to 3–10
significant digits and to 3–10 decimals) and every visible file is searched for those spellings as whole number
tokens. Spellings with fewer than three significant digits (0.5, 2, 22) carry no information about a record and
would match ordinary problem statements, so they are not searched. The key names in HIDDEN_KEYS are searched too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from innolab.tasks.model import Task, TaskError

HIDDEN_KEYS = ("v_star", "leaderboard", "upper_bound", "lower_bound", "best_known")
MIN_SIGNIFICANT_DIGITS = 3
NUMBER_TOKEN = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w]|\.\d)")


@dataclass(frozen=True)
class Leak:
    file: str
    found: str  # the spelling found in the file
    source: str  # which hidden number it spells, e.g. "v_star", "solution ils-slsqp score"

    def __str__(self) -> str:
        return f"{self.file}: {self.found!r} ({self.source})"


def significant_digits(spelling: str) -> int:
    mantissa = spelling.lstrip("-").split("e")[0].split("E")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if "." in spelling.split("e")[0] else len(mantissa)


def spellings(value: float) -> set[str]:
    """How a number is commonly printed: repr, int, rounded to 3–10 significant digits or decimals."""
    forms = {repr(value), str(value)}
    if float(value).is_integer():
        forms |= {str(int(value)), f"{float(value)!r}"}
    for digits in range(3, 11):
        forms |= {f"{value:.{digits}g}", f"{value:.{digits}f}"}
    return {f for f in forms if significant_digits(f) >= MIN_SIGNIFICANT_DIGITS}


def hidden_numbers(task: Task) -> dict[str, float]:
    """Every number the agent must not see, by where it comes from."""
    from innolab.tasks.solutions import solutions

    spec = task.spec
    found: dict[str, float] = {"v_star": spec.v_star.value}
    for i, entry in enumerate(spec.v_star.entries):
        found[f"leaderboard entry {i} ({entry.who})"] = entry.value
    for name in ("v_star_reproduced", "paper_v_star"):
        if getattr(spec, name) is not None:
            found[name] = getattr(spec, name)
    for name in ("upper", "lower"):
        if getattr(spec.bounds, name) is not None:
            found[f"bounds.{name}"] = getattr(spec.bounds, name)
    for where, value in task.problem_data.published_numbers.items():
        found[f"data {where}"] = value
    for solution in solutions(task):
        try:
            recorded = solution.recorded
        except TaskError:
            continue
        found[f"solution {solution.name} score"] = recorded.score
        found[f"solution {solution.name} quick score"] = recorded.quick_score
    return found


def scan_files(files: dict[str, bytes], numbers: dict[str, float]) -> list[Leak]:
    """Leaks in a set of files: hidden numbers in any common spelling, and hidden key names."""
    wanted: dict[str, str] = {}
    for source, value in numbers.items():
        for form in spellings(value):
            wanted.setdefault(form, source)
            wanted.setdefault(form.lstrip("-"), source)
    leaks = []
    for name, content in sorted(files.items()):
        text = content.decode("utf-8", errors="replace")
        for token in sorted(set(NUMBER_TOKEN.findall(text))):
            if token in wanted or token.lstrip("-") in wanted:
                leaks.append(Leak(name, token, wanted.get(token) or wanted[token.lstrip("-")]))
        lowered = text.lower()
        leaks += [Leak(name, key, "hidden key name") for key in HIDDEN_KEYS if key in lowered]
    return leaks


def scan(task: Task) -> list[Leak]:
    """Leaks in the task's visible part (everything that enters a sandbox)."""
    return scan_files(task.visible_files(), hidden_numbers(task))
