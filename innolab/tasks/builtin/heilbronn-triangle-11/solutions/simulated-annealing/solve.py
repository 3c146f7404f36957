"""Simulated annealing on the smallest triangle area, one point moved per step."""

from innolab.tasks.solvers.points import run_anneal

if __name__ == "__main__":
    run_anneal("heilbronn-triangle-11", n=11, region="triangle")
