"""The `innolab` command line: the parser of every command group, and `main`.

Each command group is a module of this package (`register` adds its commands, whose handlers parse
options only and call the library); this module only assembles them.
"""

from __future__ import annotations

import argparse
import os
import sys

from innolab import __version__
from innolab.cli import agents, expbench, llm, novelty, reproduce, runs, sandbox, sweep, tasks
from innolab.cli.common import OneLineParser

__all__ = ["build_parser", "main"]

GROUPS = (reproduce, tasks, agents, sandbox, runs, expbench, sweep, llm, novelty)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `innolab` parser: each group's commands, in the order of `GROUPS`.

    Args:
        command: The command about to be parsed, else None (every command in full). A group
            that lists its commands (`COMMANDS`: name -> help) and has none of that name adds
            them by name and help alone: a command does not pay for another's imports (the run
            schema's, for `run` and `sandbox`).
    """
    parser = OneLineParser(
        prog="innolab",
        description="Measure the innovation potential of AI agents: performance gain and novelty "
        "(InnoGym).",
    )
    parser.add_argument("--version", action="version", version=f"innolab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        named: dict[str, str] | None = getattr(group, "COMMANDS", None)
        if command is None or named is None or command in named:
            group.register(commands)
        else:
            for name, text in named.items():
                commands.add_parser(name, help=text)
    return parser


def _command(argv: list[str]) -> str | None:
    """The command an argument list names: its first argument that is not an option."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run one command.

    Args:
        argv: the arguments (default: the process's).

    Returns:
        The exit status: 0 done, 1 a check failed (or an unexpected error, said in one line), 2 bad
        input (its error printed to stderr in one line); a command may document more
        (`innolab run`: 4, 5; `innolab sweep run`: 3).
    """
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    from innolab.tasks.model import TaskError

    command = " ".join(filter(None, [args.command, getattr(args, f"{args.command}_command", None)]))
    try:
        return int(args.handler(args))
    except TaskError as error:
        print(f"innolab: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of the output went away (e.g. `| head`)
        return 1
    except KeyboardInterrupt:
        print(f"innolab {command}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # never a traceback from deep inside: one line, and how to see it
        if os.environ.get("INNOLAB_DEBUG") == "1":
            raise
        loop = sys.modules.get("innolab.gym.run")  # loaded where a RunError can come from
        if loop is not None and isinstance(error, loop.RunError):  # not a run folder, ...
            print(f"innolab {command}: {error}", file=sys.stderr)
            return 2
        if isinstance(error, OSError) and error.filename is not None:
            print(f"innolab {command}: {error.strerror}: {error.filename} (check the path)",
                  file=sys.stderr)
            return 2
        said = (str(error).splitlines() or [""])[0][:300]
        print(f"innolab {command}: {type(error).__name__}: {said} (unexpected: INNOLAB_DEBUG=1 "
              "shows where)", file=sys.stderr)
        return 1
