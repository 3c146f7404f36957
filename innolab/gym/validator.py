"""The pristine validator behind the `validate` and `submit` tools: the visible checker, out of the agent's reach.

The agent's workspace holds a copy of validate.py to read and run by hand, but no dev score comes from it: the
tools read the candidate through the sandbox's file API (links refused), and a pristine copy of the checker checks
that copy of the candidate. The checker's files are held in memory with their content hashes; each check copies
them afresh and verifies every hash immediately before it runs them:

* `local`: each check gets a new folder, inside the validator's private folder (mode 0700, innolab's user),
  holding the checker's copy and the candidate's copy only, removed after the check; the copy runs under
  innolab's interpreter in isolated mode (`-I`). Where innolab runs as root, the agent's commands run as another,
  unprivileged user (innolab.gym.local), which can neither enter nor change that folder. Where innolab does not
  run as root, the agent's commands run as innolab's own user: a change made between checks is never used (each
  check copies afresh), one made to the copy before its hash is checked is refused, but one made in the moment
  between the hash check and the interpreter's reading is not detected (see innolab.gym.local);
* `docker`: each check runs in a second, fresh container of the sandbox image (no network, all capabilities
  dropped, non-root, CPU/memory/pids limits) into which the checker and the candidate's copy are copied, read
  back and verified before it starts; the agent's container never sees it.
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

from innolab.gym.leftovers import MARKER_VARIABLE, Warden, kill_sandbox, mark, owner_token, remove_tree
from innolab.gym.sandbox import SandboxError, tar_files

CANDIDATE = "candidate.json"
OUTPUT_LIMIT = 100_000


class Validator(Protocol):
    """Checks a candidate's bytes with the task's pristine visible checker; returns its JSON verdict."""

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]: ...

    def close(self) -> None: ...


def parse_verdict(stdout: str, stderr: str, timed_out: bool, timeout_s: float) -> dict[str, Any]:
    """The checker's last stdout line as a verdict; anything else is an invalid verdict that says why."""
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
    return {"valid": valid, "score": verdict["score"] if valid else None, "errors": list(verdict["errors"])}


def digests(files: dict[str, bytes]) -> dict[str, str]:
    """The sha256 of each file's content."""
    return {name: hashlib.sha256(content).hexdigest() for name, content in files.items()}


def altered_verdict(names: list[str]) -> dict[str, Any]:
    return {"valid": False, "score": None, "errors": [
        f"the pristine checker's copy was altered before use ({', '.join(sorted(names))}); the check did not run"]}


class LocalValidator:
    """Each check: the checker copied afresh into a new private folder, verified by hash, run by innolab's
    interpreter on the candidate's copy."""

    def __init__(self, files: dict[str, bytes]) -> None:
        if "validate.py" not in files:
            raise SandboxError("the validator files hold no validate.py")
        self.files = dict(files)
        self.digests = digests(self.files)
        self.root = Path(tempfile.mkdtemp(prefix="innolab-validator-"))  # 0700, innolab's user
        self.marker = secrets.token_hex(8)  # in each checker's environment: a hung checker is found by it
        mark(self.root, uid=None, marker=self.marker)
        self._warden = Warden(None, self.marker, [self.root])  # the folder goes when the run ends, however
        self._warden.start()
        self.closed = False

    def _copy(self, folder: Path) -> None:
        """Write the checker into folder/checker."""
        for name, content in self.files.items():
            target = folder / "checker" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)

    def _altered(self, folder: Path) -> list[str]:
        """The names of the checker's files whose copy in folder/checker differs from the pristine content."""
        found = {}
        for name in self.files:
            try:
                found[name] = hashlib.sha256((folder / "checker" / name).read_bytes()).hexdigest()
            except OSError:
                found[name] = ""
        return [name for name, digest in self.digests.items() if found[name] != digest]

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        if self.closed:  # its folder is removed; recreating it would leave an unmarked folder no reaper removes
            raise SandboxError("the local validator is closed: no check can run after close()")
        if not self.root.is_dir():
            raise SandboxError(f"the local validator's folder {self.root} was removed while it was open")
        folder = Path(tempfile.mkdtemp(dir=self.root, prefix="check-"))
        try:
            candidate = folder / CANDIDATE
            candidate.write_bytes(content)
            self._copy(folder)
            altered = self._altered(folder)  # immediately before use
            if altered:
                return altered_verdict(altered)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                   MARKER_VARIABLE: self.marker}
            try:
                done = subprocess.run([sys.executable, "-I", str(folder / "checker" / "validate.py"), str(candidate)],
                                      cwd=folder, env=env, capture_output=True, text=True, timeout=timeout_s,
                                      check=False)
            except subprocess.TimeoutExpired:
                return parse_verdict("", "", True, timeout_s)
            return parse_verdict(done.stdout[-OUTPUT_LIMIT:], done.stderr[-OUTPUT_LIMIT:], False, timeout_s)
        finally:
            remove_tree(folder)

    def close(self) -> None:
        self.closed = True
        self._warden.stop()
        kill_sandbox(None, self.marker)  # the warden's work, again, in case it was killed
        remove_tree(self.root)


class DockerValidator:
    """One fresh container per check, from the sandbox's image, with the checker and the candidate copied in."""

    FOLDER = "/tmp/pristine"

    def __init__(self, files: dict[str, bytes], image: str, client: Any, user: str = "1000:1000",
                 memory_mb: int = 1024, cpus: float = 1.0) -> None:
        self.files, self.image, self.client, self.user = dict(files), image, client, user
        self.memory_mb, self.cpus = memory_mb, cpus
        self.digests = digests(self.files)

    def _altered(self, container: Any, content: bytes) -> list[str]:
        """Read the copy back from the container before it starts; the names whose content differs."""
        stream, _ = container.get_archive(self.FOLDER)
        found = {}
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            for member in archive.getmembers():
                handle = archive.extractfile(member) if member.isfile() else None
                if handle is not None:
                    found[member.name.removeprefix("pristine/")] = hashlib.sha256(handle.read()).hexdigest()
        expected = {**self.digests, CANDIDATE: hashlib.sha256(content).hexdigest()}
        return [name for name, digest in expected.items() if found.get(name) != digest]

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        uid, gid = (int(v) for v in self.user.split(":"))
        archive = tar_files({f"pristine/{k}": v for k, v in {**self.files, CANDIDATE: content}.items()}, uid, gid)
        container = self.client.containers.create(
            self.image, ["python3", "-I", f"{self.FOLDER}/validate.py", f"{self.FOLDER}/{CANDIDATE}"],
            user=self.user, working_dir="/tmp", network_disabled=True, network_mode="none",
            mem_limit=f"{self.memory_mb}m", memswap_limit=f"{self.memory_mb}m", nano_cpus=int(self.cpus * 1e9),
            pids_limit=64, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            environment={"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"},
            labels={"innolab": "validator", "innolab.owner": json.dumps(owner_token())})
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
            stdout = container.logs(stdout=True, stderr=False).decode(errors="replace")[-OUTPUT_LIMIT:]
            stderr = container.logs(stdout=False, stderr=True).decode(errors="replace")[-OUTPUT_LIMIT:]
            return parse_verdict(stdout, stderr, timed_out, timeout_s)
        finally:
            container.remove(force=True)

    def close(self) -> None:
        return None
