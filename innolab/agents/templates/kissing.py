"""innolab baseline template (integer vector sets): greedy construction, then local search.

A kissing configuration: integer vectors, min pairwise squared distance >= max squared norm.

Candidates: every integer vector of squared norm 4 (shapes (±2, 0, ...) and (±1, ±1, ±1, ±1, 0,
...)); two may both be chosen when their squared distance is at least 4. A maximum independent set
of the conflict graph is sought: a random greedy construction, then moves that force one candidate
in, drop the chosen ones it conflicts with and greedily add every candidate that became free
(kept when the set does not shrink).

Reads task.json (the check's name and parameters) in the working folder; writes --out whenever it
finds a larger set (so a killed run leaves its best). Runs at most --time seconds.
Usage: python3 kissing.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()  # the time limit counts from here, imports included
# ruff: noqa: E402 (the imports come after START, so that their time counts)

import argparse
import itertools
import json
import os

import numpy as np

NORM = 4


def read_args():
    """The command line: seed, time limit, warm-start file and output file."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--warm", default=None)
    parser.add_argument("--out", required=True)
    return parser.parse_args()


def load_json(path):
    """The JSON data of a file."""
    with open(path) as handle:
        return json.load(handle)


def write_json(path, data):
    """Write data to path atomically."""
    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)


def candidates(dim):
    """Every integer vector of squared norm NORM in dimension dim."""
    rows = []
    for i in range(dim):
        for sign in (2, -2):
            v = [0] * dim
            v[i] = sign
            rows.append(v)
    for support in itertools.combinations(range(dim), 4):
        for signs in itertools.product((1, -1), repeat=4):
            v = [0] * dim
            for k, s in zip(support, signs, strict=True):
                v[k] = s
            rows.append(v)
    return np.array(rows, dtype=np.int64)


def conflicts(vectors):
    """The conflict graph as a boolean matrix: squared distance below NORM (and not itself)."""
    dense = vectors.astype(np.float32)
    graph = np.zeros((len(vectors), len(vectors)), dtype=bool)
    for lo in range(0, len(vectors), 512):  # in blocks: the Gram matrix stays small
        gram = dense[lo:lo + 512] @ dense.T
        graph[lo:lo + 512] = 2 * NORM - 2 * gram < NORM
    np.fill_diagonal(graph, False)
    return graph


class Search:
    """An independent set of the conflict graph with its conflict counts."""

    def __init__(self, graph, rng):
        self.graph = graph
        self.rng = rng
        self.count = np.zeros(len(graph), dtype=np.int32)  # chosen neighbours of each candidate
        self.chosen = np.zeros(len(graph), dtype=bool)

    def add(self, v):
        """Choose candidate v."""
        self.chosen[v] = True
        self.count += self.graph[v]

    def remove(self, v):
        """Drop candidate v."""
        self.chosen[v] = False
        self.count -= self.graph[v]

    def fill(self):
        """Greedily add free candidates (no chosen neighbour) in random order."""
        for v in self.rng.permutation(np.flatnonzero((self.count == 0) & ~self.chosen)):
            if self.count[v] == 0 and not self.chosen[v]:
                self.add(v)

    def size(self):
        """The number of chosen candidates."""
        return int(self.chosen.sum())

    def move(self):
        """Force a random unchosen candidate with few conflicts in; refill; undo if smaller."""
        outside = np.flatnonzero(~self.chosen)
        low = outside[self.count[outside] <= max(1, int(self.count[outside].min()))]
        v = int(self.rng.choice(low if len(low) else outside))
        before = self.size()
        dropped = [int(u) for u in np.flatnonzero(self.chosen & self.graph[v])]
        for u in dropped:
            self.remove(u)
        self.add(v)
        added_before = self.chosen.copy()
        self.fill()
        if self.size() < before and self.rng.random() > 0.02:  # undo (rarely keep a worse set)
            for u in np.flatnonzero(self.chosen & ~added_before):
                self.remove(int(u))
            self.remove(v)
            for u in dropped:
                self.add(u)


def load_warm(path, index):
    """The chosen candidates of a warm-start file, when all its vectors are candidates."""
    if not path or not os.path.exists(path):
        return None
    try:
        rows = [tuple(int(x) for x in row) for row in load_json(path)["vectors"]]
    except (ValueError, KeyError, TypeError):
        return None
    if not rows or any(row not in index for row in rows):
        return None
    return [index[row] for row in rows]


def main():
    """Greedy, then local search until the time limit; the best set is written when it grows."""
    args = read_args()
    start = START
    config = load_json("task.json")
    dim = int(config["params"]["dim"])
    max_vectors = int(config["params"].get("max_vectors", 5000))
    vectors = candidates(dim)
    graph = conflicts(vectors)
    index = {tuple(row): i for i, row in enumerate(vectors.tolist())}
    rng = np.random.default_rng(args.seed)
    search = Search(graph, rng)
    warm = load_warm(args.warm, index)
    best_size = len(warm) if warm else 0
    for v in warm or []:
        search.add(v)
    search.fill()
    moves = 0
    while True:
        if search.size() > best_size:
            best_size = search.size()
            chosen = np.flatnonzero(search.chosen)[:max_vectors]
            write_json(args.out, {"vectors": vectors[chosen].tolist()})
            print(f"move {moves}: {best_size} vectors", flush=True)
        if time.time() - start > args.time * 0.95:
            break
        for _ in range(20):
            search.move()
            moves += 1
    print(f"done: {moves} moves, best {best_size}")


if __name__ == "__main__":
    main()
