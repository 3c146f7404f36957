"""Docker sandbox: no network, CPU/memory/pids limits, read-only root, non-root, tmpfs workspace.

Its Python processes log what they run (innolab.gym.capture): the hook and its log live on the
container's /tmp, written there as the container's root, so that the sandbox user can append to the
log but neither read it nor change the hook; `read_capture` reads the log back.

Commands run through the sandbox's executor (innolab/gym/images/executor_server.py), started once
with the container by one `docker exec` as the container's root and spoken to over that exec's
attached stream (innolab.gym.docker_stream): a command costs a fork in the container, not an exec
of the engine. The container's root holds three capabilities and no other (SETUID, SETGID to run
each command as the sandbox user, KILL to kill its process group at its time limit); the sandbox
user's commands hold none (no-new-privileges: none can be gained), cannot signal or trace the
executor (another user's process) and never see its stream (its descriptors are root's; a command's
output reaches innolab inside the executor's frames, as data).
"""

from __future__ import annotations

import base64
import io
import json
import os
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from innolab.gym.capture import SITE_FILE, site_source
from innolab.gym.docker_stream import DockerExecStream
from innolab.gym.executor import Executor, server_argv
from innolab.gym.leftovers import owner_token
from innolab.gym.sandbox import (
    MAX_FILE_BYTES,
    ExecResult,
    Sandbox,
    SandboxError,
    safe_members,
    tar_files,
    workspace_path,
)

DEFAULT_IMAGE = os.environ.get("INNOLAB_SANDBOX_IMAGE", "innolab/base:latest")
# a `gpu` task's image: the base image's tools with the GPU build of PyTorch (build-image --gpu)
GPU_IMAGE = os.environ.get("INNOLAB_SANDBOX_GPU_IMAGE", "innolab/gpu:latest")
WORKSPACE = "/workspace"
DATA = "/data"  # a task's data folder, mounted read-only beside the workspace (../data)
# the capture hook's folder (on the commands' PYTHONPATH) and log, on the container's /tmp
SITE_DIR = "/tmp/.innolab"
CAPTURE_LOG = f"{SITE_DIR}/capture.jsonl"
# what the container's root may do beyond a user's: run commands as the sandbox user, kill them
ROOT_CAPABILITIES = ["SETUID", "SETGID", "KILL"]
QUICK_S = 120.0  # the longest wait for the capture log, the listing or a file read
# the executor's `read` refusals, in the words of the local sandbox's
READ_ERRORS = {"ENOENT": "does not exist", "ELOOP": "is a link",
               "ENOTDIR": "is under a link or a file, not a folder",
               "ENOTREG": "is not a regular file"}
TIMED_OUT_CODE = 137  # a command killed at its time limit (SIGKILL), as `timeout -s KILL` gave


@dataclass(frozen=True)
class DockerLimits:
    """Resource limits of one sandbox container.

    Attributes:
        cpus: CPUs (a fraction allowed).
        memory_mb: Memory, swap included.
        pids: The most processes.
        workspace_mb: The workspace's size.
        tmp_mb: The size of /tmp.
        gpus: None: no GPU; "all" or a count: device requests (an error without a GPU runtime);
            "if-available": every GPU where the engine has a GPU runtime, none elsewhere.
        extra: Further keyword arguments of the SDK's containers.run.
    """

    cpus: float = 2.0
    memory_mb: int = 2048
    pids: int = 256
    workspace_mb: int = 512
    tmp_mb: int = 256
    gpus: int | str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def docker_client() -> Any:
    """The Docker engine's client, from the environment.

    Returns:
        The SDK's client, which answered a ping.

    Raises:
        SandboxError: No engine answers.
    """
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as error:  # the SDK raises several types for "no engine"
        raise SandboxError(
            f"no Docker engine answers ({error}); start dockerd or use --runtime local"
        ) from None
    return client


def default_image(compute: str = "cpu") -> str:
    """The image a task's sandbox runs in by default: the GPU image for a `gpu` task.

    Args:
        compute: The task's compute profile ("cpu", "gpu", "gpu-if-available").

    Returns:
        The image's tag.
    """
    return GPU_IMAGE if compute == "gpu" else DEFAULT_IMAGE


def gpu_runtime_available(client: Any) -> bool:
    """Whether the engine has the NVIDIA runtime (so containers can be given GPUs)."""
    runtimes = client.info().get("Runtimes", {})
    return "nvidia" in runtimes


