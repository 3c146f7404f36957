"""Random convolutional kernels (ROCKET) and a ridge classifier."""

from innolab.tasks.solvers.prediction import run_rocket

if __name__ == "__main__":
    run_rocket("mnist1d")
