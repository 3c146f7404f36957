"""Heilbronn in a triangle (11 points): the best of many uniformly random point sets."""
import itertools
import json

import numpy as np

POINT_COUNT = 11
SAMPLES = 2000
VERTICES = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
TRIANGLES = np.array(list(itertools.combinations(range(POINT_COUNT), 3)))
random_state = np.random.default_rng(11)


def draw_configuration(random_state):
    alpha = random_state.random(POINT_COUNT)
    beta = random_state.random(POINT_COUNT)
    outside = alpha + beta > 1
    alpha[outside], beta[outside] = 1 - alpha[outside], 1 - beta[outside]
    layout = (VERTICES[0] + np.outer(alpha, VERTICES[1] - VERTICES[0])
              + np.outer(beta, VERTICES[2] - VERTICES[0]))
    middle = VERTICES.mean(axis=0)
    return middle + 0.999 * (layout - middle)


def worst_triangle(layout):
    p, q, s = layout[TRIANGLES[:, 0]], layout[TRIANGLES[:, 1]], layout[TRIANGLES[:, 2]]
    det = (q[:, 0] - p[:, 0]) * (s[:, 1] - p[:, 1]) - (q[:, 1] - p[:, 1]) * (s[:, 0] - p[:, 0])
    return np.abs(det).min() / 2


record_layout, record = None, -1.0
for _ in range(SAMPLES):
    layout = draw_configuration(random_state)
    quality = worst_triangle(layout)
    if quality > record:
        record_layout, record = layout, quality

with open("submission.json", "w") as target:
    json.dump({"points": record_layout.tolist()}, target)
