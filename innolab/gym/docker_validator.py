"""The Docker validator: each check in a container of its own, started ahead, used once, then gone.

A checker's container runs the run's image with no network, all capabilities dropped, no new
privileges, as the sandbox's unprivileged user, under CPU, memory and pids limits; its only
process is the waiter (innolab.gym.checker_waiter), and its only input the validator's attached
socket: the agent's container shares nothing with it and never sees it. It is started before it is
needed (innolab.gym.checker_pool). A check's order carries the checker's files and the candidate's
copy with the hashes the validator took of them when it opened (of the candidate, when the tool
read it): in the container, the waiter writes them, reads each back and verifies its hash, and
only then runs the checker, or reports the altered files and runs nothing. One round trip on the
attached stream, no call of the engine's archive API. The container removes itself when its
process ends (`auto_remove`), and no container is used twice.

Its standard input closes with the validator's socket (`StdinOnce`): when the run ends, however it
ends (close, a crash, SIGKILL), the socket closes, the waiter reads end of input and exits without
running anything, and the engine removes the container. A container that never started (a run
killed between create and start) carries the owner label that `innolab.gym.leftovers.reap`
reads, as every container innolab makes does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import socket
import time
from dataclasses import dataclass
from typing import Any

from innolab.gym import checker_pool
from innolab.gym.checker_pool import (
    READY,
    START_TIMEOUT_S,
    CheckerPool,
    key_line,
    order_line,
    split_report,
    waiter_argv,
    weakly,
)
from innolab.gym.leftovers import owner_token
from innolab.gym.sandbox import SandboxError
from innolab.gym.verdict import (
    CANDIDATE,
    OUTPUT_LIMIT,
    altered_verdict,
    digests,
    parse_verdict,
)

POOL_LABEL = "innolab.pool"  # one validator's containers (its random token), found again at close
REMOVAL_WAIT_S = 30.0


@dataclass
class PooledContainer:
    """A started checker container waiting for its order.

    Attributes:
        container: The SDK's container.
        attached: Its attached stream (stdin, stdout, stderr), the SDK's socket.
        key: The key its order must carry (innolab.gym.checker_waiter).
    """

    container: Any
    attached: Any
    key: str

    @property
    def raw(self) -> socket.socket:
        """The attached stream's socket itself."""
        return getattr(self.attached, "_sock", self.attached)

    def close(self) -> None:
        """Close the attached stream: a waiter still waiting reads end of input and exits."""
        for closing in (self.raw.close, self.attached.close):
            with contextlib.suppress(OSError):
                closing()


def _receive(raw: socket.socket, size: int, deadline: float) -> bytes:
    """Exactly `size` bytes of the stream, fewer where it ends or the deadline comes first."""
    data = bytearray()
    while len(data) < size and (left := deadline - time.monotonic()) > 0:
        raw.settimeout(left)
        try:
            chunk = raw.recv(size - len(data))
        except TimeoutError:
            break
        if not chunk:
            break
        data += chunk
    return bytes(data)


def await_ready(raw: socket.socket, deadline: float) -> None:
    """Read the waiter's first frame: READY on its standard output.

    Args:
        raw: The attached socket.
        deadline: When to give up (time.monotonic()).

    Raises:
        SandboxError: Anything else came first (what its process wrote, where it wrote), or nothing
            by the deadline.
    """
    header = _receive(raw, 8, deadline)
    body = _receive(raw, int.from_bytes(header[4:8], "big"), deadline) if len(header) == 8 else b""
    if header[:1] != b"\x01" or body != READY:
        said = body.decode(errors="replace").strip()[-500:] or "nothing"
        raise SandboxError(f"the checker's container did not start its waiter: {said}")


def read_frames(raw: socket.socket, deadline: float,
                end: str | None = None) -> tuple[bytes, bytes, bool]:
    """The attached stream's output until its end, or until both streams end with the end mark.

    Args:
        raw: The attached socket (the engine's multiplexed frames: a stream byte, three zero
            bytes, a 4-byte big-endian length, then the data).
        deadline: When to stop reading (time.monotonic()).
        end: The waiter's end mark (innolab.gym.checker_waiter.finish): once both streams end
            with it on a line of its own, the output is whole (removed from it) without waiting
            for the engine to close the stream after the process's exit.

    Returns:
        stdout (its first line whole, up to a megabyte, and a bounded tail) and stderr (a bounded
        tail), and whether the deadline came first.
    """
    mark = b"\n" + end.encode() + b"\n" if end else None
    head, streams = bytearray(), {1: bytearray(), 2: bytearray()}
    pending = bytearray()
    timed_out = False
    while mark is None or not all(streams[k].endswith(mark) for k in (1, 2)):
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        raw.settimeout(left)
        try:
            chunk = raw.recv(1 << 16)
        except TimeoutError:
            timed_out = True
            break
        if not chunk:
            break
        pending += chunk
        while len(pending) >= 8 and len(pending) >= 8 + int.from_bytes(pending[4:8], "big"):
            size = int.from_bytes(pending[4:8], "big")
            data, kind = pending[8 : 8 + size], pending[0]
            del pending[: 8 + size]
            if kind == 1 and not streams[1] and b"\n" not in head and len(head) < 1 << 20:
                cut = data.find(b"\n") + 1 or len(data)  # the first line: the waiter's report
                head += data[:cut]
                data = data[cut:]
            target = streams.get(kind)
            if target is not None:
                target += data
                if len(target) > 8 * OUTPUT_LIMIT:
                    del target[: -4 * OUTPUT_LIMIT]  # a tail to decode, kept bounded
    if mark is not None:
        for k in (1, 2):
            if streams[k].endswith(mark):
                del streams[k][-len(mark) :]
    return bytes(head + streams[1]), bytes(streams[2]), timed_out


