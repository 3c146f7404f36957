"""Kissing number (dimension 11): greedy scan of the {-1, 0, 1} vectors with four non-zeros."""
import itertools
import json

import numpy as np

DIM = 11
WEIGHT = 4


def candidates(dim, weight):
    supports = np.array(list(itertools.combinations(range(dim), weight)))
    signs = np.array(list(itertools.product((1, -1), repeat=weight)))
    rows = np.zeros((len(supports), len(signs), dim), dtype=np.int64)
    for s, support in enumerate(supports):
        rows[s][:, support] = signs
    return rows.reshape(-1, dim)


def greedy_code(dim, weight):
    pool = candidates(dim, weight)
    chosen = np.empty_like(pool)
    count = 0
    for vector in pool:
        if count == 0 or (chosen[:count] @ vector).max() <= weight // 2:
            chosen[count] = vector
            count += 1
    return chosen[:count]


vectors = greedy_code(DIM, WEIGHT)
with open("submission.json", "w") as handle:
    json.dump({"vectors": vectors.tolist()}, handle)
