"""Shared fixtures and markers.

A test marked `docker` needs the Docker engine (its fixtures `docker_client` and `base_image`), one
marked `chromium` a headless Chromium: each is skipped where its tool is absent and fails instead
where CI requires it (INNOLAB_REQUIRE_DOCKER=1, INNOLAB_REQUIRE_CHROMIUM=1), so
`pytest -m "not docker"` leaves the Docker tests out. EXP-Bench's real data are required where CI
has the shared copy (INNOLAB_REQUIRE_EXPBENCH_DATA=1) and skipped elsewhere. The agent frameworks'
tests (fixture `agents_extra`) fail instead of skipping where the optional extra innolab[agents]
is missing and CI requires it (INNOLAB_REQUIRE_AGENTS=1).
"""

import functools
import os
import shutil
from pathlib import Path
from typing import Any

import matplotlib
import pytest

matplotlib.use("Agg")

BASE_IMAGE = os.environ.get("INNOLAB_BASE_IMAGE", "innolab/base:latest")
DOCKER_FIXTURES = frozenset({"docker_client", "base_image"})


def _absent(required_by: str, problem: str, hint: str) -> None:
    """Fail when the environment variable `required_by` is 1 (CI provides what is absent), else
    skip."""
    if os.environ.get(required_by) == "1":
        pytest.fail(f"{required_by}=1 but {problem}")
    pytest.skip(f"{problem}; {hint}")


@functools.cache
def _docker_engine() -> tuple[Any, str | None]:
    """A Docker client that answers, or None and why not (asked once per session)."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
    except Exception as error:  # the engine is missing or not running
        return None, f"the Docker engine does not answer: {error}"
    return client, None


def _require_docker() -> Any:
    client, problem = _docker_engine()
    if problem is not None:
        _absent(
            "INNOLAB_REQUIRE_DOCKER", problem, "CI sets INNOLAB_REQUIRE_DOCKER=1 and provides one"
        )
    return client


def chromium() -> str | None:
    """The headless browser the `chromium` tests drive, or None where none is installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture: a `docker` test needs the engine, a `chromium` test the browser; a test
    that asks for a Docker fixture must carry the `docker` marker (else `-m "not docker"` would
    not leave it out)."""
    docker_marked = item.get_closest_marker("docker") is not None
    used = sorted(DOCKER_FIXTURES.intersection(getattr(item, "fixturenames", ())))
    if used and not docker_marked:
        pytest.fail(
            f"{item.nodeid} uses {', '.join(used)} but is not marked docker: "
            "add @pytest.mark.docker"
        )
    if docker_marked:
        _require_docker()
    if item.get_closest_marker("chromium") is not None and chromium() is None:
        _absent(
            "INNOLAB_REQUIRE_CHROMIUM",
            "chromium is not installed",
            "no chromium here (.ci/run installs Debian's)",
        )


# ------------------------------------------------- pytest-xdist: what must share one worker

DOCKER_GROUP = "docker"


def shared_fixtures(item: pytest.Item) -> set[str]:
    """The module-, package- or session-scoped fixtures of its own module that a test uses."""
    module = item.nodeid.split("::", 1)[0]
    info = getattr(item, "_fixtureinfo", None)
    return {name for name, definitions in (info.name2fixturedefs.items() if info else ())
            if definitions[-1].scope in ("module", "package", "session")
            and definitions[-1].baseid == module}


def xdist_group(item: pytest.Item, docker_fixtures: set[tuple[str, str]]) -> str | None:
    """The worker group of a test under `pytest -n N --dist loadgroup` (`make test`), or None.

    Every `docker` test runs on one worker, one at a time: the Docker tests compare the engine's
    containers before and after a run (no other test makes one: a Docker fixture without the
    marker is an error) and share its CPUs and the base image. A test that uses a module-scoped
    fixture of its own module (a sweep, a reproduction, an installed plugin) runs on one worker
    with the other tests that use it, so that the fixture is made once: with the Docker tests
    where one of them uses it too (`docker_fixtures`: (module, fixture) pairs), else with its
    module. The other tests go wherever a worker is free.
    """
    if item.get_closest_marker("docker") is not None:
        return DOCKER_GROUP
    module = item.nodeid.split("::", 1)[0]
    shared = shared_fixtures(item)
    if any((module, name) in docker_fixtures for name in shared):
        return DOCKER_GROUP
    return module if shared else None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group the tests for pytest-xdist's `loadgroup` (`make test`): see `xdist_group`."""
    docker_fixtures = {(item.nodeid.split("::", 1)[0], name) for item in items
                       if item.get_closest_marker("docker") is not None
                       for name in shared_fixtures(item)}
    for item in items:
        group = xdist_group(item, docker_fixtures)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session")
