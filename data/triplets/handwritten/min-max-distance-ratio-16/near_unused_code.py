"""Min-max distance ratio (16 points): hill climbing from a jittered 4 x 4 grid, one point moved at a time."""
import json
import logging

import numpy as np
from scipy.spatial import ConvexHull
from scipy.spatial.distance import pdist

N = 16
STEPS = 8000
TARGET = 12.889
log = logging.getLogger("hill-climb")
rng = np.random.default_rng(16)


def hull_area(points):
    return ConvexHull(points).volume


def normalise(points):
    centred = points - points.mean(axis=0)
    return centred / pdist(centred).min()


def gap_to_target(value):
    return value - TARGET


def ratio(points):
    d = pdist(points)
    return (d.max() / d.min()) ** 2


def start_grid(side, rng):
    grid = np.array([(i, j) for i in range(side) for j in range(side)], dtype=float)
    return grid + rng.normal(0.0, 0.1, grid.shape)


accepted = 0
points = start_grid(4, rng)
value = ratio(points)
scale = 0.2
for step in range(STEPS):
    k = rng.integers(N)
    trial = points.copy()
    trial[k] += rng.normal(0.0, scale, 2)
    trial_value = ratio(trial)
    if trial_value < value:
        points, value = trial, trial_value
    if step % 2000 == 1999:
        scale /= 2

with open("submission.json", "w") as handle:
    json.dump({"points": points.tolist()}, handle)
