"""The pristine validator behind the `validate` and `submit` tools, out of the agent's reach.

The agent's workspace holds a copy of validate.py to read and run by hand, but no dev score comes
from it: the tools read the candidate through the sandbox's file API (links refused), and a
pristine copy of the checker checks that copy of the candidate. The checker's files are held in
memory with their content hashes; each check copies them afresh and verifies every hash immediately
before it runs them, in a checker of its own that no check used before and none uses after. The
checker's interpreter is started before it is needed (innolab.gym.checker_pool: a few wait, one
use each, refilled in the background) and waits for its one order (innolab.gym.checker_waiter),
sent once the copy is verified; it runs the checker in itself and ends:

* `local`: each check gets a new folder, inside the validator's private folder (mode 0700,
  innolab's user), holding the checker's copy and the candidate's copy only, removed after the
  check; the copy runs in a waiting interpreter of innolab's, in isolated mode (`-I`), whose
  input only innolab holds (its order also carries the key innolab sent it first on that input;
  it is undumpable before it reads it: innolab.gym.checker_waiter). Where
  innolab runs as root, the agent's commands run as another, unprivileged user
  (innolab.gym.local), which can neither enter nor change that folder nor reach innolab's
  processes, the waiting checkers among them. Where innolab does not run as root, the agent's
  commands run as innolab's own user, who can reach innolab's own processes too: a change made
  between checks is never used (each check copies afresh), one made to the copy before its hash
  is checked is refused, but one made in the moment between the hash check and the interpreter's
  reading is not detected (see innolab.gym.local);
* `docker`: each check runs in a second container of the sandbox image of its own
  (innolab.gym.docker_validator: no network, all capabilities dropped, non-root, CPU/memory/pids
  limits) into which the checker and the candidate's copy are copied, read back and verified
  before the order goes; the agent's container never sees it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from innolab.gym import checker_pool
from innolab.gym.checker_pool import (
    READY,
    START_TIMEOUT_S,
    CheckerPool,
    key_line,
    order_line,
    split_report,
    waiter_argv,
    weakly,
)
from innolab.gym.docker_validator import DockerValidator
from innolab.gym.leftovers import MARKER_VARIABLE, Warden, kill_sandbox, mark, remove_tree
from innolab.gym.sandbox import SandboxError
from innolab.gym.verdict import (
    CANDIDATE,
    OUTPUT_LIMIT,
    altered_verdict,
    digests,
    parse_verdict,
)

__all__ = [
    "CANDIDATE",
    "OUTPUT_LIMIT",
    "DockerValidator",
    "LocalValidator",
    "Validator",
    "altered_verdict",
    "digests",
    "parse_verdict",
]


class Validator(Protocol):
    """Checks a candidate's bytes with the task's pristine visible checker."""

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        """Check a candidate.

        Args:
            content: The candidate's bytes.
            timeout_s: The check's time limit.

        Returns:
            The verdict, {"valid", "score", "errors"}.

        Raises:
            SandboxError: A validator that can no longer check (closed, its folder removed).
        """
        ...

    def close(self) -> None:
        """Release what the validator holds; no check runs after."""
        ...


@dataclass
class Waiter:
    """A started checker process waiting for its order on its standard input.

    Attributes:
        process: The process (its stdin, stdout and stderr pipes innolab's alone).
        key: The key its order must carry (innolab.gym.checker_waiter).
    """

    process: subprocess.Popen[bytes]
    key: str

    def end(self) -> bytes:
        """Kill it where it still runs, collect it and close its pipes.

        Returns:
            What it wrote on its standard error that was not read yet.
        """
        if self.process.poll() is None:
            self.process.kill()
        return self.process.communicate()[1] or b""

    def let_go(self) -> None:
        """Close its input without waiting: it reads end of input and exits by itself."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()


def _first_output(process: subprocess.Popen[bytes], size: int, deadline: float) -> bytes:
    """The first `size` bytes of a process's standard output, read unbuffered.

    Returns:
        The bytes; fewer where its output ends or the deadline comes first.
    """
    assert process.stdout is not None
    data = b""
    fd = process.stdout.fileno()
    while len(data) < size and (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


class LocalValidator:
    """Checks in private folders: the checker copied afresh, verified by hash, run by innolab.

    Each check copies the checker into a new private folder, verifies it by hash, and runs it in a
    waiting interpreter of innolab's (started ahead, used once) on the candidate's copy.

    Args:
        files: The checker's files (validate.py among them), by path.
        pool_size: How many interpreters to keep started ahead
            (innolab.gym.checker_pool.pool_size; None: $INNOLAB_CHECKER_POOL, else its default).

    Raises:
        SandboxError: No validate.py among the files.
        ValueError: A pool size that breaks its rule.
    """

    def __init__(self, files: dict[str, bytes], pool_size: int | None = None) -> None:
        if "validate.py" not in files:
            raise SandboxError("the validator files hold no validate.py")
        size = checker_pool.pool_size(pool_size)
        self.files = dict(files)
        self.digests = digests(self.files)
        self.root = Path(tempfile.mkdtemp(prefix="innolab-validator-"))  # 0700, innolab's user
        # in each checker's environment: a hung checker is found by it
        self.marker = secrets.token_hex(8)
        mark(self.root, uid=None, marker=self.marker)
        # the folder and the checkers go when the run ends, however
        self._warden = Warden(None, self.marker, [self.root])
        self._warden.start()
        self.closed = False
        self.pool: CheckerPool[Waiter] = CheckerPool(weakly(self._start), Waiter.end, size)

    def _start(self) -> Waiter:
        """Start one checker interpreter, waiting in the private folder for its order."""
        key = secrets.token_hex(16)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            MARKER_VARIABLE: self.marker,
        }
        process = subprocess.Popen(
            waiter_argv(sys.executable), cwd=self.root, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        waiter = Waiter(process, key)
        if _first_output(process, len(READY), time.monotonic() + START_TIMEOUT_S) != READY:
            said = waiter.end().decode(errors="replace").strip()[-500:] or "nothing"
            raise SandboxError(f"a checker interpreter did not start: {said}")
        try:  # only now: it is undumpable, no process of its user can read it there
            assert process.stdin is not None
            process.stdin.write(key_line(key))
            process.stdin.flush()
        except OSError as error:
            said = waiter.end().decode(errors="replace").strip()[-500:] or str(error)
            raise SandboxError(f"a checker interpreter did not take its key: {said}") from None
        return waiter

    def _copy(self, folder: Path) -> None:
        """Write the checker into folder/checker."""
        for name, content in self.files.items():
            target = folder / "checker" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)

    def _altered(self, folder: Path) -> list[str]:
        """The checker's files whose copy in folder/checker differs from the pristine content."""
        found = {}
        for name in self.files:
            try:
                found[name] = hashlib.sha256((folder / "checker" / name).read_bytes()).hexdigest()
            except OSError:
                found[name] = ""
        return [name for name, digest in self.digests.items() if found[name] != digest]

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        """Check a candidate in a new private folder (see Validator.check)."""
        # closed: its folder is gone; recreating it would leave an unmarked folder no reaper removes
        if self.closed:
            raise SandboxError("the local validator is closed: no check can run after close()")
        if not self.root.is_dir():
            raise SandboxError(
                f"the local validator's folder {self.root} was removed while it was open"
            )
        folder = Path(tempfile.mkdtemp(dir=self.root, prefix="check-"))
        waiter: Waiter | None = None
        try:
            waiter = self.pool.take()
            candidate = folder / CANDIDATE
            candidate.write_bytes(content)
            self._copy(folder)
            altered = self._altered(folder)  # immediately before use
            if altered:
                return altered_verdict(altered)
            order = order_line(waiter.key, [str(folder / "checker" / "validate.py"),
                                            str(candidate)], str(folder), "checker", self.digests)
            try:  # the waiter verifies the hashes once more, the moment before it runs the copy
                stdout, stderr = waiter.process.communicate(order, timeout=timeout_s)
            except subprocess.TimeoutExpired:
                return parse_verdict("", "", True, timeout_s)
            altered, stdout = split_report(stdout)
            if altered:
                return altered_verdict(altered)
            return parse_verdict(stdout.decode(errors="replace")[-OUTPUT_LIMIT:],
                                 stderr.decode(errors="replace")[-OUTPUT_LIMIT:], False, timeout_s)
        finally:
            if waiter is not None:
                waiter.end()  # killed where it still runs (timed out, or never ordered)
                self.pool.used()
            remove_tree(folder)

    def held_memory_bytes(self) -> int:
        """The resident memory the ready interpreters hold now (their VmRSS)."""
        total = 0
        for waiter in self.pool.ready():
            try:
                status = Path(f"/proc/{waiter.process.pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

    def __del__(self) -> None:
        """Dropped without close(): its ready interpreters' input closes, and they exit."""
        pool = getattr(self, "pool", None)
        if pool is not None and not self.closed:
            pool.abandon(Waiter.let_go)

    def close(self) -> None:
        """End the ready checkers, stop the warden, kill any checker left, remove the folder."""
        self.closed = True
        self.pool.close()
        self._warden.stop()
        kill_sandbox(None, self.marker)  # the warden's work, again, in case it was killed
        remove_tree(self.root)
