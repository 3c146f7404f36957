"""The `innolab` command installed in the virtual environment."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

INNOLAB = shutil.which("innolab", path=str(Path(sys.executable).parent))


def run(*args, **kwargs):
    assert INNOLAB, "the innolab command is not installed beside the interpreter"
    return subprocess.run([INNOLAB, *args], capture_output=True, text=True, timeout=300, **kwargs)


def test_help_lists_reproduce():
    result = run("--help")
    assert result.returncode == 0
    assert "reproduce" in result.stdout


def test_reproduce_unknown_notebook_is_a_clear_error(tmp_path):
    result = run("reproduce", "--only", "nope", "--output", str(tmp_path))
    assert result.returncode == 2
    assert "no analysis notebook named ['nope']" in result.stderr


@pytest.mark.notebook
def test_reproduce_only_one_notebook(tmp_path):
    result = run("reproduce", "--only", "main_results", "--output", str(tmp_path), "--no-demos")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "results" / "paper" / "table4_means.csv").exists()
    assert (tmp_path / "results" / "notebooks" / "10_main_results.ipynb").exists()
    assert not (tmp_path / "results" / "metrics").exists()
