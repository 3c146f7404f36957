"""First autocorrelation: the family f(u) = exp(a u + b u^2) on u = 4x, (a, b) chosen by a grid scan."""
import json

import numpy as np

N = 600
u = 4 * (-0.25 + (np.arange(N) + 0.5) / (2 * N))


def score(values):
    return 2 * len(values) * np.convolve(values, values).max() / values.sum() ** 2


candidates = []
for a in np.linspace(-3.0, 3.0, 25):
    for b in np.linspace(-3.0, 3.0, 25):
        values = np.exp(a * u + b * u ** 2)
        candidates.append((score(values), a, b))
best_score, best_a, best_b = min(candidates)

with open("submission.json", "w") as handle:
    json.dump({"values": np.exp(best_a * u + best_b * u ** 2).tolist()}, handle)
