"""CodeAct's persistent interpreter: state between actions, interrupts, restarts and replay after a
resume."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.gym.factory import open_sandbox
from innolab.gym.leftovers import PREFIXES, read_mark, sandbox_pids
from innolab.gym.session import PythonSession
from innolab.runner import agent_config
from innolab.tasks import get_task
from tests.fake_llm import FakeLLM

ROOT = Path(__file__).resolve().parents[1]

# Two python actions that only work together: the second uses what the first defined (json, r), then
# submit.
DEFINE = "import json\nr = 1 / 12 * (1 - 1e-12)\nprint('defined r')"
USE = (
    "{wait}"
    "circles = [[(2 * c + 1) / 12, (2 * k + 1) / 12, r] for k in range(5) for c in range(6)][:26]\n"
    "json.dump({{'circles': circles}}, open('submission.json', 'w'))\nprint('wrote', len(circles))"
)
# the second action waits until the test opens its gate (a file the test writes once it has
# killed the run): the kill always lands inside that action, and the resumed run's repeat of it
# goes straight on
GATE = "import os, time\nwhile not os.path.exists({gate!r}):\n    time.sleep(0.02)\n"


def script(gate: Path | None = None) -> dict:
    wait = GATE.format(gate=str(gate)) if gate is not None else ""
    return {
        "codeact_action": [
            {"thought": "define", "action": "python", "code": DEFINE},
            {"thought": "use it", "action": "python", "code": USE.format(wait=wait)},
            {"thought": "submit", "action": "submit", "path": "submission.json", "code": ""},
            {"thought": "done", "action": "finish", "code": ""},
        ]
    }


def config(url: str, runtime: str, image: str | None = None):
    return agent_config(
        "codeact",
        "circle-packing-26",
        budget_s=300,
        runtime=runtime,
        image=image,
        max_steps=10,
        settings={"base_url": url, "model": "fake", "backoff_s": 0.0, "timeout_s": 5.0},
    )


def session_checks(sandbox) -> None:
    session = PythonSession(sandbox)
    try:
        assert session.run("x = 41", 10)[1]
        assert session.run("x += 1\nprint(x)", 10)[0] == "42\n"
        output, ok, extra = session.run("import time\nwhile True:\n    time.sleep(0.05)", 3)
        assert not ok and extra["status"] == "interrupted" and "keeps its state" in output
        assert session.run("print(x)", 10)[0] == "42\n"  # the interrupt lost nothing
        output, ok, extra = session.run(
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass", 3
        )
        assert not ok and extra["restarted"] and "variables are lost" in output
        assert session.run("print('x' in globals())", 10)[0] == "False\n"
        assert "NameError" in session.run("print(undefined_name)", 10)[0]
    finally:
        session.close()
    replayed = PythonSession(sandbox, replay=["y = 5", "y *= 2"])
    try:
        assert replayed.run("print(y)", 10)[0] == "10\n"
    finally:
        replayed.close()


def test_session_in_the_local_runtime():
    sandbox = open_sandbox(get_task("circle-packing-26"), "local")
    try:
        session_checks(sandbox)
    finally:
        sandbox.close()


@pytest.mark.docker
def test_session_in_docker(docker_client, base_image):
    sandbox = open_sandbox(get_task("circle-packing-26"), "docker", base_image)
    try:
        session_checks(sandbox)
    finally:
        sandbox.close()


@pytest.mark.parametrize("runtime", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_codeact_keeps_variables_between_actions(runtime, tmp_path, request):
    image = request.getfixturevalue("base_image") if runtime == "docker" else None
    with FakeLLM(replies=script()) as server:
        outcome = runner.start(
            config(server.base_url, runtime, image),
            tmp_path / "run",
            novelty=None,
            show_progress=False,
        )
    assert outcome["valid"] and outcome["score"] == pytest.approx(26 / 12, rel=1e-9)
    calls = [e for e in traces.read_events(Path(outcome["run_dir"])) if e.type == "tool_call"]
    assert [c.tool for c in calls[:2]] == ["python_session", "python_session"]


def test_a_resumed_run_rebuilds_the_interpreter_by_replay(tmp_path, private_tmp):
    gate = private_tmp / "gate"  # where the sandbox's user can see it
    with FakeLLM(replies=script(gate)) as server:
        run_dir = runner.create_run(config(server.base_url, "local"), tmp_path / "run")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "innolab.runner", str(run_dir), "--quiet"]
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        trace = run_dir / "trace.jsonl"
        deadline = time.monotonic() + 120
        while (
            not trace.exists() or trace.read_bytes().count(b'"tool_call"') < 2
        ) and time.monotonic() < deadline:
            time.sleep(0.02)
        process.send_signal(
            signal.SIGKILL
        )  # inside the second action (it waits for the gate), after the first's checkpoint
        process.wait()
        gate.write_text("open")
        done = subprocess.run(
            [*command, "--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
    events = traces.read_events(run_dir)
    assert any(e.type == "run_resumed" for e in events)
    results = [e for e in events if e.type == "tool_result" and e.tool == "python_session"]
    assert results[-1].ok and "wrote 26" in results[-1].output  # r and json came back by replay
    submissions = [e for e in events if e.type == "submission"]
    assert submissions and submissions[-1].dev_valid


# ------------------------------------------------------------------------- nothing outlives its run

INNOLAB = str(Path(sys.executable).parent / "innolab")


@pytest.fixture
def private_tmp():
    """A temporary folder of the test's own (other runs on the machine reap what they find in the
    shared one), short (a Unix socket's path is short) and passable by the sandbox's user."""
    folder = Path(tempfile.mkdtemp(prefix="il-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def owned_folders(tmp: Path, pid: int) -> dict[Path, dict]:
    """The sandbox and validator folders in tmp whose owner mark names process pid."""
    marks = {folder: read_mark(folder) for prefix in PREFIXES for folder in tmp.glob(f"{prefix}*")}
    return {folder: mark for folder, mark in marks.items() if mark and mark["pid"] == pid}


def wardens_of(pid: int) -> list[int]:
    """The sandbox's and the validator's wardens started by process pid."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "stat").read_text()
            if (
                entry.name.isdigit()
                and int(status[status.rindex(")") + 2 :].split()[1]) == pid
                and b"innolab.gym.leftovers" in (entry / "cmdline").read_bytes()
            ):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


def wait_for(condition, timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


@pytest.mark.parametrize(
    "warden_killed", [False, True], ids=["run-killed", "run-and-warden-killed"]
)
def test_a_codeact_run_killed_mid_action_leaves_no_process_and_no_folder(
    tmp_path, private_tmp, warden_killed
):
    """`innolab run --agent codeact` killed with SIGKILL while its second python_session action
    runs: the warden ends the interpreter and removes the folders at once; what a killed warden
    leaves, the resume reaps; the resumed run, closed, leaves nothing of its own."""
    run_dir = tmp_path / "run"
    gate = private_tmp / "gate"
    with FakeLLM(replies=script(gate)) as server:
        env = {
            **os.environ,
            "INNOLAB_LLM_BASE_URL": server.base_url,
            "INNOLAB_LLM_MODEL": "fake",
            "INNOLAB_LLM_API_KEY": "test",
            "TMPDIR": str(private_tmp),
        }
        base = [INNOLAB, "run", "--novelty", "none"]
        process = subprocess.Popen(
            [
                *base,
                "--agent",
                "codeact",
                "--task",
                "circle-packing-26",
                "--budget",
                "5m",
                "--max-steps",
                "10",
                "--run-dir",
                str(run_dir),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        trace = run_dir / "trace.jsonl"
        assert wait_for(
            lambda: trace.exists() and trace.read_bytes().count(b'"tool_call"') >= 2, 120
        )
        folders = owned_folders(private_tmp, process.pid)
        assert sorted(f.name.split("-")[1] for f in folders) == ["validator", "ws"]
        mark = next(m for f, m in folders.items() if f.name.startswith("innolab-ws-"))
        uid, marker = mark["uid"], mark["marker"]
        assert wait_for(
            lambda: len(sandbox_pids(uid, marker)) >= 2
        )  # the interpreter, the action's client
        if warden_killed:
            wardens = wardens_of(process.pid)
            assert len(wardens) == 2
            for warden in wardens:
                os.kill(warden, signal.SIGKILL)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if (
            warden_killed
        ):  # left behind: the interpreter runs on, the folders stay, until the resume
            time.sleep(1.0)
            assert sandbox_pids(uid, marker) and all(f.exists() for f in folders)
        else:  # the wardens end the interpreter and remove the folders at once
            assert wait_for(
                lambda: not sandbox_pids(uid, marker) and not [f for f in folders if f.exists()]
            )
        gate.write_text("open")  # the resumed run's second action goes straight on
        resumed = subprocess.Popen(
            [*base, "--resume", str(run_dir)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _, err = resumed.communicate(timeout=300)
        assert resumed.returncode == 0, err[-2000:]
    assert not sandbox_pids(uid, marker)
    assert not [f for f in folders if f.exists()]
    assert not owned_folders(
        private_tmp, resumed.pid
    )  # the resumed run's own sandbox and validator, closed with it
    events = traces.read_events(run_dir)
    assert any(e.type == "run_resumed" for e in events)
    assert next(e for e in events if e.type == "run_finished").dev_valid
