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
                   + "".join(f"def test_local_{i}():\n    pass\n\n\n" for i in range(6)),
    "test_two.py": "import pytest\n\n\n@pytest.mark.docker\n@pytest.mark.parametrize('i', range(4))"
                   "\ndef test_in_docker(i):\n    pass\n",
    # a module fixture a Docker test uses too, and one only local tests use
    "test_shared.py": "import pytest\n\n\n"
                      "@pytest.fixture(scope='module')\ndef made():\n    pass\n\n\n"
                      "@pytest.fixture(scope='module')\ndef local():\n    pass\n\n\n"
                      "@pytest.mark.docker\ndef test_docker_made(made):\n    pass\n\n\n"
                      + "".join(f"def test_made_{i}(made):\n    pass\n\n\n"
                                f"def test_local_{i}(local):\n    pass\n\n\n" for i in range(4)),
    "test_free.py": "".join(f"def test_free_{i}():\n    pass\n\n\n" for i in range(8)),
}


def test_make_tests_groups_put_every_docker_test_on_one_worker(probes):
    """`make test`'s `--dist loadgroup` with the project's conftest, here on 2 workers: every
    Docker test runs on one worker, with the tests that share a module fixture with one of them;
    the tests that share another module fixture run on one worker; the rest go where a worker is
    free (pytest 9 made xdist 3.8 ignore the groups: each was split across the workers)."""
    for name, source in GROUPED.items():
        (probes / name).write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", *GROUPED],
        cwd=probes, env={k: v for k, v in os.environ.items()
                         if not k.startswith("INNOLAB_REQUIRE_")} | no_tools(probes),
        capture_output=True, text=True, timeout=120)
    worker: dict[str, str] = {}
    line = re.compile(r"^\[(gw\d+)\] \[\s*\d+%\] [A-Z]+ (\S+?)(@\S+)?\s*$", re.M)
    for found in line.finditer(done.stdout):
        worker[found.group(2)] = found.group(1)
    assert len(worker) == 7 + 4 + 9 + 8, done.stdout[-3000:]
    docker = {worker["test_one.py::test_in_docker"], worker["test_shared.py::test_docker_made"]}
    docker |= {worker[f"test_two.py::test_in_docker[{i}]"] for i in range(4)}
    docker |= {worker[f"test_shared.py::test_made_{i}"] for i in range(4)}
    assert len(docker) == 1, worker
    assert len({worker[f"test_shared.py::test_local_{i}"] for i in range(4)}) == 1, worker
    assert len(set(worker.values())) == 2  # the rest shared out
