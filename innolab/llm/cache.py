"""Content-addressed response cache (sqlite) keyed by the whole request: replays make no call."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


def request_key(request: dict[str, Any]) -> str:
    """Return the cache key of a request.

    Args:
        request: The request's JSON body.

    Returns:
        The sha256 (hex) of the request as canonical JSON (sorted keys, no spaces).
    """
    return hashlib.sha256(
        json.dumps(request, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class ResponseCache:
    """Responses by their request's key, in one sqlite file; safe to share between threads.

    Attributes:
        path: The sqlite file.
        hits: How many `get` calls found a response.
        misses: How many `get` calls found none.
    """

    def __init__(self, path: Path, read_only: bool = False) -> None:
        """Open (or create) a cache.

        Args:
            path: The sqlite file; its folder is created unless `read_only`.
            read_only: Open an existing cache to read it (a viewer), changing nothing in its folder.
        """
        self.path = Path(path)
        self._lock = threading.Lock()
        if read_only:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                       check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                             "request TEXT, response TEXT)")
        self.hits = 0
        self.misses = 0

    def get(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Look up the response to a request, counting a hit or a miss.

        Args:
            request: The request's JSON body.

        Returns:
            The cached response, or None.
        """
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?",
                                   (request_key(request),)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        """Store the response to a request, replacing any earlier one.

        Args:
            request: The request's JSON body.
            response: The response's JSON body.
        """
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?)",
                             (request_key(request), json.dumps(request, sort_keys=True),
                              json.dumps(response)))

    def entry(self, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Return the request and response stored under a key.

        Args:
            key: A request's key (the `key` an llm_call event records).

        Returns:
            The request and the response, or None when the key is not stored.
        """
        with self._lock:
            row = self._db.execute("SELECT request, response FROM responses WHERE key = ?",
                                   (key,)).fetchone()
        return None if row is None else (json.loads(row[0]), json.loads(row[1]))

    def __len__(self) -> int:
        """Return the number of stored responses."""
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()
