"""Randomised greedy restarts, the shortest ruler kept."""

import argparse
import json
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
    """Write a ruler of the task's number of marks."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-limit", type=float, default=None)
    args = parser.parse_args()
    marks = 8
    rng = random.Random(args.seed)
    tries = 200 if args.quick else 20000
    rulers = (greedy(marks, rng, rng.random() * 0.3) for _ in range(tries))
    ruler = min(rulers, key=lambda r: r[-1])
    with open(args.out, "w") as handle:
        json.dump({"marks": ruler}, handle)


if __name__ == "__main__":
    main()
