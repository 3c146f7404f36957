"""The import rules of DESIGN.md, checked by import-linter's contracts (.importlinter) on the code's own imports."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent))


def test_import_contracts_are_kept():
    assert LINT_IMPORTS, "import-linter is a dev dependency (pip install -e '.[dev]')"
    done = subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in done.stdout


def test_a_planted_violation_is_caught(tmp_path):
    # A copy of the package whose gym imports the hidden evaluator must break a contract.
    copy = tmp_path / "innolab"
    shutil.copytree(ROOT / "innolab", copy, ignore=shutil.ignore_patterns("__pycache__", "builtin"))
    run = copy / "gym" / "run.py"
    run.write_text(run.read_text() + "\nfrom innolab.tasks.evaluation import evaluate  # noqa\n")
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    done = subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0 and "innolab.gym.run -> innolab.tasks.evaluation" in done.stdout
