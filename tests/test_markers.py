"""The `docker` and `chromium` markers of tests/conftest.py: a marked test skips where its tool is
absent, fails where CI requires the tool, and a test that asks for a Docker fixture without the
marker fails."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from xml.etree import ElementTree

import pytest

HERE = Path(__file__).resolve().parent
PROBES = """
import pytest


@pytest.mark.docker
def test_marked_docker():
    pass


@pytest.mark.chromium
def test_marked_chromium():
    pass


def test_unmarked_docker_fixture(docker_client):
    pass


def test_plain():
    pass
"""


def outcomes(folder: Path, *args: str, **env: str) -> dict[str, str]:
    """Run the probe tests with the project's conftest and markers; each run test's outcome by name
    (passed, skipped, failed or error, from pytest's JUnit report)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("INNOLAB_REQUIRE_")}
    environment.update(env)
    report = folder / "report.xml"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
            *args,
        ],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = {}
    for case in ElementTree.parse(report).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("skipped", "failure", "error")]
        found[case.get("name")] = kinds[0] if kinds else "passed"
    return found


@pytest.fixture
def probes(tmp_path: Path) -> Path:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_probes.py").write_text(PROBES)
    markers = "[pytest]\nmarkers =\n    docker: Docker\n    chromium: Chromium\n"
    (tmp_path / "pytest.ini").write_text(markers)
    # no engine and no browser: a socket that does not exist, a PATH without chromium
    (tmp_path / "bin").mkdir()
    return tmp_path


def no_tools(folder: Path) -> dict[str, str]:
    return {"DOCKER_HOST": f"unix://{folder / 'no-engine.sock'}", "PATH": str(folder / "bin")}


def test_marked_tests_skip_where_their_tool_is_absent(probes):
    found = outcomes(probes, **no_tools(probes))
    assert found["test_marked_docker"] == "skipped" and found["test_marked_chromium"] == "skipped"
    assert found["test_plain"] == "passed"
    assert found["test_unmarked_docker_fixture"] == "error"  # asks for Docker without saying so


def test_marked_tests_fail_where_ci_requires_their_tool(probes):
    found = outcomes(
        probes, **no_tools(probes), INNOLAB_REQUIRE_DOCKER="1", INNOLAB_REQUIRE_CHROMIUM="1"
    )
    assert found["test_marked_docker"] == "error" and found["test_marked_chromium"] == "error"
    assert found["test_plain"] == "passed"


def test_not_docker_deselects_the_docker_tests(probes):
    found = outcomes(probes, "-m", "not docker", **no_tools(probes))
    assert "test_marked_docker" not in found and found["test_plain"] == "passed"


def test_the_markers_are_registered():
    with (HERE.parent / "pyproject.toml").open("rb") as file:
        options = tomllib.load(file)["tool"]["pytest"]["ini_options"]
    names = {marker.split(":")[0] for marker in options["markers"]}
    assert {"docker", "chromium"} <= names


GROUPED = {
    "test_one.py": "import pytest\n\n\n@pytest.mark.docker\ndef test_in_docker():\n    pass\n\n\n"
                   + "".join(f"def test_local_{i}():\n    pass\n\n\n" for i in range(4)),
    "test_two.py": "import pytest\n\n\n@pytest.mark.docker\n@pytest.mark.parametrize('i', range(4))"
                   "\ndef test_in_docker(i):\n    pass\n",
    "test_free.py": "".join(f"def test_free_{i}():\n    pass\n\n\n" for i in range(8)),
}


def test_make_tests_groups_put_every_docker_module_on_one_worker(probes):
    """`make test`'s `-n 2 --dist loadgroup` with the project's conftest: every test of a module
    that holds a docker test runs on one worker (pytest 9 made xdist 3.8 ignore the groups: each
    was split across the workers, the Docker tests of two modules at once)."""
    for name, source in GROUPED.items():
        (probes / name).write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "test_one.py", "test_two.py", "test_free.py"],
        cwd=probes, env={k: v for k, v in os.environ.items()
                         if not k.startswith("INNOLAB_REQUIRE_")} | no_tools(probes),
        capture_output=True, text=True, timeout=120)
    workers: dict[str, set[str]] = {}
    for found in re.finditer(r"^\[(gw\d+)\] \[\s*\d+%\] [A-Z]+ ([^:\s]+)::", done.stdout, re.M):
        workers.setdefault(found.group(2), set()).add(found.group(1))
    assert set(workers) == set(GROUPED), done.stdout[-3000:]
    assert len(workers["test_one.py"] | workers["test_two.py"]) == 1, workers
