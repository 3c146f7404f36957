"""`innolab llm`: serve the embedded model, replay a run from its response cache."""

from __future__ import annotations

import argparse

from innolab.cli.common import Commands, group


def register(commands: Commands) -> None:
    """Add `llm serve|replay`.

    Args:
        commands: The parent parser's subparsers.
    """
    sub = group(
        commands, "llm", "the LLM layer: serve the embedded model, replay a run from its cache"
    )
    serve_cmd = sub.add_parser(
        "serve", help="serve SmolLM2-135M-Instruct on 127.0.0.1; prints the base URL"
    )
    serve_cmd.set_defaults(handler=serve)
    replay_cmd = sub.add_parser(
        "replay", help="re-run a finished run from its response cache, no endpoint"
    )
    replay_cmd.add_argument("run_dir", metavar="RUN_DIR")
    replay_cmd.set_defaults(handler=replay)


def serve(args: argparse.Namespace) -> int:
    """Start the embedded model's server, print its URL, serve until interrupted."""
    import time

    from innolab.llm import local

    url = local.start(protected=False)  # served for use by hand: no key
    print(url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


def replay(args: argparse.Namespace) -> int:
    """Re-run a finished run from its cache; print the new run's folder."""
    from pathlib import Path

    from innolab.cli.common import fail, folder_problem
    from innolab.runner import replay

    problem = folder_problem(args.run_dir, "run")
    if problem:
        return fail("llm replay", problem)
    outcome = replay(Path(args.run_dir))
    print(outcome["run_dir"])
    return 0
