"""Shared fixtures: a Docker client that is required in CI (INNOLAB_REQUIRE_DOCKER=1) and skipped elsewhere; EXP-Bench's
real data, required where CI has the shared copy (INNOLAB_REQUIRE_EXPBENCH_DATA=1) and skipped elsewhere."""

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

BASE_IMAGE = os.environ.get("INNOLAB_BASE_IMAGE", "innolab/base:latest")


@pytest.fixture(scope="session")
def docker_client():
    import docker

    required = os.environ.get("INNOLAB_REQUIRE_DOCKER") == "1"
    try:
        client = docker.from_env()
        client.ping()
    except Exception as error:  # the engine is missing or not running
        if required:
            pytest.fail(f"INNOLAB_REQUIRE_DOCKER=1 but the Docker engine does not answer: {error}")
        pytest.skip(f"no Docker engine ({error}); CI sets INNOLAB_REQUIRE_DOCKER=1 and provides one")
    return client


@pytest.fixture(scope="session")
def base_image(docker_client):
    import docker

    try:
        docker_client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        message = f"base image {BASE_IMAGE} missing; build it with `innolab sandbox build-image` (root, debootstrap)"
        if os.environ.get("INNOLAB_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return BASE_IMAGE


@pytest.fixture(scope="session")
def expbench_data_dir():
    """EXP-Bench's real data ($INNOLAB_EXPBENCH_DIR): a test that needs them fails when INNOLAB_REQUIRE_EXPBENCH_DATA=1
    and they are missing or unreadable, and is skipped otherwise."""
    folder = os.environ.get("INNOLAB_EXPBENCH_DIR")
    logs = Path(folder) / "outputs" / "logs" if folder else None
    if not folder:
        problem = "INNOLAB_EXPBENCH_DIR is not set"
    elif logs is None or not logs.is_dir() or not os.access(logs, os.R_OK | os.X_OK):
        problem = f"INNOLAB_EXPBENCH_DIR={folder} has no readable outputs/logs folder"
    else:
        return Path(folder)
    if os.environ.get("INNOLAB_REQUIRE_EXPBENCH_DATA") == "1":
        pytest.fail(f"INNOLAB_REQUIRE_EXPBENCH_DATA=1 but the real EXP-Bench data cannot be read: {problem}")
    pytest.skip(f"the real EXP-Bench data are not here ({problem}); CI requires them where the shared copy exists")
