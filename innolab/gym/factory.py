"""Open a sandbox for a task (its visible part copied in) and the pristine validator beside it."""

from __future__ import annotations

from pathlib import Path

from innolab.gym.policy import RUNTIMES, Runtime
from innolab.gym.sandbox import Sandbox, SandboxError
from innolab.gym.task import GymTask
from innolab.gym.validator import DockerValidator, LocalValidator, Validator

GPU_REQUESTS = {"cpu": None, "gpu": "all", "gpu-if-available": "if-available"}


def open_sandbox(
    task: GymTask,
    runtime: Runtime = "local",
    image: str | None = None,
    workspace: Path | None = None,
) -> Sandbox:
    """A fresh sandbox holding the task's visible files, its data folder mounted read-only beside.

    Args:
        task: The task; nothing hidden of it enters the sandbox.
        runtime: The back end, one of RUNTIMES.
        image: The container image (docker; None: the default image of the task's compute: a
            `gpu` task's is the GPU image).
        workspace: The workspace folder (local; None: a new temporary folder).

    Returns:
        The open sandbox; the caller closes it.

    Raises:
        SandboxError: An unknown runtime, or a sandbox that cannot start or be filled.
    """
    data = task.data_dir
    if runtime == "local":
        from innolab.gym.local import LocalSandbox

        sandbox: Sandbox = LocalSandbox(workspace, data=data)
    elif runtime == "docker":
        from innolab.gym.docker_sandbox import DockerLimits, DockerSandbox, default_image

        limits = DockerLimits(gpus=GPU_REQUESTS[task.compute])
        sandbox = DockerSandbox(image or default_image(task.compute), limits, data=data)
    else:
        raise SandboxError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
    try:
        sandbox.write_files(task.visible_files())
    except Exception:
        sandbox.close()
        raise
    return sandbox


def open_validator(task: GymTask, sandbox: Sandbox, pool_size: int | None = None) -> Validator:
    """The task's pristine checker for this sandbox's runtime (see innolab.gym.validator).

    Args:
        task: The task whose validator files are checked.
        sandbox: The run's sandbox.
        pool_size: How many checkers to keep started ahead (innolab.gym.checker_pool; None:
            $INNOLAB_CHECKER_POOL, else its default).

    Returns:
        For a docker sandbox, a validator running each check in a fresh container of the sandbox's
        image on its engine; otherwise one running it in a private folder.

    Raises:
        SandboxError: A docker sandbox that names no image or engine client.
        ValueError: A pool size that breaks its rule.
    """
    if sandbox.runtime == "docker":
        if sandbox.image is None or sandbox.client is None:
            raise SandboxError("a docker sandbox must name its image and its engine's client")
        return DockerValidator(task.validator_files(), sandbox.image, sandbox.client,
                               pool_size=pool_size)
    return LocalValidator(task.validator_files(), pool_size=pool_size)
