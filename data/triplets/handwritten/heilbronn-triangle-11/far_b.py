"""Heilbronn in a triangle (11 points): simulated annealing on single-point moves from a random set."""
import itertools
import json

import numpy as np

N = 11
STEPS = 6000
CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
TRIPLES = np.array(list(itertools.combinations(range(N), 3)))
rng = np.random.default_rng(11)


def sample_points(rng):
    u = rng.random(N)
    v = rng.random(N)
    flip = u + v > 1
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    points = CORNERS[0] + np.outer(u, CORNERS[1] - CORNERS[0]) + np.outer(v, CORNERS[2] - CORNERS[0])
    centroid = CORNERS.mean(axis=0)
    return centroid + 0.999 * (points - centroid)


def smallest_area(points):
    a, b, c = points[TRIPLES[:, 0]], points[TRIPLES[:, 1]], points[TRIPLES[:, 2]]
    cross = (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])
    return np.abs(cross).min() / 2


def inside(p):
    x, y = p
    return y > 1e-6 and np.sqrt(3) * x - y > 1e-6 and np.sqrt(3) * (1 - x) - y > 1e-6


points = sample_points(rng)
area = smallest_area(points)
best_points, best_area = points, area
for step in range(STEPS):
    temperature = 0.002 * (1 - step / STEPS) + 1e-6
    trial = points.copy()
    k = rng.integers(N)
    trial[k] += rng.normal(0, 0.03, 2)
    if not inside(trial[k]):
        continue
    trial_area = smallest_area(trial)
    if trial_area > area or rng.random() < np.exp((trial_area - area) / temperature):
        points, area = trial, trial_area
        if area > best_area:
            best_points, best_area = points, area

with open("submission.json", "w") as handle:
    json.dump({"points": best_points.tolist()}, handle)
