"""Sidon sets: integers in [0, N) whose pairwise sums a + b (a <= b) are distinct; the size."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .core import Invalid, Outcome, exact_integer, hostile_variants, only_keys, violations

CHECKS = ("sidon_set",)  # the bare family: the same check, no baseline template


def _elements(data: dict[str, Any], n: int) -> list[int]:
    only_keys(data, ("elements",))
    value = data["elements"]
    if not isinstance(value, list) or not 1 <= len(value) <= n:
        raise Invalid(f"elements must be a list of 1 to {n} integers")
    out = [exact_integer(v, f"elements[{i}]", 40) for i, v in enumerate(value)]
    violations("range", [f"elements[{i}] = {v} is not in [0, {n})" for i, v in enumerate(out)
                         if not 0 <= v < n])
    violations("increasing", [f"elements[{i + 1}] is not above elements[{i}]"
                              for i in range(len(out) - 1) if out[i + 1] <= out[i]])
    return out


def sidon_set(data: dict[str, Any], n: int) -> float:
    """Check a Sidon set in [0, n); score its size (maximise).

    Args:
        data: The submission: {"elements": [a_0 < a_1 < ...]}.
        n: The range's end.

    Returns:
        The number of elements.

    Raises:
        Invalid: The submission breaks a rule (every violation listed).
    """
    elements = _elements(data, n)
    seen: dict[int, tuple[int, int]] = {}
    clashes = []
    for j, b in enumerate(elements):
        for a in elements[:j + 1]:
            if a + b in seen:
                clashes.append(f"{a} + {b} = {seen[a + b][0]} + {seen[a + b][1]}")
            seen.setdefault(a + b, (a, b))
    violations("distinct sums", clashes)
    return float(len(elements))


def _describe(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    n = int(params["n"])
    indicator = np.zeros(n)
    indicator[_elements(data, n)] = 1
    return indicator


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    total = a.sum() + b.sum()
    if not total:
        return 0.0
    return float(min(np.abs(a - b).sum(), np.abs(a - b[::-1]).sum()) / total * 100)


SCALE = "Sidon sets: 100 x the symmetric difference over the sizes, up to reflection x -> N - 1 - x"
OUTCOMES = {"sidon_set": Outcome(_describe, _distance, SCALE)}


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    out = hostile_variants("elements", [0, 1, 3, 7], fixed_rows=False)
    out["a repeated sum"] = json.dumps({"elements": [0, 1, 2]})
    out["an element out of range"] = json.dumps({"elements": [0, int(params["n"])]})
    out["decreasing"] = json.dumps({"elements": [3, 1]})
    return out


HOSTILE = {"sidon_set": _hostile}
