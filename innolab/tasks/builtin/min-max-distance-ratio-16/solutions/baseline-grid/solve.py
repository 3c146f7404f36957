"""Trivial baseline: a 4 × 4 square grid, ratio (3√2)² = 18."""

from innolab.tasks.solvers.points import run_grid_baseline

if __name__ == "__main__":
    run_grid_baseline("min-max-distance-ratio-16", side=4)
