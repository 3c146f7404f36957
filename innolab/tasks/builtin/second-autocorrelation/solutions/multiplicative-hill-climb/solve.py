"""Stochastic hill-climbing with multiplicative log-normal perturbations of random subsets of steps."""

from innolab.tasks.solvers.steps import run_second_autocorrelation

if __name__ == "__main__":
    run_second_autocorrelation("second-autocorrelation", method="hill-climb")
