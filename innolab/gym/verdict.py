"""A check's verdict: the checker's output read as one, content hashes, an altered copy's."""

from __future__ import annotations

import hashlib
import json
from typing import Any

CANDIDATE = "candidate.json"
OUTPUT_LIMIT = 100_000


def parse_verdict(stdout: str, stderr: str, timed_out: bool, timeout_s: float) -> dict[str, Any]:
    """The checker's last stdout line as a verdict.

    Args:
        stdout: The checker's standard output.
        stderr: Its standard error.
        timed_out: Whether it was killed at its time limit.
        timeout_s: The time limit.

    Returns:
        {"valid", "score", "errors"}; anything but a verdict is an invalid one that says why.
    """
    if timed_out:
        return {"valid": False, "score": None, "errors": [f"validation exceeded {timeout_s:g} s"]}
    try:
        verdict = json.loads(stdout.strip().splitlines()[-1])
        if not isinstance(verdict, dict) or not {"valid", "score", "errors"} <= set(verdict):
            raise ValueError("not a verdict")
    except (IndexError, ValueError):
        tail = (stderr.strip().splitlines() or ["no output"])[-1][:500]
        return {"valid": False, "score": None, "errors": [f"validator failed: {tail}"]}
    valid = verdict["valid"] is True and not verdict["errors"]
    return {
        "valid": valid,
        "score": verdict["score"] if valid else None,
        "errors": list(verdict["errors"]),
    }


def digests(files: dict[str, bytes]) -> dict[str, str]:
    """The sha256 of each file's content."""
    return {name: hashlib.sha256(content).hexdigest() for name, content in files.items()}


def altered_verdict(names: list[str]) -> dict[str, Any]:
    """The invalid verdict of a check whose checker copy was altered (names: the altered files)."""
    altered = ", ".join(sorted(names))
    return {
        "valid": False,
        "score": None,
        "errors": [
            f"the pristine checker's copy was altered before use ({altered}); the check did not run"
        ],
    }
