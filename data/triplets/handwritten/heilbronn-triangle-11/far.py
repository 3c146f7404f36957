"""Heilbronn in a triangle (11 points): hill climbing from a triangular lattice, one point at a time."""
import itertools
import json

import numpy as np

SQRT3 = np.sqrt(3.0)
STEPS = 4000
rng = np.random.default_rng(3)


def inside(p, margin=1e-6):
    x, y = p
    return y >= margin and SQRT3 * x - y >= margin and SQRT3 * (1 - x) - y >= margin


def min_area(points):
    best = np.inf
    for a, b, c in itertools.combinations(points, 3):
        area = abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])) / 2
        best = min(best, area)
    return best


lattice = [((i + 0.5 * j) / 3, j * SQRT3 / 6) for j in range(4) for i in range(4 - j)]
points = np.array(lattice + [(0.5, SQRT3 / 6)])
points = 0.9 * (points - points.mean(axis=0)) + np.array([0.5, SQRT3 / 6])
value = min_area(points)
scale = 0.05
for step in range(STEPS):
    k = rng.integers(len(points))
    trial = points.copy()
    trial[k] += rng.normal(0, scale, 2)
    if not inside(trial[k]):
        continue
    trial_value = min_area(trial)
    if trial_value >= value:
        points, value = trial, trial_value
    if step % 700 == 699:
        scale *= 0.6

with open("submission.json", "w") as handle:
    json.dump({"points": points.tolist()}, handle)
