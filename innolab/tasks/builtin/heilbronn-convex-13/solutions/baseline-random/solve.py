"""Trivial baseline: 13 uniform random points in the unit disk (seeded)."""

from innolab.tasks.solvers.points import run_random_baseline

if __name__ == "__main__":
    run_random_baseline("heilbronn-convex-13", n=13, region="disk")
