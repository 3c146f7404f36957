"""EXP-Bench's execution check E: the agent's reproduce_exp_bench.sh run in a fresh container.

`bash reproduce_exp_bench.sh` runs from the repository root, in a fresh container with the agent's
modified workspace, under a time limit; `execution_success = (returncode == 0)`.

Beyond upstream (whose check passes mock code, as the paper warns), an optional output check: every
file the conclusion cites must exist after the run and have been written by it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from innolab.expbench.workspace import OUTPUT_SCRIPT

DEFAULT_TIMEOUT_S = 3600.0
Network = Literal["none", "bridge", "host"]
CITED = re.compile(r"[\w./-]+\.(?:csv|json|txt|log|png|pdf|npy|npz|pt|pkl|yaml|yml|md|out)\b")


@dataclass(frozen=True)
class Execution:
    """The outcome of the execution check.

    Attributes:
        execution_success: Whether the script exited with 0 within the time limit.
        execution_message: The tail of its output (stderr on failure).
        returncode: The script's exit status; None when it timed out or did not run.
        timed_out: Whether the time limit was reached.
        duration_s: The run's wall time.
        outputs_written: The optional output check's verdict; None when not asked.
        outputs_note: What the output check found.
    """

    execution_success: bool
    execution_message: str
    returncode: int | None
    timed_out: bool
    duration_s: float
    outputs_written: bool | None = None  # the optional output check (None: not asked)
    outputs_note: str = ""

    def result(self) -> dict[str, object]:
        """Return the keys a judge result carries: upstream's two, the output check's if asked."""
        keys: dict[str, object] = {"execution_success": self.execution_success,
                                   "execution_message": self.execution_message}
        if self.outputs_written is not None:
            keys |= {"outputs_written": self.outputs_written, "outputs_note": self.outputs_note}
        return keys


def cited_files(conclusion: str) -> list[str]:
    """Find the relative file names a conclusion cites (by their extensions).

    Args:
        conclusion: The agent's conclusion.

    Returns:
        The names, sorted, each once (absolute paths left out).
    """
    return sorted({m.group(0).lstrip("./") for m in CITED.finditer(conclusion)
                   if not m.group(0).startswith("/")})


def execute(workspace: str | Path, image: str, timeout_s: float = DEFAULT_TIMEOUT_S,
            network: Network = "none", gpus: bool | None = None, conclusion: str | None = None,
            client=None) -> Execution:
    """Run the workspace's reproduce_exp_bench.sh in a new container of `image`.

    The workspace is mounted at /workspace.

    Args:
        workspace: The agent's workspace.
        image: The container image.
        timeout_s: The run's time limit; the container is killed at it.
        network: The container's network mode.
        gpus: Request every GPU; None requests them when the engine has a GPU runtime.
        conclusion: The agent's conclusion; given, the files it cites must exist after the run
            and be newer than its start.
        client: A docker SDK client; None makes one.

    Returns:
        The outcome (a workspace without the script fails without a container).
    """
    import docker

    from innolab.gym.docker_sandbox import docker_client, gpu_runtime_available

    workspace = Path(workspace).resolve()
    if not (workspace / OUTPUT_SCRIPT).is_file():
        return Execution(False, f"no {OUTPUT_SCRIPT} in the workspace", None, False, 0.0)
    client = client or docker_client()
    use_gpus = gpu_runtime_available(client) if gpus is None else gpus
    requests = [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])] if use_gpus else None
    started = time.time()
    container = client.containers.run(
        image, ["bash", "-c", f"cd /workspace && bash {OUTPUT_SCRIPT}"], detach=True,
        working_dir="/workspace", volumes={str(workspace): {"bind": "/workspace", "mode": "rw"}},
        network_mode=network, device_requests=requests, labels={"innolab": "expbench-exec"})
    timed_out = False
    try:
        try:
            status = container.wait(timeout=timeout_s)
            returncode = int(status.get("StatusCode", 1))
        except Exception:  # the wait timed out (requests' ReadTimeout / ConnectionError)
            timed_out, returncode = True, None
            container.kill()
        stdout = container.logs(stdout=True, stderr=False).decode(errors="replace")
        stderr = container.logs(stdout=False, stderr=True).decode(errors="replace")
    finally:
        container.remove(force=True)
    duration = time.time() - started
    success = not timed_out and returncode == 0
    if timed_out:
        message = f"timed out after {timeout_s:g} s\n{stderr[-4000:]}"
    else:
        message = stdout[-8000:] if success or not stderr else stderr[-8000:]
    written, note = None, ""
    if conclusion is not None:
        cited = cited_files(conclusion)
        stale = [f for f in cited if not (workspace / f).is_file()
                 or (workspace / f).stat().st_mtime < started - 1]
        written = bool(cited) and not stale
        note = ("the conclusion cites no output file" if not cited else
                f"not written by the run: {stale}" if stale else f"written by the run: {cited}")
    return Execution(success, message, returncode, timed_out, duration, written, note)
