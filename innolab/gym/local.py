"""Local sandbox: a subprocess in a workspace folder. For trusted use and quick demos: it does NOT isolate."""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path

from innolab.gym.sandbox import MAX_FILE_BYTES, ExecResult, SandboxError, safe_members, workspace_path


class LocalSandbox:
    """Commands run as the current user in `workspace` with a scrubbed environment and a time limit.

    Not isolation: the commands can read anything the user can. Use the docker runtime for untrusted agents.
    """

    runtime = "local"

    def __init__(self, workspace: Path | None = None) -> None:
        self._owned = workspace is None
        self.workspace = Path(workspace or tempfile.mkdtemp(prefix="innolab-ws-")).resolve()
        self.workspace.mkdir(parents=True, exist_ok=True)

    def _resolve(self, path: str) -> Path:
        target = self.workspace / workspace_path(path)
        # Follow no symlink out of the workspace: resolve and compare.
        resolved = target.resolve()
        if resolved != self.workspace and self.workspace not in resolved.parents:
            raise SandboxError(f"path {path!r} resolves outside the workspace")
        return target

    def exec(self, command: list[str] | str, timeout_s: float = 60.0) -> ExecResult:
        argv = ["/bin/bash", "-lc", command] if isinstance(command, str) else list(command)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workspace), "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1"}
        start = time.monotonic()
        process = subprocess.Popen(argv, cwd=self.workspace, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            out, err = process.communicate(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            timed_out = True
        code = process.returncode if not timed_out else 124
        return ExecResult(code, out.decode(errors="replace"), err.decode(errors="replace"), timed_out,
                          time.monotonic() - start)

    def read_file(self, path: str, max_bytes: int = MAX_FILE_BYTES) -> bytes:
        target = self._resolve(path)
        if target.is_symlink() or not target.is_file():
            raise SandboxError(f"{path} is not a regular file")
        if target.stat().st_size > max_bytes:
            raise SandboxError(f"{path} is larger than {max_bytes} bytes")
        return target.read_bytes()

    def write_file(self, path: str, content: bytes) -> None:
        target = self._resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()
        target.write_bytes(content)

    def snapshot(self) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            for path in sorted(self.workspace.rglob("*")):
                if path.is_symlink() or not (path.is_file() or path.is_dir()):
                    continue  # links and special files are not part of the state
                archive.add(path, arcname=str(path.relative_to(self.workspace)), recursive=False)
        return buffer.getvalue()

    def restore(self, snapshot: bytes) -> None:
        for child in self.workspace.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        with tarfile.open(fileobj=io.BytesIO(snapshot)) as archive:
            archive.extractall(self.workspace, members=safe_members(archive), filter="data")

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self.workspace, ignore_errors=True)
