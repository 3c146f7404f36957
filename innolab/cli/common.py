"""What the command modules share: the subparsers type and how a command reports bad input."""

from __future__ import annotations

import sys
from typing import Any

Commands = Any  # argparse's subparsers action (argparse._SubParsersAction, private)


def fail(command: str, error: object) -> int:
    """Print `innolab COMMAND: error` to stderr.

    Args:
        command: the command as typed, e.g. "sweep run".
        error: the error or message.

    Returns:
        2, the exit status of bad input.
    """
    print(f"innolab {command}: {error}", file=sys.stderr)
    return 2


def group(commands: Commands, name: str, text: str) -> Any:
    """A command with actions (`innolab NAME ACTION`), an action required.

    Args:
        commands: the parent's subparsers.
        name: the command.
        text: its help.

    Returns:
        The subparsers its actions are added to.
    """
    parser = commands.add_parser(name, help=text)
    return parser.add_subparsers(dest=f"{name}_command", metavar="ACTION", required=True)
