"""First autocorrelation: subgradient descent on the peak of f*f, projected onto f >= 0."""
import json

import numpy as np

STEP_COUNT = 120
ITERATIONS = 2500
seeded = np.random.default_rng(5)


def autoconvolution_bound(heights):
    self_conv = np.convolve(heights, heights)
    return 2 * len(heights) * self_conv.max() / heights.sum() ** 2


def peak_direction(heights):
    self_conv = np.convolve(heights, heights)
    peak_at = int(np.argmax(self_conv))
    direction = np.zeros_like(heights)
    for slot in range(len(heights)):
        partner = peak_at - slot
        if 0 <= partner < len(heights):
            direction[slot] = 2 * heights[partner]
    mass = heights.sum()
    return 2 * len(heights) * (direction / mass ** 2 - 2 * self_conv[peak_at] / mass ** 3)


heights = 1 + 0.5 * seeded.random(STEP_COUNT)
incumbent, incumbent_bound = heights.copy(), autoconvolution_bound(heights)
for iteration in range(ITERATIONS):
    direction = peak_direction(heights)
    heights = np.maximum(heights - 0.3 / np.sqrt(iteration + 1) * direction
                         / np.linalg.norm(direction), 0.0)
    heights *= STEP_COUNT / heights.sum()
    bound = autoconvolution_bound(heights)
    if bound < incumbent_bound:
        incumbent, incumbent_bound = heights.copy(), bound

with open("submission.json", "w") as sink:
    json.dump({"values": incumbent.tolist()}, sink)
