"""Min-max distance ratio (16 points): hill climbing from a jittered 4 x 4 grid, one point moved at a time."""
import json

import numpy as np
from scipy.spatial.distance import pdist

POINT_COUNT = 16
MOVES = 8000
noise = np.random.default_rng(16)


def spread(configuration):
    gaps = pdist(configuration)
    return (gaps.max() / gaps.min()) ** 2


def jittered_square(width, noise):
    square = np.array([(row, col) for row in range(width) for col in range(width)], dtype=float)
    return square + noise.normal(0.0, 0.1, square.shape)


configuration = jittered_square(4, noise)
current = spread(configuration)
step_size = 0.2
for move in range(MOVES):
    victim = noise.integers(POINT_COUNT)
    candidate = configuration.copy()
    candidate[victim] += noise.normal(0.0, step_size, 2)
    candidate_spread = spread(candidate)
    if candidate_spread < current:
        configuration, current = candidate, candidate_spread
    if move % 2000 == 1999:
        step_size /= 2

with open("submission.json", "w") as sink:
    json.dump({"points": configuration.tolist()}, sink)
