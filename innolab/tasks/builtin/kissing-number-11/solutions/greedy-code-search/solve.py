"""Randomised greedy code search over norm-4 integer vectors, restarted until the time limit."""

from innolab.tasks.solvers.kissing import run_greedy

if __name__ == "__main__":
    run_greedy("kissing-number-11", dim=11)
