"""innolab baseline template (graph colouring): DSATUR, then tabu search with one colour fewer.

Graph colouring of the task's graph (task.json: a queen graph by its side, or an edge list).

Greedy: DSATUR (the vertex whose coloured neighbours show the most colours goes next, taking the
smallest free colour). Then, while time is left, the colouring with k colours is turned into one
with k - 1: the last colour's vertices take random colours, and a tabu search moves one clashing
vertex at a time to the colour that removes most clashes, forbidding the way back for a while
(TabuCol's rule); zero clashes is a proper colouring with one colour fewer.

Reads task.json in the working folder; writes --out whenever the number of colours drops (so a
killed run leaves its best). Runs at most --time seconds.
Usage: python3 colouring.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()  # the time limit counts from here, imports included
# ruff: noqa: E402 (the imports come after START, so that their time counts)

import argparse
import json
import os

import numpy as np


def read_args():
    """The command line: seed, time limit, warm-start file and output file."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--warm", default=None)
    parser.add_argument("--out", required=True)
    return parser.parse_args()


def write_json(path, data):
    """Write data to path atomically."""
    with open(path + ".tmp", "w") as handle:
        json.dump(data, handle)
    os.replace(path + ".tmp", path)


def graph_of(spec):
    """(number of vertices, list of neighbour arrays) of the task's graph."""
    if spec["kind"] == "queen":
        n = int(spec["n"])
        count = n * n
        rows, cols = np.divmod(np.arange(count), n)
        pairs = []
        for v in range(count):
            r, c = rows[v], cols[v]
            attack = (rows == r) | (cols == c) | (rows - cols == r - c) | (rows + cols == r + c)
            attack[v] = False
            pairs.append(np.flatnonzero(attack))
        return count, pairs
    count = int(spec["vertices"])
    lists = [[] for _ in range(count)]
    for u, v in spec["edges"]:
        lists[u].append(v)
        lists[v].append(u)
    return count, [np.array(sorted(set(x)), dtype=np.int64) for x in lists]


def dsatur(count, neighbours):
    """A proper colouring by DSATUR (ties by degree, then by vertex)."""
    colour = np.full(count, -1)
    seen = [set() for _ in range(count)]
    degree = np.array([len(x) for x in neighbours])
    for _ in range(count):
        free = np.flatnonzero(colour < 0)
        v = max(free, key=lambda u: (len(seen[u]), degree[u], -u))
        c = 0
        while c in seen[v]:
            c += 1
        colour[v] = c
        for u in neighbours[v]:
            seen[u].add(c)
    return colour


def proper(colour, neighbours):
    """Whether no two adjacent vertices share a colour."""
    return all((colour[nb] != colour[v]).all() for v, nb in enumerate(neighbours))


def compact(colour):
    """The colours renamed 0..k-1 in order of first use."""
    names = {c: i for i, c in enumerate(dict.fromkeys(colour.tolist()))}
    return np.array([names[c] for c in colour.tolist()])


def tabu(colour, k, neighbours, rng, deadline):
    """Tabu search for a proper k-colouring from `colour` (values 0..k-1); None if none in time."""
    count = len(colour)
    gamma = np.zeros((count, k), dtype=np.int64)  # gamma[v, c]: neighbours of v coloured c
    for v, nb in enumerate(neighbours):
        np.add.at(gamma[v], colour[nb], 1)
    clashes = int(gamma[np.arange(count), colour].sum()) // 2
    tabu_until = np.zeros((count, k), dtype=np.int64)
    best = clashes
    step = 0
    while clashes > 0:
        step += 1
        if step % 64 == 0 and time.time() > deadline:
            return None
        bad = np.flatnonzero(gamma[np.arange(count), colour] > 0)
        delta = gamma[bad] - gamma[bad, colour[bad]][:, None]
        delta[np.arange(len(bad)), colour[bad]] = 1 << 30
        allowed = (tabu_until[bad] <= step) | (clashes + delta < best)
        delta = np.where(allowed, delta, 1 << 30)
        low = delta.min()
        if low >= 1 << 30:
            continue
        choices = np.argwhere(delta == low)
        i, c = choices[rng.integers(len(choices))]
        v, old = bad[i], colour[bad[i]]
        colour[v] = c
        for u in neighbours[v]:
            gamma[u, old] -= 1
            gamma[u, c] += 1
        clashes += int(low)
        tabu_until[v, old] = step + int(0.6 * clashes) + int(rng.integers(0, 10))
        best = min(best, clashes)
    return colour


def main():
    """DSATUR (or the warm start), then one colour fewer at a time until the time limit."""
    args = read_args()
    with open("task.json") as handle:
        config = json.load(handle)
    count, neighbours = graph_of(config["params"]["graph"])
    rng = np.random.default_rng(args.seed)
    colour = None
    if args.warm and os.path.exists(args.warm):
        try:
            with open(args.warm) as handle:
                warm = np.array(json.load(handle)["colours"], dtype=np.int64)
            if len(warm) == count and proper(warm, neighbours):
                colour = compact(warm)
        except (ValueError, KeyError, TypeError):
            colour = None
    warmed = colour is not None
    if colour is None:
        colour = compact(dsatur(count, neighbours))

    def save():
        write_json(args.out, {"colours": colour.tolist(), "num_colours": int(colour.max()) + 1})
        print(f"{int(colour.max()) + 1} colours", flush=True)

    if not warmed:
        save()
    deadline = START + args.time * 0.9
    while time.time() < deadline:
        k = int(colour.max())  # one colour fewer
        trial = colour.copy()
        last = trial == k
        trial[last] = rng.integers(0, k, last.sum())
        found = tabu(trial, k, neighbours, rng, deadline)
        if found is None:
            break
        colour = compact(found)
        save()
    print(f"done: best {int(colour.max()) + 1} colours")


if __name__ == "__main__":
    main()
