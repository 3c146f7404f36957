"""The request gate: the endpoint limits every LLM request of a process honours, by endpoint."""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from innolab.llm.settings import LLMSettings

# The state of a pace: when the next request may start, by requests and by tokens, and until when
# every request holds (an endpoint's Retry-After). Seconds since the epoch: it is shared between
# processes (and machines, whose clocks agree as NTP keeps them).
Pace = dict[str, float]
IDLE: Pace = {"next_request": 0.0, "next_token": 0.0, "until": 0.0}


class GateTimeout(TimeoutError):
    """A request's deadline came before the gate let it through."""


def endpoint_key(settings: LLMSettings) -> str:
    """Name an endpoint and model: the requests that share limits.

    Args:
        settings: The model settings.

    Returns:
        "<base_url or 'embedded'>|<model>" (a URL holds no key: keys travel in headers).
    """
    return f"{settings.base_url or 'embedded'}|{settings.model}"


def admit(pace: Pace, now: float, tokens: int, requests_per_minute: int | None,
          tokens_per_minute: int | None) -> tuple[Pace, float]:
    """Admit one request under the pace, or say how long it must wait (GCRA without a burst).

    Requests are spaced evenly: one every 60 / requests_per_minute seconds, and a request of n
    tokens keeps the next one n * 60 / tokens_per_minute seconds away. So no 60 seconds ever hold
    more than requests_per_minute requests, nor more than tokens_per_minute tokens beyond one
    request's. A request larger than a minute's tokens is admitted alone.

    Args:
        pace: The pace's state (IDLE at first).
        now: The time, in seconds since the epoch.
        tokens: The request's tokens (its estimate: prompt and reply cap).
        requests_per_minute: The limit on requests, or None.
        tokens_per_minute: The limit on tokens, or None.

    Returns:
        The new state and 0.0 when admitted; the state unchanged and the seconds to wait when not.
    """
    ready = max(pace["next_request"], pace["next_token"], pace["until"])
    if ready > now:
        return pace, ready - now
    new = dict(pace)
    if requests_per_minute:
        new["next_request"] = now + 60.0 / requests_per_minute
    if tokens_per_minute:
        new["next_token"] = now + max(tokens, 0) * 60.0 / tokens_per_minute
    return new, 0.0


class Gate:
    """Limits on the requests to one endpoint: a slot of a concurrency cap and a pace.

    Subclasses say where the slots and the pace live (this process, or a Dask cluster): `_take`,
    `_give` and `_update`.

    Attributes:
        max_concurrent_requests: The cap on requests in flight, or None.
        requests_per_minute: The limit on requests per minute, or None.
        tokens_per_minute: The limit on tokens per minute, or None.
    """

    def __init__(self, max_concurrent_requests: int | None = None,
                 requests_per_minute: int | None = None,
                 tokens_per_minute: int | None = None) -> None:
        """Make a gate.

        Args:
            max_concurrent_requests: The cap on requests in flight, or None.
            requests_per_minute: The limit on requests per minute, or None.
            tokens_per_minute: The limit on tokens per minute, or None.
        """
        self.max_concurrent_requests = max_concurrent_requests
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute

    def _take(self, timeout: float | None) -> bool:
        raise NotImplementedError

    def _give(self) -> None:
        raise NotImplementedError

    def _update(self, change: Callable[[Pace], tuple[Pace, float]]) -> float:
        raise NotImplementedError

    @contextlib.contextmanager
    def slot(self, tokens: int, deadline: float | None = None) -> Iterator[float]:
        """Hold a slot for one request, once the pace admits it.

        Args:
            tokens: The request's estimated tokens.
            deadline: time.monotonic() after which it waits no longer, or None.

        Yields:
            The seconds it waited.

        Raises:
            GateTimeout: The deadline came first (raised once it has come).
        """
        start = time.monotonic()

        def left() -> float | None:
            return None if deadline is None else deadline - time.monotonic()

        if self.max_concurrent_requests and not self._take(
                None if deadline is None else max(left() or 0.0, 0.0)):
            raise GateTimeout("no request slot came free before the deadline")
        try:
            while True:
                wait = self._update(lambda pace: admit(pace, time.time(), tokens,
                                                       self.requests_per_minute,
                                                       self.tokens_per_minute))
                if wait <= 0:
                    break
                remaining = left()
                if remaining is not None and remaining < wait:
                    # waited to the deadline (the run's budget ends it, not a failure of the call)
                    time.sleep(max(remaining, 0.0))
                    raise GateTimeout("the endpoint's pace admits no request before the deadline")
                time.sleep(wait)
            yield time.monotonic() - start
        finally:
            if self.max_concurrent_requests:
                self._give()

    def hold(self, seconds: float) -> None:
        """Hold every request through this gate for `seconds` (an endpoint's Retry-After).

        Args:
            seconds: How long from now.
        """
        until = time.time() + seconds

        def later(pace: Pace) -> tuple[Pace, float]:
            return {**pace, "until": max(pace["until"], until)}, 0.0

        self._update(later)


