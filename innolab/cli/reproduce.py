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

    The offline sweep runs first (the analysis notebooks read its tables), then the notebooks, then
    the demo runs.
    """
    from innolab.notebooks import NotebookError, reproduce, run_demos

    output = Path(args.output) if args.output else None
    extra = {}
    if args.sweep and not args.only:
        from innolab.paths import notebooks_dir
        from innolab.sweep import reference_sweep

        folder = reference_sweep(output)
        print(f"offline sweep: {folder}")
        extra["sweep_dir"] = os.path.relpath(folder, notebooks_dir())
    try:
        runs = reproduce(only=args.only, output=output, extra_parameters=extra)
    except NotebookError as error:
        return fail("reproduce", error)
    for run in runs:
        print(f"{run.name}: {run.executed}")
    if args.demos and not args.only:
        print(f"demo runs: {run_demos(output, budget=args.demo_budget)}")
    return 0
