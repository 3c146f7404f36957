"""What the command modules share: the subparsers type and how a command reports bad input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

Commands = Any  # argparse's subparsers action (argparse._SubParsersAction, private)

# what to give where a command wants a run or a sweep folder
RUN_FOLDER = ("give a run folder (innolab run prints it last; results/runs/<id>/ or "
              "results/sweeps/<name>/runs/<id>/)")
SWEEP_FOLDER = ("give a sweep folder (innolab sweep run prints it last; results/sweeps/<name>/, "
                "e.g. results/sweeps/offline)")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line that says where to read more.

    argparse prints the whole usage before its error; a command's subparsers are of its class.
    """

    def error(self, message: str) -> Any:  # noqa: D102 - argparse's
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def fail(command: str, error: object) -> int:
    """Print `innolab COMMAND: error` to stderr, in one line.

    Args:
        command: the command as typed, e.g. "sweep run".
        error: the error or message (a message of several lines is joined into one).

    Returns:
        2, the exit status of bad input.
    """
    said = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
    print(f"innolab {command}: {said}", file=sys.stderr)
    return 2


def folder_problem(path: str | Path, kind: str) -> str | None:
    """What is wrong with a folder a command was given, with what to give instead.

    Args:
        path: the folder as given.
        kind: "run" (a folder with config.json) or "sweep" (with sweep.json).

    Returns:
        None for such a folder; else that it does not exist, or is not one, and what to give.
    """
    marker, advice = ("config.json", RUN_FOLDER) if kind == "run" else ("sweep.json",
                                                                        SWEEP_FOLDER)
    folder = Path(path)
    if not folder.exists():
        return f"{path} does not exist: {advice}"
    if not (folder / marker).is_file():
        return f"{path} is not a {kind} folder (no {marker}): {advice}"
    return None


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
