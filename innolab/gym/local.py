"""Local sandbox: a subprocess in a workspace folder, for trusted use and demos; NOT isolation.

Where innolab runs as root, the agent's commands run as an unprivileged user id of their own (one
per sandbox, chosen unused: no account, no process, no group holds it), so that they cannot write
innolab's files, its run folder or the pristine validator's folder (`innolab.gym.validator`), and so
that every process they leave behind can be found by its user id and killed. The workspace and the
sandbox's temporary folder belong to that id; the file tools walk the workspace without following
links (a link planted by the agent never redirects innolab's own reads and writes). Its `python3` is
the system's (first on /usr/local/bin:/usr/bin:/bin; innolab's own interpreter may live where an
unprivileged user cannot read, as under a private home folder), like the Docker image's, which has
numpy and scipy (CI installs them for the system's Python too). Still not isolation: the commands
can read whatever is readable by all (innolab's source and the tasks' hidden parts among it, where
installed so), use the network, and take the machine's CPU and memory.

Where innolab does not run as root, the commands run as innolab's own user: they can write whatever
that user can, kill its processes and race its checks. The pristine validator then still copies its
checker afresh and verifies its content hash before each check, which defeats tampering between
checks but not a process that rewrites the copy within the moment between the check of its hash and
its use; and the agent's processes are found by a marker in their environment, which a process that
clears its environment loses. Use the Docker runtime (or run innolab as root) for agents that are
not trusted.

A warden process (innolab.gym.leftovers) kills the sandbox's processes and removes its folders when
the run that opened it ends, however it ends.

The commands' Python processes log what they run (innolab.gym.capture): the hook lies in a folder of
the sandbox's own (on their PYTHONPATH), its log beside it; where the commands run as their own
user, they can append to the log but neither read it nor change the hook.
"""

from __future__ import annotations

import errno
import io
import os
import secrets
import shutil
import stat
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from innolab.gym.capture import SITE_FILE, site_source
from innolab.gym.executor import Executor, ProcessStream, server_argv
from innolab.gym.leftovers import (
    MARKER_VARIABLE,
    Warden,
    kill_sandbox,
    mark,
    remove_tree,
)
from innolab.gym.sandbox import (
    MAX_FILE_BYTES,
    ExecResult,
    Sandbox,
    SandboxError,
    safe_members,
    workspace_path,
)
from innolab.gym.userids import agent_id

AGENT_PATH = "/usr/local/bin:/usr/bin:/bin"


def _check_passable(folder: Path) -> None:
    """The sandbox's own user must pass through the temporary folder and each folder above it."""
    for path in [folder, *folder.parents]:
        if not path.stat().st_mode & stat.S_IXOTH:
            raise SandboxError(
                f"the temporary folder {folder}: {path} lets no other user pass (mode "
                f"{stat.S_IMODE(path.stat().st_mode):o}), so the sandbox's own user could not "
                "reach its workspace; set TMPDIR to a folder others may pass, such as /tmp"
            )


