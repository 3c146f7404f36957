"""The program behind a submission: the workspace files it ran, its entry, arguments and folder.

A `Program` is plain data. Beside each stored source text of a submission (`<name>.py`, the text
novelty reads, `Program.text()`) a run writes `<name>.program.json` (`Program.to_dict()`);
`load_program` reads it back, or, for runs written before programs were stored, makes a one-file
program of the source text. `build_program` finds a submission's program from what the sandbox's
Python processes ran (innolab.gym.capture): AIDE's node program, the def-use slice of CodeAct's
interpreter actions (innolab.gym.cellslice), or the script MLAB ran with the modules it imported.
"""

from __future__ import annotations

import ast
import json
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from innolab import pyparse
from innolab.gym.capture import Capture, Process, cell_digest
from innolab.gym.cellslice import analyse, slice_cells
from innolab.gym.runstate import CodeAction, program_text

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

    def text_lines(self, executed: Mapping[str, Iterable[int]]) -> set[int]:
        """The lines of `text()` that are given lines of the program's files.

        Args:
            executed: (1-based) lines by workspace-relative file, as a line coverage gives them.

        Returns:
            The same lines, numbered as in `text()` (lines a file does not have are left out).
        """
        order = [name for name in self.files if name != self.entry] + [self.entry]
        found: set[int] = set()
        start = 1  # the line of the current file's `# file:` marker
        for name in order:
            count = self.files[name].rstrip().count("\n") + 1
            found.update(start + n for n in executed.get(name, ()) if 1 <= n <= count)
            start += count + 2  # its marker, its lines and the blank line between files
        return found


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


# ------------------------------------------------------------------------ building a program

SESSION_ENTRY = "session_cells.py"
SCAFFOLD_ENTRY = "program.py"
COMMAND_ENTRY = "command.py"
CODE_LOG_ENTRY = "code_log.py"


def build_program(path: str, capture: Capture, code_log: Sequence[CodeAction],
                  source: str | None = None,
                  read: Callable[[str], str | None] | None = None) -> Program | None:
    """The smallest program the capture shows wrote a submitted file.

    The process that last wrote the file decides: a process of the persistent interpreter (or one
    it started) gives the def-use slice of its actions, back from the action that wrote the file
    (`session_program`); any other gives the script (or module, or `python -c` code) of the
    outermost Python process above it, with every workspace file that process and those below it
    ran (`process_program`). Where no logged process wrote the file (a shell command or a file
    tool did), the last workspace program run stands in. A scaffold that knows the program
    (`source`, AIDE's node) gives the entry's text itself.

    Args:
        path: the submitted file, workspace-relative.
        capture: the sandbox's capture so far.
        code_log: the run's code actions so far.
        source: the program as the scaffold knows it, if it does.
        read: reads a workspace file's current text (None when it cannot), for a file the log
            holds no text of.

    Returns:
        The program, or None when nothing ran that could have written the file.
    """
    path = posixpath.normpath(path)
    cells = [e for e in code_log if e.kind == "session"]
    writer = capture.writer(path)
    if writer is not None and (writer.session or writer.cell is not None):
        cell = writer.cell if not writer.session else _cell_of_write(capture, writer, path)
        return session_program(cells, capture, path, cell, read)
    if writer is not None:
        chain = producers(capture, capture.root(writer))
        if len(chain) > 1 and source is None:
            return pipeline_program(capture, chain, read)
        return process_program(capture, chain[-1], source, read)
    if source is not None:
        return Program({SCAFFOLD_ENTRY: source}, SCAFFOLD_ENTRY)
    if cells and any(path in analyse(e.code).writes | analyse(e.code).appends for e in cells):
        return session_program(cells, capture, path, None, read)
    last = capture.last_run()
    if last is not None:
        return process_program(capture, last, None, read)
    return session_program(cells, capture, path, None, read) if cells else None


def _cell_of_write(capture: Capture, process: Process, path: str) -> int | None:
    """The persistent interpreter's action during which it last wrote a file."""
    seq = process.activity.writes.get(path, process.activity.appends.get(path))
    runs = [i for i, c in enumerate(capture.cells) if c.process == process.key
            and seq is not None and c.seq < seq]
    return runs[-1] if runs else None


