"""Projected gradient descent on a log-sum-exp smoothing of max(f*f) over the simplex."""

from innolab.tasks.solvers.steps import run_first_autocorrelation

if __name__ == "__main__":
    run_first_autocorrelation("first-autocorrelation", method="smooth-max")
