"""The circular triplet sets: a normaliser regression check, not a validation (paper App. F).

A triplet is (base A, closer B, farther C). A back end agrees when D(A, C) > D(A, B). The code
triplets pair a base program with a cosmetic variant (B) from `innolab.novelty.variants`, which
renames to v0, v1... as the normaliser itself does, and an algorithmic variant (C): agreement on
them says that the normaliser inverts its own renaming, so they are CIRCULAR and kept only as a
regression check of the normaliser. Method triplets pair a method with one of the same paradigm
(B) and one of another paradigm (C). Where triplets carry human scores, Spearman and Pearson
correlations against them are reported too. The validation that is not circular is
`innolab.novelty.validation` (hand-written triplets, per transformation family, both axes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from innolab.novelty.backends import Scorer
from innolab.paths import data_dir


@dataclass(frozen=True)
class Triplet:
    """A base, a closer and a farther alternative, with human distances where collected."""

    name: str
    kind: str  # "code" (circular) or "method"
    base: str
    closer: str
    farther: str
    human: tuple[float, float] | None = None  # human distances (A, B), (A, C) where collected


def load_triplets(kind: str = "all", cosmetic_index: int = 0) -> list[Triplet]:
    """Return the circular regression triplet set.

    Args:
        kind: "all", "code" (the circular normaliser regression triplets) or "method".
        cosmetic_index: Which of each code triplet's cosmetic variants is the closer alternative.

    Returns:
        The code triplets and/or the method triplets.

    Raises:
        ValueError: When `kind` is none of the three.
    """
    folder = data_dir() / "triplets"
    out: list[Triplet] = []
    if kind in ("all", "code"):
        for t in json.loads((folder / "code_triplets.json").read_text())["triplets"]:
            out.append(Triplet(t["problem"], "code", t["base"], t["cosmetic"][cosmetic_index],
                               t["algorithmic"]))
    if kind in ("all", "method"):
        for t in json.loads((folder / "method_triplets.json").read_text())["triplets"]:
            human = tuple(t["human"]) if "human" in t else None
            out.append(Triplet(t["domain"], "method", t["base"], t["closer"], t["farther"],
                               human))  # type: ignore[arg-type]
    if not out:
        raise ValueError(f"kind must be all, code or method, got {kind!r}")
    return out


@dataclass(frozen=True)
class Validation:
    """A back end's result on a set of triplets: mean distances, agreement, correlations."""

    backend: str
    kind: str
    n: int
    mean_closer: float
    mean_farther: float
    agreement: float
    failed: int
    spearman: float | None
    pearson: float | None

    def row(self) -> dict[str, Any]:
        """Return the result as a table row."""
        return self.__dict__.copy()


def validate(scorer: Scorer, triplets: list[Triplet]) -> Validation:
    """Return how a back end orders the triplets' alternatives.

    Args:
        scorer: The back end's scorer.
        triplets: The triplets.

    Returns:
        The mean distances to the closer and the farther alternatives, the share of triplets
        where the farther is farther (the agreement), the number the back end could not score,
        and the correlations with human distances where at least two triplets carry them.
    """
    pairs = [(t.base, t.closer) for t in triplets] + [(t.base, t.farther) for t in triplets]
    values = scorer.distances(pairs, failures="nan")
    closer, farther = np.array(values[: len(triplets)]), np.array(values[len(triplets) :])
    scored = ~(np.isnan(closer) | np.isnan(farther))
    agreement = float(np.mean(farther[scored] > closer[scored])) if scored.any() else float("nan")
    human = [t.human for t in triplets if t.human is not None]
    spearman = pearson = None
    if len(human) >= 2:
        ours = np.concatenate([closer, farther])[[i for i, t in enumerate(triplets) if t.human] * 2]
        theirs = np.array([h[0] for h in human] + [h[1] for h in human])
        spearman = float(stats.spearmanr(ours, theirs).statistic)
        pearson = float(stats.pearsonr(ours, theirs).statistic)
    kinds = {t.kind for t in triplets}
    return Validation(scorer.backend.name, kinds.pop() if len(kinds) == 1 else "mixed",
                      len(triplets),
                      float(np.nanmean(closer)) if scored.any() else float("nan"),
                      float(np.nanmean(farther)) if scored.any() else float("nan"), agreement,
                      int((~scored).sum()), spearman, pearson)


