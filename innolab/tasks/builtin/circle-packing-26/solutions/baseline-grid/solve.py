"""Trivial baseline: 26 equal circles of radius 1/12 on a 6 × 5 grid."""

from innolab.tasks.solvers.circles import run_grid_baseline

if __name__ == "__main__":
    run_grid_baseline("circle-packing-26", n=26, columns=6, rows=5)
