"""Multi-start SLSQP: maximise t s.t. every signed triangle area >= t, points in the triangle."""

from innolab.tasks.solvers.points import run_heilbronn_slsqp

if __name__ == "__main__":
    run_heilbronn_slsqp("heilbronn-triangle-11", n=11, region="triangle")
