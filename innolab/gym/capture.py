"""What ran in a sandbox: the start-up hook put there, and its log read back as processes and cells.

Each sandbox back end installs the hook of innolab/gym/images/capture_site.py as the
`sitecustomize.py` of a folder on its commands' PYTHONPATH (`site_source`) and keeps a log the
hook appends to (`Sandbox.read_capture`). Every Python process of the sandbox (a script run by
`cd x && python y.py`, `python -m`, a subprocess, the persistent interpreter) then logs the
workspace files whose code it ran, the files it wrote and read, and, in the persistent
interpreter, where each action began. `Capture` turns the log into `Process`es (with their
parents) and `CellRun`s (what each action of the interpreter ran, its subprocesses included). It is
provenance, not scoring.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from innolab.gym.sandbox import Sandbox

HOOK_FILE = Path(__file__).resolve().parent / "images" / "capture_site.py"
SITE_FILE = "sitecustomize.py"
LOG_LIMIT = 64_000_000


def site_source(workspace: str, log: str, limit: int = LOG_LIMIT) -> str:
    """The `sitecustomize.py` a sandbox's Python processes start with.

    Args:
        workspace: the workspace folder as the sandbox's commands see it.
        log: the capture log's path as they see it (it must exist and be writable by them).
        limit: the log's largest size in bytes (past half of it, files' texts are left out and
            read from the workspace instead; past it, nothing more is logged).

    Returns:
        The hook's source and the call that installs it.
    """
    hook = HOOK_FILE.read_text(encoding="utf-8")
    return hook + f"\n\ninstall({workspace!r}, {log!r}, {int(limit)})\n"


def cell_digest(code: str) -> str:
    """The digest by which the log names an action of the persistent interpreter."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass
class Activity:
    """What some code ran and touched in the workspace.

    Attributes:
        code: the text of each workspace file whose code ran (None when too large to log).
        writes: each file written (replaced or renamed onto), with the log position of the last.
        appends: files appended to.
        reads: files read.
    """

    code: dict[str, str | None] = field(default_factory=dict)
    writes: dict[str, int] = field(default_factory=dict)
    appends: dict[str, int] = field(default_factory=dict)
    reads: set[str] = field(default_factory=set)

    def add(self, record: dict[str, Any], seq: int) -> None:
        """Take one record of the log into account.

        Args:
            record: a `code`, `write` or `read` record.
            seq: its position in the log.
        """
        kind, path = record.get("k"), record.get("path")
        if not isinstance(path, str):
            return
        if kind == "code":
            self.code[path] = record.get("text")
        elif kind == "write":
            (self.appends if record.get("append") else self.writes)[path] = seq
        elif kind == "read":
            self.reads.add(path)


@dataclass
class Process:
    """One Python process of the sandbox.

    Attributes:
        key: its index among the log's processes.
        start: the log position of its first record.
        pid: its process id.
        parent: the key of its parent process, when that is a logged Python process too.
        argv: its sys.argv.
        cwd: its working folder, workspace-relative (absolute when outside the workspace).
        run: its `run` record (how: file, module or command), None until logged.
        cell: the index of the persistent interpreter's action it ran under, if any.
        session: whether it is the persistent interpreter (it logged actions).
        activity: what it ran and touched itself.
        children: the keys of its logged child processes.
    """

    key: int
    start: int
    pid: int
    parent: int | None
    argv: list[str]
    cwd: str
    run: dict[str, Any] | None = None
    cell: int | None = None
    session: bool = False
    activity: Activity = field(default_factory=Activity)
    children: list[int] = field(default_factory=list)


@dataclass
class CellRun:
    """One action of the persistent interpreter, as the log saw it run.

    Attributes:
        sha: the digest of its code (`cell_digest`).
        process: the key of the interpreter's process.
        seq: its position in the log.
        activity: what it ran and touched, its subprocesses included.
    """

    sha: str
    process: int
    seq: int
    activity: Activity = field(default_factory=Activity)


