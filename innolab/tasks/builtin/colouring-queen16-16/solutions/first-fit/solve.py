"""First fit in vertex order."""

from innolab.tasks.solvers.colouring import run_first_fit

if __name__ == "__main__":
    run_first_fit("colouring-queen16-16", n=16)
