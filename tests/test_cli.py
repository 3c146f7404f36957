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


def _notebook(folder, name, source):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell('results_dir = ""\nfigures_dir = ""',
                                                metadata={"tags": ["parameters"]}),
                      nbformat.v4.new_code_cell(source)]
    nbformat.write(notebook, folder / f"{name}.ipynb")


@pytest.mark.notebook
def test_reproduce_runs_the_notebooks_side_by_side_then_the_demos_alone(tmp_path, monkeypatch,
                                                                          capsys):
    """Without --only: the notebooks (two at a time, each in its own folder), then the demo runs
    once none runs; a notebook that fails ends it with one line and a non-zero status, no demo
    run."""
    import argparse

    import psutil

    import innolab.notebooks
    from innolab.cli.reproduce import reproduce

    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in ("01_first", "03_third"):  # each writes in its working folder (the notebooks')
        # the name of the process its kernel is: a kernel forked from a worker's server names
        # itself innolab-kernel, one started as a new interpreter is python
        _notebook(notebooks, name, f"open('{name}.out', 'w').write(open('/proc/self/comm').read())")
    demos = []

    def running() -> list[str]:  # the notebooks' workers and kernels still running
        found = []
        for process in psutil.Process().children(recursive=True):
            try:
                found.append(" ".join(process.cmdline()))
            except psutil.Error:
                continue  # ended meanwhile
        return [args for args in found
                if "spawn_main" in args or "kernel" in args or "innolab.forkserver" in args]

    def run_demos(output, budget):
        demos.append((sorted(p.name for p in notebooks.glob("*.out")), running()))
        return output / "demo_runs"

    monkeypatch.setenv("INNOLAB_ROOT", str(tmp_path))  # the workers' notebooks_dir() too
    monkeypatch.setattr(innolab.notebooks, "run_demos", run_demos)
    args = argparse.Namespace(only=None, output=str(tmp_path / "out"), sweep=False, demos=True,
                              demo_budget="1s")
    assert reproduce(args) == 0
    assert demos == [(["01_first.out", "03_third.out"], [])]  # after both, and alone
    assert {(notebooks / f"{name}.out").read_text().strip() for name in ("01_first", "03_third")
            } == {"innolab-kernel"}
    said = capsys.readouterr()
    assert "01_first: " in said.out and "03_third: " in said.out and "demo runs: " in said.out

    _notebook(notebooks, "02_broken", "raise ValueError('broken on purpose')")
    demos.clear()
    assert reproduce(args) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and error.startswith("innolab reproduce: 02_broken: ")
    assert "ValueError: broken on purpose" in error and demos == []


IMPORTED_BY = """
import sys
from innolab.cli import main
try:
    main(sys.argv[1:])
finally:  # --help exits
    print(sorted(m for m in ("innolab.runspec", "innolab.agents.registry") if m in sys.modules),
          file=sys.stderr)
"""


def test_a_command_builds_its_own_options_only_and_every_help_stays_whole():
    """`innolab tasks list` does not import the run schema (`run` and `sandbox` build their options
    from it); the top-level help is the same whichever command is parsed; `run` keeps them all."""
    from innolab.cli import build_parser

    full = build_parser().format_help()
    for command in ("tasks", "run", "sandbox", "view", "no-such-command"):
        assert build_parser(command).format_help() == full, command
    args = build_parser("run").parse_args(["run", "--agent", "aide", "--num-drafts", "3"])
    assert args.num_drafts == 3 and args.handler.__name__ == "run"
    imported = {}
    for argv in (["tasks", "list"], ["sandbox", "clean", "--help"]):
        done = subprocess.run([sys.executable, "-c", IMPORTED_BY, *argv], capture_output=True,
                              text=True, timeout=120, check=False)
        imported[argv[0]] = done.stderr.strip().splitlines()[-1]
    assert imported["tasks"] == "[]"
    assert "innolab.runspec" in imported["sandbox"]  # its exec takes the run schema's options
    done = subprocess.run([INNOLAB, "no-such-command"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2 and "invalid choice: 'no-such-command'" in done.stderr
    assert "'run'" in done.stderr and "'sandbox'" in done.stderr
