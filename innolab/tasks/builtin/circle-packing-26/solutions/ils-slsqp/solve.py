"""Iterated local search over SLSQP optima: swap radii, relocate disks, jiggle; two processes in parallel."""

from innolab.tasks.solvers.circles import run_ils

if __name__ == "__main__":
    run_ils("circle-packing-26", n=26)
