"""Shared fixtures: a Docker client that is required in CI (INNOLAB_REQUIRE_DOCKER=1) and skipped elsewhere."""

import os

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
