"""Powers of two below 60 from 1: every sum of two is distinct."""

import argparse
import json


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
    elements = [2**i for i in range(6)]
    with open(args.out, "w") as handle:
        json.dump({"elements": elements}, handle)
