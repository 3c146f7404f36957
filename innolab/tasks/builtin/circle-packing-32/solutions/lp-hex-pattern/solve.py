"""Constructive: centres on staggered rows (every split of 32 into 6 rows), radii from a linear programme."""

from innolab.tasks.solvers.circles import run_lp_pattern

if __name__ == "__main__":
    run_lp_pattern("circle-packing-32", n=32, rows=6)
