"""Min-max distance ratio (16 points): hill climbing from a jittered 4 x 4 grid, one point moved at a time."""
import json

import numpy as np

N = 16
STEPS = 8000
UPPER = np.triu_indices(N, 1)
rng = np.random.default_rng(16)


def ratio(points):
    d = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=2)[UPPER]
    return np.square(np.max(d) / np.min(d))


def start_grid(side, rng):
    rows, cols = np.divmod(np.arange(side * side), side)
    grid = np.column_stack([rows, cols]).astype(float)
    return grid + rng.normal(0.0, 0.1, grid.shape)


points = start_grid(4, rng)
value = ratio(points)
scale = 0.2
for step in range(STEPS):
    k = rng.integers(N)
    trial = np.copy(points)
    trial[k] += rng.normal(0.0, scale, 2)
    trial_value = ratio(trial)
    if trial_value < value:
        points, value = trial, trial_value
    if step % 2000 == 1999:
        scale /= 2

with open("submission.json", "w") as handle:
    json.dump({"points": points.tolist()}, handle)
