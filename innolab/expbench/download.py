"""`innolab expbench download`: upstream's EXP-Bench data at the pinned commit, checked by sha256.

Each file is checked against the sha256 list innolab ships (data/expbench/sha256.txt); the data
themselves are never part of innolab.
"""

from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

from innolab.paths import data_dir

PINNED_COMMIT = "8309def9e66881fbb09471eacae19b8421914b87"
BASE_URL = (f"https://raw.githubusercontent.com/Just-Curieous/Curie/{PINNED_COMMIT}"
            "/benchmark/exp_bench")


class DownloadError(RuntimeError):
    """A file that could not be fetched or whose checksum differs; the message names it."""


def manifest(path: Path | None = None) -> dict[str, str]:
    """Read the shipped checksum list.

    Args:
        path: The list ("<sha256> <relative path>" per line); None takes the shipped one.

    Returns:
        Each file's sha256 by its relative path.
    """
    path = path or data_dir() / "expbench" / "sha256.txt"
    entries = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            entries[name.strip()] = digest
    return entries


def download(out: str | Path, base_url: str = BASE_URL, checksums: dict[str, str] | None = None,
             timeout_s: float = 60.0) -> Path:
    """Fetch every listed file into `out` (upstream's layout) and verify each.

    A file already there with the right checksum is kept; nothing unverified is left behind.

    Args:
        out: The data folder.
        base_url: Where the files are fetched from.
        checksums: Each file's sha256 by its relative path; None takes the shipped list.
        timeout_s: Each fetch's timeout.

    Returns:
        `out`.

    Raises:
        DownloadError: A file could not be fetched or its checksum differs.
    """
    out = Path(out)
    for name, digest in sorted((checksums or manifest()).items()):
        target = out / name
        if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == digest:
            continue
        url = f"{base_url.rstrip('/')}/{name}"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as response:
                content = response.read()
        except OSError as error:
            raise DownloadError(f"{name}: could not fetch {url}: {error}") from None
        if hashlib.sha256(content).hexdigest() != digest:
            raise DownloadError(f"{name}: sha256 {hashlib.sha256(content).hexdigest()} differs "
                                f"from the pinned {digest}")
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(target.suffix + ".part")
        temporary.write_bytes(content)
        temporary.replace(target)
    return out
