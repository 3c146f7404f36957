"""`innolab sweep`: run a YAML spec's configurations on Dask, a sweep's status, its tables."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from innolab.cli.common import SWEEP_FOLDER, Commands, fail, folder_problem, group


def register(commands: Commands) -> None:
    """Add `sweep plan|run|status|pack|collect`.

    Args:
        commands: The parent parser's subparsers.
    """
    sub = group(
        commands, "sweep", "sweeps of agent runs: run a YAML spec on Dask, status, collect tables"
    )
    splan = sub.add_parser(
        "plan",
        help="what SPEC would run, nothing spent: configurations, runs, seeds, endpoints, and "
        "the most model calls, tokens and cost its budgets allow",
        description="Expand SPEC as `sweep run` would and print, without running anything or "
        "calling a model: each configuration (to run, or already scored in the sweep folder), "
        "its seeds and endpoint, and the most model calls, tokens and USD its budgets allow at "
        "the stated prices (a model without a price is named; the embedded model is free). "
        "Exit status: 0, or 2 when a configuration cannot run here (the line says what to set).",
    )
    _spec_options(splan)
    splan.set_defaults(handler=plan)
    srun = sub.add_parser(
        "run",
        help="run every configuration of SPEC that has no scored run; prints the "
        "sweep folder last",
        description="Each configuration executes notebooks/"
        "20_agent_run.ipynb (papermill) as one Dask task into DIR/runs/<config id>/; a rerun "
        "(after the driver was killed, too) skips scored configurations and resumes the others "
        "from their checkpoints. Exit status: 0 every configuration ran without failing, 3 the "
        "sweep stopped at its cost cap (whether or not a run also failed: the sweep is not "
        "complete), else 1 a configuration failed.",
    )
    _spec_options(srun)
    srun.add_argument(
        "--scheduler", metavar="ADDRESS", help="use a running Dask scheduler, e.g. tcp://host:8786"
    )
    srun.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (as `innolab sweep plan`) and stop: nothing runs, nothing is spent",
    )
    srun.add_argument(
        "--retry-failed",
        action="store_true",
        help="run only the configurations whose run failed (an error, or the model unreachable; "
        "not a spent budget or a stall), each failed attempt kept in runs/<id>/attempts/<n>/",
    )
    srun.add_argument(
        "--retry-attempts",
        type=int,
        default=1,
        metavar="N",
        help="with --retry-failed: the most retries per configuration in all (default 1)",
    )
    srun.set_defaults(handler=run)
    sstat = sub.add_parser(
        "status",
        help="counts by state (pending, running, scored, failed, stopped for cost), the spend "
        "so far, the runs in flight",
    )
    sstat.add_argument("sweep_dir", metavar="DIR")
    sstat.add_argument(
        "--json", action="store_true", help="as JSON (keys counts, cost_usd, stopped_for_cost...)"
    )
    sstat.set_defaults(handler=status)
    spack = sub.add_parser(
        "pack",
        help="make a finished sweep folder ready to share or commit: drop checkpoints and "
        "caches, write machine paths relative to the project",
        description="Keep each run's record (config, trace, score, submissions, run notebook) and "
        "the sweep's manifest and tables; drop what only a running, resumed or replayed run needs "
        "(checkpoints, the model's response cache, the distance cache, locks). Every tool still "
        "opens the folder. Prints its size last.",
    )
    spack.add_argument("sweep_dir", metavar="DIR")
    spack.set_defaults(handler=pack)
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


def _spec_options(parser: argparse.ArgumentParser) -> None:
    """SPEC and the options `sweep plan` and `sweep run` share."""
    parser.add_argument("spec", metavar="SPEC", help="a YAML sweep spec (see data/sweeps/)")
    parser.add_argument(
        "--workers",
        type=_workers,
        default=None,
        help="LocalCluster worker processes (default: cores / the runtime's CPU limit; never more "
        "than configurations to run)",
    )
    parser.add_argument(
        "--output", metavar="DIR", help="the sweep folder (default results/sweeps/<name>/)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="K=V",
        help="override a base field (or name, seeds), e.g. --set budget=20s; repeatable",
    )
    parser.add_argument(
        "--max-cost",
        type=_positive,
        metavar="USD",
        help="the sweep's cost cap (default: the spec's budget.max_cost_usd): no run starts once "
        "the spend of the sweep's runs, in flight included, reaches it; a rerun with a higher "
        "cap goes on where it stopped",
    )


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _plan(args: argparse.Namespace, command: str, out: object) -> int | None:
    """Print the spec's plan; None when every configuration can run, else the failure's status."""
    from innolab import sweep
    from innolab.sweep.preview import plan_lines, preview

    if not Path(args.spec).is_file():
        return fail(command, f"{args.spec}: no such spec file: give a YAML sweep spec "
                    "(data/sweeps/ holds the shipped ones, e.g. data/sweeps/offline.yaml)")
    try:
        found = preview(Path(args.spec), output=Path(args.output) if args.output else None,
                        overrides=args.set, max_cost_usd=args.max_cost, workers=args.workers)
    except sweep.SpecError as error:
        return fail(command, error)
    for line in plan_lines(found):
        print(line, file=out)  # type: ignore[arg-type]
    if found.unresolved:
        levels, why = found.unresolved[0]
        return fail(command, f"{len(found.unresolved)} configuration(s) cannot run here, e.g. "
                    f"{levels}: {why}")
    return None


def plan(args: argparse.Namespace) -> int:
    """Print what the spec would run and the most it can use; spend nothing."""
    return _plan(args, "sweep plan", sys.stdout) or 0


def run(args: argparse.Namespace) -> int:
    """Print the plan, then run the spec; its exit status says how it ended (`exit_status`)."""
    from innolab import sweep

    if args.retry_attempts < 1:
        return fail("sweep run", f"--retry-attempts: must be at least 1, got {args.retry_attempts}")
    failed = _plan(args, "sweep run", sys.stdout if args.dry_run else sys.stderr)
    if failed is not None or args.dry_run:
        return failed or 0
    if args.retry_failed:
        print("  --retry-failed: only the configurations whose run failed run again",
              file=sys.stderr)
    try:
        folder = sweep.run(
            Path(args.spec),
            output=Path(args.output) if args.output else None,
            workers=args.workers,
            scheduler=args.scheduler,
            overrides=args.set,
            max_cost_usd=args.max_cost,
            retry_failed=args.retry_failed,
            retry_attempts=args.retry_attempts,
        )
    except sweep.SpecError as error:
        return fail("sweep run", error)
    state = sweep.status(folder)
    print(summary(state), file=sys.stderr)
    print(folder)
    return exit_status(state)


STOPPED_FOR_COST, FAILED = 3, 1


def exit_status(state: dict) -> int:
    """`sweep run`'s exit status from the sweep's status.

    A sweep stopped at its cost cap exits 3 even when a run failed too: the sweep is not complete,
    and what finishes it is a rerun with a higher cap (`--retry-failed` as well retries the failed
    runs); the summary line counts the failures either way. Else 1 when a run failed, 0 when none
    did.

    Args:
        state: innolab.sweep.status's reading (counts, stopped_for_cost).

    Returns:
        The exit status.
    """
    if state["stopped_for_cost"]:
        return STOPPED_FOR_COST
    return FAILED if state["counts"]["failed"] else 0


def summary(state: dict) -> str:
    """A sweep's status in one line: counts by state, the spend, whether it stopped for cost.

    Args:
        state: `innolab.sweep.status`'s answer.

    Returns:
        The line.
    """
    counts = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in state["counts"].items() if n)
    cap = state.get("max_cost_usd")
    spend = f"${state['cost_usd']:.4f} spent" + (f" of a ${cap:g} cap" if cap else "")
    stop = (
        "; STOPPED FOR COST: rerun with a higher --max-cost to go on"
        if state["stopped_for_cost"]
        else ""
    )
    return (
        f"sweep {state['name']}: {state['configurations']} configurations: "
        f"{counts or 'none'}; {spend}{stop}"
    )


def status(args: argparse.Namespace) -> int:
    """Counts by state, the spend, the runs in flight, each configuration (or all as JSON)."""
    from innolab import sweep

    problem = folder_problem(args.sweep_dir, "sweep")
    if problem:
        return fail("sweep status", problem)
    try:
        state = sweep.status(Path(args.sweep_dir))
    except sweep.SpecError as error:
        return fail("sweep status", error)
    if args.json:
        print(json.dumps(state, indent=2))
        return 0
    print(summary(state))
    for flight in state["in_flight"]:
        elapsed = "?" if flight["elapsed_s"] is None else f"{flight['elapsed_s']:.0f} s"
        print(f"  in flight: {flight['config_id']}  {elapsed}  ${flight['cost_usd']:.4f}")
    for identifier, one in state["runs"].items():
        levels = " ".join(f"{k}={v}" for k, v in one["levels"].items())
        attempts = f"  attempts={one['attempts']}" if one["attempts"] > 1 else ""
        said = one.get("cause") or one["error"]
        print(f"  {identifier}  {one['state']:16}  {levels}{attempts}"
              + (f"  ({said})" if said else ""))
    return 0


def pack(args: argparse.Namespace) -> int:
    """Pack a finished sweep folder; print what was dropped, then its size."""
    from innolab import sweep
    from innolab.sweep.pack import pack as pack_folder

    problem = folder_problem(args.sweep_dir, "sweep")
    if problem:
        return fail("sweep pack", problem)
    try:
        packed = pack_folder(Path(args.sweep_dir))
    except sweep.SpecError as error:
        return fail("sweep pack", error)
    print(f"{packed.runs} runs: dropped {packed.dropped} checkpoints and caches "
          f"({packed.freed_bytes / 1e6:.1f} MB); machine paths made relative in "
          f"{len(packed.rewritten)} files", file=sys.stderr)
    print(f"{packed.folder}: {packed.size_bytes / 1e6:.1f} MB")
    return 0


def collect(args: argparse.Namespace) -> int:
    """Rebuild the sweep's tables; print the runs table's path."""
    from innolab import results
    from innolab.scoring import ScoringError

    folder = Path(args.sweep_dir)
    if not folder.exists():
        return fail("sweep collect", f"{folder} does not exist: {SWEEP_FOLDER}, or a folder of "
                    "run folders")
    if not folder.is_dir():
        return fail("sweep collect", f"{folder} is not a folder: {SWEEP_FOLDER}, or a folder of "
                    "run folders")
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
