"""Trivial baseline: 32 equal circles of radius 1/16 on an 8 × 4 grid."""

from innolab.tasks.solvers.circles import run_grid_baseline

if __name__ == "__main__":
    run_grid_baseline("circle-packing-32", n=32, columns=8, rows=4)
