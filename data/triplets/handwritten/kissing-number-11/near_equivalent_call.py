"""Kissing number (dimension 11): greedy scan of the {-1, 0, 1} vectors with four non-zeros."""
import itertools
import json
from pathlib import Path

import numpy as np

DIM = 11
WEIGHT = 4


def candidates(dim, weight):
    for support in itertools.combinations(range(dim), weight):
        for signs in itertools.product((1, -1), repeat=weight):
            vector = np.zeros(dim, dtype=np.int64)
            np.put(vector, support, signs)
            yield vector


def greedy_code(dim, weight):
    max_inner = weight // 2
    chosen = []
    for vector in candidates(dim, weight):
        if not chosen or np.max(np.dot(np.array(chosen), vector)) <= max_inner:
            chosen.append(vector)
    return np.array(chosen)


vectors = greedy_code(DIM, WEIGHT)
Path("submission.json").write_text(json.dumps({"vectors": vectors.tolist()}))