def docker_client():
    """A Docker client whose engine answers (tests marked `docker`)."""
    return _require_docker()


@pytest.fixture(scope="session")
def base_image(docker_client):
    """The name of the sandbox's base image, present in the engine."""
    import docker

    try:
        docker_client.images.get(BASE_IMAGE)
    except docker.errors.ImageNotFound:
        _absent(
            "INNOLAB_REQUIRE_DOCKER",
            f"base image {BASE_IMAGE} missing",
            "build it with `innolab sandbox build-image` (root, debootstrap)",
        )
    return BASE_IMAGE


@pytest.fixture(scope="module")
def test_agents():
    """The test suite's scripted policies as registered agents (tests/gym_policies.py: the gym
    builds a run's policy only through the registry), for the module's tests; a subprocess gets
    them with `tests.gym_policies.pythonpath()`."""
    import sys

    from innolab.agents import registry
    from tests.gym_policies import TEST_AGENTS

    sys.path.append(str(TEST_AGENTS))
    registry.registered(reload=True)
    try:
        yield
    finally:
        sys.path.remove(str(TEST_AGENTS))
        registry.registered(reload=True)


@pytest.fixture
def agents_extra():
    """The optional extra innolab[agents] (the three frameworks): a test that needs it fails
    when INNOLAB_REQUIRE_AGENTS=1 (CI installs it) and it is missing, and is skipped otherwise."""
    import importlib.metadata

    missing = []
    for distribution in ("smolagents", "openai-agents", "mini-swe-agent"):
        try:
            importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            missing.append(distribution)
    if missing:
        _absent("INNOLAB_REQUIRE_AGENTS",
                f"the optional extra innolab[agents] is not installed ({', '.join(missing)})",
                "make install installs it; CI sets INNOLAB_REQUIRE_AGENTS=1")


@pytest.fixture(scope="session")
def expbench_data_dir():
    """EXP-Bench's real data ($INNOLAB_EXPBENCH_DIR): a test that needs them fails when
    INNOLAB_REQUIRE_EXPBENCH_DATA=1 and they are missing or unreadable, and is skipped
    otherwise."""
    folder = os.environ.get("INNOLAB_EXPBENCH_DIR")
    logs = Path(folder) / "outputs" / "logs" if folder else None
    if not folder:
        problem = "INNOLAB_EXPBENCH_DIR is not set"
    elif logs is None or not logs.is_dir() or not os.access(logs, os.R_OK | os.X_OK):
        problem = f"INNOLAB_EXPBENCH_DIR={folder} has no readable outputs/logs folder"
    else:
        return Path(folder)
    _absent(
        "INNOLAB_REQUIRE_EXPBENCH_DATA",
        f"the real EXP-Bench data cannot be read: {problem}",
        "CI requires them where the shared copy exists",
    )


# ------------------------------------------------- a fresh clone: the tracked files, nothing else


def _tracked_files(root: Path) -> list[str] | None:
    import subprocess

    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=False)
    if listed.returncode != 0:
        return None
    return [name for name in listed.stdout.decode().split("\0") if name]


def git(folder: Path, *args: str) -> str:
    """Run git in `folder` (as a test, with a fixed identity); its output."""
    import subprocess

    done = subprocess.run(["git", "-c", "user.name=innolab tests", "-c",
                           "user.email=tests@innolab.invalid", "-c", "commit.gpgsign=false",
                           *args], cwd=folder, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture(scope="session")
def fresh_clone(tmp_path_factory) -> Path:
    """The repository as a fresh clone has it: its tracked files only (`git ls-files`, with the
    working tree's contents), committed in a repository of their own, so that nothing relies on an
    untracked output and `git status` there shows what a command wrote. Python code run with
    `clone_env(folder)` imports this copy's innolab and reads its data.

    It copies the working tree's contents of those files, not HEAD's: in development the suite
    tests the work not yet committed (a change to a tracked file is seen, a file not yet added is
    not); CI runs on a clean clone, where the two are the same."""
    root = Path(__file__).resolve().parents[1]
    names = _tracked_files(root)
    if names is None:
        pytest.skip("not a git checkout: no list of tracked files to copy")
    copy = tmp_path_factory.mktemp("clone") / "innolab"
    for name in names:
        source = root / name
        if source.is_file() or source.is_symlink():
            target = copy / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "commit", "-q", "-m", "fresh clone")
    return copy


def clone_env(folder: Path) -> dict[str, str]:
    """The environment under which Python (and the kernels it starts) runs the clone's innolab."""
    return {**os.environ, "PYTHONPATH": str(folder), "INNOLAB_ROOT": str(folder)}
