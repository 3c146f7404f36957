"""Iterated local search over SLSQP optima with the box width as a variable (height = 2 − width)."""

from innolab.tasks.solvers.circles import run_ils

if __name__ == "__main__":
    run_ils("circles-in-rectangle-21", n=21, half_perimeter=2.0, default_time_limit=240.0)
