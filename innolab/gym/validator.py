"""The pristine validator behind the `validate` and `submit` tools: the visible checker, out of the agent's reach.

The agent's workspace holds a copy of validate.py to read and run by hand, but no dev score comes from it: the
tools read the candidate through the sandbox's file API (links refused), and a pristine copy of the checker,
which the agent cannot write, checks that copy of the candidate:

* `local`: the checker lives in a private folder outside the workspace, read-only, and runs under innolab's own
  interpreter in isolated mode (`-I`); each check gets a fresh folder holding only the candidate's copy;
* `docker`: each check runs in a second, fresh container of the sandbox image (no network, all capabilities
  dropped, non-root, CPU/memory/pids limits) into which the checker and the candidate's copy are copied before
  it starts; the agent's container never sees it.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

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


class LocalValidator:
    """The checker in a private read-only folder outside the workspace, run by innolab's interpreter."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="innolab-validator-"))
        self.checker = self.root / "checker"
        for name, content in files.items():
            target = self.checker / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        for path in sorted(self.checker.rglob("*"), reverse=True):
            path.chmod(stat.S_IRUSR | stat.S_IRGRP | (stat.S_IXUSR | stat.S_IXGRP if path.is_dir() else 0))
        self.checker.chmod(0o550)

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(dir=self.root, prefix="candidate-") as folder:
            candidate = Path(folder) / CANDIDATE
            candidate.write_bytes(content)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
            try:
                done = subprocess.run([sys.executable, "-I", str(self.checker / "validate.py"), str(candidate)],
                                      cwd=folder, env=env, capture_output=True, text=True, timeout=timeout_s,
                                      check=False)
            except subprocess.TimeoutExpired:
                return parse_verdict("", "", True, timeout_s)
            return parse_verdict(done.stdout[-OUTPUT_LIMIT:], done.stderr[-OUTPUT_LIMIT:], False, timeout_s)

    def close(self) -> None:
        for path in [self.checker, *self.checker.rglob("*")]:
            if path.is_dir():
                path.chmod(0o700)
        shutil.rmtree(self.root, ignore_errors=True)


class DockerValidator:
    """One fresh container per check, from the sandbox's image, with the checker and the candidate copied in."""

    FOLDER = "/tmp/pristine"

    def __init__(self, files: dict[str, bytes], image: str, client: Any, user: str = "1000:1000",
                 memory_mb: int = 1024, cpus: float = 1.0) -> None:
        self.files, self.image, self.client, self.user = files, image, client, user
        self.memory_mb, self.cpus = memory_mb, cpus

    def check(self, content: bytes, timeout_s: float) -> dict[str, Any]:
        uid, gid = (int(v) for v in self.user.split(":"))
        archive = tar_files({f"pristine/{k}": v for k, v in {**self.files, CANDIDATE: content}.items()}, uid, gid)
        container = self.client.containers.create(
            self.image, ["python3", "-I", f"{self.FOLDER}/validate.py", f"{self.FOLDER}/{CANDIDATE}"],
            user=self.user, working_dir="/tmp", network_disabled=True, network_mode="none",
            mem_limit=f"{self.memory_mb}m", memswap_limit=f"{self.memory_mb}m", nano_cpus=int(self.cpus * 1e9),
            pids_limit=64, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            environment={"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}, labels={"innolab": "validator"})
        try:
            if not container.put_archive("/tmp", archive):
                raise SandboxError("could not copy the validator into its container")
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
