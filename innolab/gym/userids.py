"""Unused user ids for an agent's processes: a local sandbox's commands, a framework's process.

Where innolab runs as root, what an agent runs on the host runs as a user id of its own, chosen
unused (no account, no process, no group holds it, nor an unreaped sandbox's owner mark), so that it
cannot write innolab's files, read its processes' memory or environment, and so that every process
it leaves behind can be found by its user id and killed (innolab.gym.leftovers).
"""

from __future__ import annotations

import grp
import pwd
import secrets
import tempfile
from pathlib import Path

from innolab.gym.leftovers import read_mark, sandbox_pids
from innolab.gym.sandbox import SandboxError

# above the ids of accounts and of the usual subordinate-id ranges
AGENT_IDS = (2**28, 2**28 + 2**24)
FALLBACK_IDS = (60000, 65534)


def _mapped(path: str) -> list[tuple[int, int]]:
    """The id ranges [first, end) that this process's user namespace maps."""
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return [(0, 2**32 - 1)]
    return [
        (int(a), int(a) + int(n)) for a, _, n in (line.split() for line in lines if line.strip())
    ]


def _taken(candidate: int) -> bool:
    """Whether an id is taken: an account's or a group's, a process's, or an unreaped sandbox's."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(candidate)
            return True
        except KeyError:
            pass
    marks = (read_mark(folder) for folder in Path(tempfile.gettempdir()).glob("innolab-ws-*"))
    return bool(sandbox_pids(candidate, None)) or any(
        m and m.get("uid") == candidate for m in marks
    )


def agent_id() -> int:
    """An unused user id (also the group id) for one sandbox's commands, mapped in this namespace.

    Returns:
        The id.

    Raises:
        SandboxError: No unused id is mapped.
    """
    maps = [_mapped("/proc/self/uid_map"), _mapped("/proc/self/gid_map")]
    rng = secrets.SystemRandom()
    for first, end in (AGENT_IDS, FALLBACK_IDS):
        spans = [(max(first, a), min(end, b)) for a, b in maps[0] if min(end, b) > max(first, a)]
        spans = [(a, b) for a, b in spans if any(c <= a and b <= d for c, d in maps[1])]
        for _ in range(64 if spans else 0):
            low, high = rng.choice(spans)
            candidate = rng.randrange(low, high)
            if not _taken(candidate):
                return candidate
    raise SandboxError(
        "no unused user id is mapped in this user namespace for the sandbox's commands"
    )
