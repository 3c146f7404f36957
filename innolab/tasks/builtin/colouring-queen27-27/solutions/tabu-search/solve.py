"""DSATUR, then tabu search over improper colourings (gcol)."""

from innolab.tasks.solvers.colouring import run_tabu

if __name__ == "__main__":
    run_tabu("colouring-queen27-27", n=27)
