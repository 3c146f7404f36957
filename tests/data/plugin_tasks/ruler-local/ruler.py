"""Golomb rulers: integer marks with distinct pairwise differences; score the length (exact).

A problem family of its own, beside its task's task.yaml: it enters the task's sandboxes as
`taskkit/ruler.py`, so it imports numpy and taskkit's core only.
"""

from __future__ import annotations

import json
from itertools import pairwise
from typing import Any

import numpy as np

from .core import Invalid, Outcome, exact_integer, hostile_variants, only_keys, violations

BASELINE_TEMPLATE = "ruler_baseline.py"  # the baseline's search, beside this file


def _marks(data: dict[str, Any], marks: int) -> list[int]:
    only_keys(data, ("marks",))
    value = data["marks"]
    if not isinstance(value, list) or len(value) != marks:
        got = f"{len(value)} entries" if isinstance(value, list) else type(value).__name__
        raise Invalid(f"marks must be a list of {marks} integers, got {got}")
    return [exact_integer(m, f"marks[{i}]", 40) for i, m in enumerate(value)]


def golomb_ruler(data: dict[str, Any], marks: int) -> float:
    """Check a Golomb ruler; score its length (minimise).

    Args:
        data: The submission: {"marks": [0, a_1, ..., a_(m-1)]}.
        marks: The number of marks m.

    Returns:
        The last mark.

    Raises:
        Invalid: The submission breaks a rule (every violation listed).
    """
    ruler = _marks(data, marks)
    if ruler[0] != 0:
        raise Invalid(f"marks[0] must be 0, got {ruler[0]}")
    violations("increasing marks", [f"marks[{i + 1}] = {b} is not above marks[{i}] = {a}"
                                    for i, (a, b) in enumerate(pairwise(ruler)) if b <= a])
    seen: dict[int, tuple[int, int]] = {}
    repeated = []
    for j in range(len(ruler)):
        for i in range(j):
            d = ruler[j] - ruler[i]
            if d in seen:
                repeated.append(f"marks {i} and {j} are {d} apart, as marks {seen[d][0]} "
                                f"and {seen[d][1]}")
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


OUTCOMES = {"golomb_ruler": Outcome(_describe, _distance, SCALE)}


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    marks = int(params["marks"])
    powers = [2**i - 1 for i in range(marks)]  # a valid ruler: each entry is corrupted in turn
    out = hostile_variants("marks", powers)
    out["a repeated difference"] = json.dumps({"marks": list(range(marks))})
    out["not starting at 0"] = json.dumps({"marks": [p + 1 for p in powers]})
    out["a float mark"] = json.dumps({"marks": [0.0, *powers[1:]]})
    return out


CHECKS = ("golomb_ruler",)
HOSTILE = {"golomb_ruler": _hostile}
