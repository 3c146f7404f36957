"""Heilbronn in a triangle (11 points): the best of many uniformly random point sets."""
import itertools
import json

import numpy as np

N = 11
TRIES = 2000
CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
TRIPLES = list(itertools.combinations(range(N), 3))
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
    p = points.tolist()
    return min(abs((p[j][0] - p[i][0]) * (p[k][1] - p[i][1])
                   - (p[j][1] - p[i][1]) * (p[k][0] - p[i][0]))
               for i, j, k in TRIPLES) / 2


best_points, best_area = None, -1.0
for _ in range(TRIES):
    points = sample_points(rng)
    area = smallest_area(points)
    if area > best_area:
        best_points, best_area = points, area

with open("submission.json", "w") as handle:
    json.dump({"points": best_points.tolist()}, handle)
