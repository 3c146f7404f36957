"""Workspace checkpoints that cost what the agent changed: a run's content-addressed file store.

A step's checkpoint is a manifest (`checkpoint/workspace-<step>.json`: every folder and regular
file of the workspace with its mode, size, modification time and sha256) over a store of file
contents named by their sha256 (`checkpoint/blobs/`). A file whose size, modification time,
mode and, where the sandbox's listing gives them (the local and Docker sandboxes' both do),
status-change time (ctime) and inode are those of the previous manifest is not read again (where
the sandbox can list its workspace: `listing`). The agent can set a file's modification time
(`touch -r`) but not its ctime, which any write moves, so a same-size rewrite with its old mtime
put back is still read; a content already stored is not written again, so a large file the
agent wrote once is copied once, not at every later step; a task's data folder lies outside the
workspace (mounted beside it) and never enters a checkpoint at all. Contents that no manifest
needs any more are removed once the new manifest is in place. Links and special files hold no
state (as in `Sandbox.snapshot`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from innolab.gym.sandbox import Sandbox, safe_members

MANIFEST_FORMAT = 1
CHUNK = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One folder or regular file of a checkpointed workspace.

    Attributes:
        path: Its workspace-relative path.
        kind: "dir" or "file".
        mode: Its permission bits.
        size: Its size in bytes (0 for a folder).
        mtime_ns: Its modification time in nanoseconds.
        sha256: Its content's hash (None for a folder).
        ctime_ns: Its status-change time in nanoseconds (0: the listing gives none).
        inode: Its inode number (0: the listing gives none).
    """

    path: str
    kind: str
    mode: int
    size: int = 0
    mtime_ns: int = 0
    sha256: str | None = None
    ctime_ns: int = 0
    inode: int = 0


@dataclass(frozen=True)
class Saved:
    """What one checkpoint wrote.

    Attributes:
        manifest: The manifest's file.
        entries: The workspace's folders and files.
        new_bytes: The bytes of contents written to the store by this checkpoint.
        read_files: How many files were read from the sandbox (the others were unchanged).
    """

    manifest: Path
    entries: list[Entry]
    new_bytes: int
    read_files: int


def _store_stream(store: Path, chunks: Iterator[bytes]) -> tuple[str, int, int]:
    """Hash a content while writing it to the store once: (sha256, size, bytes newly written)."""
    store.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    temporary = store / f".incoming-{os.getpid()}"
    with temporary.open("wb") as handle:
        for chunk in chunks:
            digest.update(chunk)
            handle.write(chunk)
            size += len(chunk)
    name = digest.hexdigest()
    if (store / name).is_file():
        temporary.unlink()
        return name, size, 0
    os.replace(temporary, store / name)
    return name, size, size


def _from_tar(sandbox: Sandbox, store: Path) -> tuple[list[Entry], int, int]:
    """The workspace through `snapshot()` (a sandbox that cannot list): every file read."""
    entries, written, read = [], 0, 0
    with tarfile.open(fileobj=io.BytesIO(sandbox.snapshot())) as archive:
        for member in safe_members(archive):
            if member.isdir():
                entries.append(Entry(member.name, "dir", member.mode & 0o7777))
                continue
            handle = archive.extractfile(member)
            data = handle.read() if handle else b""
            name, size, new = _store_stream(store, iter([data]))
            written, read = written + new, read + 1
            entries.append(Entry(member.name, "file", member.mode & 0o7777, size,
                                 int(member.mtime * 1e9), name))
    return entries, written, read


def save(sandbox: Sandbox, checkpoint_dir: Path, step: int,
         previous: list[Entry] | None) -> Saved:
    """Checkpoint the workspace: a manifest, and the store holding only what is new.

    Args:
        sandbox: The run's sandbox.
        checkpoint_dir: The run's checkpoint folder.
        step: The step checkpointed (names the manifest).
        previous: The previous checkpoint's entries (None: none; every file is read).

    Returns:
        What was written.
    """
    store = checkpoint_dir / "blobs"
    listed = sandbox.listing()
    if listed is None:
        entries, written, read = _from_tar(sandbox, store)
    else:
        known = {e.path: e for e in previous or [] if e.kind == "file"}
        entries, written, read = [], 0, 0
        for path, (kind, mode, size, mtime_ns, *more) in sorted(listed.items()):
            if kind == "dir":
                entries.append(Entry(path, "dir", mode))
                continue
            ctime_ns, inode = (int(more[0]), int(more[1])) if len(more) >= 2 else (0, 0)
            old = known.get(path)
            if (old is not None
                    and ((old.size, old.mtime_ns, old.mode, old.ctime_ns, old.inode)
                         == (size, mtime_ns, mode, ctime_ns, inode))
                    and old.sha256 is not None and (store / old.sha256).is_file()):
                entries.append(old)
                continue
            try:
                name, size, new = _store_stream(store, sandbox.stream_file(path))
            except (OSError, RuntimeError):  # gone or replaced meanwhile: no state
                continue
            written, read = written + new, read + 1
            entries.append(Entry(path, "file", mode, size, mtime_ns, name, ctime_ns, inode))
    manifest = checkpoint_dir / f"workspace-{step:05d}.json"
    payload = {"format": MANIFEST_FORMAT, "entries": [asdict(e) for e in entries]}
    temporary = manifest.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(temporary, manifest)
    return Saved(manifest, entries, written, read)


def load_entries(manifest: Path) -> list[Entry]:
    """A manifest's entries.

    Args:
        manifest: The manifest file.

    Returns:
        Its entries.

    Raises:
        ValueError: Not a manifest of a known format.
    """
    data: dict[str, Any] = json.loads(manifest.read_text(encoding="utf-8"))
    if data.get("format") != MANIFEST_FORMAT:
        raise ValueError(f"{manifest.name}: not a workspace manifest of format {MANIFEST_FORMAT}")
    return [Entry(**e) for e in data["entries"]]


def as_tar(checkpoint_dir: Path, entries: list[Entry]) -> bytes:
    """The checkpointed workspace as a tar archive (what `Sandbox.restore` takes).

    Args:
        checkpoint_dir: The run's checkpoint folder.
        entries: The manifest's entries.

    Returns:
        The archive's bytes.

    Raises:
        FileNotFoundError: A content the manifest names is missing from the store.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for entry in entries:
            info = tarfile.TarInfo(entry.path)
            info.mode, info.mtime = entry.mode, entry.mtime_ns / 1e9
            if entry.kind == "dir":
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
                continue
            blob = checkpoint_dir / "blobs" / str(entry.sha256)
            info.size = blob.stat().st_size
            with blob.open("rb") as handle:
                archive.addfile(info, handle)
    return buffer.getvalue()


def prune(checkpoint_dir: Path, keep: Path) -> None:
    """Remove older manifests and the contents only they needed.

    Args:
        checkpoint_dir: The run's checkpoint folder.
        keep: The manifest now in force.
    """
    needed = {e.sha256 for e in load_entries(keep) if e.sha256}
    for old in checkpoint_dir.glob("workspace-*"):
        if old != keep and old.suffix in (".json", ".tar"):
            old.unlink(missing_ok=True)
    store = checkpoint_dir / "blobs"
    if store.is_dir():
        for blob in store.iterdir():
            if blob.name not in needed:
                blob.unlink(missing_ok=True)
