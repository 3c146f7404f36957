"""The `innolab` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from innolab import __version__


def _reproduce(args: argparse.Namespace) -> int:
    from innolab.notebooks import NotebookError, reproduce

    try:
        runs = reproduce(only=args.only, output=Path(args.output) if args.output else None)
    except NotebookError as error:
        print(f"innolab reproduce: {error}", file=sys.stderr)
        return 2
    for run in runs:
        print(f"{run.name}: {run.executed}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="innolab",
        description="Measure the innovation potential of AI agents: performance gain and novelty (InnoGym).",
    )
    parser.add_argument("--version", action="version", version=f"innolab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    rep = commands.add_parser(
        "reproduce",
        help="run the analysis notebooks with papermill and write results/ and figures/",
        description="Execute every analysis notebook headless (papermill); executed copies go to "
        "results/notebooks/ beside the outputs.",
    )
    rep.add_argument("--only", action="append", metavar="NAME",
                     help="run only this notebook (e.g. 10_main_results or main_results); repeatable")
    rep.add_argument("--output", metavar="DIR", help="root for results/ and figures/ (default: the repository)")
    rep.set_defaults(handler=_reproduce)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    return int(args.handler(args))


if __name__ == "__main__":
    raise SystemExit(main())
