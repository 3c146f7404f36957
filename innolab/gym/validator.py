"""The pristine validator behind the `validate` and `submit` tools, out of the agent's reach.

The agent's workspace holds a copy of validate.py to read and run by hand, but no dev score comes
from it: the tools read the candidate through the sandbox's file API (links refused), and a
pristine copy of the checker checks that copy of the candidate. The checker's files are held in
memory with their content hashes; each check copies them afresh and verifies every hash immediately
before it runs them:

* `local`: each check gets a new folder, inside the validator's private folder (mode 0700,
  innolab's user), holding the checker's copy and the candidate's copy only, removed after the
  check; the copy runs under innolab's interpreter in isolated mode (`-I`). Where innolab runs as
  root, the agent's commands run as another, unprivileged user (innolab.gym.local), which can
  neither enter nor change that folder. Where innolab does not run as root, the agent's commands
  run as innolab's own user: a change made between checks is never used (each check copies
  afresh), one made to the copy before its hash is checked is refused, but one made in the moment
  between the hash check and the interpreter's reading is not detected (see innolab.gym.local);
* `docker`: each check runs in a second, fresh container of the sandbox image (no network, all
  capabilities dropped, non-root, CPU/memory/pids limits) into which the checker and the
  candidate's copy are copied, read back and verified before it starts; the agent's container
  never sees it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

from innolab.gym.leftovers import (
    MARKER_VARIABLE,
    Warden,
    kill_sandbox,
    mark,
    owner_token,
    remove_tree,
)
from innolab.gym.sandbox import SandboxError, tar_files

CANDIDATE = "candidate.json"
OUTPUT_LIMIT = 100_000


class Validator(Protocol):
    """Checks a candidate's bytes with the task's pristine visible checker."""

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        """Check a candidate.

        Args:
            content: The candidate's bytes.
            timeout_s: The check's time limit.

        Returns:
            The verdict, {"valid", "score", "errors"}.

        Raises:
            SandboxError: A validator that can no longer check (closed, its folder removed).
        """
        ...

    def close(self) -> None:
        """Release what the validator holds; no check runs after."""
        ...


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


class LocalValidator:
    """Checks in private folders: the checker copied afresh, verified by hash, run by innolab.

    Each check copies the checker into a new private folder, verifies it by hash, and runs it with
    innolab's interpreter on the candidate's copy.

    Args:
        files: The checker's files (validate.py among them), by path.

    Raises:
        SandboxError: No validate.py among the files.
    """

    def __init__(self, files: dict[str, bytes]) -> None:
        if "validate.py" not in files:
            raise SandboxError("the validator files hold no validate.py")
        self.files = dict(files)
        self.digests = digests(self.files)
        self.root = Path(tempfile.mkdtemp(prefix="innolab-validator-"))  # 0700, innolab's user
        # in each checker's environment: a hung checker is found by it
        self.marker = secrets.token_hex(8)
        mark(self.root, uid=None, marker=self.marker)
        # the folder goes when the run ends, however
        self._warden = Warden(None, self.marker, [self.root])
        self._warden.start()
        self.closed = False

    def _copy(self, folder: Path) -> None:
        """Write the checker into folder/checker."""
        for name, content in self.files.items():
            target = folder / "checker" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)

    def _altered(self, folder: Path) -> list[str]:
        """The checker's files whose copy in folder/checker differs from the pristine content."""
        found = {}
        for name in self.files:
            try:
                found[name] = hashlib.sha256((folder / "checker" / name).read_bytes()).hexdigest()
            except OSError:
                found[name] = ""
        return [name for name, digest in self.digests.items() if found[name] != digest]

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        """Check a candidate in a new private folder (see Validator.check)."""
        # closed: its folder is gone; recreating it would leave an unmarked folder no reaper removes
        if self.closed:
            raise SandboxError("the local validator is closed: no check can run after close()")
        if not self.root.is_dir():
            raise SandboxError(
                f"the local validator's folder {self.root} was removed while it was open"
            )
        folder = Path(tempfile.mkdtemp(dir=self.root, prefix="check-"))
        try:
            candidate = folder / CANDIDATE
            candidate.write_bytes(content)
            self._copy(folder)
            altered = self._altered(folder)  # immediately before use
            if altered:
                return altered_verdict(altered)
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "LANG": "C.UTF-8",
                "PYTHONDONTWRITEBYTECODE": "1",
                MARKER_VARIABLE: self.marker,
            }
            try:
                done = subprocess.run(
                    [sys.executable, "-I", str(folder / "checker" / "validate.py"), str(candidate)],
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return parse_verdict("", "", True, timeout_s)
            return parse_verdict(
                done.stdout[-OUTPUT_LIMIT:], done.stderr[-OUTPUT_LIMIT:], False, timeout_s
            )
        finally:
            remove_tree(folder)

    def close(self) -> None:
        """Stop the warden, kill any checker left and remove the private folder."""
        self.closed = True
        self._warden.stop()
        kill_sandbox(None, self.marker)  # the warden's work, again, in case it was killed
        remove_tree(self.root)


class DockerValidator:
    """One fresh container per check, of the sandbox's image, the checker and candidate copied in.

    Args:
        files: The checker's files, by path.
        image: The sandbox's image.
        client: The engine's client.
        user: The "uid:gid" the checker runs as.
        memory_mb: The container's memory.
        cpus: Its CPUs.
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
    ) -> None:
        self.files, self.image, self.client, self.user = dict(files), image, client, user
        self.memory_mb, self.cpus = memory_mb, cpus
        self.digests = digests(self.files)

    def _altered(self, container: Any, content: bytes) -> list[str]:
        """Read the copy back from the container before it starts; the names whose content differs.

        Returns:
            The names of the checker's files and of the candidate whose copy differs.
        """
        stream, _ = container.get_archive(self.FOLDER)
        found = {}
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            for member in archive.getmembers():
                handle = archive.extractfile(member) if member.isfile() else None
                if handle is not None:
                    digest = hashlib.sha256(handle.read()).hexdigest()
                    found[member.name.removeprefix("pristine/")] = digest
        expected = {**self.digests, CANDIDATE: hashlib.sha256(content).hexdigest()}
        return [name for name, digest in expected.items() if found.get(name) != digest]

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        """Check a candidate in a fresh container (see Validator.check)."""
        uid, gid = (int(v) for v in self.user.split(":"))
        archive = tar_files(
            {f"pristine/{k}": v for k, v in {**self.files, CANDIDATE: content}.items()}, uid, gid
        )
        container = self.client.containers.create(
            self.image,
            ["python3", "-I", f"{self.FOLDER}/validate.py", f"{self.FOLDER}/{CANDIDATE}"],
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
            labels={"innolab": "validator", "innolab.owner": json.dumps(owner_token())},
        )
        try:
            if not container.put_archive("/tmp", archive):
                raise SandboxError("could not copy the validator into its container")
            altered = self._altered(container, content)
            if altered:
                return altered_verdict(altered)
            start = time.monotonic()
            container.start()
            try:
                container.wait(timeout=timeout_s)
                timed_out = False
            except Exception:  # the SDK raises a requests timeout here
                timed_out = time.monotonic() - start >= timeout_s * 0.95
                container.kill()
            stdout = container.logs(stdout=True, stderr=False).decode(errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode(errors="replace")
            stdout, stderr = stdout[-OUTPUT_LIMIT:], stderr[-OUTPUT_LIMIT:]
            return parse_verdict(stdout, stderr, timed_out, timeout_s)
        finally:
            container.remove(force=True)

    def close(self) -> None:
        """Nothing to release: each check's container is removed after it."""
        return None
