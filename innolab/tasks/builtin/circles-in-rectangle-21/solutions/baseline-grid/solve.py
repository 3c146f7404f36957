"""Trivial baseline: 21 equal circles of radius 1/10 on a 5 × 5 grid of the unit square (w + h = 2)."""

from innolab.tasks.solvers.circles import run_grid_baseline

if __name__ == "__main__":
    run_grid_baseline("circles-in-rectangle-21", n=21, columns=5, rows=5)
