"""Giffler-Thompson active schedules with the most-work-remaining priority rule."""

from innolab.tasks.solvers.jobshop import run_dispatch

if __name__ == "__main__":
    run_dispatch("job-shop-taillard-41-50")
