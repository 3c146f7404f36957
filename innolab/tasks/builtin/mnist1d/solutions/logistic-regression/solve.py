"""Multinomial logistic regression on the raw series."""

from innolab.tasks.solvers.prediction import run_logistic

if __name__ == "__main__":
    run_logistic("mnist1d")