def process_program(capture: Capture, root: Process, source: str | None = None,
                    read: Callable[[str], str | None] | None = None,
                    command_name: str = COMMAND_ENTRY) -> Program | None:
    """The program a process ran: its entry, and every workspace file it and those below ran.

    Args:
        capture: the sandbox's capture.
        root: the process (the outermost Python process of a command).
        source: the entry's text as the scaffold knows it (replacing a `python -c` command's).
        read: reads a workspace file's current text, for a file the log holds no text of.
        command_name: the entry's name for a `python -c` command's code.

    Returns:
        The program; None when the process ran nothing a program can name (an entry outside the
        workspace, or a text that cannot be had).
    """
    run = root.run or {}
    cwd = root.cwd if not posixpath.isabs(root.cwd) and not root.cwd.startswith("..") else "."
    files: dict[str, str] = {}
    for process in capture.subtree(root):
        for name, text in process.activity.code.items():
            text = text if text is not None else (read(name) if read else None)
            if text is not None:
                files[name] = text
    args = root.argv[1:]
    how = run.get("how")
    if source is not None or how == "command":
        entry = posixpath.normpath(posixpath.join(cwd, SCAFFOLD_ENTRY if source is not None
                                                  else command_name))
        text = source if source is not None else str(run.get("code", ""))
    elif how == "module":
        module = str(run.get("module", ""))
        entry = posixpath.normpath(posixpath.join(cwd, f"run_{module.replace('.', '_')}.py"))
        text = (f"import runpy\n\nrunpy.run_module({module!r}, run_name='__main__', "
                "alter_sys=True)\n")
    elif how == "file" and isinstance(run.get("path"), str) and not posixpath.isabs(run["path"]):
        entry = run["path"]
        text = files.get(entry) or (read(entry) if read else None)
        if text is None:
            return None
    else:
        return None
    files.pop(entry, None)
    return Program({**files, entry: text}, entry, args, cwd)


def producers(capture: Capture, root: Process) -> list[Process]:
    """A command's process and, before it, those that wrote the workspace files it read.

    Transitively: a file read is traced to the last command that wrote it before the reader began
    (files whose code ran, and files the reader wrote first, excepted).

    Args:
        capture: the sandbox's capture.
        root: the outermost process of the command.

    Returns:
        The commands' outermost processes, in the order they began, `root` last.
    """
    chain = {root.key: root}
    todo = [root]
    while todo:
        process = todo.pop()
        tree = list(capture.subtree(process))
        code = {name for p in tree for name in p.activity.code}
        written = {name for p in tree for name in [*p.activity.writes, *p.activity.appends]}
        for name in sorted({n for p in tree for n in p.activity.reads} - code - written):
            writer = capture.writer(name, before=process.start)
            if writer is None or writer.session or writer.cell is not None:
                continue
            producer = capture.root(writer)
            if producer.key not in chain:
                chain[producer.key] = producer
                todo.append(producer)
    return sorted(chain.values(), key=lambda p: p.start)


PIPELINE_ENTRY = "pipeline.py"


def pipeline_program(capture: Capture, chain: Sequence[Process],
                     read: Callable[[str], str | None] | None = None) -> Program | None:
    """Commands that ran one after another, each reading what the ones before wrote, as one program.

    The entry (`pipeline.py`) makes the folders the commands wrote into, then runs each command's
    program in turn from its folder.

    Args:
        capture: the sandbox's capture.
        chain: the commands' outermost processes, in order (see `producers`).
        read: reads a workspace file's current text, for a file the log holds no text of.

    Returns:
        The program; None when a command's program cannot be named.
    """
    files: dict[str, str] = {}
    folders = sorted({posixpath.dirname(name) for process in chain
                      for p in capture.subtree(process)
                      for name in [*p.activity.writes, *p.activity.appends]} - {""})
    lines = ["import os", "import subprocess", "import sys", ""]
    lines += [f"os.makedirs({folder!r}, exist_ok=True)" for folder in folders]
    for index, process in enumerate(chain):
        program = process_program(capture, process, None, read, command_name=f"command_{index}.py")
        if program is None:
            return None
        files.update(program.files)
        argv = ", ".join(repr(a) for a in program.command()[1:])
        lines.append(f"subprocess.run([sys.executable, {argv}], cwd={program.cwd!r}, check=True)")
    files.pop(PIPELINE_ENTRY, None)
    return Program({**files, PIPELINE_ENTRY: "\n".join(lines) + "\n"}, PIPELINE_ENTRY)


