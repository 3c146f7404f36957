"""Circle packing (26): centres on a staggered hexagonal lattice, radii by linear programming."""
import json

import numpy as np
from scipy.optimize import linprog

ROWS = [6, 5, 5, 5, 5]

centres = []
for row, count in enumerate(ROWS):
    offset = 0.5 if row % 2 == 0 else 0.35
    for k in range(count):
        x = (k + offset) / (count + 2 * offset - 1)
        centres.append((x, (row + 0.5) / len(ROWS)))
centres = np.array(centres)
n = len(centres)

rows, bounds_rhs = [], []
for i in range(n):
    for j in range(i + 1, n):
        row = np.zeros(n)
        row[i] = row[j] = 1.0
        rows.append(row)
        bounds_rhs.append(np.linalg.norm(centres[i] - centres[j]))
walls = np.minimum.reduce([centres[:, 0], 1 - centres[:, 0], centres[:, 1], 1 - centres[:, 1]])
result = linprog(-np.ones(n), A_ub=np.array(rows), b_ub=np.array(bounds_rhs),
                 bounds=[(0, w) for w in walls], method="highs")
radii = np.clip(result.x, 0, walls) * (1 - 1e-7)

circles = [[float(x), float(y), float(r)] for (x, y), r in zip(centres, radii)]
with open("submission.json", "w") as handle:
    json.dump({"circles": circles}, handle)