class LocalSandbox(Sandbox):
    """Commands run in `workspace` with a scrubbed environment and a time limit.

    Where innolab is root they run as their own user id; see the module's docstring for what that
    does and does not protect.

    Args:
        workspace: A folder of the caller's to work in (kept on close; where innolab is root, it is
            given to the sandbox's user); None: a new temporary folder.
        separate_user: Run the commands as their own user id (None: where innolab is root; asking
            for it elsewhere is an error).
        data: A folder of data files made available read-only beside the workspace, as
            `<sandbox>/data` (the workspace's ../data; also $INNOLAB_DATA_DIR): hard links where
            innolab is root and the files share a file system (owned by root, read-only: the
            commands' own user cannot change them), copies otherwise. Never part of the
            workspace or its snapshots (None: none).

    Raises:
        SandboxError: separate_user without root, no unused user id, or a temporary folder the
            sandbox's user cannot pass.
    """

    runtime = "local"

    def __init__(self, workspace: Path | None = None, separate_user: bool | None = None,
                 data: Path | None = None) -> None:
        if separate_user is None:
            separate_user = os.geteuid() == 0
        if separate_user and os.geteuid() != 0:
            raise SandboxError(
                "separate_user needs innolab to run as root (it cannot switch users otherwise)"
            )
        self.uid = agent_id() if separate_user else None
        if self.uid is not None:
            _check_passable(Path(tempfile.gettempdir()).resolve())
        self.marker = secrets.token_hex(8)
        self.root = Path(tempfile.mkdtemp(prefix="innolab-ws-")).resolve()
        mark(self.root, uid=self.uid, marker=self.marker)
        self._owned = workspace is None
        self.workspace = (
            Path(workspace).resolve() if workspace is not None else self.root / "workspace"
        )
        self.tmp_dir = str(self.root / "tmp")
        self.workspace.mkdir(parents=True, exist_ok=True)
        os.mkdir(self.tmp_dir, 0o700)
        self.site_dir, self.capture_log = self._install_capture()
        self.data_dir = self._install_data(Path(data)) if data is not None else None
        if self.uid is not None:
            # the user may pass through to its folders, not list or write this one
            self.root.chmod(0o711)
            self._give(self.workspace)
            os.chown(self.tmp_dir, self.uid, self.uid)
        self._warden = Warden(self.uid, self.marker, [self.root])
        self._warden.start()
        self.executor = Executor(self._start_executor, "local")
        self.closed = False

    def _install_capture(self) -> tuple[Path, Path]:
        """Put the capture hook (innolab.gym.capture) where the commands' Python starts it.

        The hook's folder is innolab's (readable by the commands); its log may be appended to by
        the sandbox's user but, where that is a user of its own, not read or removed by it.

        Returns:
            The folder put on the commands' PYTHONPATH and the log.
        """
        site = self.root / "site"
        site.mkdir(mode=0o755)
        log = self.root / "capture.jsonl"
        log.touch(mode=0o600)
        log.chmod(0o622 if self.uid is not None else 0o600)
        (site / SITE_FILE).write_text(site_source(str(self.workspace), str(log)),
                                      encoding="utf-8")
        (site / SITE_FILE).chmod(0o644)
        return site, log

    def _install_data(self, source: Path) -> Path:
        """Make the data folder available read-only at `<root>/data` (see the class's `data`)."""
        target = self.root / "data"
        for top, _, files in os.walk(source):
            here = target / os.path.relpath(top, source)
            here.mkdir(exist_ok=True)
            for name in files:
                origin, copy = Path(top) / name, here / name
                try:
                    if os.geteuid() != 0:
                        raise OSError("a copy: the commands share innolab's user")
                    os.link(origin, copy)
                    if os.stat(copy).st_uid != 0 or stat.S_IMODE(os.stat(copy).st_mode) & 0o222:
                        copy.unlink()  # a link would share a file the commands could change
                        raise OSError("a copy: the file is not root's and read-only")
                except OSError:
                    shutil.copyfile(origin, copy)
                    copy.chmod(0o444)
        for folder in [target, *(p for p in target.rglob("*") if p.is_dir())]:
            folder.chmod(0o555)
        return target

    def read_capture(self, offset: int = 0) -> bytes:
        """The capture log from a byte on (see Sandbox.read_capture)."""
        try:
            with open(self.capture_log, "rb") as log:
                log.seek(offset)
                return log.read()
        except OSError:
            return b""

    def _give(self, folder: Path) -> None:
        """Hand a folder's tree to the sandbox's user (links themselves, never their targets)."""
        if self.uid is None:
            return
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, self.uid, self.uid, follow_symlinks=False)

    # ------------------------------------------------------------------------------ commands

    def exec(self, command: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        """Run a command in the workspace, in a process group of its own (see Sandbox.exec).

        It runs through the sandbox's executor (innolab/gym/images/executor_server.py), a small
        process of innolab's user started on the first command (innolab.gym.executor.ProcessStream:
        no terminal): its fork costs far less than one of innolab's own large process (which, where
        the command switches users, cannot use vfork). Past its time limit its process group is
        killed.
        """
        argv = ["/bin/bash", "-lc", command] if isinstance(command, str) else list(command)
        path = AGENT_PATH if self.uid is not None else os.environ.get("PATH", "/usr/bin:/bin")
        env = {
            "PATH": path,
            "HOME": str(self.workspace),
            "TMPDIR": self.tmp_dir,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONPATH": str(self.site_dir),
            "USER": "agent",
            "LOGNAME": "agent",
            MARKER_VARIABLE: self.marker,
            **({"INNOLAB_DATA_DIR": str(self.data_dir)} if self.data_dir is not None else {}),
        }
        return self.executor.exec(argv, timeout_s, env=env, cwd=str(self.workspace))

    def _start_executor(self) -> ProcessStream:
        """Start the sandbox's executor: innolab's child, as innolab's user (see `exec`).

        Where it starts again (the last one was killed, or stopped), what the commands of the
        last one left running is killed first: no command outlives its executor.
        """
        if self.executor.starts:
            kill_sandbox(self.uid, self.marker)
        config = {"uid": self.uid, "gid": self.uid, "cwd": str(self.workspace),
                  "timeout_code": 124, "signal_codes": "python",
                  # where the commands share innolab's user, they must not reach its descriptors
                  "undumpable": self.uid is None, "detach_terminal": True}
        return ProcessStream(server_argv(sys.executable, config))

    # --------------------------------------------------------------------------------- files

    def _parent(self, path: str, create: bool) -> tuple[int, str]:
        """The folder holding `path`, reached from the workspace without following any link.

        Returns:
            A descriptor of the folder and the file's name in it.

        Raises:
            SandboxError: A path outside the workspace or through a link or a file.
        """
        parts = workspace_path(path).split("/")
        folder = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in parts[:-1]:
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=folder)
                        if self.uid is not None:
                            os.chown(part, self.uid, self.uid, dir_fd=folder, follow_symlinks=False)
                    except FileExistsError:
                        pass
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
                os.close(folder)
                folder = inner
        except OSError as error:
            os.close(folder)
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                raise SandboxError(
                    f"path {path!r} goes through a link or a file: links are never followed, "
                    "a link may lead outside the workspace"
                ) from None
            raise SandboxError(f"{path}: {error.strerror}") from None
        return folder, parts[-1]

    def read_file(self, path: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
        """A regular file's content, no link followed (see Sandbox.read_file)."""
        folder, name = self._parent(path, create=False)
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        except FileNotFoundError:
            raise SandboxError(f"{path} does not exist") from None
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise SandboxError(
                    f"{path} is a link (links are never followed: one may point outside the "
                    "workspace)"
                ) from None
            raise SandboxError(f"{path}: {error.strerror}") from None
        finally:
            os.close(folder)
        with os.fdopen(handle, "rb") as file:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode):
                raise SandboxError(f"{path} is not a regular file")
            if info.st_size > max_bytes:
                raise SandboxError(f"{path} is larger than {max_bytes} bytes")
            return file.read(max_bytes + 1)[:max_bytes]

    def write_file(self, path: str, content: bytes) -> None:
        """Write a file, no link followed; a link there is replaced (see Sandbox.write_file)."""
        folder, name = self._parent(path, create=True)
        try:
            mode = 0o644
            try:
                old = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISDIR(old.st_mode):
                    raise SandboxError(f"{path} is a folder")
                if stat.S_ISREG(old.st_mode):
                    mode = stat.S_IMODE(old.st_mode) & 0o777
                os.unlink(name, dir_fd=folder)  # a link or a file: replaced, never written through
            except FileNotFoundError:
                pass
            handle = os.open(
                name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder
            )
        except OSError as error:
            raise SandboxError(f"{path}: {error.strerror}") from None
        finally:
            os.close(folder)
        with os.fdopen(handle, "wb") as file:
            if self.uid is not None:
                os.fchown(handle, self.uid, self.uid)
            os.fchmod(handle, mode)
            file.write(content)

    # -------------------------------------------------------------------------------- states

    def snapshot(self) -> bytes:
        """The workspace's regular files and folders as a tar (links, special files: no state)."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for top, folders, files, top_fd in os.fwalk(self.workspace, follow_symlinks=False):
                folders.sort()
                relative = os.path.relpath(top, self.workspace)
                if relative != ".":
                    info = tarfile.TarInfo(relative)
                    folder = os.stat(top_fd)
                    info.type, info.mode, info.mtime = (
                        tarfile.DIRTYPE,
                        stat.S_IMODE(folder.st_mode),
                        folder.st_mtime,
                    )
                    archive.addfile(info)
                for name in sorted(files):
                    try:
                        handle = os.open(
                            name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=top_fd
                        )
                    except OSError:
                        continue  # a link, or gone meanwhile
                    with os.fdopen(handle, "rb") as file:
                        if not stat.S_ISREG(os.fstat(handle).st_mode):
                            continue
                        arcname = name if relative == "." else f"{relative}/{name}"
                        archive.addfile(archive.gettarinfo(arcname=arcname, fileobj=file), file)
        return buffer.getvalue()

    def listing(self) -> dict[str, tuple[int | str, ...]]:
        """The workspace's folders and regular files, no link followed, nothing read.

        Returns:
            (kind "dir" or "file", permission bits, size, modification time in ns) by
            workspace-relative path, a file's followed by its status-change time in ns and its
            inode (what a checkpoint compares: innolab.gym.checkpoint; the agent can put a
            file's mtime back, never its ctime).
        """
        found: dict[str, tuple[int | str, ...]] = {}
        for top, _folders, files, top_fd in os.fwalk(self.workspace, follow_symlinks=False):
            relative = os.path.relpath(top, self.workspace)
            if relative != ".":
                info = os.stat(top_fd)
                found[relative] = ("dir", stat.S_IMODE(info.st_mode), 0, info.st_mtime_ns)
            for name in files:
                try:
                    info = os.stat(name, dir_fd=top_fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    path = name if relative == "." else f"{relative}/{name}"
                    found[path] = ("file", stat.S_IMODE(info.st_mode), info.st_size,
                                   info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        return found

    def stream_file(self, path: str, chunk: int = 1 << 20) -> Iterator[bytes]:
        """A regular file's content in chunks, of any size, no link followed.

        Args:
            path: The workspace-relative path.
            chunk: The chunk size.

        Yields:
            The content's chunks.

        Raises:
            SandboxError: A path outside the workspace, a missing file, a link or not a file.
        """
        folder, name = self._parent(path, create=False)
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
        except OSError as error:
            raise SandboxError(f"{path}: {error.strerror}") from None
        finally:
            os.close(folder)
        with os.fdopen(handle, "rb") as file:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                raise SandboxError(f"{path} is not a regular file")
            while block := file.read(chunk):
                yield block

    def restore(self, snapshot: bytes) -> None:
        """Replace the workspace by a snapshot (see Sandbox.restore)."""
        for child in self.workspace.iterdir():
            if child.is_dir() and not child.is_symlink():
                remove_tree(child)
            else:
                child.unlink()
        with tarfile.open(fileobj=io.BytesIO(snapshot)) as archive:
            archive.extractall(self.workspace, members=safe_members(archive), filter="data")
        self._give(self.workspace)

    def close(self) -> None:
        """Kill every process of the sandbox and remove its folders (a caller's workspace stays)."""
        if self.closed:
            return
        self.closed = True
        self.executor.close()
        self._warden.stop()
        kill_sandbox(self.uid, self.marker)  # the warden's work, again, in case it was killed
        remove_tree(self.root)
