"""`innolab reproduce`: the analysis notebooks, offline sweep and demo runs, executed headless."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from innolab.cli.common import Commands, fail


def register(commands: Commands) -> None:
    """Add `reproduce`.

    Args:
        commands: The parent parser's subparsers.
    """
    rep = commands.add_parser(
        "reproduce",
        help="run the analysis notebooks with papermill and write results/ and figures/",
        description="Execute every analysis notebook headless (papermill); executed copies go to "
        "results/notebooks/ beside the outputs.",
    )
    rep.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="run only this notebook (e.g. 10_main_results or main_results); repeatable",
    )
    rep.add_argument(
        "--output", metavar="DIR", help="root for results/ and figures/ (default: the repository)"
    )
    rep.add_argument(
        "--no-sweep",
        dest="sweep",
        action="store_false",
        help="skip the offline reference sweep (data/sweeps/offline.yaml) the analysis "
        "notebooks read",
    )
    rep.add_argument(
        "--no-demos",
        dest="demos",
        action="store_false",
        help="skip the short demo run of each scaffold on the embedded model",
    )
    rep.add_argument(
        "--demo-budget", default="60s", help="wall clock of each demo run (default 60s)"
    )
    rep.set_defaults(handler=reproduce)


def reproduce(args: argparse.Namespace) -> int:
    """Reproduce: the offline sweep, the notebooks, the demo runs.

    The offline sweep runs first, alone (the analysis notebooks read its tables, and its runs'
    budgets are wall clock). Then the analysis notebooks, `side_by_side_workers()` at a time, each
    in a worker process (not a thread: papermill changes the process's working folder while a
    notebook runs, and its kernel starts in it), each worker's kernels forked from one server that
    loaded the notebooks' imports once (innolab.notebooks.forked_kernels): none reads what another
    writes (each notebook its own folders of results/ and figures/), and they are seeded. Then the
    demo runs, after the notebooks: their budgets are wall clock too, so no notebook's kernel shares
    the cores with them; they go `side_by_side_workers()` at a time (at most two: the embedded model
    each starts uses one thread). `--only` runs the chosen notebooks one after another. A notebook
    that fails ends it with one line (the demo runs not run); an interrupt cancels the notebooks not
    started and kills the processes of those running.
    """
    from papermill.exceptions import PapermillExecutionError

    from innolab.notebooks import (
        NotebookError,
        analysis_notebooks,
        keep_forked_kernels,
        reproduce,
        run_demos,
        side_by_side,
    )

    output = Path(args.output) if args.output else None
    extra = {}
    if args.sweep and not args.only:
        from innolab.paths import notebooks_dir
        from innolab.sweep import reference_sweep

        folder = reference_sweep(output)
        print(f"offline sweep: {folder}")
        extra["sweep_dir"] = os.path.relpath(folder, notebooks_dir())
    if args.only:
        try:
            runs = reproduce(only=args.only, output=output, extra_parameters=extra)
        except (NotebookError, PapermillExecutionError) as error:
            return fail("reproduce", _failure(error))
        for run in runs:
            print(f"{run.name}: {run.executed}")
        return 0
    notebooks = analysis_notebooks()
    results = side_by_side(reproduce, [
        {"only": [notebook.stem], "output": output, "extra_parameters": extra,
         "show_progress": False} for notebook in notebooks],
        initializer=keep_forked_kernels)  # one kernel server per worker, for all its notebooks
    for notebook in notebooks:
        try:
            runs = next(results)
        except (NotebookError, PapermillExecutionError) as error:  # those running have finished
            return fail("reproduce", f"{notebook.stem}: {_failure(error)}")
        for run in runs:
            print(f"{run.name}: {run.executed}", flush=True)
    if args.demos:  # after the notebooks: their budgets are wall clock
        print(f"demo runs: {run_demos(output, budget=args.demo_budget)}")
    return 0


def _failure(error: Exception) -> str:
    """What a notebook's failure says: papermill's cell error in short, else the error."""
    if hasattr(error, "ename") and hasattr(error, "evalue"):  # PapermillExecutionError
        return (f"cell {error.exec_count} raised {error.ename}: {error.evalue} "
                "(its executed copy, under results/notebooks/, holds the traceback)")
    return str(error)
