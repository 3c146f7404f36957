"""N(s) = C(s) · min over every known solution of D(s, h), like with like; Div(T); judge ensembles."""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from innolab.metrics import novelty as novelty_metric
from innolab.novelty.backends import Scorer
from innolab.novelty.cards import MethodCard, extract_card
from innolab.novelty.registry import BACKENDS, make_backend
from innolab.novelty.structure import normalise
from innolab.tasks.model import Task
from innolab.tasks.solutions import solutions


def default_backend() -> str:
    """The DAGENT judge where a judge endpoint is configured ($INNOLAB_LLM_BASE_URL); else the structural `ast`
    back end, which needs no model and sees through cosmetic change (the embedded 135M model cannot judge)."""
    return "llm" if os.environ.get("INNOLAB_LLM_BASE_URL") else "ast"


def compares_cards(backend_name: str) -> bool:
    """The llm judge compares method cards; every other back end compares code with code."""
    return backend_name.startswith("llm")


CODE_BACKENDS = tuple(name for name in BACKENDS if not compares_cards(name))


def known_code(task: Task) -> dict[str, str]:
    """S_known as code: every known solution of the task, baselines included (the paper's S_known is all known
    human solutions), each as solve.py plus the solver code it reaches."""
    return {s.name: s.code() for s in solutions(task)}


def known_cards(task: Task, settings: dict[str, Any] | None = None, cache_path: str | None = None
                ) -> dict[str, MethodCard]:
    """S_known as method cards made by the same extractor as a run's card (the configured LLM, from each known
    solution's code; cached by content hash, so a rerun makes no model call): like with like."""
    return {name: extract_card(code, settings, cache_path) for name, code in known_code(task).items()}


def comparable(text: str, backend_name: str) -> str:
    """Code as a code back end compares it: normalised (names by role, no comments or layout) for tfidf and
    embedding; the ast back end normalises itself."""
    return normalise(text) if backend_name in ("tfidf", "embedding") else text


@dataclass(frozen=True)
class NoveltyResult:
    novelty: float
    distances: dict[str, float]
    nearest: str | None


def novelty_against(text: str, valid: bool, known: dict[str, str], scorer: Scorer) -> NoveltyResult:
    """N = C · min over the known texts of D(text, known); 0 when invalid (C = 0). Texts are compared as given:
    prepare code with `comparable` first."""
    names = sorted(known)
    values = scorer.distances([(text, known[n]) for n in names]) if valid else []
    distances = dict(zip(names, values, strict=True)) if valid else {}
    nearest = min(distances, key=distances.get) if distances else None
    return NoveltyResult(novelty_metric(valid, values), distances, nearest)


def novelty_of_code(code: str, valid: bool, task: Task, scorer: Scorer) -> NoveltyResult:
    """N of a program against every known solution's code (code back ends)."""
    name = scorer.backend.name
    known = {n: comparable(c, name) for n, c in known_code(task).items()}
    return novelty_against(comparable(code, name), valid, known, scorer)


def novelty(card: MethodCard, valid: bool, task: Task, scorer: Scorer, settings: dict[str, Any] | None = None,
            cache_path: str | None = None) -> NoveltyResult:
    """N of a method card against the known solutions' cards made by the same extractor."""
    known = {name: c.text() for name, c in known_cards(task, settings, cache_path).items()}
    return novelty_against(card.text(), valid, known, scorer)


@dataclass(frozen=True)
class Diversity:
    value: float | None
    pairs: int
    detail: str


def task_diversity(task: Task, backend: str | None = None) -> Diversity:
    """Div(T) with a named back end (default: the offline default, which needs no model)."""
    return diversity(task, Scorer(make_backend(backend or "ast")))


def diversity(task: Task, scorer: Scorer) -> Diversity:
    """Div(T): mean pairwise distance among the known solutions' code; undefined with fewer than two."""
    name = scorer.backend.name
    codes = [comparable(c, name) for c in known_code(task).values()]
    if len(codes) < 2:
        return Diversity(None, 0, "undefined: fewer than two known solutions")
    pairs = list(combinations(codes, 2))
    values = scorer.distances(pairs)
    return Diversity(float(np.mean(values)), len(pairs), f"mean of {len(pairs)} pairwise distances of code")


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
