"""The Docker back end: limits, files, links, snapshots, GPU requests, and a scripted run end to
end."""

import subprocess
import sys
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.gym.docker_sandbox import DockerLimits, DockerSandbox
from innolab.gym.factory import open_sandbox, open_validator
from innolab.gym.leftovers import reap
from innolab.gym.policy import RunConfig
from innolab.gym.sandbox import SandboxError
from innolab.gym.tools import Toolbox, ToolCall
from innolab.tasks import get_task

# the scripted policies are registered agents of the tests' own (the gym builds only those)
pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("test_agents")]

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def box(docker_client, base_image):
    sandbox = open_sandbox(get_task("circle-packing-26"), "docker", base_image)
    yield sandbox
    sandbox.close()


def test_exec_files_and_timeout(box):
    assert box.exec("id -un").stdout.strip() == "agent"
    assert set(box.exec("ls").stdout.split()) == {
        "description.md",
        "task.json",
        "taskkit",
        "validate.py",
    }
    box.write_file("dir/a.txt", b"hello")
    assert box.read_file("dir/a.txt") == b"hello"
    slow = box.exec("sleep 10", timeout_s=1)
    assert slow.timed_out and slow.returncode in (124, 137)


def test_links_are_never_followed(box):
    box.exec("ln -s /etc/passwd link && mkdir d && ln -s /etc d/etc && mkfifo pipe")
    with pytest.raises(SandboxError, match="link"):
        box.read_file("link")
    with pytest.raises(SandboxError, match=r"link|not a folder"):
        box.read_file("d/etc/passwd")  # a link on the way
    with pytest.raises(SandboxError, match="not a regular file"):
        box.read_file("pipe")  # never waited on
    with pytest.raises(SandboxError, match="is larger than 3 bytes"):
        box.read_file("validate.py", max_bytes=3)


def test_a_file_the_agent_made_private_is_read_all_the_same(box):
    """The executor is root without the capability to override permissions: a 0600 file of the
    agent's (and one under a 0700 folder) is read through the engine instead, as before."""
    box.exec("umask 077 && mkdir -p private && echo mine > private/a.txt && echo own > b.txt")
    assert box.exec("stat -c %a private private/a.txt b.txt").stdout.split() == [
        "700", "600", "600"]
    assert box.read_file("private/a.txt") == b"mine\n"
    assert box.read_file("b.txt") == b"own\n"
    with pytest.raises(SandboxError, match="is larger than 2 bytes"):
        box.read_file("b.txt", max_bytes=2)
    box.write_file("link", b"replaced")  # replaces the link itself, never writes through it
    assert box.exec("test -L link").returncode == 1
    assert box.read_file("link") == b"replaced"


def test_paths_the_engine_cannot_walk_are_sandbox_errors(box):
    # The engine answers 500 for these (a component that is a file, a name too long): the agent's
    # error, told as a tool error, never an APIError that ends the run.
    for path in ("validate.py/x", "a" * 300, "missing/file.py"):
        with pytest.raises(SandboxError, match=r"not a folder|too long|does not exist"):
            box.read_file(path)  # read by the executor
        with pytest.raises(SandboxError, match=r"refused|does not exist"):
            b"".join(box.stream_file(path))
    for path in ("validate.py/x", "a" * 300):
        with pytest.raises(SandboxError, match="refused"):
            box.write_file(path, b"1")
    assert box.exec("true").returncode == 0  # the sandbox still answers
    # through the tools: a tool error the agent reads, the run goes on
    validator = open_validator(get_task("circle-packing-26"), box)
    try:
        toolbox = Toolbox(box, validator)
        for name, arguments in (("write_file", {"path": "validate.py/x", "content": "1"}),
                                ("read_file", {"path": "a" * 300}),
                                ("validate", {"path": "validate.py/x"})):
            result = toolbox.run(ToolCall("1", name, arguments), 30)
            assert not result.ok and result.output.startswith("error: "), result.output
    finally:
        validator.close()


def test_snapshot_restore_drops_links(box):
    box.write_file("keep.txt", b"1")
    box.exec("ln -s / root-link")
    snapshot = box.snapshot()
    box.exec("rm keep.txt && touch later.txt")
    box.restore(snapshot)
    assert box.read_file("keep.txt") == b"1"
    assert box.exec("test -e later.txt").returncode == 1
    assert box.exec("test -L root-link").returncode == 1


def test_gpu_request_without_gpu_runtime_is_a_clear_error(docker_client, base_image):
    if "nvidia" in docker_client.info().get("Runtimes", {}):
        pytest.skip("this host has a GPU runtime")
    with pytest.raises(SandboxError, match="GPU"):
        DockerSandbox(base_image, DockerLimits(gpus="all"))


def test_scripted_run_in_docker(docker_client, base_image, tmp_path):
    config = RunConfig(
        task="circle-packing-26",
        policy="tests.gym_policies:ScriptedPolicy",
        policy_args={"steps": 4},
        runtime="docker",
        image=base_image,
        max_steps=20,
    )
    outcome = runner.start(config, tmp_path / "run", show_progress=False)
    assert outcome["valid"] and outcome["score"] == pytest.approx(26 / 12, rel=1e-9)
    assert traces.load(outcome["run_dir"])["type"].tolist()[-2:] == ["run_finished", "score"]


def test_cli_sandbox_exec_docker(docker_client, base_image):
    import subprocess
    import sys
    from pathlib import Path

    innolab = str(Path(sys.executable).parent / "innolab")
    done = subprocess.run(
        [
            innolab,
            "sandbox",
            "exec",
            "--task",
            "circle-packing-26",
            "--runtime",
            "docker",
            "--",
            "bash",
            "-c",
            "id -un; ls /sys/class/net; exit 4",
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4 and done.stdout.split() == ["agent", "lo"]


def test_a_killed_runs_container_and_volume_are_reaped(docker_client, base_image):
    import docker

    code = (
        "import sys, time\nfrom innolab.gym.docker_sandbox import DockerSandbox\n"
        "box = DockerSandbox(sys.argv[1])\n"
        "print(box.container.id, box.volume.name, flush=True)\ntime.sleep(300)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, base_image], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    container_id, volume = process.stdout.readline().split()
    process.kill()
    process.wait()
    assert docker_client.containers.get(container_id).status == "running"  # left behind by the kill
    reaped = reap(docker_client=docker_client)
    assert volume in reaped.volumes and len(reaped.containers) >= 1
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(container_id)
    with pytest.raises(docker.errors.NotFound):
        docker_client.volumes.get(volume)
