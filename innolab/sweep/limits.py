"""Endpoint limits shared by every worker of a sweep's Dask cluster (slots and pace on Dask)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from innolab.llm import gate as gates
from innolab.llm.gate import IDLE, Gate, Pace
from innolab.llm.settings import LLMSettings


class DaskGate(Gate):
    """A gate whose slots and pace live on the Dask scheduler: every worker shares them.

    The slots are a `distributed.Semaphore` (its leases outlive no dead worker: the scheduler
    takes them back after the lease timeout); the pace is an entry of the scheduler's metadata
    (`Client.set_metadata`), read and changed under a `distributed.Lock`. Their names hold the
    endpoint and the limits: runs stating the same limits for the same endpoint and model share
    them (different limits for one endpoint are held apart).
    """

    def __init__(self, key: str, max_concurrent_requests: int | None = None,
                 requests_per_minute: int | None = None,
                 tokens_per_minute: int | None = None) -> None:
        """Make (or join) the cluster's gate for an endpoint; call inside a worker or a client.

        Args:
            key: The endpoint (innolab.llm.gate.endpoint_key).
            max_concurrent_requests: The cap on requests in flight, or None.
            requests_per_minute: The limit on requests per minute, or None.
            tokens_per_minute: The limit on tokens per minute, or None.
        """
        from distributed import Lock, Semaphore, get_client

        super().__init__(max_concurrent_requests, requests_per_minute, tokens_per_minute)
        name = (f"innolab-llm:{key}:c{max_concurrent_requests}:r{requests_per_minute}"
                f":t{tokens_per_minute}")
        self.name = name
        self._slots = (Semaphore(max_leases=max_concurrent_requests, name=f"{name}:slots")
                       if max_concurrent_requests else None)
        self._lock = Lock(name=f"{name}:pace-lock")
        self._client = get_client()
        self._key = ["innolab-llm-pace", name]  # in the scheduler's metadata

    def _take(self, timeout: float | None) -> bool:
        assert self._slots is not None
        return bool(self._slots.acquire(timeout=timeout))

    def _give(self) -> None:
        assert self._slots is not None
        self._slots.release()

    def _update(self, change: Callable[[Pace], tuple[Pace, float]]) -> float:
        with self._lock:
            pace = self._client.get_metadata(self._key, None) or dict(IDLE)
            new, wait = change(pace)
            if new != pace:
                self._client.set_metadata(self._key, new)
        return wait


_shared: dict[tuple[str, str, tuple[tuple[str, int], ...]], DaskGate] = {}
_shared_lock = threading.Lock()


def cluster_gate(settings: LLMSettings) -> DaskGate:
    """This process's handle on the cluster's gate for the settings' endpoint and limits.

    One per scheduler, endpoint and limits, kept for the life of the process: every run of the
    process shares it, and its leases are refreshed for as long as a request holds one.

    Args:
        settings: The model settings (with limits); call inside a Dask worker.

    Returns:
        The gate.
    """
    from distributed import get_worker

    limits = settings.limits()
    name = (get_worker().scheduler.address, gates.endpoint_key(settings),
            tuple(sorted(limits.items())))
    with _shared_lock:
        if name not in _shared:
            _shared[name] = DaskGate(name[1], **limits)
        return _shared[name]


def in_worker() -> bool:
    """Whether this code runs in a Dask worker's task.

    Returns:
        True inside a worker.
    """
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def _settings(llm: dict[str, Any] | LLMSettings | None) -> LLMSettings | None:
    if llm is None or isinstance(llm, LLMSettings):
        return llm
    return LLMSettings.model_validate(llm)


@contextlib.contextmanager
def activate(llm: dict[str, Any] | LLMSettings | None,
             run: str | None = None) -> Iterator[Gate | None]:
    """Make every LLM request of this process to the backbone honour its limits, while inside.

    Inside a Dask worker the limits (`max_concurrent_requests`, `requests_per_minute`,
    `tokens_per_minute`) are held jointly with every worker of the cluster (a DaskGate); elsewhere
    by this process alone (its LocalGate, which a client uses by itself too). Settings without
    limits change nothing.

    Args:
        llm: The configuration's model settings (config.json's `llm`), or None.
        run: A run id the requests made in this thread carry (header X-Innolab-Run), or None.

    Yields:
        The gate in force, or None.

    Raises:
        ValueError: Settings that break their rules (naming the field).
    """
    settings = _settings(llm)
    limits = settings.limits() if settings is not None else {}
    with gates.labelled(run):
        if settings is None or not limits:
            yield None
            return
        key = gates.endpoint_key(settings)
        if not in_worker():
            local = gates.local_gate(settings)
            assert local is not None  # the settings state limits
            with gates.installed(key, local):
                yield local
            return
        with gates.installed(key, cluster_gate(settings)) as shared:
            yield shared
