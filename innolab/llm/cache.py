"""Content-addressed response cache (sqlite): the key is a hash of the whole request, so a replay repeats no call."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any


def request_key(request: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class ResponseCache:
    def __init__(self, path: Path, read_only: bool = False) -> None:
        """`read_only`: open an existing cache to read it (a viewer), changing nothing in its folder."""
        self.path = Path(path)
        self._lock = threading.Lock()
        if read_only:
            self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, request TEXT, "
                             "response TEXT)")
        self.hits = 0
        self.misses = 0

    def get(self, request: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (request_key(request),)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def put(self, request: dict[str, Any], response: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?)",
                             (request_key(request), json.dumps(request, sort_keys=True), json.dumps(response)))

    def entry(self, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The request and response stored under a key (the `key` an llm_call event records)."""
        with self._lock:
            row = self._db.execute("SELECT request, response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else (json.loads(row[0]), json.loads(row[1]))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._db.close()
