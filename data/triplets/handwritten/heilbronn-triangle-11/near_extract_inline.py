"""Heilbronn in a triangle (11 points): the best of many uniformly random point sets."""
import itertools
import json

import numpy as np

N = 11
TRIES = 2000
CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
TRIPLES = np.array(list(itertools.combinations(range(N), 3)))
rng = np.random.default_rng(11)


def barycentric_to_plane(u, v):
    return CORNERS[0] + np.outer(u, CORNERS[1] - CORNERS[0]) + np.outer(v, CORNERS[2] - CORNERS[0])


def shrink(points, factor):
    centroid = CORNERS.mean(axis=0)
    return centroid + factor * (points - centroid)


def twice_signed_areas(a, b, c):
    return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])


best_points, best_area = None, -1.0
for _ in range(TRIES):
    u = rng.random(N)
    v = rng.random(N)
    flip = u + v > 1
    u[flip], v[flip] = 1 - u[flip], 1 - v[flip]
    points = shrink(barycentric_to_plane(u, v), 0.999)
    cross = twice_signed_areas(points[TRIPLES[:, 0]], points[TRIPLES[:, 1]], points[TRIPLES[:, 2]])
    area = np.abs(cross).min() / 2
    if area > best_area:
        best_points, best_area = points, area

with open("submission.json", "w") as handle:
    json.dump({"points": best_points.tolist()}, handle)
