"""Multi-start SLSQP in the unit disk: maximise t s.t. every signed triangle area >= t."""

from innolab.tasks.solvers.points import run_heilbronn_slsqp

if __name__ == "__main__":
    run_heilbronn_slsqp("heilbronn-convex-13", n=13, region="disk")
