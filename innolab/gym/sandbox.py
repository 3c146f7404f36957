"""The sandbox protocol (exec, files, snapshot/restore, close) and what every back end shares."""

from __future__ import annotations

import io
import posixpath
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

MAX_FILE_BYTES = 20_000_000


class SandboxError(RuntimeError):
    """A sandbox operation that cannot be done (a path leaving the workspace, no engine, a link)."""


@dataclass(frozen=True)
class ExecResult:
    """What a command returned.

    Attributes:
        returncode: The command's exit status.
        stdout: Its standard output, decoded.
        stderr: Its standard error, decoded.
        timed_out: Whether it was killed at its time limit.
        duration_s: Its wall time.
    """

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = 0.0


@runtime_checkable
class Sandbox(Protocol):
    """Where an agent's commands run; paths are relative to the workspace (absolute ones refused).

    Optional abilities have a default here, which a back end that subclasses `Sandbox` inherits and
    may override: `write_files` (many files in one call; by default one `write_file` each),
    `read_capture` (what its Python processes ran; by default nothing), `listing` and
    `stream_file` (what a checkpoint reads of changed files only; by default none, and whole
    files), `client` and `image` (None for a sandbox without a container engine, as the local
    one).

    Attributes:
        runtime: The back end's name ("local", "docker").
        tmp_dir: The sandbox's own temporary folder as its commands see it (removed on close).
        client: The container engine's client (the Docker SDK's); None without an engine.
        image: The container image its commands run in; None outside a container.
    """

    runtime: str
    tmp_dir: str
    client: Any = None
    image: str | None = None

    def exec(self, command: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        """Run a command in the workspace.

        Args:
            command: An argument list, or a string run by bash.
            timeout_s: The time limit; the command and its children are killed after it.

        Returns:
            Its exit status, outputs, whether it timed out and its wall time.
        """
        ...

    def read_file(self, path: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
        """A regular file's content.

        Args:
            path: The workspace-relative path.
            max_bytes: The largest file read.

        Returns:
            The content.

        Raises:
            SandboxError: A path outside the workspace, a missing file, a link, or a larger file.
        """
        ...

    def write_file(self, path: str, content: bytes) -> None:
        """Write a file, replacing any file or link there.

        Args:
            path: The workspace-relative path.
            content: The content.

        Raises:
            SandboxError: A path outside the workspace.
        """
        ...

    def write_files(self, files: dict[str, bytes]) -> None:
        """Write many files; by default one by one.

        Args:
            files: The contents by workspace-relative path.

        Raises:
            SandboxError: A path outside the workspace, or a file that cannot be written.
        """
        for name, content in files.items():
            self.write_file(name, content)

    def read_capture(self, offset: int = 0) -> bytes:
        """The capture log of the sandbox's Python processes (innolab.gym.capture) from a byte on.

        By default none: a back end without the capture hook logs nothing.

        Args:
            offset: The first byte wanted.

        Returns:
            The log's bytes from `offset` on.
        """
        return b""

    def listing(self) -> dict[str, tuple[int | str, ...]] | None:
        """The workspace's folders and regular files without reading them; None: cannot list.

        By default None: a checkpoint then reads the whole workspace through `snapshot`.

        Returns:
            (kind "dir" or "file", permission bits, size, modification time in ns), optionally
            followed for a file by its status-change time in ns and its inode (a checkpoint then
            compares them too), by workspace-relative path, or None.
        """
        return None

    def stream_file(self, path: str, chunk: int = 1 << 20) -> Iterator[bytes]:
        """A regular file's content in chunks; by default `read_file`'s, whole.

        Args:
            path: The workspace-relative path.
            chunk: The chunk size.

        Yields:
            The content's chunks.
        """
        yield self.read_file(path)

    def snapshot(self) -> bytes:
        """The workspace as a tar archive (what a checkpoint keeps)."""
        ...

    def restore(self, snapshot: bytes) -> None:
        """Replace the workspace by a snapshot's regular files and folders (links never cross)."""
        ...

    def close(self) -> None:
        """Remove the sandbox and everything it holds; its processes are killed."""
        ...


def workspace_path(path: str) -> str:
    """Normalise a workspace-relative path.

    Args:
        path: A path relative to the workspace.

    Returns:
        The normalised path.

    Raises:
        SandboxError: An empty or absolute path, or one that leaves the workspace.
    """
    if not isinstance(path, str) or not path or "\x00" in path:
        raise SandboxError(f"path must be a non-empty string, got {path!r}")
    if path.startswith("/"):
        raise SandboxError(f"path {path!r} must be relative to the workspace")
    normal = posixpath.normpath(path)
    if normal == ".." or normal.startswith("../"):
        raise SandboxError(f"path {path!r} leaves the workspace")
    return normal


def safe_members(archive: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """The members of an archive that may be extracted: links and devices never cross a boundary.

    Args:
        archive: An open tar archive.

    Returns:
        Its regular files and folders inside its root, their names normalised.
    """
    members = []
    for member in archive.getmembers():
        name = posixpath.normpath(member.name)  # "./.git/x" -> ".git/x" (a dot file keeps its dot)
        if name == "." and member.isdir():
            continue
        if name.startswith("..") or name.startswith("/"):
            continue
        if member.isfile() or member.isdir():
            member.name = name
            members.append(member)
    return members


def tar_files(
    files: dict[str, bytes], uid: int = 1000, gid: int = 1000, with_folders: bool = False
) -> bytes:
    """A tar archive of files, owned by the sandbox user.

    Args:
        files: The contents by workspace-relative path.
        uid: The owner's user id.
        gid: The owner's group id.
        with_folders: Whether each parent folder gets its own entry (so that none is made by the
            extracting side with another owner).

    Returns:
        The archive's bytes.

    Raises:
        SandboxError: A path outside the workspace.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        if with_folders:
            folders = {posixpath.dirname(workspace_path(name)) for name in files}
            folders = {f for folder in folders for f in _parents(folder)}
            for folder in sorted(folders):
                info = tarfile.TarInfo(folder)
                info.type, info.uid, info.gid, info.mode = tarfile.DIRTYPE, uid, gid, 0o755
                archive.addfile(info)
        for name, content in sorted(files.items()):
            info = tarfile.TarInfo(workspace_path(name))
            info.size, info.uid, info.gid, info.mode = len(content), uid, gid, 0o644
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def _parents(folder: str) -> list[str]:
    """A relative folder and every folder above it ("" excluded)."""
    parts = [p for p in folder.split("/") if p]
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
