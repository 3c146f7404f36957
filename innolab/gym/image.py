"""The offline sandbox images (numpy, scipy, scikit-learn, PyTorch; user agent): debootstrap."""

from __future__ import annotations

import subprocess
from pathlib import Path

from innolab.gym.docker_sandbox import DEFAULT_IMAGE, GPU_IMAGE

SCRIPT = Path(__file__).resolve().parent / "images" / "build-base-image.sh"


def build_base_image(tag: str | None = None, gpu: bool = False) -> int:
    """Run the build script (needs root, debootstrap and a Docker engine).

    The package mirror comes from the machine's apt sources. The base image carries the
    distribution's CPU build of PyTorch; the GPU image (`gpu`) the GPU build from the package
    index, for tasks of the `gpu` compute profile.

    Args:
        tag: The image's tag (None: innolab/base:latest, or innolab/gpu:latest with `gpu`).
        gpu: Build the GPU image.

    Returns:
        The script's exit status.
    """
    tag = tag or (GPU_IMAGE if gpu else DEFAULT_IMAGE)
    variant = ["--gpu"] if gpu else []
    return subprocess.run(["bash", str(SCRIPT), tag, *(variant or ["cpu"])], check=False).returncode
