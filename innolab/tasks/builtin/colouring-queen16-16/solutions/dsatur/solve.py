"""DSATUR (gcol)."""

from innolab.tasks.solvers.colouring import run_dsatur

if __name__ == "__main__":
    run_dsatur("colouring-queen16-16", n=16)
