"""Kissing number (dimension 11): the shell of squared norm 4 as a conflict graph, independent set by minimum degree."""
import itertools
import json

import numpy as np

DIM = 11


def shell():
    rows = []
    for support in itertools.combinations(range(DIM), 4):
        for signs in itertools.product((1, -1), repeat=4):
            row = np.zeros(DIM, dtype=np.int64)
            row[list(support)] = signs
            rows.append(row)
    for i in range(DIM):
        for sign in (2, -2):
            row = np.zeros(DIM, dtype=np.int64)
            row[i] = sign
            rows.append(row)
    return np.array(rows)


vectors = shell()
gram = vectors.astype(np.float32) @ vectors.T.astype(np.float32)
conflict = (gram > 2.5).astype(np.int8)
np.fill_diagonal(conflict, 0)
alive = np.ones(len(vectors), dtype=bool)
chosen = []
degree = conflict.sum(axis=1, dtype=np.int64)
while alive.any():
    candidates = np.flatnonzero(alive)
    pick = candidates[np.argmin(degree[candidates])]
    chosen.append(pick)
    removed = alive & (conflict[pick] == 1)
    removed[pick] = True
    alive &= ~removed
    degree -= conflict[removed].sum(axis=0, dtype=np.int64)

with open("submission.json", "w") as handle:
    json.dump({"vectors": vectors[chosen].tolist()}, handle)
