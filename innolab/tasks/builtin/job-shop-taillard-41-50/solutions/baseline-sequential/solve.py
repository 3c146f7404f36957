"""Trivial baseline: one operation at a time, job after job (makespan = total work)."""

from innolab.tasks.solvers.jobshop import run_sequential

if __name__ == "__main__":
    run_sequential("job-shop-taillard-41-50")
