"""Baseline search for Sidon sets: randomised greedy sets, restarted until the time limit.

Usage: python3 sidon_search.py --seed S --time T [--warm BEST.json] --out OUT.json
"""

import time

START = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402


def greedy(n, rng, skip):
    """Each integer below n in turn, kept when its sums with those kept are new; some skipped."""
    kept, sums = [], set()
    for x in range(n):
        new = {x + y for y in kept} | {2 * x}
        if new & sums or rng.random() < skip:
            continue
        kept.append(x)
        sums |= new
    return kept


def main():
    """Restart the randomised greedy until the time limit; keep the largest set."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--time", type=float, required=True)
    parser.add_argument("--warm", default=None)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with open("task.json") as handle:
        n = int(json.load(handle)["params"]["n"])
    rng = random.Random(args.seed)
    best = None
    if args.warm and os.path.exists(args.warm):
        with open(args.warm) as handle:
            best = json.load(handle)["elements"]
    while time.time() - START < args.time * 0.9:
        found = greedy(n, rng, rng.random() * 0.5)
        if best is None or len(found) > len(best):
            best = found
            with open(args.out + ".tmp", "w") as handle:
                json.dump({"elements": best}, handle)
            os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
