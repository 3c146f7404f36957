"""Constructive: centres on staggered rows (every split of 26 into 5 rows), radii from a linear programme."""

from innolab.tasks.solvers.circles import run_lp_pattern

if __name__ == "__main__":
    run_lp_pattern("circle-packing-26", n=26, rows=5)
