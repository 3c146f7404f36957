"""The Docker engine and the offline base image that CI provisions for the sandbox."""

import pytest

pytestmark = pytest.mark.docker


def test_base_image_runs_python_with_numpy_and_scipy_offline(docker_client, base_image):
    out = docker_client.containers.run(
        base_image,
        [
            "python3",
            "-c",
            "import numpy, scipy.optimize; print(numpy.ones(3).sum(), scipy.__name__)",
        ],
        network_disabled=True,
        remove=True,
        user="agent",
    )
    assert out.decode().split() == ["3.0", "scipy"]


def test_no_network_inside(docker_client, base_image):
    # With networking disabled the container has the loopback interface only: nothing can leave it.
    out = docker_client.containers.run(
        base_image, ["ls", "/sys/class/net"], network_mode="none", remove=True
    )
    assert out.decode().split() == ["lo"]


def test_agent_user_is_not_root(docker_client, base_image):
    out = docker_client.containers.run(base_image, ["id", "-u"], user="agent", remove=True)
    assert int(out.decode()) == 1000
    with pytest.raises(Exception):  # noqa: B017 - the container's exit status surfaces as ContainerError
        docker_client.containers.run(base_image, ["touch", "/etc/x"], user="agent", remove=True)
