"""Multi-start SLSQP on the epigraph form: min t s.t. every shifted overlap <= t, 0 <= h <= 1, sum h = n/2."""

from innolab.tasks.solvers.steps import run_erdos

if __name__ == "__main__":
    run_erdos("erdos-minimum-overlap", method="slsqp")
