"""Trivial baseline: the 22 vectors +-e_i."""

from innolab.tasks.solvers.kissing import run_baseline

if __name__ == "__main__":
    run_baseline("kissing-number-11", dim=11)
