"""The offline sandbox base image: debootstrap + `docker import` (Python with numpy and scipy, user agent)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from innolab.gym.docker_sandbox import DEFAULT_IMAGE

SCRIPT = Path(__file__).resolve().parent / "images" / "build-base-image.sh"


def build_base_image(tag: str = DEFAULT_IMAGE) -> int:
    """Run the build script (needs root, debootstrap and a Docker engine); the mirror comes from apt sources."""
    return subprocess.run(["bash", str(SCRIPT), tag], check=False).returncode