def session_program(cells: Sequence[CodeAction], capture: Capture, path: str,
                    writing_cell: int | None,
                    read: Callable[[str], str | None] | None = None) -> Program:
    """The persistent interpreter's actions a file depends on, as one program.

    A def-use slice (innolab.gym.cellslice) back from the action that wrote the file: the one the
    capture saw write it, else the last one whose code writes it by name, else the last one.
    Files are matched to actions by the capture (what each action ran, wrote and read) and by
    literal paths in the code. The kept actions run in order as `session_cells.py`; one that
    failed in the session runs inside `try`/`except Exception`, as the session went on past it.
    The workspace files the kept actions ran (modules they imported, scripts they executed) come
    with it.

    Args:
        cells: the interpreter's actions (code log entries of kind `session`), in order.
        capture: the sandbox's capture.
        path: the file, workspace-relative.
        writing_cell: the index, among `capture.cells`, of the action the capture saw write it.
        read: reads a workspace file's current text, for a file the log holds no text of.

    Returns:
        The program.
    """
    runs = _match_cells(cells, capture)
    analysed = []
    for entry, run in zip(cells, runs, strict=True):
        cell = analyse(entry.code)
        if run is not None and cell.parsed:
            activity = capture.cells[run].activity
            cell.writes |= set(activity.writes)
            cell.appends |= set(activity.appends)
            cell.reads |= activity.reads
        analysed.append(cell)
    target = next((i for i, r in enumerate(runs) if r is not None and r == writing_cell), None)
    if target is None:
        named = [i for i, c in enumerate(analysed) if path in c.writes | c.appends]
        target = named[-1] if named else len(cells) - 1
    kept = slice_cells(analysed, target)
    files: dict[str, str] = {}
    for index in kept:
        if runs[index] is not None:
            for name, text in capture.cells[runs[index]].activity.code.items():
                text = text if text is not None else (read(name) if read else None)
                if text is not None:
                    files[name] = text
    parts = [f"# cell {i} (step {cells[i].step})\n{_guarded(cells[i])}" for i in kept]
    files.pop(SESSION_ENTRY, None)
    return Program({**files, SESSION_ENTRY: "\n\n".join(parts) + "\n"}, SESSION_ENTRY)


def _match_cells(cells: Sequence[CodeAction], capture: Capture) -> list[int | None]:
    """The capture's action (its index) each code log action ran as, matched in order by digest.

    A resumed run's interpreter replays the earlier actions first, so the order holds.
    """
    matched: list[int | None] = []
    position = 0
    for entry in cells:
        digest = cell_digest(entry.code)
        found = next((i for i in range(position, len(capture.cells))
                      if capture.cells[i].sha == digest), None)
        matched.append(found)
        if found is not None:
            position = found + 1
    return matched


def _guarded(entry: CodeAction) -> str:
    """An action's code; one that failed in the session runs inside try/except, as it went on."""
    if not entry.failed:
        return entry.code.rstrip()
    try:
        tree = pyparse.parse(entry.code)
    except SyntaxError:
        return "\n".join(f"# {line}" for line in entry.code.splitlines())  # it ran nothing
    handler = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name=None,
                                body=[ast.Pass()])
    guarded = ast.Module(body=[ast.Try(body=tree.body or [ast.Pass()], handlers=[handler],
                                       orelse=[], finalbody=[])], type_ignores=[])
    with pyparse.lock():
        text = ast.unparse(ast.fix_missing_locations(guarded))
    return "# this action failed in the session\n" + text


def code_log_program(code_log: Sequence[CodeAction]) -> Program:
    """The run's code actions as one file: what was stored before programs were captured.

    Args:
        code_log: the run's code actions.

    Returns:
        A one-file program of `program_text(code_log)`.
    """
    return Program({CODE_LOG_ENTRY: program_text(code_log)}, CODE_LOG_ENTRY)
