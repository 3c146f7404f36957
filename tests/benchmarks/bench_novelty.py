"""Benchmark: throughput of the embedding back end (local int8 MiniLM) on 150-word method cards."""

from __future__ import annotations

import random
import time

from innolab.novelty.backends import EmbeddingBackend

TARGET = 20.0
WORDS = [
    "sample",
    "gradient",
    "search",
    "lattice",
    "radius",
    "constraint",
    "solver",
    "penalty",
    "restart",
    "schedule",
    "tree",
    "node",
    "improve",
    "debug",
    "draft",
    "validate",
    "feature",
    "model",
    "ensemble",
    "boosting",
    "kernel",
    "annealing",
    "tabu",
    "neighbourhood",
    "swap",
    "greedy",
    "dynamic",
    "programme",
    "relaxation",
    "linear",
    "quadratic",
    "projection",
    "sieve",
    "hash",
    "merge",
    "partition",
]


def cards(n: int, words: int = 150, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(n)]


QUICK = {"n": 16}  # `run.py --quick`


def main(n: int = 128) -> dict[str, float]:
    backend = EmbeddingBackend()
    backend.embed(cards(4))  # load the model outside the measurement
    texts = cards(n)
    start = time.perf_counter()
    vectors = backend.embed(texts)
    elapsed = time.perf_counter() - start
    rate = n / elapsed
    print(f"embedding back end (all-MiniLM-L6-v2 int8 ONNX, batches of 16): {n} cards of 150 words")
    print(
        f"  {rate:.1f} texts/s   "
        f"(target >= {TARGET:.0f}: {'met' if rate >= TARGET else 'MISSED'}); "
        f"{vectors.shape[1]}-d vectors, {elapsed:.2f} s"
    )
    return {"texts_per_s": rate}


if __name__ == "__main__":
    main()