def _ns(seconds: bytes) -> int:
    """A time printed as find's %T@ prints it (seconds, a fraction) in nanoseconds."""
    whole, _, fraction = seconds.decode().partition(".")
    return int(whole) * 10**9 + int((fraction + "000000000")[:9])


def parse_listing(body: bytes) -> dict[str, tuple[int | str, ...]]:
    r"""The executor's listing as LocalSandbox.listing gives it.

    The executor prints it as `find -printf '%y %m %s %T@ %C@ %i %P\0'` would.

    Returns:
        (kind, mode, size, mtime_ns) for a folder, (kind, mode, size, mtime_ns, ctime_ns, inode)
        for a file, by workspace-relative path (undecodable bytes as surrogates).
    """
    found: dict[str, tuple[int | str, ...]] = {}
    for record in body.split(b"\0"):
        if not record:
            continue
        kind, mode, size, mtime, ctime, inode, path = record.split(b" ", 6)
        name = path.decode("utf-8", errors="surrogateescape")
        if kind == b"d":
            found[name] = ("dir", int(mode, 8), 0, _ns(mtime))
        else:
            found[name] = ("file", int(mode, 8), int(size), _ns(mtime), _ns(ctime), int(inode))
    return found


class DockerSandbox(Sandbox):
    """One container per sandbox; the workspace is a tmpfs volume (size-capped, never on disk).

    Args:
        image: The image its commands run in.
        limits: Its resource limits (None: the defaults).
        user: The "uid:gid" its commands run as.
        client: The engine's client (None: one from the environment).
        data: A host folder mounted read-only at /data (the workspace's ../data), never part of
            the workspace or its snapshots (None: none).

    Raises:
        SandboxError: No engine, an image not found, or GPUs asked of an engine without a GPU
            runtime.
    """

    runtime = "docker"
    tmp_dir = "/tmp"  # a tmpfs of the container: gone with it

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        limits: DockerLimits | None = None,
        user: str = "1000:1000",
        client: Any = None,
        data: str | os.PathLike[str] | None = None,
    ) -> None:
        import docker

        self.client = client or docker_client()
        self.image = image
        self.limits = limits or DockerLimits()
        self.user = user
        device_requests = None
        gpus = self.limits.gpus
        if gpus == "if-available":
            gpus = "all" if gpu_runtime_available(self.client) else None
        if gpus is not None:
            if not gpu_runtime_available(self.client):
                raise SandboxError(
                    "this task asks for a GPU but the Docker engine has no GPU runtime "
                    "(install the NVIDIA container toolkit, or run the task on a GPU host)"
                )
            count = -1 if gpus == "all" else int(gpus)
            device_requests = [docker.types.DeviceRequest(count=count, capabilities=[["gpu"]])]
        try:
            self.client.images.get(image)
        except docker.errors.ImageNotFound:
            how = ("innolab sandbox build-image --gpu" if image == GPU_IMAGE
                   else "innolab sandbox build-image")
            raise SandboxError(f"image {image} not found; build it with `{how}`") from None
        uid, gid = user.split(":")
        # a killed run's container and volume are reaped by this label
        owner = json.dumps(owner_token())
        self.volume = self.client.volumes.create(
            driver="local",
            driver_opts={
                "type": "tmpfs",
                "device": "tmpfs",
                "o": f"size={self.limits.workspace_mb}m,uid={uid},gid={gid},mode=0755",
            },
            labels={"innolab": "workspace", "innolab.owner": owner},
        )
        try:
            self.container = self.client.containers.run(
                image,
                ["sleep", "infinity"],
                detach=True,
                user="0:0",  # the executor's (exec'd processes get the container's capabilities)
                working_dir=WORKSPACE,
                network_disabled=True,
                network_mode="none",
                read_only=True,
                volumes={self.volume.name: {"bind": WORKSPACE, "mode": "rw"},
                         **({os.fspath(os.path.realpath(data)): {"bind": DATA, "mode": "ro"}}
                            if data is not None else {})},
                tmpfs={
                    "/tmp": f"size={self.limits.tmp_mb}m,mode=1777",
                    "/home/agent": f"size=16m,uid={uid},gid={gid}",
                },
                mem_limit=f"{self.limits.memory_mb}m",
                memswap_limit=f"{self.limits.memory_mb}m",
                nano_cpus=int(self.limits.cpus * 1e9),
                pids_limit=self.limits.pids,
                cap_drop=["ALL"],
                cap_add=ROOT_CAPABILITIES,
                security_opt=["no-new-privileges"],
                ipc_mode="private",
                device_requests=device_requests,
                labels={"innolab": "sandbox", "innolab.owner": owner},
                init=True,
                environment={"HOME": "/home/agent", "PYTHONDONTWRITEBYTECODE": "1",
                             "PYTHONPATH": SITE_DIR,
                             **({"INNOLAB_DATA_DIR": DATA} if data is not None else {})},
                **self.limits.extra,
            )
        except Exception:
            self.volume.remove(force=True)
            raise
        config = {"uid": int(uid), "gid": int(gid), "cwd": WORKSPACE, "capture_log": CAPTURE_LOG,
                  "timeout_code": TIMED_OUT_CODE, "signal_codes": "shell",
                  # a killed executor's commands go with the next one (it runs as root)
                  "kill_leftovers": True}
        self.executor = Executor(
            lambda: DockerExecStream(self.client, self.container, server_argv("python3", config)),
            "docker")
        try:
            self._install_capture()
            self.executor.start()
        except Exception:
            self.close()
            raise

    def _install_capture(self) -> None:
        """Put the capture hook (innolab.gym.capture) where the commands' Python starts it.

        Written as the container's root: the sandbox user may append to the log but neither read
        it nor change the hook.

        Raises:
            SandboxError: The hook could not be written.
        """
        # the log shares the container's /tmp with the agent: an eighth of it at most
        limit = self.limits.tmp_mb * 1_000_000 // 8
        source = base64.b64encode(site_source(WORKSPACE, CAPTURE_LOG, limit).encode()).decode()
        script = (f'mkdir -m 755 {SITE_DIR} && echo "$0" | base64 -d > {SITE_DIR}/{SITE_FILE} '
                  f"&& chmod 644 {SITE_DIR}/{SITE_FILE} && : > {CAPTURE_LOG} "
                  f"&& chmod 622 {CAPTURE_LOG}")
        result = self.container.exec_run(["/bin/sh", "-c", script, source], user="0:0")
        if result.exit_code != 0:
            raise SandboxError(f"the capture hook could not be installed: {result.output!r}")

    def read_capture(self, offset: int = 0) -> bytes:
        """The capture log from a byte on, read by the executor as root (Sandbox.read_capture)."""
        reply = self.executor.call({"op": "capture", "offset": offset}, QUICK_S)
        return b"" if "error" in reply.header else reply.body

    def exec(self, command: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        """Run a command in the workspace as the sandbox user, through the executor.

        It runs in a process group of its own; past its time limit the group is killed (see
        Sandbox.exec).
        """
        argv = ["/bin/bash", "-lc", command] if isinstance(command, str) else list(command)
        return self.executor.exec(argv, max(timeout_s, 0.1))

    def read_file(self, path: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
        """A regular file's content (see Sandbox.read_file); links are refused.

        Read by the executor (its `read`: no link followed on the way), one round trip on its
        stream rather than a call of the engine's archive API (tens of milliseconds each). The
        executor is root without the capability to override permissions, so a file the agent
        made unreadable to others (0600, or under a 0700 folder) is read through the archive API
        instead, as the engine reads any file.
        """
        relative = workspace_path(path)
        reply = self.executor.call({"op": "read", "path": relative, "max_bytes": max_bytes},
                                   QUICK_S)
        if "error" not in reply.header:
            return reply.body
        code = str(reply.header.get("errno"))
        if code == "EACCES":
            return self._archive_read(path, relative, max_bytes)
        said = f"is larger than {max_bytes} bytes" if code == "EFBIG" else READ_ERRORS.get(code)
        raise SandboxError(f"{path} {said}" if said else f"{path}: {reply.header['error']}")

    def _archive_read(self, path: str, relative: str, max_bytes: int) -> bytes:
        """A regular file's content through the engine's archive API (links refused)."""
        with _engine(path):
            stream, stat = self.container.get_archive(f"{WORKSPACE}/{relative}")
        if stat.get("linkTarget"):
            raise SandboxError(f"{path} is a link")
        if stat["size"] > max_bytes:
            raise SandboxError(f"{path} is larger than {max_bytes} bytes")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            member = archive.getmembers()[0]
            if not member.isfile():
                raise SandboxError(f"{path} is not a regular file")
            handle = archive.extractfile(member)
            return handle.read() if handle else b""

    def write_file(self, path: str, content: bytes) -> None:
        """Write a file, its folders made first (see Sandbox.write_file)."""
        relative = workspace_path(path)
        parent = os.path.dirname(relative)
        if parent:
            self.exec(["mkdir", "-p", "--", parent], timeout_s=10)
        # Remove any link planted at the target first, so the archive writes a regular file there.
        self.exec(["rm", "-f", "--", relative], timeout_s=10)
        uid, gid = (int(v) for v in self.user.split(":"))
        with _engine(path):
            self.container.put_archive(WORKSPACE, tar_files({relative: content}, uid, gid))

    def write_files(self, files: dict[str, bytes]) -> None:
        """Many files in one archive, for a whole repository (see Sandbox.write_files).

        Their folders are made first, owned by the sandbox user.
        """
        uid, gid = (int(v) for v in self.user.split(":"))
        self.container.put_archive(WORKSPACE, tar_files(files, uid, gid, with_folders=True))

    def snapshot(self) -> bytes:
        """The workspace as a tar archive (see Sandbox.snapshot)."""
        stream, _ = self.container.get_archive(f"{WORKSPACE}/.")
        return b"".join(stream)

    def listing(self) -> dict[str, tuple[int | str, ...]]:
        """The workspace's folders and regular files, nothing read (see LocalSandbox.listing).

        Returns:
            (kind, permission bits, size, modification time in ns) by workspace-relative path,
            a file's followed by its status-change time in ns and its inode, as the local
            sandbox's (what a checkpoint compares: the agent can put a file's mtime back, never
            its ctime).

        Raises:
            SandboxError: The listing command failed.
        """
        reply = self.executor.call({"op": "listing"}, QUICK_S)
        if "error" in reply.header:
            raise SandboxError(f"the workspace could not be listed: {reply.header['error']}")
        return parse_listing(reply.body)

    def stream_file(self, path: str, chunk: int = 1 << 20) -> Iterator[bytes]:
        """A regular file's content in chunks, of any size (the archive API; links refused).

        Args:
            path: The workspace-relative path.
            chunk: The chunk size.

        Yields:
            The content's chunks.

        Raises:
            SandboxError: A missing file, a link or not a regular file.
        """
        relative = workspace_path(path)
        with _engine(path):
            stream, stat = self.container.get_archive(f"{WORKSPACE}/{relative}")
        if stat.get("linkTarget"):
            raise SandboxError(f"{path} is a link")
        with tarfile.open(fileobj=_Chunks(stream), mode="r|") as archive:
            member = archive.next()
            if member is None or not member.isfile():
                raise SandboxError(f"{path} is not a regular file")
            handle = archive.extractfile(member)
            while handle is not None and (block := handle.read(chunk)):
                yield block

    def restore(self, snapshot: bytes) -> None:
        """Replace the workspace by a snapshot's regular files and folders (see Sandbox.restore)."""
        self.exec(["find", WORKSPACE, "-mindepth", "1", "-delete"], timeout_s=60)
        buffer = io.BytesIO()
        with (
            tarfile.open(fileobj=io.BytesIO(snapshot)) as source,
            tarfile.open(fileobj=buffer, mode="w") as clean,
        ):
            for member in safe_members(source):
                clean.addfile(member, source.extractfile(member) if member.isfile() else None)
        self.container.put_archive(WORKSPACE, buffer.getvalue())

    def close(self) -> None:
        """Stop the executor; remove the container and its workspace volume."""
        try:
            self.executor.close()
            self.container.remove(force=True)
        finally:
            self.volume.remove(force=True)


@contextmanager
def _engine(path: str) -> Iterator[None]:
    """The engine's refusal of an archive call on an agent's path, as a SandboxError naming it.

    The engine answers 404 for a missing file and 500 for a path it cannot walk (a component
    that is a file, a name too long): both are the agent's error, told to the agent as a
    tool error, never a crash of the run.
    """
    import docker

    try:
        yield
    except docker.errors.NotFound:
        raise SandboxError(f"{path} does not exist") from None
    except docker.errors.APIError as error:
        reason = str(error.explanation or error).rsplit(": ", 1)[-1][:200]
        raise SandboxError(f"{path}: the container refused it ({reason})") from None


class _Chunks(io.RawIOBase):
    """A readable file over an iterator of byte chunks (the engine's archive stream)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self.chunks, self.rest = iter(chunks), b""

    def readable(self) -> bool:
        """Return True: it is read."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Fill `buffer` from the stream; 0 at its end."""
        while not self.rest:
            try:
                self.rest = next(self.chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self.rest))
        buffer[:size], self.rest = self.rest[:size], self.rest[size:]
        return size
