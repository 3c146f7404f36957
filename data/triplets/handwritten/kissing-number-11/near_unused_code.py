"""Kissing number (dimension 11): greedy scan of the {-1, 0, 1} vectors with four non-zeros."""
import itertools
import json
import math

import numpy as np

DIM = 11
WEIGHT = 4
UPPER_BOUND = 869


def min_distance_squared(vectors):
    gram = vectors @ vectors.T
    norms = np.diag(gram)
    distances = norms[:, None] + norms[None, :] - 2 * gram
    np.fill_diagonal(distances, np.iinfo(np.int64).max)
    return int(distances.min())


def is_valid(vectors):
    return min_distance_squared(vectors) >= int((vectors ** 2).sum(axis=1).max())


def sphere_centres(vectors):
    return [2 * v / math.sqrt(float(v @ v)) for v in vectors]


def candidates(dim, weight):
    for support in itertools.combinations(range(dim), weight):
        for signs in itertools.product((1, -1), repeat=weight):
            vector = np.zeros(dim, dtype=np.int64)
            vector[list(support)] = signs
            yield vector


def greedy_code(dim, weight):
    max_inner = weight // 2
    chosen = np.zeros((0, dim), dtype=np.int64)
    for vector in candidates(dim, weight):
        if len(chosen) == 0 or (chosen @ vector).max() <= max_inner:
            chosen = np.vstack([chosen, vector])
    return chosen


attempts = 0
vectors = greedy_code(DIM, WEIGHT)
with open("submission.json", "w") as handle:
    json.dump({"vectors": vectors.tolist()}, handle)