class DockerValidator:
    """Each check in its own container of the sandbox's image, started ahead, never reused.

    Args:
        files: The checker's files, by path.
        image: The sandbox's image.
        client: The engine's client.
        user: The "uid:gid" the checker runs as.
        memory_mb: The container's memory.
        cpus: Its CPUs.
        pool_size: How many containers to keep started ahead (innolab.gym.checker_pool.pool_size;
            None: $INNOLAB_CHECKER_POOL, else its default).

    Raises:
        ValueError: A pool size that breaks its rule.
    """

    FOLDER = "/tmp/pristine"

    def __init__(
        self,
        files: dict[str, bytes],
        image: str,
        client: Any,
        user: str = "1000:1000",
        memory_mb: int = 1024,
        cpus: float = 1.0,
        pool_size: int | None = None,
    ) -> None:
        self.files, self.image, self.client, self.user = dict(files), image, client, user
        self.memory_mb, self.cpus = memory_mb, cpus
        self.digests = digests(self.files)
        self.token = secrets.token_hex(8)
        self.closed = False
        self.pool: CheckerPool[PooledContainer] = CheckerPool(
            weakly(self._start), weakly(self._discard), checker_pool.pool_size(pool_size))

    def _start(self) -> PooledContainer:
        """Start one checker container, its waiter waiting for the order on the attached stream."""
        key = secrets.token_hex(16)
        container = self.client.containers.create(
            self.image,
            waiter_argv("python3"),
            user=self.user,
            working_dir="/tmp",
            network_disabled=True,
            network_mode="none",
            mem_limit=f"{self.memory_mb}m",
            memswap_limit=f"{self.memory_mb}m",
            nano_cpus=int(self.cpus * 1e9),
            pids_limit=64,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            environment={"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"},
            labels={"innolab": "validator", "innolab.owner": json.dumps(owner_token()),
                    POOL_LABEL: self.token},
            stdin_open=True,  # and StdinOnce: its input ends when the validator's socket closes
            auto_remove=True,
        )
        attached = None
        try:
            attached = container.attach_socket(
                params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            container.start()
            raw = PooledContainer(container, attached, key).raw
            await_ready(raw, time.monotonic() + START_TIMEOUT_S)
            raw.sendall(key_line(key))  # not in its environment: `docker inspect` shows that
        except Exception:
            if attached is not None:
                PooledContainer(container, attached, key).close()
            with contextlib.suppress(Exception):
                container.remove(force=True)
            raise
        return PooledContainer(container, attached, key)

    def _discard(self, pooled: PooledContainer) -> None:
        """End a container that will not be used."""
        pooled.close()
        with contextlib.suppress(Exception):  # gone already, or removing itself
            pooled.container.remove(force=True)

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        """Check a candidate in a container of its own (see Validator.check)."""
        if self.closed:
            raise SandboxError("the docker validator is closed: no check can run after close()")
        pooled = self.pool.take()
        try:
            folder = self.FOLDER
            end = secrets.token_hex(16)  # fresh: neither the checker nor a candidate knows it
            order = order_line(
                pooled.key, [f"{folder}/validate.py", f"{folder}/{CANDIDATE}"], "/tmp", folder,
                {**self.digests, CANDIDATE: hashlib.sha256(content).hexdigest()},
                {**self.files, CANDIDATE: content}, end)
            try:  # copied in, read back and verified there before it runs
                pooled.raw.sendall(order)
                stdout, stderr, timed_out = read_frames(pooled.raw, time.monotonic() + timeout_s,
                                                        end)
            except OSError as error:
                raise SandboxError(f"the checker's container could not be reached: {error}") \
                    from None
            if timed_out:
                with contextlib.suppress(Exception):  # it may have ended meanwhile
                    self.client.api.kill(pooled.container.id)
            altered, stdout = split_report(stdout)
            if altered:
                return altered_verdict(altered)
            return parse_verdict(stdout.decode(errors="replace")[-OUTPUT_LIMIT:],
                                 stderr.decode(errors="replace")[-OUTPUT_LIMIT:], timed_out,
                                 timeout_s)
        finally:
            pooled.close()  # the container removes itself once its process has ended
            self.pool.used()

    def held_memory_bytes(self) -> int:
        """The memory the ready containers hold now, as `docker stats` counts it.

        Returns:
            The sum of their cgroups' usage less inactive file pages, in bytes.
        """
        total = 0
        for pooled in self.pool.ready():
            with contextlib.suppress(Exception):
                memory = pooled.container.stats(stream=False, one_shot=True)["memory_stats"]
                stats = memory.get("stats", {})
                inactive = stats.get("inactive_file", stats.get("total_inactive_file", 0))
                total += int(memory.get("usage", 0)) - int(inactive)
        return total

    def __del__(self) -> None:
        """Dropped without close(): its ready containers' input closes, and they end and go."""
        pool = getattr(self, "pool", None)
        if pool is not None and not self.closed:
            pool.abandon(PooledContainer.close)

    def close(self) -> None:
        """Remove every container of this validator, waiting until the engine has removed them."""
        self.closed = True
        self.pool.close()
        mine = {"label": f"{POOL_LABEL}={self.token}"}
        try:  # sparse: none inspected, since one may be removing itself meanwhile
            left = self.client.containers.list(all=True, sparse=True, filters=mine)
        except Exception:  # an engine gone leaves them to the reaper
            return
        for container in left:
            with contextlib.suppress(Exception):  # gone already, or removing itself
                container.remove(force=True)
            with contextlib.suppress(Exception):  # gone: NotFound
                self.client.api.wait(container.id, timeout=REMOVAL_WAIT_S, condition="removed")