class Capture:
    """A sandbox's capture log, read incrementally into processes and actions.

    Attributes:
        records: every record read so far, in log order.
        executed: line coverage, where the processes traced lines: the lines of each
            workspace-relative file that ran.
        lines_intact: for each traced process that exited normally, whether its line tracer was
            still in place at its exit.
        lines_traced: the processes (pids) that logged a line.
        lines_ended: each traced process's word at its exit: whether its tracer was in place.
        processes: the processes, in the order they first logged.
        cells: the persistent interpreter's actions, in the order they ran.
        offset: how many bytes of the log were read.
    """

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.processes: list[Process] = []
        self.cells: list[CellRun] = []
        self.offset = 0
        # line coverage (a process started with INNOLAB_LINES=1): the lines of each workspace
        # file that ran, and each process's word at exit on whether its tracer stayed in place
        self.executed: dict[str, set[int]] = {}
        self.lines_intact: list[bool] = []
        self.lines_traced: set[int] = set()  # the pids that logged a line
        self.lines_ended: dict[int, bool] = {}  # each pid's word at exit (intact or not)
        self._by_pid: dict[int, int] = {}
        self._current_cell: dict[int, int] = {}

    def read(self, sandbox: Sandbox) -> list[dict[str, Any]]:
        """Read what the sandbox's log gained since the last read.

        Args:
            sandbox: the sandbox (a back end without the hook logs nothing: `Sandbox.read_capture`).

        Returns:
            The new records.
        """
        return self.feed(sandbox.read_capture(self.offset))

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Take the log's next bytes (a line still being written is left for the next read).

        Args:
            data: the log's bytes from `offset` on.

        Returns:
            The new records (malformed lines skipped).
        """
        end = data.rfind(b"\n") + 1
        self.offset += end
        new = []
        for line in data[:end].splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("pid"), int):
                new.append(record)
                self._add(record)
        return new

    def _add(self, record: dict[str, Any]) -> None:
        seq = len(self.records)
        self.records.append(record)
        kind, pid = record.get("k"), record["pid"]
        if kind == "proc" or pid not in self._by_pid:
            self._start(record)
        process = self.processes[self._by_pid[pid]]
        if kind == "line":
            if isinstance(record.get("path"), str) and isinstance(record.get("n"), int):
                self.executed.setdefault(record["path"], set()).add(record["n"])
                self.lines_traced.add(pid)
        elif kind == "lines_end":
            self.lines_intact.append(record.get("intact") is True)
            self.lines_ended[pid] = self.lines_ended.get(pid, True) and record.get("intact") is True
        elif kind == "run":
            process.run = record
        elif kind == "cell" and isinstance(record.get("sha"), str):
            process.session = True
            self._current_cell[process.key] = len(self.cells)
            self.cells.append(CellRun(record["sha"], process.key, seq))
        elif kind in ("code", "write", "read"):
            process.activity.add(record, seq)
            cell = self._current_cell.get(process.key, process.cell)
            if cell is not None:
                self.cells[cell].activity.add(record, seq)

    def _start(self, record: dict[str, Any]) -> None:
        ppid = record.get("ppid")
        parent = self._by_pid.get(ppid) if isinstance(ppid, int) else None
        cell = None
        if parent is not None:
            above = self.processes[parent]
            cell = self._current_cell.get(parent, above.cell)
        process = Process(key=len(self.processes), start=len(self.records) - 1,
                          pid=record["pid"], parent=parent,
                          argv=[str(a) for a in record.get("argv") or []],
                          cwd=str(record.get("cwd") or "."), cell=cell)
        if parent is not None:
            self.processes[parent].children.append(process.key)
        self.processes.append(process)
        self._by_pid[process.pid] = process.key

    # ----------------------------------------------------------------------------------- queries

    def writer(self, path: str, before: int | None = None) -> Process | None:
        """The process that last wrote a workspace file (replaced, or else appended to).

        Args:
            path: the workspace-relative path.
            before: only writes logged before this position count (None: all).

        Returns:
            The process, or None when no logged process wrote it.
        """
        best: tuple[int, Process] | None = None
        for process in self.processes:
            for table in (process.activity.writes, process.activity.appends):
                seq = table.get(path)
                if seq is not None and (before is None or seq < before) and (
                        best is None or seq > best[0]):
                    best = (seq, process)
        return best[1] if best else None

    def root(self, process: Process) -> Process:
        """The outermost Python process above one, outside the persistent interpreter."""
        while process.parent is not None:
            parent = self.processes[process.parent]
            if parent.session or parent.cell is not None:
                break
            process = parent
        return process

    def subtree(self, process: Process) -> Iterable[Process]:
        """A process and every logged process below it."""
        stack = [process]
        while stack:
            current = stack.pop()
            yield current
            stack.extend(self.processes[k] for k in reversed(current.children))

    def last_run(self, before: int | None = None) -> Process | None:
        """The last process, outside the persistent interpreter, that ran workspace code.

        Args:
            before: only processes that began before this log position count (None: all).

        Returns:
            The process (a root: started from a command, not by another logged process) or None.
        """
        candidates = [p for p in self.processes if p.parent is None and not p.session
                      and p.cell is None and p.run is not None and any(
                          q.activity.code for q in self.subtree(p))]
        if before is not None:
            candidates = [p for p in candidates if p.start < before]
        return candidates[-1] if candidates else None
