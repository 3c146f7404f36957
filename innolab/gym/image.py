"""The offline sandbox base image (Python, numpy, scipy; user agent): debootstrap, docker import."""

from __future__ import annotations

import subprocess
from pathlib import Path

from innolab.gym.docker_sandbox import DEFAULT_IMAGE

SCRIPT = Path(__file__).resolve().parent / "images" / "build-base-image.sh"


def build_base_image(tag: str = DEFAULT_IMAGE) -> int:
    """Run the build script (needs root, debootstrap and a Docker engine).

    The package mirror comes from the machine's apt sources.

    Args:
        tag: The image's tag.

    Returns:
        The script's exit status.
    """
    return subprocess.run(["bash", str(SCRIPT), tag], check=False).returncode
