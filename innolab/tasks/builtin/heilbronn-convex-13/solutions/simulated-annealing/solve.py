"""Simulated annealing inside the unit disk on min triangle area / hull area."""

from innolab.tasks.solvers.points import run_anneal

if __name__ == "__main__":
    run_anneal("heilbronn-convex-13", n=13, region="disk")
