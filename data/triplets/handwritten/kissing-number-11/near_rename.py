"""Kissing number (dimension 11): greedy scan of the {-1, 0, 1} vectors with four non-zeros."""
import itertools
import json

import numpy as np

DIMENSION = 11
NONZEROS = 4


def signed_words(dimension, nonzeros):
    for positions in itertools.combinations(range(dimension), nonzeros):
        for pattern in itertools.product((1, -1), repeat=nonzeros):
            word = np.zeros(dimension, dtype=np.int64)
            word[list(positions)] = pattern
            yield word


def build_spherical_code(dimension, nonzeros):
    inner_limit = nonzeros // 2
    codebook = np.zeros((0, dimension), dtype=np.int64)
    for word in signed_words(dimension, nonzeros):
        if len(codebook) == 0 or (codebook @ word).max() <= inner_limit:
            codebook = np.vstack([codebook, word])
    return codebook


codebook = build_spherical_code(DIMENSION, NONZEROS)
with open("submission.json", "w") as stream:
    json.dump({"vectors": codebook.tolist()}, stream)
