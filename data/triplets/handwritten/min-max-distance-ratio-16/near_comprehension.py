"""Min-max distance ratio (16 points): hill climbing from a jittered 4 x 4 grid, one point moved at a time."""
import itertools
import json
import math

import numpy as np

N = 16
STEPS = 8000
rng = np.random.default_rng(16)


def ratio(points):
    d = [math.dist(p, q) for p, q in itertools.combinations(points.tolist(), 2)]
    return (max(d) / min(d)) ** 2


def start_grid(side, rng):
    grid = np.array([(i, j) for i in range(side) for j in range(side)], dtype=float)
    return grid + rng.normal(0.0, 0.1, grid.shape)


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
