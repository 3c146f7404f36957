"""First autocorrelation: subgradient descent on the peak of f*f, projected onto f >= 0."""
import json

import numpy as np

rng = np.random.default_rng(5)
STEPS = 2500
N = 120


def subgradient(f):
    total = f.sum()
    conv = np.convolve(f, f)
    grad = np.zeros_like(f)
    t = int(np.argmax(conv))
    for i in range(len(f)):
        j = t - i
        if 0 <= j < len(f):
            grad[i] = 2 * f[j]
    return 2 * len(f) * (grad / total ** 2 - 2 * conv[t] / total ** 3)


def peak_ratio(f):
    conv = np.convolve(f, f)
    return 2 * len(f) * conv.max() / f.sum() ** 2


f = 1 + 0.5 * rng.random(N)
best_value, best = peak_ratio(f), f.copy()
for k in range(STEPS):
    g = subgradient(f)
    f = np.maximum(f - 0.3 / np.sqrt(k + 1) * g / np.linalg.norm(g), 0.0)
    f *= N / f.sum()
    value = peak_ratio(f)
    if value < best_value:
        best, best_value = f.copy(), value

with open("submission.json", "w") as handle:
    json.dump({"values": best.tolist()}, handle)
