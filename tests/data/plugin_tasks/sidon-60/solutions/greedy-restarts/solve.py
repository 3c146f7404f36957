"""Randomised greedy restarts, the largest set kept."""

import argparse
import json
import random


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


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=None)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tries = 50 if args.quick else 2000
    elements = max((greedy(60, rng, rng.random() * 0.5) for _ in range(tries)), key=len)
    with open(args.out, "w") as handle:
        json.dump({"elements": elements}, handle)
