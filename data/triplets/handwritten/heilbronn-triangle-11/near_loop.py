"""Heilbronn in a triangle (11 points): the best of many uniformly random point sets."""
import itertools
import json

import numpy as np

N = 11
TRIES = 2000
CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
rng = np.random.default_rng(11)


def sample_points(rng):
    u = rng.random(N)
    v = rng.random(N)
    for i in range(N):
        if u[i] + v[i] > 1:
            u[i], v[i] = 1 - u[i], 1 - v[i]
    centroid = CORNERS.mean(axis=0)
    points = np.zeros((N, 2))
    for i in range(N):
        point = CORNERS[0] + u[i] * (CORNERS[1] - CORNERS[0]) + v[i] * (CORNERS[2] - CORNERS[0])
        points[i] = centroid + 0.999 * (point - centroid)
    return points


def smallest_area(points):
    smallest = float("inf")
    for i, j, k in itertools.combinations(range(N), 3):
        a, b, c = points[i], points[j], points[k]
        cross = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        smallest = min(smallest, abs(cross) / 2)
    return smallest


best_points, best_area = None, -1.0
for _ in range(TRIES):
    points = sample_points(rng)
    area = smallest_area(points)
    if area > best_area:
        best_points, best_area = points, area

with open("submission.json", "w") as handle:
    json.dump({"points": best_points.tolist()}, handle)
