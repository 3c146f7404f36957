# file: program.py
"""A prior solution for circle-packing-26 (innolab's own, for the prior-solution sweeps): 26 equal circles on a
5 x 6 row lattice, each of radius 1/12. Self-contained: it runs in any sandbox and writes submission.json in the
working directory, and prints its own sum of radii. Plenty of room to improve: four lattice sites stay empty and
every circle has the same radius."""

import json

RADIUS = (1 / 12) * (1 - 1e-9)  # a hair under 1/12: neighbours never touch in exact arithmetic
circles = []
for row in range(6):
    for column in range(5):
        if len(circles) < 26:
            circles.append([(2 * column + 1) / 10, (2 * row + 1) / 12, RADIUS])

with open("submission.json", "w", encoding="utf-8") as handle:
    json.dump({"circles": circles}, handle)
print("sum of radii", sum(c[2] for c in circles))
