"""Constructive: the 16 triangular-lattice points nearest to one of several centres."""

from innolab.tasks.solvers.points import run_hex_patch

if __name__ == "__main__":
    run_hex_patch("min-max-distance-ratio-16", n=16)
