"""The program behind a submission: the workspace files it ran, its entry, arguments and folder.

A `Program` is plain data. Beside each stored source text of a submission (`<name>.py`, the text
novelty reads, `Program.text()`) a run writes `<name>.program.json` (`Program.to_dict()`);
`load_program` reads it back, or, for runs written before programs were stored, makes a one-file
program of the source text.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROGRAM_SUFFIX = ".program.json"


class ProgramError(ValueError):
    """A program's data that cannot be read; the message names the field and the rule."""


@dataclass
class Program:
    """The smallest program innolab can show produced a submission.

    `files` maps workspace-relative paths to their source (the entry among them); `entry` is the
    workspace-relative path of the file run, `args` its arguments and `cwd` the workspace-relative
    folder it is run from: `command()` is the argv, run in `cwd` after `files` are written into the
    workspace.
    """

    files: dict[str, str]
    entry: str
    args: list[str] = field(default_factory=list)
    cwd: str = "."

    def __post_init__(self) -> None:
        """Check the fields.

        Raises:
            ProgramError: a field breaks its rule (named).
        """
        if not isinstance(self.files, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.files.items()):
            raise ProgramError("program: field 'files' must map workspace paths to source texts")
        if self.entry not in self.files:
            raise ProgramError(f"program: field 'entry' ({self.entry!r}) must be one of 'files'")
        for name in [*self.files, self.cwd]:
            if Path(name).is_absolute() or ".." in Path(name).parts:
                raise ProgramError(f"program: path {name!r} must be workspace-relative "
                                   "(not absolute, no '..')")
        if not isinstance(self.args, list) or not all(isinstance(a, str) for a in self.args):
            raise ProgramError("program: field 'args' must be a list of strings")

    def command(self, python: str = "python3") -> list[str]:
        """The argv that runs the program from `cwd` (the entry's path relative to `cwd`).

        Args:
            python: the interpreter.

        Returns:
            `[python, ENTRY, *args]`.
        """
        return [python, posixpath.relpath(self.entry, self.cwd), *self.args]

    def to_dict(self) -> dict[str, Any]:
        """The program as JSON data (what `<name>.program.json` holds)."""
        return {"files": dict(self.files), "entry": self.entry, "args": list(self.args),
                "cwd": self.cwd}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Program:
        """A program as `to_dict` wrote it.

        Args:
            data: the JSON data.

        Returns:
            The program.

        Raises:
            ProgramError: a field is missing or malformed (named).
        """
        for name in ("files", "entry"):
            if name not in data:
                raise ProgramError(f"program: field '{name}' is missing")
        return cls(files=dict(data["files"]), entry=str(data["entry"]),
                   args=list(data.get("args", [])), cwd=str(data.get("cwd", ".")))

    def text(self) -> str:
        """The program as one Python text (what novelty reads).

        The files concatenated, imported modules first and the entry last, each under a
        `# file: NAME` line.
        """
        order = [name for name in self.files if name != self.entry] + [self.entry]
        return "\n".join(f"# file: {name}\n{self.files[name].rstrip()}\n" for name in order)


def program_file(source_file: Path) -> Path:
    """Where the program of a stored source text is kept.

    Args:
        source_file: the stored source text, `<name>.py`.

    Returns:
        `<name>.program.json` beside it.
    """
    source_file = Path(source_file)
    stem = source_file.name[:-3] if source_file.name.endswith(".py") else source_file.name
    return source_file.with_name(stem + PROGRAM_SUFFIX)


def save_program(source_file: Path, program: Program) -> None:
    """Write a program's text to `source_file` and its data beside it.

    Args:
        source_file: where the source text goes (`<name>.py`).
        program: the program.
    """
    source_file = Path(source_file)
    source_file.write_text(program.text(), encoding="utf-8")
    program_file(source_file).write_text(json.dumps(program.to_dict(), indent=1) + "\n",
                                         encoding="utf-8")


def load_program(run_dir: Path, source_file: str) -> Program:
    """The program of a stored source text of a run.

    Args:
        run_dir: the run folder.
        source_file: the source text's path, relative to the run folder (as the trace records it).

    Returns:
        The stored program, or (a run written before programs were stored) a one-file program of
        the source text, named after the source file.

    Raises:
        ProgramError: the program's data is malformed (the message names the file and field).
        FileNotFoundError: neither the program nor the source text exists.
    """
    source = Path(run_dir) / source_file
    stored = program_file(source)
    if stored.is_file():
        try:
            return Program.from_dict(json.loads(stored.read_text(encoding="utf-8")))
        except (ProgramError, json.JSONDecodeError, TypeError, ValueError) as error:
            raise ProgramError(f"{stored.name}: {error}") from None
    return Program(files={source.name: source.read_text(encoding="utf-8")}, entry=source.name)
