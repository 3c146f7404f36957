"""`innolab sweep`: run a YAML spec's configurations on Dask, a sweep's status, its tables."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from innolab.cli.common import Commands, fail, group


def register(commands: Commands) -> None:
    """Add `sweep run|status|collect`.

    Args:
        commands: The parent parser's subparsers.
    """
    sub = group(
        commands, "sweep", "sweeps of agent runs: run a YAML spec on Dask, status, collect tables"
    )
    srun = sub.add_parser(
        "run",
        help="run every configuration of SPEC that has no finished run; prints the "
        "sweep folder last",
        description="Each configuration executes notebooks/"
        "20_agent_run.ipynb (papermill) as one Dask task into DIR/runs/<config id>/; a rerun "
        "skips finished configurations and resumes interrupted ones.",
    )
    srun.add_argument("spec", metavar="SPEC", help="a YAML sweep spec (see data/sweeps/)")
    srun.add_argument(
        "--workers",
        type=int,
        default=None,
        help="LocalCluster worker processes (default: cores / the runtime's CPU limit)",
    )
    srun.add_argument(
        "--scheduler", metavar="ADDRESS", help="use a running Dask scheduler, e.g. tcp://host:8786"
    )
    srun.add_argument(
        "--output", metavar="DIR", help="the sweep folder (default results/sweeps/<name>/)"
    )
    srun.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="K=V",
        help="override a base field (or name, seeds), e.g. --set budget=20s; repeatable",
    )
    srun.set_defaults(handler=run)
    sstat = sub.add_parser(
        "status", help="finished, interrupted, failed and pending configurations"
    )
    sstat.add_argument("sweep_dir", metavar="DIR")
    sstat.add_argument("--json", action="store_true")
    sstat.set_defaults(handler=status)
    scol = sub.add_parser(
        "collect", help="rebuild DIR/runs.parquet and DIR/trajectory.parquet from the runs"
    )
    scol.add_argument("sweep_dir", metavar="DIR")
    scol.add_argument(
        "--as-of",
        metavar="DATE|run|today",
        help="read every score against V* as of a date (YYYY-MM-DD), the day each run started "
        "(run) or today (default: each score as recorded); the run folders are not rewritten",
    )
    scol.set_defaults(handler=collect)


def run(args: argparse.Namespace) -> int:
    """Run the spec; 1 when a configuration failed."""
    from innolab import sweep

    try:
        folder = sweep.run(
            Path(args.spec),
            output=Path(args.output) if args.output else None,
            workers=args.workers,
            scheduler=args.scheduler,
            overrides=args.set,
        )
    except sweep.SpecError as error:
        return fail("sweep run", error)
    state = sweep.status(folder)
    print(
        f"{state['finished']} of {state['configurations']} configurations finished, "
        f"{state['failed']} failed",
        file=sys.stderr,
    )
    print(folder)
    return 0 if state["failed"] == 0 else 1


def status(args: argparse.Namespace) -> int:
    """Each configuration's state (or all of it as JSON)."""
    from innolab import sweep

    try:
        state = sweep.status(Path(args.sweep_dir))
    except sweep.SpecError as error:
        return fail("sweep status", error)
    if args.json:
        print(json.dumps(state, indent=2))
        return 0
    print(
        f"sweep {state['name']}: {state['configurations']} configurations: "
        f"{state['finished']} finished, "
        f"{state['interrupted']} interrupted, {state['failed']} failed, {state['pending']} pending"
    )
    for identifier, one in state["runs"].items():
        levels = " ".join(f"{k}={v}" for k, v in one["levels"].items())
        print(
            f"  {identifier}  {one['state']:11}  {levels}"
            + (f"  ({one['error']})" if one["error"] else "")
        )
    return 0


def collect(args: argparse.Namespace) -> int:
    """Rebuild the sweep's tables; print the runs table's path."""
    from innolab import results
    from innolab.scoring import ScoringError

    folder = Path(args.sweep_dir)
    if not folder.is_dir():
        return fail("sweep collect", f"{folder} is not a folder")
    try:
        runs_path, trajectory_path = results.collect(folder, as_of=args.as_of)
    except ScoringError as error:
        return fail("sweep collect", error)
    table = results.runs(folder)
    print(
        f"{len(table)} runs, {int(table['complete'].sum())} complete -> {runs_path}, "
        f"{trajectory_path}",
        file=sys.stderr,
    )
    print(runs_path)
    return 0
