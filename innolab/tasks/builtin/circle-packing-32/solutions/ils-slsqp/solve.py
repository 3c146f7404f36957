"""Iterated local search over SLSQP optima for 32 circles; two processes in parallel."""

from innolab.tasks.solvers.circles import run_ils

if __name__ == "__main__":
    run_ils("circle-packing-32", n=32, default_time_limit=240.0)
