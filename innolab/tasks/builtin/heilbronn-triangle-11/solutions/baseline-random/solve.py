"""Trivial baseline: 11 uniform random points in the triangle (seeded)."""

from innolab.tasks.solvers.points import run_random_baseline

if __name__ == "__main__":
    run_random_baseline("heilbronn-triangle-11", n=11, region="triangle")
