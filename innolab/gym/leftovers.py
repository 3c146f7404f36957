"""Nothing outlives its run: owner marks, the agent's processes, a warden per sandbox, the reaper.

Every folder a sandbox or a validator makes in the temporary folder holds an owner mark
(`.innolab-owner`: the owning process's pid, start time and boot id, and the agent's user id or
process marker); every Docker container and volume carries the same mark as a label. A local
sandbox and a local validator each start a *warden*, a small process outside the run's process
group that waits on a pipe whose only writer is the run: when the run ends, however it ends (close
or SIGKILL), the pipe reads end-of-file and the warden kills every process of the sandbox (or the
validator's checker) and removes its folders.
What a killed warden leaves behind (a machine reboot, a kill of every process at once) is reaped by
`reap`, which the run loop calls when a run starts or resumes and `innolab clean` calls on demand:
it removes only what belongs to an owner that is no longer alive.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OWNER_FILE = ".innolab-owner"
# the temporary folders of runs: workspaces, validators, a sweep kernel's IPython profile
PREFIXES = ("innolab-ws-", "innolab-validator-", "innolab-ipython-")
MARKER_VARIABLE = "INNOLAB_SANDBOX"
KILL_ROUNDS = 100


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat).

    Returns:
        The start time, or None when the process is gone or has ended unreaped (a zombie, state Z,
        which a killed run leaves where nothing reaps it, as in a container).
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return None if fields[0] == "Z" else int(fields[19])


def owner_token(pid: int | None = None) -> dict[str, Any]:
    """Name the owner of a resource: a process, so that a reused pid or reboot is not taken for it.

    Args:
        pid: The process; None for this one.

    Returns:
        Its pid, start time, boot id and host name.
    """
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "start": _start_time(pid), "boot": _boot_id(), "host": socket.gethostname()}


def owner_alive(token: dict[str, Any]) -> bool:
    """Test whether the owning process still runs.

    Args:
        token: An owner token (see `owner_token`).

    Returns:
        True when it runs; a token of another host counts as alive (it is not ours to judge).

    Raises:
        KeyError: The token has no pid.
        ValueError: Its pid is not a number.
    """
    if token.get("host") != socket.gethostname():
        return True
    if token.get("boot") != _boot_id():
        return False
    return _start_time(int(token["pid"])) == token.get("start")


def mark(folder: Path, **extra: Any) -> None:
    """Write the owner mark of a folder this process made (before anything else goes in).

    Args:
        folder: The folder.
        **extra: More fields of the mark (the sandbox's uid, its marker).
    """
    (folder / OWNER_FILE).write_text(json.dumps({**owner_token(), **extra}), encoding="utf-8")


def read_mark(folder: Path) -> dict[str, Any] | None:
    """Read a folder's owner mark, trusted only where this user made the folder and the mark.

    Anyone may make a folder in the temporary folder: a planted mark must not name processes for
    the reaper to kill.

    Args:
        folder: The folder.

    Returns:
        The mark, or None when it is missing, unreadable or not this user's.
    """
    try:
        me = os.geteuid()
        if (folder.lstat().st_uid != me or not folder.is_dir()
                or (folder / OWNER_FILE).lstat().st_uid != me):
            return None
        return json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------- processes


def sandbox_pids(uid: int | None, marker: str | None) -> list[int]:
    """List the processes of one sandbox.

    Args:
        uid: The sandbox's own user id, or None when it has none.
        marker: The sandbox's marker (MARKER_VARIABLE=marker is set on every command the sandbox
            starts), or None.

    Returns:
        The pids of the live processes running as `uid` or carrying the marker in their
        environment (this process excluded).
    """
    needle = f"{MARKER_VARIABLE}={marker}".encode() if marker else None
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            status = (entry / "stat").read_text()
            if status[status.rindex(")") + 2] in "ZX":
                continue  # dead already, waiting for its parent to collect it
            by_user = uid is not None and entry.stat().st_uid == uid
            if by_user or (needle is not None
                           and needle in (entry / "environ").read_bytes().split(b"\0")):
                found.append(int(entry.name))
        except OSError:
            continue  # gone meanwhile, or not ours to read
    return found


def kill_sandbox(uid: int | None, marker: str | None) -> int:
    """SIGKILL every process of a sandbox, again until none is left (a forking one loses the race).

    Args:
        uid: The sandbox's own user id (never root's nor innolab's), or None.
        marker: The sandbox's marker, or None.

    Returns:
        How many processes were killed.

    Raises:
        ValueError: `uid` is root's or innolab's own.
    """
    if uid is not None and uid in (0, os.geteuid()):
        raise ValueError(f"uid {uid} is not a sandbox's own user id")
    killed = 0
    for _ in range(KILL_ROUNDS):
        pids = sandbox_pids(uid, marker)
        if not pids:
            return killed
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.02)
    return killed


def remove_tree(folder: Path) -> None:
    """Remove a folder and what it holds, if it is there.

    Not as root, folders inside it that were made read-only (the agent's commands run as innolab's
    user then) are made writable first; root needs no permission. Errors are ignored.

    Args:
        folder: The folder (a link is left alone).
    """
    top = Path(folder)
    if not top.is_dir() or top.is_symlink():
        return
    if os.geteuid() != 0:
        with contextlib.suppress(OSError):
            top.chmod(stat.S_IRWXU)
        # links are not followed; each folder opened before the walk goes in
        for parent, folders, _ in os.walk(top):
            for name in folders:
                path = os.path.join(parent, name)
                if not os.path.islink(path):
                    with contextlib.suppress(OSError):
                        os.chmod(path, stat.S_IRWXU)
    shutil.rmtree(top, ignore_errors=True)


# ------------------------------------------------------------------------------------------- warden

def _warden_main(argv: list[str]) -> None:
    """The warden: `python -m innolab.gym.leftovers UID|- MARKER FOLDER...`.

    Wait for end-of-file on stdin (every copy of the run's end of the pipe closed: the run has
    ended), then kill the sandbox's processes and remove its folders.
    """
    sys.stdin.buffer.read()
    kill_sandbox(None if argv[0] == "-" else int(argv[0]), argv[1])
    for folder in argv[2:]:
        remove_tree(Path(folder))


@dataclass
class Warden:
    """Kills a sandbox's processes and removes its folders when its run ends, however it ends.

    Attributes:
        uid: The sandbox's own user id, or None.
        marker: The sandbox's marker.
        folders: The folders to remove.
        process: The warden's process once started.
    """

    uid: int | None
    marker: str
    folders: list[Path]
    process: subprocess.Popen | None = field(default=None, repr=False)

    def start(self) -> None:
        """Start the warden process, outside this process's session."""
        package_root = str(Path(__file__).resolve().parents[2])
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": package_root, "PYTHONDONTWRITEBYTECODE": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "innolab.gym.leftovers",
             "-" if self.uid is None else str(self.uid), self.marker, *map(str, self.folders)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, env=env, cwd="/", start_new_session=True)

    def stop(self, timeout_s: float = 30.0) -> None:
        """End the sandbox now: the warden does its work and exits (waited for).

        Args:
            timeout_s: How long to wait before killing the warden itself.
        """
        if self.process is None:
            return
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


