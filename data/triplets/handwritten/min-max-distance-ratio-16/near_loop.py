"""Min-max distance ratio (16 points): hill climbing from a jittered 4 x 4 grid, one point moved at a time."""
import json
import math

import numpy as np

N = 16
STEPS = 8000
rng = np.random.default_rng(16)


def ratio(points):
    largest, smallest = 0.0, math.inf
    for i in range(len(points)):
        for j in range(i + 1, len(points)):
            d = math.sqrt((points[i, 0] - points[j, 0]) ** 2 + (points[i, 1] - points[j, 1]) ** 2)
            largest = max(largest, d)
            smallest = min(smallest, d)
    return (largest / smallest) ** 2


def start_grid(side, rng):
    grid = np.zeros((side * side, 2))
    for i in range(side):
        for j in range(side):
            grid[i * side + j] = (i, j)
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
