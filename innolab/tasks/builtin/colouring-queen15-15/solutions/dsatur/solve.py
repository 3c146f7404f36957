"""DSATUR (gcol)."""

from innolab.tasks.solvers.colouring import run_dsatur

if __name__ == "__main__":
    run_dsatur("colouring-queen15-15", n=15)
