"""Where innolab finds its shipped data and notebooks, and where it writes results and figures."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def project_root() -> Path:
    """Find the repository root.

    Returns:
        $INNOLAB_ROOT, else the checkout that holds this package, else the working directory.
    """
    env = os.environ.get("INNOLAB_ROOT")
    if env:
        return Path(env).resolve()
    checkout = PACKAGE_DIR.parent
    if (checkout / "data").is_dir() and (checkout / "notebooks").is_dir():
        return checkout
    return Path.cwd()


def data_dir() -> Path:
    """Return the folder of shipped inputs (the paper's tables, task assets)."""
    return project_root() / "data"


def notebooks_dir() -> Path:
    """Return the folder of the parameterized notebooks."""
    return project_root() / "notebooks"
