"""Open a sandbox for a task (only the task's visible part copied in) and the pristine validator beside it."""

from __future__ import annotations

from pathlib import Path

from innolab.gym.policy import RUNTIMES, Runtime
from innolab.gym.sandbox import Sandbox, SandboxError
from innolab.gym.validator import DockerValidator, LocalValidator, Validator
from innolab.tasks.model import Task


def open_sandbox(task: Task, runtime: Runtime = "local", image: str | None = None,
                 workspace: Path | None = None) -> Sandbox:
    """A fresh sandbox holding the task's visible files (description, validator, data); nothing hidden."""
    if runtime == "local":
        from innolab.gym.local import LocalSandbox

        sandbox: Sandbox = LocalSandbox(workspace)
    elif runtime == "docker":
        from innolab.gym.docker_sandbox import DEFAULT_IMAGE, DockerLimits, DockerSandbox

        gpus = {"gpu": "all", "gpu-if-available": "if-available"}.get(task.spec.compute)
        limits = DockerLimits(gpus=gpus)
        sandbox = DockerSandbox(image or DEFAULT_IMAGE, limits)
    else:
        raise SandboxError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
    try:
        files = task.visible_files()
        if hasattr(sandbox, "write_files"):  # one archive for a whole repository
            sandbox.write_files(files)
        else:
            for name, content in files.items():
                sandbox.write_file(name, content)
    except Exception:
        sandbox.close()
        raise
    return sandbox


def open_validator(task: Task, sandbox: Sandbox) -> Validator:
    """The task's pristine checker for this sandbox's runtime (see innolab.gym.validator)."""
    if sandbox.runtime == "docker":
        return DockerValidator(task.validator_files(), sandbox.image, sandbox.client)  # type: ignore[attr-defined]
    return LocalValidator(task.validator_files())
