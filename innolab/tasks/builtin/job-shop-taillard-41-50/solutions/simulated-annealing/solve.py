"""Simulated annealing over job sequences (semi-active decoding), from the dispatching schedule."""

from innolab.tasks.solvers.jobshop import run_annealing

if __name__ == "__main__":
    run_annealing("job-shop-taillard-41-50")