class LocalGate(Gate):
    """A gate whose slots and pace live in this process (its threads share them)."""

    def __init__(self, max_concurrent_requests: int | None = None,
                 requests_per_minute: int | None = None,
                 tokens_per_minute: int | None = None) -> None:
        """Make a process-local gate.

        Args:
            max_concurrent_requests: The cap on requests in flight, or None.
            requests_per_minute: The limit on requests per minute, or None.
            tokens_per_minute: The limit on tokens per minute, or None.
        """
        super().__init__(max_concurrent_requests, requests_per_minute, tokens_per_minute)
        self._slots = threading.BoundedSemaphore(max_concurrent_requests or 1)
        self._lock = threading.Lock()
        self._pace: Pace = dict(IDLE)

    def _take(self, timeout: float | None) -> bool:
        return self._slots.acquire(timeout=timeout)

    def _give(self) -> None:
        self._slots.release()

    def _update(self, change: Callable[[Pace], tuple[Pace, float]]) -> float:
        with self._lock:
            self._pace, wait = change(self._pace)
        return wait


_installed: dict[str, list[Gate]] = {}
_local: dict[tuple[str, tuple[tuple[str, int], ...]], LocalGate] = {}
_registry_lock = threading.Lock()
_run: contextvars.ContextVar[str | None] = contextvars.ContextVar("innolab_run", default=None)


def local_gate(settings: LLMSettings) -> LocalGate | None:
    """The process's own gate for the settings' endpoint and limits (one per both).

    Args:
        settings: The model settings.

    Returns:
        The gate, or None when the settings state no limit.
    """
    limits = settings.limits()
    if not limits:
        return None
    key = (endpoint_key(settings), tuple(sorted(limits.items())))
    with _registry_lock:
        if key not in _local:
            _local[key] = LocalGate(**limits)
        return _local[key]


@contextlib.contextmanager
def installed(key: str, gate: Gate) -> Iterator[Gate]:
    """Route every request of the process to the endpoint `key` through `gate`, while inside.

    Args:
        key: The endpoint (endpoint_key).
        gate: The gate; the last installed (and not yet left) wins.

    Yields:
        The gate.
    """
    with _registry_lock:
        _installed.setdefault(key, []).append(gate)
    try:
        yield gate
    finally:
        with _registry_lock:
            _installed[key].remove(gate)


def gate_for(settings: LLMSettings) -> Gate | None:
    """The gate a request with these settings passes.

    Args:
        settings: The client's settings.

    Returns:
        The gate installed for the endpoint, else the process's own for the settings' limits, else
        None (no limit).
    """
    with _registry_lock:
        gates = _installed.get(endpoint_key(settings))
        if gates:
            return gates[-1]
    return local_gate(settings)


@contextlib.contextmanager
def labelled(run: str | None) -> Iterator[None]:
    """Label the requests made inside (in this thread) with a run id (sent as X-Innolab-Run).

    A process that makes a single run's requests may instead set RUN_VAR in its environment.

    Args:
        run: The run's id, or None for no label.

    Yields:
        Nothing.
    """
    token = _run.set(run)
    try:
        yield
    finally:
        _run.reset(token)


RUN_VAR = "INNOLAB_RUN_ID"  # a process that makes one run's requests (a sweep's kernel) says so


def current_run() -> str | None:
    """The run id the requests of this thread carry: its label, else the process's RUN_VAR.

    Returns:
        The run id, or None.
    """
    return _run.get() or os.environ.get(RUN_VAR) or None


def describe(gate: Gate | None) -> dict[str, Any]:
    """The gate's kind and limits, for a log or a test.

    Args:
        gate: The gate, or None.

    Returns:
        {"kind": class name or None, and the limits}.
    """
    if gate is None:
        return {"kind": None}
    return {"kind": type(gate).__name__,
            "max_concurrent_requests": gate.max_concurrent_requests,
            "requests_per_minute": gate.requests_per_minute,
            "tokens_per_minute": gate.tokens_per_minute}