# ------------------------------------------------------------------------------------------- reaper


def _ended(token: dict[str, Any]) -> bool:
    """Whether a mark names an owner that has ended, and a sandbox user id that may be killed."""
    try:
        uid = token.get("uid")
        usable = uid is None or (isinstance(uid, int) and uid not in (0, os.geteuid()))
        return usable and not owner_alive(token)
    except (KeyError, TypeError, ValueError):
        return False  # not a mark innolab writes


@dataclass
class Reaped:
    """What `reap` removed.

    Attributes:
        folders: The folders removed.
        processes: How many processes were killed.
        containers: The Docker containers removed.
        volumes: The Docker volumes removed.
    """

    folders: list[str] = field(default_factory=list)
    processes: int = 0
    containers: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)


def reap(tempdir: Path | None = None, docker_client: Any = None) -> Reaped:
    """Remove what dead runs left.

    Each marked folder of the temporary folder whose owner is gone is removed (its processes killed
    first) and, given a Docker client, each marked container and volume whose owner is gone.

    Args:
        tempdir: The temporary folder; None for the system's.
        docker_client: A docker SDK client, or None to leave Docker alone.

    Returns:
        What was removed.
    """
    reaped = Reaped()
    root = Path(tempdir or tempfile.gettempdir())
    for folder in sorted(p for prefix in PREFIXES for p in root.glob(f"{prefix}*")):
        token = read_mark(folder)
        if token is None or not _ended(token):
            continue  # not marked by this user (not ours to judge), or its run still runs
        reaped.processes += kill_sandbox(token.get("uid"), token.get("marker"))
        remove_tree(folder)
        reaped.folders.append(str(folder))
    if docker_client is not None:
        from docker.errors import APIError

        marked = {"filters": {"label": "innolab.owner"}}
        # a container of a live run may remove itself meanwhile (a used checker: auto_remove)
        containers = docker_client.containers.list(all=True, ignore_removed=True, **marked)
        for kind, found in ((reaped.containers, containers),
                            (reaped.volumes, docker_client.volumes.list(**marked))):
            for item in found:
                if owner_alive(json.loads(
                        (item.attrs.get("Labels") or item.attrs["Config"]["Labels"])
                        ["innolab.owner"])):
                    continue
                try:
                    item.remove(force=True)
                except APIError:
                    continue  # removed meanwhile
                kind.append(item.name)
    return reaped


if __name__ == "__main__":
    _warden_main(sys.argv[1:])
