"""Multi-start SLSQP on the epigraph form: min t s.t. 1 <= d_ij^2 <= t."""

from innolab.tasks.solvers.points import run_minmax_slsqp

if __name__ == "__main__":
    run_minmax_slsqp("min-max-distance-ratio-16", n=16)
