"""Baseline search for Golomb rulers: randomised greedy rulers, restarted until the time limit.

Usage: python3 ruler_baseline.py --seed S --time T [--warm BEST.json] --out OUT.json
Reads task.json (the number of marks); writes --out whenever the length drops.
"""

import time

START = time.time()
# ruff: noqa: E402

import argparse
import json
import os
import random


def greedy(marks, rng, skip):
    """Marks placed one by one at the first position keeping differences distinct, some skipped."""
    ruler, diffs, position = [0], set(), 0
    while len(ruler) < marks:
        position += 1
        new = {position - m for m in ruler}
        if new & diffs or len(new) < len(ruler) or rng.random() < skip:
            continue
        diffs |= new
        ruler.append(position)
    return ruler


def main():
    """Restart the randomised greedy until the time limit; keep the shortest ruler."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--warm", default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open("task.json") as handle:
        marks = int(json.load(handle)["params"]["marks"])
    rng = random.Random(args.seed)
    best = None
    if args.warm and os.path.exists(args.warm):
        with open(args.warm) as handle:
            best = json.load(handle)["marks"]
    while time.time() - START < args.time * 0.9:
        ruler = greedy(marks, rng, rng.random() * 0.3)
        if best is None or ruler[-1] < best[-1]:
            best = ruler
            with open(args.out + ".tmp", "w") as handle:
                json.dump({"marks": best}, handle)
            os.replace(args.out + ".tmp", args.out)
            print(f"length {best[-1]}", flush=True)


if __name__ == "__main__":
    main()
