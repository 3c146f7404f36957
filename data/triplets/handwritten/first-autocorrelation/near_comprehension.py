"""First autocorrelation: subgradient descent on the peak of f*f, projected onto f >= 0."""
import json

import numpy as np

N = 120
STEPS = 2500
rng = np.random.default_rng(5)


def peak_ratio(f):
    conv = np.convolve(f, f)
    return 2 * len(f) * conv.max() / f.sum() ** 2


def subgradient(f):
    conv = np.convolve(f, f)
    t = int(np.argmax(conv))
    grad = np.array([2 * f[t - i] if 0 <= t - i < len(f) else 0.0 for i in range(len(f))])
    total = f.sum()
    return 2 * len(f) * (grad / total ** 2 - 2 * conv[t] / total ** 3)


f = 1 + 0.5 * rng.random(N)
best, best_value = f.copy(), peak_ratio(f)
for k in range(STEPS):
    g = subgradient(f)
    f = np.maximum(f - 0.3 / np.sqrt(k + 1) * g / np.linalg.norm(g), 0.0)
    f *= N / f.sum()
    value = peak_ratio(f)
    if value < best_value:
        best, best_value = f.copy(), value

with open("submission.json", "w") as handle:
    json.dump({"values": best.tolist()}, handle)
