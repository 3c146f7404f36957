"""Trivial baseline: constant f (a triangular autoconvolution)."""

from innolab.tasks.solvers.steps import run_constant_baseline

if __name__ == "__main__":
    run_constant_baseline("second-autocorrelation", "values", n=50, value=1.0)
