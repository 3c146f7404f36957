"""A two-layer MLP (scikit-learn)."""

from innolab.tasks.solvers.prediction import run_mlp

if __name__ == "__main__":
    run_mlp("mnist1d")
