"""Min-max distance ratio (16 points): hill climbing from a jittered 4 x 4 grid, one point moved at a time."""
import json

import numpy as np
from scipy.spatial.distance import pdist

N = 16
STEPS = 8000
rng = np.random.default_rng(16)


def propose(points, scale, rng):
    k = rng.integers(N)
    trial = points.copy()
    trial[k] += rng.normal(0.0, scale, 2)
    return trial


grid = np.array([(i, j) for i in range(4) for j in range(4)], dtype=float)
points = grid + rng.normal(0.0, 0.1, grid.shape)
d = pdist(points)
value = (d.max() / d.min()) ** 2
scale = 0.2
for step in range(STEPS):
    trial = propose(points, scale, rng)
    d = pdist(trial)
    trial_value = (d.max() / d.min()) ** 2
    if trial_value < value:
        points, value = trial, trial_value
    if step % 2000 == 1999:
        scale /= 2

with open("submission.json", "w") as handle:
    json.dump({"points": points.tolist()}, handle)
