"""L-BFGS-B on f = exp(w) (positivity by parametrisation), random restarts until the time limit."""

from innolab.tasks.solvers.steps import run_second_autocorrelation

if __name__ == "__main__":
    run_second_autocorrelation("second-autocorrelation", method="lbfgs")
