"""Trivial baseline: constant f (score 2)."""

from innolab.tasks.solvers.steps import run_constant_baseline

if __name__ == "__main__":
    run_constant_baseline("first-autocorrelation", "values", n=50, value=1.0)
