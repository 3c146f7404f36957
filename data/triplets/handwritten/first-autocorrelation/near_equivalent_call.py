"""First autocorrelation: subgradient descent on the peak of f*f, projected onto f >= 0."""
import json

import numpy as np
from scipy import signal

N = 120
STEPS = 2500
rng = np.random.default_rng(5)


def peak_ratio(f):
    conv = signal.convolve(f, f, method="direct")
    return 2 * f.size * np.max(conv) / np.sum(f) ** 2


def subgradient(f):
    conv = signal.convolve(f, f, method="direct")
    t = int(conv.argmax())
    grad = np.zeros_like(f)
    for i in range(f.size):
        j = t - i
        if 0 <= j < f.size:
            grad[i] = 2 * f[j]
    total = np.sum(f)
    return 2 * f.size * (grad / total ** 2 - 2 * conv[t] / total ** 3)


f = 1 + 0.5 * rng.random(N)
best, best_value = f.copy(), peak_ratio(f)
for k in range(STEPS):
    g = subgradient(f)
    f = np.clip(f - 0.3 / np.sqrt(k + 1) * g / np.sqrt(np.dot(g, g)), 0.0, None)
    f *= N / np.sum(f)
    value = peak_ratio(f)
    if value < best_value:
        best, best_value = f.copy(), value

with open("submission.json", "w") as handle:
    json.dump({"values": best.tolist()}, handle)
