"""A run folder's lock: one executor of a run at a time; a live one is never displaced or failed.

Two signs of a holder, each covering what the other cannot:

- `flock` on the folder's lock file: the kernel releases it the moment its holder dies, even by
  SIGKILL, so a dead holder on the same machine frees the folder at once;
- a heartbeat file (pid, host, boot id, time, beat count, token) that the holder rewrites every
  `heartbeat_s` from a background thread: it tells a waiter that the holder is alive, and it is the
  only sign of a holder on another machine (a shared folder that flock does not reach) or of one
  that is stopped or hung (flock still held, nothing happening).

A waiter waits as long as the heartbeat keeps changing, however long that is, and says so in its
log every `report_s`. It takes the lock over only when the heartbeat is stale: unchanged for
`stale_s` on the waiter's own clock (so clock skew between machines is harmless), or, written on
this machine, stamped more than `stale_s` ago. A holder whose lock was taken over (it was stopped or
hung for longer than `stale_s`) notices at its next beat, writes nothing more and ends its own
process (`on_lost`): the run goes on from its checkpoint in the executor that took over, which is
how a killed run resumes anyway.

Every decision (claim, take-over, beat, release) is made under a short exclusive lock on a guard
file, so two waiters never take over together and a late beat never overwrites its successor's
heartbeat.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from innolab.rundir import RunDir, write_atomic

HEARTBEAT_S = 10.0  # how often a holder rewrites its heartbeat
# a heartbeat unchanged for this long belongs to a holder that is dead, stopped or hung
STALE_S = 120.0
REPORT_S = 60.0  # how often a waiter says in its log that it is still waiting

log = logging.getLogger(__name__)


class LockError(RuntimeError):
    """A run folder's lock could not be taken."""


class RunBusy(LockError):
    """Another live executor holds the run (raised only to a caller that chose not to wait).

    Attributes:
        run_dir: The run folder.
        holder: The holder its heartbeat names (None: missing or unreadable).
    """

    def __init__(self, run_dir: Path, holder: Holder | None) -> None:
        """Name the run and its holder."""
        self.run_dir, self.holder = run_dir, holder
        who = holder.describe() if holder is not None else "a process whose heartbeat is unreadable"
        super().__init__(f"{run_dir} is being executed by {who}; a run has one executor at a "
                         "time: wait until it ends")


# the locks this process holds, by (lock file, thread): a nested `with` in the same thread is the
# same executor (the runner holds the run while the gym executes it and scoring scores it)
_HELD: dict[tuple[str, int], RunLock] = {}
_HELD_GUARD = threading.Lock()


def boot_id() -> str:
    """Return this kernel's boot id.

    It is shared by the containers on one machine, where flock works across them.

    Returns:
        The boot id, or the host name where the kernel does not expose one.
    """
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return socket.gethostname()


@dataclass(frozen=True)
class Holder:
    """What a holder writes into its heartbeat.

    Attributes:
        pid: The holder's process id.
        host: Its host name.
        boot: Its kernel's boot id.
        time: When the heartbeat was written (seconds since the epoch).
        beat: The beat's number.
        token: The holding lock's random token.
    """

    pid: int
    host: str
    boot: str
    time: float
    beat: int
    token: str

    def on_this_machine(self) -> bool:
        """Test whether the holder runs on this machine (the same boot id)."""
        return self.boot == boot_id()

    def describe(self) -> str:
        """Describe the holder for a log line: pid, host, the heartbeat's age and number."""
        return (f"pid {self.pid} on host {self.host} "
                f"(heartbeat {time.time() - self.time:.1f} s ago, beat {self.beat})")


