"""The import rules of DESIGN.md, checked by import-linter's contracts (.importlinter)."""

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent))


def test_import_contracts_are_kept():
    assert LINT_IMPORTS, "import-linter is a dev dependency (pip install -e '.[dev]')"
    done = subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    contracts = [name for name in config.sections() if name.startswith("importlinter:contract:")]
    assert len(contracts) >= 6 and f"Contracts: {len(contracts)} kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("contract", "module", "planted", "caught"),
    [
        (
            "gym-blind",
            "gym/run.py",
            "from innolab.tasks.evaluation import evaluate",
            "innolab.gym.run -> innolab.tasks.evaluation",
        ),
        (
            "tasks-below-benchmarks",
            "tasks/registry.py",
            "from innolab.expbench import gym_task",
            "innolab.tasks.registry -> innolab.expbench",
        ),
    ],
)
def test_a_planted_violation_is_caught(tmp_path, contract, module, planted, caught):
    # A copy of the package with a forbidden import (the gym importing the hidden evaluator, the
    # tasks importing EXP-Bench) must break the contract that forbids it.
    copy = tmp_path / "innolab"
    shutil.copytree(ROOT / "innolab", copy, ignore=shutil.ignore_patterns("__pycache__", "builtin"))
    source = copy / module
    source.write_text(source.read_text() + f"\n{planted}  # noqa\n")
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    done = subprocess.run(
        [LINT_IMPORTS, "--no-cache", "--contract", contract],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode != 0 and caught in done.stdout and "0 kept, 1 broken" in done.stdout


def test_the_code_keeps_the_house_style():
    """ruff with the project's settings: lines of at most 100 characters, Google-style docstrings on
    public functions, imports sorted (pyproject.toml's [tool.ruff])."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent))
    assert ruff, "ruff is a dev dependency (pip install -e '.[dev]')"
    done = subprocess.run(
        [ruff, "check", "--no-cache", "innolab", "tests"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
