"""Heilbronn in a triangle (11 points): the best of many uniformly random point sets."""
import itertools
import json
import sys

import numpy as np

N = 11
TRIES = 2000
VERBOSE = "--verbose" in sys.argv[1:] and False
CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
TRIPLES = np.array(list(itertools.combinations(range(N), 3)))
rng = np.random.default_rng(11)


def perimeter(points):
    closed = np.vstack([points, points[:1]])
    return float(np.sum(np.linalg.norm(np.diff(closed, axis=0), axis=1)))


def is_inside(point):
    x, y = point
    return y >= 0 and y <= np.sqrt(3) * x and y <= np.sqrt(3) * (1 - x)


def normalised_score(area):
    return area / (np.sqrt(3) / 4)


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


scores_seen = []
best_points, best_area = None, -1.0
for _ in range(TRIES):
    points = sample_points(rng)
    area = smallest_area(points)
    if area > best_area:
        best_points, best_area = points, area

with open("submission.json", "w") as handle:
    json.dump({"points": best_points.tolist()}, handle)
