"""N(s) = C(s) · min over known solutions of D(s, h); Div(T); judge ensembles with inter-judge agreement."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from innolab.metrics import novelty as novelty_metric
from innolab.novelty.backends import Scorer
from innolab.novelty.cards import MethodCard, load_card
from innolab.tasks.model import Task
from innolab.tasks.solutions import solutions


def known_cards(task: Task) -> dict[str, MethodCard]:
    return {s.name: load_card(s.folder) for s in solutions(task) if s.recorded.kind == "reference"}


@dataclass(frozen=True)
class NoveltyResult:
    novelty: float
    distances: dict[str, float]
    nearest: str | None


def novelty(card: MethodCard, valid: bool, task: Task, scorer: Scorer) -> NoveltyResult:
    """N = C · min D over the task's known solutions (their stored cards)."""
    known = known_cards(task)
    names = sorted(known)
    values = scorer.distances([(card.text(), known[n].text()) for n in names]) if valid else []
    distances = dict(zip(names, values, strict=True)) if valid else {}
    nearest = min(distances, key=distances.get) if distances else None
    return NoveltyResult(novelty_metric(valid, values), distances, nearest)


@dataclass(frozen=True)
class Diversity:
    value: float | None
    pairs: int
    detail: str


def task_diversity(task: Task, backend: str = "tfidf") -> Diversity:
    """Div(T) with a named back end (default: tfidf, which needs no model)."""
    from innolab.novelty.backends import make_backend

    return diversity(task, Scorer(make_backend(backend)))


def diversity(task: Task, scorer: Scorer) -> Diversity:
    """Div(T): mean pairwise distance among the known solutions; undefined with fewer than two."""
    cards = list(known_cards(task).values())
    if len(cards) < 2:
        return Diversity(None, 0, "undefined: fewer than two known solutions")
    pairs = [(a.text(), b.text()) for a, b in combinations(cards, 2)]
    values = scorer.distances(pairs)
    return Diversity(float(np.mean(values)), len(pairs), f"mean of {len(pairs)} pairwise distances")


@dataclass(frozen=True)
class EnsembleResult:
    mean: list[float]
    per_judge: dict[str, list[float]]
    alpha: float | None


def ensemble(scorers: list[Scorer], pairs: list[tuple[str, str]]) -> EnsembleResult:
    """Mean distance over judges per pair, and Krippendorff's α (interval) as inter-judge agreement."""
    import krippendorff

    per_judge = {s.backend.name: s.distances(pairs) for s in scorers}
    matrix = np.array(list(per_judge.values()), dtype=float)
    alpha: float | None = None
    if len(scorers) >= 2 and len(pairs) >= 2 and np.ptp(matrix) > 0:
        alpha = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"))
    return EnsembleResult([float(v) for v in matrix.mean(axis=0)], per_judge, alpha)


def as_row(result: NoveltyResult) -> dict[str, Any]:
    return {"novelty": result.novelty, "nearest_known": result.nearest, **{f"d_{k}": v for k, v in
                                                                            result.distances.items()}}
