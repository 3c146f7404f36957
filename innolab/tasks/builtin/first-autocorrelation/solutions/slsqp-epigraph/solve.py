"""Multi-start SLSQP on the epigraph form: min t s.t. 2n(f*f)_k <= t, sum f = 1, f >= 0."""

from innolab.tasks.solvers.steps import run_first_autocorrelation

if __name__ == "__main__":
    run_first_autocorrelation("first-autocorrelation", method="slsqp")
