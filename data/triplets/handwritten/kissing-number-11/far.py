"""Kissing number (dimension 11): the root system D11, every vector +-e_i +- e_j."""
import json

DIM = 11

vectors = []
for i in range(DIM):
    for j in range(i + 1, DIM):
        for si in (1, -1):
            for sj in (1, -1):
                row = [0] * DIM
                row[i], row[j] = si, sj
                vectors.append(row)

with open("submission.json", "w") as handle:
    json.dump({"vectors": vectors}, handle)
