"""Open a sandbox for a task (only the task's visible part copied in) and the pristine validator beside it."""

from __future__ import annotations

from pathlib import Path

from innolab.gym.policy import RUNTIMES, Runtime
from innolab.gym.sandbox import Sandbox, SandboxError
from innolab.gym.task import GymTask
from innolab.gym.validator import DockerValidator, LocalValidator, Validator

GPU_REQUESTS = {"cpu": None, "gpu": "all", "gpu-if-available": "if-available"}


def open_sandbox(task: GymTask, runtime: Runtime = "local", image: str | None = None,
                 workspace: Path | None = None) -> Sandbox:
    """A fresh sandbox holding the task's visible files (description, validator, data); nothing hidden.

    Raises SandboxError for an unknown runtime or a sandbox that cannot start.
    """
    if runtime == "local":
        from innolab.gym.local import LocalSandbox

        sandbox: Sandbox = LocalSandbox(workspace)
    elif runtime == "docker":
        from innolab.gym.docker_sandbox import DEFAULT_IMAGE, DockerLimits, DockerSandbox

        limits = DockerLimits(gpus=GPU_REQUESTS[task.compute])
        sandbox = DockerSandbox(image or DEFAULT_IMAGE, limits)
    else:
        raise SandboxError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
    try:
        sandbox.write_files(task.visible_files())
    except Exception:
        sandbox.close()
        raise
    return sandbox


def open_validator(task: GymTask, sandbox: Sandbox) -> Validator:
    """The task's pristine checker for this sandbox's runtime (see innolab.gym.validator): in a fresh
    container of the sandbox's image on its engine for a container sandbox, in a private folder otherwise.

    Raises SandboxError for a docker sandbox that names no image or engine client.
    """
    if sandbox.runtime == "docker":
        if sandbox.image is None or sandbox.client is None:
            raise SandboxError("a docker sandbox must name its image and its engine's client")
        return DockerValidator(task.validator_files(), sandbox.image, sandbox.client)
    return LocalValidator(task.validator_files())