def write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Write table rows to a CSV file, making its folder."""
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)


# The paper's App. F means on the code triplets, read as raw 0–24 totals [inferred], on the 0–100
# scale.
PAPER_COSMETIC = 1.00 / 24 * 100
PAPER_ALGORITHMIC = 9.75 / 24 * 100


# How the regression table labels the circular code triplets.
CIRCULAR_KIND = "code (circular: normaliser regression)"


def regression_table(backends: list[str], cache_dir: Path, llm_limit: int | None = None,
                     llm_settings: dict[str, Any] | None = None,
                     models: list[str] | None = None) -> pd.DataFrame:
    """Return every back end's results on the circular code and the method triplets.

    A normaliser regression check, not a validation: the code triplets' near variants rename as
    the normaliser does (their rows' kind is CIRCULAR_KIND).

    Code back ends compare code as `innolab.novelty.scoring.comparable` prepares it (normalised
    for tfidf and embedding). For the llm back end each judge model in `models` gets its rows; with
    two or more, a row per kind reports their mean and Krippendorff's alpha (interval) over the
    pairs.

    Args:
        backends: Registered back-end names.
        cache_dir: The folder of the distance and LLM response caches.
        llm_limit: How many triplets of each kind the llm back end judges; None or 0: all.
        llm_settings: LLM settings of the judges.
        models: The judge models; None: the configured one.

    Returns:
        One row per back end (and judge) and kind, `model_calls` counting requests that reached a
        model, beside the paper's means.

    Raises:
        NoveltyError: When a back end is not registered.
    """
    from innolab.novelty.backends import LLMJudge
    from innolab.novelty.registry import make_backend
    from innolab.novelty.scoring import comparable, ensemble

    rows = []
    for name in backends:
        judges = [m or None for m in (models or [""])] if name == "llm" else [None]
        for kind in ("code", "method"):
            triplets = load_triplets(kind)
            if name == "llm" and llm_limit:
                triplets = triplets[:llm_limit]
            prepared = [Triplet(t.name, t.kind, comparable(t.base, name),
                                comparable(t.closer, name), comparable(t.farther, name), t.human)
                        for t in triplets]
            scorers = []
            for model in judges:
                if name == "llm":
                    settings = {**(llm_settings or {}), **({"model": model} if model else {})}
                    backend = LLMJudge(settings, cache_path=str(cache_dir / "llm_cache.sqlite"))
                else:
                    backend = make_backend(name)
                scorer = Scorer(backend, cache_dir / "distances.sqlite",
                                workers=1 if name == "llm" else 4)
                scorers.append(scorer)
                row = validate(scorer, prepared).row()
                row["kind"] = CIRCULAR_KIND if kind == "code" else kind
                judged = isinstance(backend, LLMJudge)
                row["model_calls"] = backend.client.calls if judged else 0
                row["tokens"] = backend.tokens if judged else 0
                row["cost_usd"] = backend.cost_usd if judged else 0.0
                row["pairs_computed"] = scorer.computed
                row["alpha"] = None
                rows.append(row)
            if len(scorers) >= 2:
                pairs = [(t.base, t.closer) for t in prepared] \
                    + [(t.base, t.farther) for t in prepared]
                result = ensemble(scorers, pairs)
                closer, farther = (np.array(result.mean[: len(prepared)]),
                                   np.array(result.mean[len(prepared) :]))
                rows.append({"backend": "llm ensemble: " + ", ".join(s.backend.name
                                                                     for s in scorers),
                             "kind": CIRCULAR_KIND if kind == "code" else kind,
                             "n": len(prepared), "mean_closer": float(closer.mean()),
                             "mean_farther": float(farther.mean()),
                             "agreement": float(np.mean(farther > closer)),
                             "failed": 0, "spearman": None, "pearson": None, "model_calls": 0,
                             "tokens": 0, "cost_usd": 0.0, "pairs_computed": 0,
                             "alpha": result.alpha})
    table = pd.DataFrame(rows)
    table["paper_cosmetic"] = PAPER_COSMETIC
    table["paper_algorithmic"] = PAPER_ALGORITHMIC
    return table


# The former name (notebook 15 and older callers use it).
validation_table = regression_table


def judge_endpoint() -> tuple[str, int | None]:
    """Return the llm back end's judge and how many triplets of each kind it should judge.

    Returns:
        The judge in words (host, never the key), and the number of triplets: None (all) where an
        endpoint is configured, 1 on the embedded 135M model (no judge: its verdicts exercise the
        pipeline; at about 7 s a call on one thread, each triplet more costs `make reproduce` and
        `make test` 15 s).
    """
    from urllib.parse import urlparse

    from innolab.llm.settings import LLMSettings

    settings = LLMSettings.from_env()
    if settings.base_url:
        return (f"model {settings.model} at "
                f"{urlparse(settings.base_url).netloc or settings.base_url}", None)
    return (f"the embedded model {settings.model} (SmolLM2-135M, local; exercises the pipeline "
            "only)", 1)
