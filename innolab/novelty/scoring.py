"""N(s) = C(s) · min over every known solution of D(s, h), like with like.

Div(T); judge ensembles.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from innolab.metrics import novelty as novelty_metric
from innolab.novelty.backends import Scorer
from innolab.novelty.cards import MethodCard, extract_card
from innolab.novelty.deadcode import DEAD_CODE_RULES, DeadCodeRule, strip_dead_code
from innolab.novelty.registry import BACKENDS, make_backend
from innolab.novelty.structure import normalise
from innolab.tasks.model import Task
from innolab.tasks.solutions import solutions


def default_backend() -> str:
    """Return the name of the default back end.

    Returns:
        "llm", the DAGENT judge, where a judge endpoint is configured ($INNOLAB_LLM_BASE_URL);
        else "ast", the structural back end, which needs no model and sees through cosmetic change
        (the embedded 135M model cannot judge).
    """
    return "llm" if os.environ.get("INNOLAB_LLM_BASE_URL") else "ast"


def compares_cards(backend_name: str) -> bool:
    """Return whether a back end compares method cards (the llm judge) rather than code.

    Args:
        backend_name: A registered name, or a back end's own name (such as "llm:<model>").

    Returns:
        True for the llm judge; every other back end compares code with code.
    """
    return backend_name.startswith("llm")


CODE_BACKENDS = tuple(name for name in BACKENDS if not compares_cards(name))


def known_code(task: Task) -> dict[str, str]:
    """Return S_known as code: every known solution of the task, baselines included.

    The paper's S_known is all known human solutions.

    Args:
        task: The task.

    Returns:
        Each known solution's code (solve.py plus the solver code it reaches) by name.
    """
    return {s.name: s.code() for s in solutions(task)}


def known_cards(task: Task, settings: dict[str, Any] | None = None,
                cache_path: str | None = None) -> dict[str, MethodCard]:
    """Return S_known as method cards made by the same extractor as a run's card: like with like.

    Args:
        task: The task.
        settings: The LLM settings of the extractor (the configured LLM).
        cache_path: The response cache (by content hash, so a rerun makes no model call).

    Returns:
        Each known solution's card, made from its code, by name.
    """
    return {name: extract_card(code, settings, cache_path)
            for name, code in known_code(task).items()}


def comparable(text: str, backend_name: str) -> str:
    """Return code as a code back end compares it: only the code that runs, like with like.

    Every code back end sees the program after dead-code removal (`strip_dead_code`: definitions
    nothing executed reaches are dropped, so padding buys no novelty); the known solutions' code
    goes through the same path wherever it is compared (`novelty_of_code`, `diversity`, the run
    scorer's known texts, triplet validation).

    Args:
        text: The code.
        backend_name: The back end's name.

    Returns:
        The code without dead code, then normalised (names by role, no comments or layout) for
        tfidf and embedding; the ast back end normalises itself. Text that is not Python comes
        back as the normaliser leaves it.
    """
    live = strip_dead_code(text)
    return normalise(live) if backend_name in ("tfidf", "embedding") else live


@dataclass(frozen=True)
class CodeDistance:
    """D between two programs, with the back end and the rule that kept their code.

    Attributes:
        value: The distance, 0–100.
        backend: The back end's name.
        dead_code: "static" (no run: static reachability) or "executed" (line coverage).
        note: The rule in words (innolab.novelty.deadcode.DEAD_CODE_RULES).
    """

    value: float
    backend: str
    dead_code: DeadCodeRule
    note: str


def distance(a: str, b: str, backend: str | None = None) -> CodeDistance:
    """Return D between two programs that were not run: static reachability keeps their code.

    Args:
        a: One program's text.
        b: The other's.
        backend: A registered back end's name (None: `default_backend`).

    Returns:
        The distance, the back end and the dead-code rule it was computed under.

    Raises:
        NoveltyError: The back end cannot score the pair.
    """
    name = backend or default_backend()
    scorer = make_backend(name)
    value = scorer.distance(comparable(a, name), comparable(b, name))
    return CodeDistance(float(value), scorer.name, "static", DEAD_CODE_RULES["static"])


@dataclass(frozen=True)
class NoveltyResult:
    """A solution's novelty N, its distance to each known solution and the nearest of them."""

    novelty: float
    distances: dict[str, float]
    nearest: str | None


def novelty_against(text: str, valid: bool, known: dict[str, str],
                    scorer: Scorer) -> NoveltyResult:
    """Return N = C · min over the known texts of D(text, known).

    Texts are compared as given: prepare code with `comparable` first.

    Args:
        text: The solution's text.
        valid: Whether the solution is valid (C); an invalid one is not compared.
        known: The known solutions' texts by name.
        scorer: The distances' scorer.

    Returns:
        The novelty (0 when invalid), the distances and the nearest known solution.

    Raises:
        NoveltyError: When the back end cannot score a pair.
    """
    names = sorted(known)
    values = scorer.distances([(text, known[n]) for n in names]) if valid else []
    distances = dict(zip(names, values, strict=True)) if valid else {}
    nearest = min(distances, key=distances.get) if distances else None
    return NoveltyResult(novelty_metric(valid, values), distances, nearest)


def novelty_of_code(code: str, valid: bool, task: Task, scorer: Scorer) -> NoveltyResult:
    """Return N of a program against every known solution's code (code back ends).

    Args:
        code: The program.
        valid: Whether it is valid.
        task: Its task.
        scorer: The distances' scorer.

    Returns:
        As `novelty_against`.

    Raises:
        NoveltyError: When the back end cannot score a pair.
    """
    name = scorer.backend.name
    known = {n: comparable(c, name) for n, c in known_code(task).items()}
    return novelty_against(comparable(code, name), valid, known, scorer)


def novelty(card: MethodCard, valid: bool, task: Task, scorer: Scorer,
            settings: dict[str, Any] | None = None,
            cache_path: str | None = None) -> NoveltyResult:
    """Return N of a method card against the known solutions' cards made by the same extractor.

    Args:
        card: The solution's card.
        valid: Whether it is valid.
        task: Its task.
        scorer: The distances' scorer (the judge).
        settings: The LLM settings of the card extractor.
        cache_path: The extractor's response cache.

    Returns:
        As `novelty_against`.

    Raises:
        NoveltyError: When the judge cannot score a pair.
    """
    known = {name: c.text() for name, c in known_cards(task, settings, cache_path).items()}
    return novelty_against(card.text(), valid, known, scorer)


@dataclass(frozen=True)
class Diversity:
    """Div(T): its value (None where undefined), the number of pairs and how it was computed."""

    value: float | None
    pairs: int
    detail: str


def task_diversity(task: Task, backend: str | None = None) -> Diversity:
    """Return Div(T) with a named back end.

    Args:
        task: The task.
        backend: A registered back end's name; None takes "ast", which needs no model.

    Returns:
        As `diversity`.

    Raises:
        NoveltyError: When the back end is not registered or cannot score a pair.
    """
    return diversity(task, Scorer(make_backend(backend or "ast")))


def diversity(task: Task, scorer: Scorer) -> Diversity:
    """Return Div(T): the mean pairwise distance among the known solutions' code.

    Args:
        task: The task.
        scorer: The distances' scorer.

    Returns:
        The diversity; undefined (None) with fewer than two known solutions.

    Raises:
        NoveltyError: When the back end cannot score a pair.
    """
    name = scorer.backend.name
    codes = [comparable(c, name) for c in known_code(task).values()]
    if len(codes) < 2:
        return Diversity(None, 0, "undefined: fewer than two known solutions")
    pairs = list(combinations(codes, 2))
    values = scorer.distances(pairs)
    return Diversity(float(np.mean(values)), len(pairs),
                     f"mean of {len(pairs)} pairwise distances of code")


@dataclass(frozen=True)
class EnsembleResult:
    """The judges' mean distance per pair, each judge's distances, and their agreement α."""

    mean: list[float]
    per_judge: dict[str, list[float]]
    alpha: float | None


def ensemble(scorers: list[Scorer], pairs: list[tuple[str, str]]) -> EnsembleResult:
    """Return the mean distance over judges per pair, with their agreement.

    Args:
        scorers: One scorer per judge.
        pairs: The pairs of texts.

    Returns:
        The means, each judge's distances and Krippendorff's α (interval) as inter-judge agreement
        (None with fewer than two judges or pairs, or no spread).

    Raises:
        NoveltyError: When a judge cannot score a pair.
    """
    import krippendorff

    per_judge = {s.backend.name: s.distances(pairs) for s in scorers}
    matrix = np.array(list(per_judge.values()), dtype=float)
    alpha: float | None = None
    if len(scorers) >= 2 and len(pairs) >= 2 and np.ptp(matrix) > 0:
        alpha = float(krippendorff.alpha(reliability_data=matrix,
                                         level_of_measurement="interval"))
    return EnsembleResult([float(v) for v in matrix.mean(axis=0)], per_judge, alpha)


def as_row(result: NoveltyResult) -> dict[str, Any]:
    """Return a novelty result as a table row.

    Novelty, nearest_known and one d_<name> per known solution.
    """
    return {"novelty": result.novelty, "nearest_known": result.nearest,
            **{f"d_{k}": v for k, v in result.distances.items()}}
