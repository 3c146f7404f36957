"""Projected gradient descent on a log-sum-exp smoothing of the maximum overlap, sharpness annealed."""

from innolab.tasks.solvers.steps import run_erdos

if __name__ == "__main__":
    run_erdos("erdos-minimum-overlap", method="smooth-max")
