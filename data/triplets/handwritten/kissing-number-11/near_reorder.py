"""Kissing number (dimension 11): greedy scan of the {-1, 0, 1} vectors with four non-zeros."""
import itertools
import json

import numpy as np

WEIGHT = 4
DIM = 11


def greedy_code(dim, weight):
    chosen = np.zeros((0, dim), dtype=np.int64)
    max_inner = weight // 2
    for vector in candidates(dim, weight):
        if len(chosen) == 0 or (chosen @ vector).max() <= max_inner:
            chosen = np.vstack([chosen, vector])
    return chosen


def candidates(dim, weight):
    for support in itertools.combinations(range(dim), weight):
        for signs in itertools.product((1, -1), repeat=weight):
            vector = np.zeros(dim, dtype=np.int64)
            vector[list(support)] = signs
            yield vector


vectors = greedy_code(DIM, WEIGHT)
with open("submission.json", "w") as handle:
    json.dump({"vectors": vectors.tolist()}, handle)
