"""Kissing number (dimension 11): greedy scan of the {-1, 0, 1} vectors with four non-zeros."""
import itertools
import json

DIM = 11
WEIGHT = 4


def candidates(dim, weight):
    return [[dict(zip(support, signs)).get(k, 0) for k in range(dim)]
            for support in itertools.combinations(range(dim), weight)
            for signs in itertools.product((1, -1), repeat=weight)]


def greedy_code(dim, weight):
    max_inner = weight // 2
    chosen = []
    for vector in candidates(dim, weight):
        if all(sum(a * b for a, b in zip(row, vector)) <= max_inner for row in chosen):
            chosen.append(vector)
    return chosen


vectors = greedy_code(DIM, WEIGHT)
with open("submission.json", "w") as handle:
    json.dump({"vectors": vectors}, handle)
