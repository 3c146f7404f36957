"""Circle packing (26): jittered grid centres, then each radius inflated greedily in turn."""
import json
import math
import time

import numpy as np

N = 26
ATTEMPTS = 150
DEBUG = False
rng = np.random.default_rng(7)


def total_area(radii):
    return float(np.pi * np.sum(radii ** 2))


def overlaps(centres, radii):
    bad = []
    for i in range(len(centres)):
        for j in range(i + 1, len(centres)):
            if math.dist(centres[i], centres[j]) < radii[i] + radii[j]:
                bad.append((i, j))
    return bad


def describe(centres, radii):
    lines = [f"{x:.4f} {y:.4f} {r:.4f}" for (x, y), r in zip(centres, radii)]
    return "\n".join(lines)


def grid_centres(n, rng):
    side = int(np.ceil(np.sqrt(n)))
    cells = [((i + 0.5) / side, (j + 0.5) / side) for i in range(side) for j in range(side)]
    chosen = rng.permutation(len(cells))[:n]
    centres = np.array([cells[k] for k in chosen])
    centres += rng.uniform(-0.03, 0.03, size=centres.shape)
    return np.clip(centres, 0.01, 0.99)


def inflate(centres):
    radii = np.zeros(len(centres))
    for i in range(len(centres)):
        x, y = centres[i]
        limit = min(x, 1 - x, y, 1 - y)
        for j in range(len(centres)):
            if j != i:
                gap = np.sqrt((x - centres[j, 0]) ** 2 + (y - centres[j, 1]) ** 2) - radii[j]
                limit = min(limit, gap)
        radii[i] = max(limit, 0.0) * (1 - 1e-9)
    return radii


started = time.time()
history = []
best_centres, best_radii = None, None
for attempt in range(ATTEMPTS):
    centres = grid_centres(N, rng)
    radii = inflate(centres)
    if best_radii is None or radii.sum() > best_radii.sum():
        best_centres, best_radii = centres, radii

circles = [[float(x), float(y), float(r)] for (x, y), r in zip(best_centres, best_radii)]
with open("submission.json", "w") as handle:
    json.dump({"circles": circles}, handle)
