"""Open a sandbox for a task: the chosen back end, with only the task's visible part copied in."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from innolab.gym.sandbox import Sandbox, SandboxError
from innolab.tasks.model import Task

Runtime = Literal["local", "docker"]
RUNTIMES: tuple[Runtime, ...] = ("local", "docker")


def open_sandbox(task: Task, runtime: Runtime = "local", image: str | None = None,
                 workspace: Path | None = None) -> Sandbox:
    """A fresh sandbox holding the task's visible files (description, validator, data); nothing hidden."""
    if runtime == "local":
        from innolab.gym.local import LocalSandbox

        sandbox: Sandbox = LocalSandbox(workspace)
    elif runtime == "docker":
        from innolab.gym.docker_sandbox import DEFAULT_IMAGE, DockerLimits, DockerSandbox

        limits = DockerLimits(gpus="all" if task.spec.compute == "gpu" else None)
        sandbox = DockerSandbox(image or DEFAULT_IMAGE, limits)
    else:
        raise SandboxError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
    try:
        for name, content in task.visible_files().items():
            sandbox.write_file(name, content)
    except Exception:
        sandbox.close()
        raise
    return sandbox
