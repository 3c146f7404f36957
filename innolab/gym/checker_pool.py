"""Checkers started before they are needed, each used for one check, then discarded; their number.

A `CheckerPool` holds up to `size` pre-started checkers of one validator (a local process or a
container, each waiting for its one order: innolab.gym.checker_waiter). A check takes one (or, when
none is ready and none is on its way, starts one itself, as a validator without a pool does), and
when the check has ended, its replacement is started in a background thread, so that it starts
while the agent thinks, not while the next check waits, and never competes with a running check.
No checker is ever given back: what a check did dies with its checker.

The pool's size is a setting: `pool_size` (validators, `open_validator`), else the environment's
INNOLAB_CHECKER_POOL, resolved once when a validator opens; DEFAULT_POOL_SIZE otherwise. It changes
no verdict, only when a checker's start-up is paid, and the memory held meanwhile (the idle
checkers': `make bench` reports it).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import threading
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from innolab.gym import checker_waiter
from innolab.gym.checker_waiter import READY
from innolab.gym.sandbox import SandboxError

__all__ = [
    "READY",
    "START_TIMEOUT_S",
    "CheckerPool",
    "key_line",
    "order_line",
    "pool_size",
    "split_report",
    "waiter_argv",
    "weakly",
]

POOL_VARIABLE = "INNOLAB_CHECKER_POOL"
DEFAULT_POOL_SIZE = 1
MAX_POOL_SIZE = 8
START_TIMEOUT_S = 60.0  # the longest a checker may take to say it is ready
JOIN_TIMEOUT_S = 120.0  # the longest close() waits for a start under way

T = TypeVar("T")


@functools.cache
def _waiter_source() -> str:
    return Path(checker_waiter.__file__).read_text(encoding="utf-8")


def waiter_argv(python: str) -> list[str]:
    """The command of a pre-started checker, which waits for its order (innolab.gym.checker_waiter).

    Args:
        python: The interpreter (innolab's, or the image's `python3`).

    Returns:
        `python -I -c SOURCE`: the waiter's source travels in the command, so a container of any
        image with Python runs it without innolab installed.
    """
    return [python, "-I", "-c", _waiter_source()]


def weakly(method: Callable[..., Any]) -> Callable[..., Any]:
    """A bound method called through a weak reference to its object.

    A validator hands its pool such callables, so that the pool (and its worker) do not keep it
    alive: a validator dropped without close() is freed at once, and its `__del__` lets go of its
    checkers.

    Args:
        method: The bound method.

    Returns:
        A callable that calls it while its object lives.

    Raises:
        SandboxError: (when called) its object is gone.
    """
    ref = weakref.WeakMethod(method)  # type: ignore[arg-type]

    def call(*args: Any) -> Any:
        bound = ref()
        if bound is None:
            raise SandboxError("the validator that owned this checker pool is gone")
        return bound(*args)

    return call


def key_line(key: str) -> bytes:
    """A waiter's key: the first line innolab sends it, once it said READY.

    Never in its environment, which a process of its user could read.

    Args:
        key: The key its order will carry.

    Returns:
        The key's line, newline-terminated.
    """
    return key.encode() + b"\n"


def order_line(key: str, argv: list[str], cwd: str, root: str, digests: dict[str, str],
               files: dict[str, bytes] | None = None, end: str | None = None) -> bytes:
    """A waiter's order (innolab.gym.checker_waiter), one line of JSON.

    Args:
        key: The waiter's key.
        argv: The checker's command line (argv[0] its script).
        cwd: Its working folder.
        root: The folder of `files` and `digests`, relative to cwd or absolute.
        digests: The sha256 of each file it verifies before it runs anything, by name.
        files: The files it writes first, by name (None: none).
        end: The mark it writes last on both its outputs (None: none; its reader waits for the
            end of its streams).

    Returns:
        The order's bytes, newline-terminated.
    """
    order = {"key": key, "argv": argv, "cwd": cwd, "root": root, "digests": digests,
             "files": {name: base64.b64encode(content).decode()
                       for name, content in (files or {}).items()}}
    if end:
        order["end"] = end
    return json.dumps(order).encode() + b"\n"


def split_report(stdout: bytes) -> tuple[list[str] | None, bytes]:
    """A used waiter's report, its first line of output after READY, and the checker's output.

    Args:
        stdout: The waiter's standard output after READY.

    Returns:
        The names of the files whose copy was altered (empty: none; the checker ran), or None
        where there is no report (the waiter failed before it: its output is all there is); and
        the output that follows the report.
    """
    line, _, rest = stdout.partition(b"\n")
    try:
        report = json.loads(line)
        altered = [str(name) for name in report["altered"]]
    except (ValueError, TypeError, KeyError):
        return None, stdout
    return altered, rest


def pool_size(value: object = None) -> int:
    """The pool size in force.

    Args:
        value: The size asked for; None: $INNOLAB_CHECKER_POOL, else DEFAULT_POOL_SIZE.

    Returns:
        A whole number from 0 (no checker started ahead: each check starts its own) to
        MAX_POOL_SIZE.

    Raises:
        ValueError: A value that is not such a number, naming the setting and its rule.
    """
    source = "pool_size"
    if value is None:
        value = os.environ.get(POOL_VARIABLE, "").strip() or DEFAULT_POOL_SIZE
        source = f"pool_size (${POOL_VARIABLE})"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_POOL_SIZE:
        raise ValueError(
            f"{source}: the number of checkers started ahead must be a whole number from 0 to "
            f"{MAX_POOL_SIZE}, got {value!r}"
        )
    return value


class CheckerPool(Generic[T]):
    """Up to `size` checkers started ahead of need, refilled in the background, each used once.

    Args:
        start: Starts one checker (blocking until it waits for its order).
        discard: Ends a checker that will not be used (kills it, frees what it holds).
        size: How many to hold ready (see `pool_size`); 0: none, each check starts its own.
    """

    def __init__(self, start: Callable[[], T], discard: Callable[[T], None], size: int) -> None:
        self._start, self._discard, self.size = start, discard, pool_size(size)
        self._ready: deque[T] = deque()
        self._due = self.size  # replacements to start
        self._starting = 0
        self._worker: threading.Thread | None = None
        self._closed = False
        self._changed = threading.Condition()
        with self._changed:
            self._wake()

    def take(self) -> T:
        """A checker of its own for one check: a ready one, the one on its way, or one started now.

        Returns:
            The checker, never given to another check.

        Raises:
            SandboxError: The pool is closed.
            Exception: Whatever starting a checker raised, where one was started now.
        """
        with self._changed:
            while not self._ready and self._on_its_way() and not self._closed:
                self._changed.wait()
            if self._closed:
                raise SandboxError("the validator is closed: no check can run after close()")
            if self._ready:
                return self._ready.popleft()
        return self._start()

    def used(self) -> None:
        """A check has ended (its checker discarded): start a replacement in the background."""
        with self._changed:
            if len(self._ready) + self._starting + self._due < self.size:
                self._due += 1
            self._wake()

    def ready(self) -> list[T]:
        """The checkers ready now, for a look (e.g. the memory they hold); none is taken."""
        with self._changed:
            return list(self._ready)

    def wait_full(self, timeout_s: float) -> bool:
        """Wait until `size` checkers are ready, or nothing more is on its way.

        Args:
            timeout_s: The longest wait.

        Returns:
            Whether the pool is full.
        """
        with self._changed:
            self._changed.wait_for(
                lambda: self._closed or len(self._ready) >= self.size
                or not (self._due or self._starting), timeout_s)
            return len(self._ready) >= self.size

    def close(self) -> None:
        """Discard the ready checkers and those on their way; no checker is taken after."""
        with self._changed:
            self._closed = True
            left, worker = list(self._ready), self._worker
            self._ready.clear()
            self._changed.notify_all()
        for item in left:
            self._discard(item)
        if worker is not None:  # a start under way ends, and the worker discards what it started
            worker.join(timeout=JOIN_TIMEOUT_S)

    def abandon(self, release: Callable[[T], None]) -> None:
        """Close without waiting: let go of the ready checkers (for a validator dropped unclosed).

        Args:
            release: Lets go of one checker without waiting on anything (closes its input: it
                ends by itself).
        """
        with self._changed:
            self._closed = True
            left = list(self._ready)
            self._ready.clear()
            self._changed.notify_all()
        for item in left:
            release(item)

    def _on_its_way(self) -> bool:
        """Whether a checker is starting, or is due and the worker that starts it alive (lock held).

        The worker may not yet have taken a start that is due (the pool's first, just after it was
        made): a take then waits for it rather than starting one more.
        """
        worker = self._worker
        return bool(self._starting or (self._due and worker is not None and worker.is_alive()))

    def _wake(self) -> None:
        """Start the background worker where replacements are due and none runs (lock held)."""
        if self._due and not self._closed and (self._worker is None
                                               or not self._worker.is_alive()):
            self._worker = threading.Thread(target=self._refill, name="checker-pool",
                                            daemon=True)
            self._worker.start()

    def _refill(self) -> None:
        """Start the replacements due, one after another, then end (no thread waits idle)."""
        while True:
            with self._changed:
                if self._closed or not self._due:
                    if self._worker is threading.current_thread():
                        self._worker = None
                    return
                self._due -= 1
                self._starting += 1
            try:
                item: T | None = self._start()
            except Exception:  # the next check starts its own, and says why it cannot
                item = None
            except BaseException:  # the thread ends: nothing is on its way any more
                with self._changed:
                    self._starting -= 1
                    self._due = 0
                    self._changed.notify_all()
                raise
            with self._changed:
                self._starting -= 1
                keep = item is not None and not self._closed
                if keep:
                    self._ready.append(item)  # type: ignore[arg-type]
                elif item is None:
                    self._due = 0  # no retry loop: the next check's replacement tries again
                self._changed.notify_all()
            if item is not None and not keep:
                # where its validator was dropped unclosed (`weakly` raises), nothing discards it:
                # the checker, let go here, ends by itself
                with contextlib.suppress(SandboxError):
                    self._discard(item)