def read_heartbeat(path: Path) -> tuple[str | None, Holder | None]:
    """Read a heartbeat file.

    Args:
        path: The heartbeat file.

    Returns:
        Its text (None when there is none) and the holder it names (None when unreadable).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    try:
        return text, Holder(**json.loads(text))
    except (ValueError, TypeError):
        return text, None


def end_process() -> None:
    """End this process at once (SIGKILL), writing nothing more into the folder.

    What a holder does when its lock was taken over.
    """
    os.kill(os.getpid(), signal.SIGKILL)


class RunLock:
    """`with RunLock(run_dir): ...` executes the block as the folder's only executor.

    See the module's text for how a holder is told alive and when a waiter takes over.

    Attributes:
        path: The folder's lock file.
        heartbeat: The folder's heartbeat file.
        guard_path: The guard file of decisions about the lock.
        heartbeat_s: How often the holder rewrites its heartbeat.
        stale_s: How long a heartbeat must stay unchanged before a waiter takes over.
        report_s: How often a waiter says in its log that it is still waiting.
        on_lost: What the holder does when its lock was taken over.
        token: This lock's random token, written in its heartbeat.
        beats: The heartbeats written so far.
        handle: The locked file while held, else None.
    """

    def __init__(self, run_dir: Path, heartbeat_s: float = HEARTBEAT_S, stale_s: float = STALE_S,
                 report_s: float = REPORT_S, on_lost: Callable[[], None] = end_process,
                 wait: bool = True) -> None:
        """Make the lock of a run folder; nothing is taken until the `with` block.

        Args:
            run_dir: The run folder.
            heartbeat_s: How often the holder rewrites its heartbeat, in seconds.
            stale_s: How long a heartbeat must stay unchanged before a waiter takes over.
            report_s: How often a waiter logs that it is still waiting.
            on_lost: Called when the lock was taken over from this holder (default: end the
                process).
            wait: Whether to wait for a live holder (False: raise RunBusy naming it).

        Raises:
            ValueError: heartbeat_s is not positive, or stale_s does not exceed twice it.
        """
        if not heartbeat_s > 0:
            raise ValueError(f"heartbeat_s must be > 0 seconds, got {heartbeat_s!r}")
        if not stale_s > 2 * heartbeat_s:
            raise ValueError(f"stale_s must exceed twice heartbeat_s ({2 * heartbeat_s} s), "
                             f"got {stale_s!r}: "
                             "a live holder's heartbeat would look stale")
        folder = RunDir(Path(run_dir))
        self.path, self.heartbeat, self.guard_path = (folder.lock, folder.heartbeat,
                                                      folder.lock_guard)
        (self.heartbeat_s, self.stale_s, self.report_s,
         self.on_lost) = heartbeat_s, stale_s, report_s, on_lost
        self.wait = wait
        self.token = secrets.token_hex(8)
        self.beats = 0
        self._outer: RunLock | None = None  # the same thread's lock this one nests in
        self.handle: IO[str] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------ taking it

    def __enter__(self) -> RunLock:
        """Wait until this process is the folder's only executor, taking a stale lock over.

        A lock the same thread already holds is entered again at once (the executor is the same).

        Returns:
            The lock, held.

        Raises:
            LockError: A fresh lock file was locked by someone outside the guard.
            RunBusy: A live holder, when this lock does not wait.
        """
        key = (str(self.path.resolve()), threading.get_ident())
        with _HELD_GUARD:
            outer = _HELD.get(key)
        if outer is not None and outer.handle is not None:
            self._outer = outer
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._acquire()
        with _HELD_GUARD:
            _HELD[key] = self
        return self

    def _acquire(self) -> None:
        """Wait until this process is the folder's only executor (see `__enter__`)."""
        # the heartbeat as last read, and since when it is unchanged
        seen: tuple[str | None, float] | None = None
        began = time.monotonic()
        reported: float | None = None  # when the wait was last reported in the log
        while True:
            with self._guard():
                text, holder = read_heartbeat(self.heartbeat)
                now = time.monotonic()
                if seen is None or seen[0] != text:
                    seen = (text, now)
                stale = now - seen[1] >= self.stale_s or (
                    holder is not None and holder.on_this_machine()
                    and time.time() - holder.time >= self.stale_s)
                handle = self.path.open("a")
                if _try_flock(handle):
                    # flock free: no holder on this machine; one elsewhere is known by its heartbeat
                    # alone (an unreadable heartbeat, torn by a writer that does not replace it
                    # whole, counts as one)
                    if text is None or (holder is not None and holder.on_this_machine()):
                        self._claim(handle, None if reported is None else
                                    f"done waiting for {self.path.parent}: its holder let go "
                                    f"after {now - began:.0f} s")
                        return
                    if stale:
                        who = holder.describe() if holder is not None else "an unreadable heartbeat"
                        self._claim(handle, f"took over {self.path.parent} from {who}, "
                                            f"unchanged for {now - seen[1]:.1f} s "
                                            "(flock does not reach its machine)")
                        return
                    fcntl.flock(handle, fcntl.LOCK_UN)
                elif stale:
                    handle.close()
                    who = (holder.describe() if holder is not None
                           else "a holder without a heartbeat")
                    self._take_over(f"took over {self.path.parent} from {who}, "
                                    f"unchanged for {now - seen[1]:.1f} s "
                                    "(stopped or hung: it still holds flock)")
                    return
                handle.close()
            if not self.wait:
                raise RunBusy(self.path.parent, holder)
            if reported is None or now - reported >= self.report_s:
                reported = now
                who = (holder.describe() if holder is not None
                       else "a holder whose heartbeat is missing or unreadable")
                log.warning("waiting for %s: its run is executing in %s; waited %.0f s, "
                            "taking over only when its "
                            "heartbeat stays unchanged for %g s", self.path.parent, who,
                            now - began, self.stale_s)
            time.sleep(min(0.2, self.heartbeat_s / 2))

    def _claim(self, handle: IO[str], note: str | None = None) -> None:
        self.handle = handle
        self._write_heartbeat()
        if note:
            log.warning(note)
        self._thread = threading.Thread(target=self._beat,
                                        name=f"heartbeat {self.path.parent.name}", daemon=True)
        self._thread.start()

    def _take_over(self, took_over: str) -> None:
        """Take over from a holder that keeps flock: a fresh lock file replaces the one it holds."""
        self.path.unlink(missing_ok=True)
        handle = self.path.open("a")
        if not _try_flock(handle):
            handle.close()
            raise LockError(
                f"{self.path}: a fresh lock file was locked by someone outside the guard")
        self._claim(handle, took_over)

    # ----------------------------------------------------------------------------------- holding it

    def _write_heartbeat(self) -> None:
        holder = Holder(pid=os.getpid(), host=socket.gethostname(), boot=boot_id(),
                        time=time.time(), beat=self.beats, token=self.token)
        write_atomic(self.heartbeat, json.dumps(asdict(holder)).encode())
        self.beats += 1

    def owned(self) -> bool:
        """Test whether this lock is still the folder's.

        It is when its file is still the lock file and the heartbeat names no other holder (a
        heartbeat removed or torn by someone else is only rewritten).

        Returns:
            True while this process holds the lock.
        """
        if self.handle is None:
            return False
        try:
            current, mine = os.stat(self.path), os.fstat(self.handle.fileno())
        except FileNotFoundError:
            return False
        _, holder = read_heartbeat(self.heartbeat)
        return (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev) and (
            holder is None or holder.token == self.token)

    def _beat(self) -> None:
        """Beat every `heartbeat_s` until stopped.

        A beat that fails (a full disk, a shared folder that does not answer: any OSError, in the
        guard, the check or the write) is retried at the next one; only a lock found replaced or a
        heartbeat naming another holder ends this holder.
        """
        while not self._stop.wait(self.heartbeat_s):
            try:
                with self._guard():
                    if self._stop.is_set():
                        return
                    lost = not self.owned()
                    if not lost:
                        self._write_heartbeat()
            except OSError as error:
                log.error("heartbeat of %s not written: %s (retried at the next beat)",
                          self.path.parent, error)
                continue
            if lost:
                try:
                    _, holder = read_heartbeat(self.heartbeat)
                except OSError:
                    holder = None
                log.critical("the lock of %s was taken over (now held by %s) while this process "
                             "(pid %d) was "
                             "stopped or hung: ending it, the run continues there",
                             self.path.parent,
                             holder.describe() if holder else "another executor", os.getpid())
                self.on_lost()
                return

    def __exit__(self, *exc: object) -> None:
        """Stop the heartbeat and let the lock go (its heartbeat removed if still ours).

        A nested lock lets nothing go: its outer one does.
        """
        if self._outer is not None:
            self._outer = None
            return
        with _HELD_GUARD:
            _HELD.pop((str(self.path.resolve()), threading.get_ident()), None)
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.handle is None:
            return
        with self._guard():
            if self.owned():
                self.heartbeat.unlink(missing_ok=True)
            else:
                log.error("the lock of %s was taken over while this process (pid %d) held it: "
                          "another executor "
                          "continues its run", self.path.parent, os.getpid())
            fcntl.flock(self.handle, fcntl.LOCK_UN)
            self.handle.close()
            self.handle = None

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """A short exclusive lock under which every decision about the folder's lock is made."""
        with self.guard_path.open("a") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(guard, fcntl.LOCK_UN)


def still_held(run_dir: Path) -> None:
    """End this process at once if the lock it holds on a run was taken over.

    The heartbeat notices a take-over within `heartbeat_s`; an executor checks here too before
    it writes what a successor would also write (a checkpoint, the run's end), so that a holder
    that was stopped and woke up writes nothing after its successor began. A folder this thread
    holds no lock on is left alone.

    Args:
        run_dir: The run folder.
    """
    key = (str(RunDir(Path(run_dir)).lock.resolve()), threading.get_ident())
    with _HELD_GUARD:
        lock = _HELD.get(key)
    if lock is None or lock.handle is None:
        return
    with lock._guard():
        if lock.owned():
            return
    log.critical("the lock of %s was taken over while this process (pid %d) was stopped: "
                 "ending it before it writes again", lock.path.parent, os.getpid())
    lock.on_lost()


def _try_flock(handle: IO[Any]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
