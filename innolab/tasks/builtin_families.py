"""innolab's own problem families, declared as any distribution declares one (`innolab.families`).

Each names its checks module in taskkit and, where the baseline has one, its search template
(innolab/agents/templates/<family>.py: a file the baseline writes into the sandbox; no import).
"""

from __future__ import annotations

from pathlib import Path

from innolab.tasks.families import KIT, FamilySpec

TEMPLATES = Path(__file__).resolve().parent.parent / "agents" / "templates"


def _builtin(name: str, description: str) -> FamilySpec:
    template = TEMPLATES / f"{name}.py"
    return FamilySpec(name, KIT / f"{name}.py", template if template.is_file() else None,
                      description)


CIRCLES = _builtin("circles", "circle packings in a square or a rectangle (exact rationals)")
POINTS = _builtin("points", "point sets: min-max distance ratio, Heilbronn problems (exact)")
STEPS = _builtin("steps", "step functions: Erdős minimum overlap, autocorrelation constants")
KISSING = _builtin("kissing", "kissing configurations of integer vectors (exact integers)")
JOBSHOP = _builtin("jobshop", "job-shop schedules, the sum of makespans (exact integers)")
COLOURING = _builtin("colouring", "graph colouring: a proper colouring's number of colours (exact)")
PREDICTION = _builtin("prediction", "prediction on hidden labels: a metric on a held-out test set")
