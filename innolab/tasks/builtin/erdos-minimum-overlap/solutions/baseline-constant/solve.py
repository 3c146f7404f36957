"""Trivial baseline: h = 1/2 everywhere (overlap 1/2)."""

from innolab.tasks.solvers.steps import run_constant_baseline

if __name__ == "__main__":
    run_constant_baseline("erdos-minimum-overlap", "heights", n=50, value=0.5)
