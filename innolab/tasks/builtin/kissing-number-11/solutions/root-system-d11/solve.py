"""Algebraic construction: the 220 minimal vectors +-e_i +-e_j of the D11 lattice."""

from innolab.tasks.solvers.kissing import run_root_system

if __name__ == "__main__":
    run_root_system("kissing-number-11", dim=11)
