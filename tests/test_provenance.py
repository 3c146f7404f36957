"""The program behind a submission: the capture of what ran, the def-use slice of cells, and per
scaffold the stored program, whose entry writes the submission when run alone in a fresh sandbox."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.gym.capture import SITE_FILE, Capture, site_source
from innolab.gym.cellslice import analyse, slice_cells
from innolab.gym.factory import open_sandbox
from innolab.gym.local import LocalSandbox
from innolab.gym.provenance import (
    Program,
    ProgramError,
    build_program,
    load_program,
    program_file,
    session_program,
)
from innolab.gym.runstate import CodeAction
from innolab.gym.sandbox import Sandbox
from innolab.tasks.registry import get_task
from tests.fake_llm import SOLUTION_CODE, FakeLLM
from tests.test_scaffolds import mlab_step, scripted_config

GRID = ("def grid(n):\n    r = 1 / 12 * (1 - 1e-12)\n"
        "    return [[(2 * c + 1) / 12, (2 * k + 1) / 12, r] for k in range(5) "
        "for c in range(6)][:n]\n")


def run_program(sandbox: Sandbox, program: Program, output: str) -> bytes:
    """Write a program into a sandbox, run its command from its folder, return what it wrote."""
    sandbox.write_files({name: text.encode() for name, text in program.files.items()})
    result = sandbox.exec(f"cd {program.cwd} && " + " ".join(program.command()), timeout_s=60)
    assert result.returncode == 0, result.stderr
    return sandbox.read_file(output)


# ------------------------------------------------------------------------------------ the slice


def test_the_slice_drops_an_exploratory_cell_and_keeps_what_the_written_file_needs():
    cells = [
        "import json\nimport random",
        "probe = [random.random() for _ in range(3)]\nprint(max(probe))",  # exploration
        "random.seed(1)",  # changes the generator the last cell draws from: kept
        GRID,
        "size = 26",
        "size = 26  # the same again, later: the earlier one is hidden",
        "jitter = random.random() * 0\ncircles = grid(size)\n"
        "json.dump({'circles': circles, 'j': jitter}, open('submission.json', 'w'))",
    ]
    analysed = [analyse(c) for c in cells]
    assert analysed[-1].writes == {"submission.json"}
    assert slice_cells(analysed, len(cells) - 1) == [0, 2, 3, 5, 6]
    with pytest.raises(IndexError, match="target cell 9"):
        slice_cells(analysed, 9)


def test_a_cell_that_reads_a_file_keeps_the_cell_that_wrote_it_and_unparsable_cells_are_left():
    cells = ["open('data.txt', 'w').write('7')", "def broken(:", "print('look')",
             "n = int(open('data.txt').read())\nopen('out.txt', 'w').write(str(n))"]
    analysed = [analyse(c) for c in cells]
    assert not analysed[1].parsed
    assert slice_cells(analysed, 3) == [0, 3]


def test_a_failed_cell_that_is_kept_runs_guarded_and_the_program_round_trips(tmp_path):
    log = [CodeAction(0, "session", "x = 2\nraise ValueError('late')", failed=True),
           CodeAction(1, "session", "print('exploring')"),
           CodeAction(2, "session", "open('out.txt', 'w').write(str(x))")]
    program = session_program(log, Capture(), "out.txt", None)
    text = program.files[program.entry]
    assert "exploring" not in text and "except Exception" in text
    sandbox = LocalSandbox()
    try:
        assert run_program(sandbox, program, "out.txt") == b"2"
    finally:
        sandbox.close()
    source = tmp_path / "submission" / "s.source.py"
    source.parent.mkdir()
    source.write_text(program.text())
    program_file(source).write_text(json.dumps(program.to_dict()))
    assert load_program(tmp_path, "submission/s.source.py") == program
    program_file(source).write_text(json.dumps({"files": {}, "entry": "a.py"}))
    with pytest.raises(ProgramError, match="field 'entry'"):
        load_program(tmp_path, "submission/s.source.py")
    program_file(source).unlink()  # a run written before programs: the source text alone
    old = load_program(tmp_path, "submission/s.source.py")
    assert old.entry == "s.source.py" and old.files[old.entry] == program.text()


# ---------------------------------------------------------------------------------- the capture

SPELLINGS = {
    "cd and run": ("cd work && python3 make.py 26", "work/make.py", ["26"], "work"),
    "python -m": ("python3 -m pack.make 26", "run_pack_make.py", ["26"], "."),
    "subprocess": ("python3 driver.py", "driver.py", [], "."),
    "exec(open())": ("python3 -c \"exec(open('indirect.py').read())\"", "command.py", [], "."),
}
MAKE = ("import json, sys\nfrom {module} import grid\n"
        "json.dump({{'circles': grid(int(sys.argv[1]))}}, open('{output}', 'w'))\n")
FILES = {
    "work/shapes.py": GRID,
    "work/make.py": MAKE.format(module="shapes", output="../submission.json"),
    "pack/__init__.py": "",
    "pack/shapes.py": GRID,
    "pack/make.py": MAKE.format(module="pack.shapes", output="submission.json"),
    "shapes.py": GRID,
    "gen.py": "import json, sys\nfrom shapes import grid\n"
              "json.dump({'circles': grid(26)}, open('submission.json', 'w'))\n",
    "driver.py": "import subprocess, sys\nsubprocess.run([sys.executable, 'gen.py'], check=True)\n",
    "indirect.py": "import json\nfrom shapes import grid\n"
                   "json.dump({'circles': grid(26)}, open('submission.json', 'w'))\n",
}


def captured_programs(make_sandbox) -> dict[str, tuple[Program, bytes]]:
    """Each spelling run in one sandbox: the program built from the capture and what it wrote."""
    found = {}
    sandbox = make_sandbox()
    try:
        sandbox.write_files({name: text.encode() for name, text in FILES.items()})
        capture = Capture()
        for name, (command, *_) in SPELLINGS.items():
            result = sandbox.exec(command, timeout_s=60)
            assert result.returncode == 0, (name, result.stderr)
            capture.read(sandbox)
            program = build_program("submission.json", capture, [])
            found[name] = (program, sandbox.read_file("submission.json"))
            sandbox.exec("rm -f submission.json")
    finally:
        sandbox.close()
    return found


def check_spellings(found: dict[str, tuple[Program, bytes]], make_sandbox) -> None:
    for name, (_, entry, args, cwd) in SPELLINGS.items():
        program, written = found[name]
        assert (program.entry, program.args, program.cwd) == (entry, args, cwd), name
        fresh = make_sandbox()
        try:
            assert run_program(fresh, program, "submission.json") == written, name
        finally:
            fresh.close()
    assert set(found["cd and run"][0].files) == {"work/make.py", "work/shapes.py"}
    assert set(found["python -m"][0].files) >= {"pack/make.py", "pack/shapes.py"}
    assert set(found["subprocess"][0].files) == {"driver.py", "gen.py", "shapes.py"}
    assert set(found["exec(open())"][0].files) == {"command.py", "indirect.py", "shapes.py"}


def test_the_capture_sees_every_spelling_of_running_python_in_the_local_runtime():
    check_spellings(captured_programs(LocalSandbox), LocalSandbox)


@pytest.mark.docker
def test_the_capture_sees_every_spelling_of_running_python_in_docker(base_image):
    from innolab.gym.docker_sandbox import DockerSandbox

    check_spellings(captured_programs(lambda: DockerSandbox(base_image)),
                    lambda: DockerSandbox(base_image))


def test_a_script_that_reads_what_an_earlier_command_wrote_is_stored_with_that_command():
    sandbox = LocalSandbox()
    try:
        sandbox.write_files({
            "shapes.py": GRID.encode(),
            "prep.py": b"import json, sys\nfrom shapes import grid\n"
                       b"json.dump(grid(int(sys.argv[1])), open('data/circles.json', 'w'))\n",
            "probe.py": b"print(open('shapes.py').read()[:10])\n",
            "final.py": b"import json\ncircles = json.load(open('data/circles.json'))\n"
                        b"json.dump({'circles': circles}, open('submission.json', 'w'))\n"})
        capture = Capture()
        for command in ("mkdir -p data && python3 prep.py 26", "python3 probe.py",
                        "python3 final.py"):
            assert sandbox.exec(command).returncode == 0
        capture.read(sandbox)
        program = build_program("submission.json", capture, [])
        written = sandbox.read_file("submission.json")
    finally:
        sandbox.close()
    assert program.entry == "pipeline.py"
    assert set(program.files) == {"pipeline.py", "prep.py", "shapes.py", "final.py"}
    fresh = LocalSandbox()
    try:
        assert run_program(fresh, program, "submission.json") == written
    finally:
        fresh.close()


def test_past_half_its_limit_the_log_leaves_texts_out_and_past_it_logs_nothing(tmp_path):
    site, work = tmp_path / "site", tmp_path / "work"
    site.mkdir()
    work.mkdir()
    log = tmp_path / "log.jsonl"
    log.touch()
    (site / SITE_FILE).write_text(site_source(str(work), str(log), limit=3000))
    (work / "big.py").write_text("X = '" + "x" * 1200 + "'\n")
    names = ("a", "b", "c", "d", "e", "f")
    for name in names:
        (work / f"{name}.py").write_text(f"import big\nopen('{name}.txt', 'w').write(big.X)\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site)}
    for name in names:
        subprocess.run(["python3", f"{name}.py"], cwd=work, env=env, check=True)
    capture = Capture()
    capture.feed(log.read_bytes())
    code = [r for r in capture.records if r["k"] == "code"]
    assert code[0]["text"] and code[-1]["text"] is None and code[-1]["sha"]
    assert not [p for p in capture.processes if p.argv == ["f.py"]]  # the log was full
    assert log.stat().st_size < 3000 + 500


def test_the_agent_can_neither_read_the_capture_log_nor_change_the_hook():
    sandbox = LocalSandbox()
    try:
        if sandbox.uid is None:
            pytest.skip("the commands run as innolab's own user here (not root)")
        sandbox.exec("python3 -c 'print(1)'")
        assert sandbox.read_capture()  # the hook logged the command
        log, site = sandbox.capture_log, sandbox.site_dir / "sitecustomize.py"
        assert sandbox.exec(f"cat {log}").returncode != 0
        assert sandbox.exec(f"echo x >> {site}").returncode != 0
    finally:
        sandbox.close()


# --------------------------------------------------------------------------------- per scaffold


def stored_program(outcome: dict) -> tuple[Path, Program]:
    run_dir = Path(outcome["run_dir"])
    final = run_dir / "submission" / "submission.source.py"
    assert program_file(final).is_file()
    return run_dir, load_program(run_dir, "submission/submission.source.py")


def assert_entry_writes_the_submission(run_dir: Path, program: Program) -> None:
    task = get_task("circle-packing-26")
    sandbox = open_sandbox(task, "local")
    try:
        written = run_program(sandbox, program, "submission.json")
    finally:
        sandbox.close()
    assert json.loads(written) == json.loads((run_dir / "submission" / "submission.json")
                                             .read_text())


def test_codeact_stores_the_cells_the_submission_depends_on(tmp_path):
    cells = [
        {"action": "python", "code": "import json"},
        {"action": "python", "code": "trial = [i * i for i in range(5)]\nprint(sum(trial))"},
        {"action": "python", "code": GRID},
        {"action": "python", "code": "def save(c):\n    json.dump({'circles': c}, open("
                                     "'submission' + '.json', 'w'))"},
        {"action": "python", "code": "print('checking')\nsave(grid(26))"},
        {"action": "submit", "path": "submission.json", "code": ""},
        {"action": "finish", "code": ""},
    ]
    replies = [{"thought": "go", "path": "", **c} for c in cells]
    with FakeLLM(replies={"codeact_action": replies}, in_call_order=True) as server:
        config = scripted_config("codeact", server.base_url)
        config.max_steps = 8
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    assert outcome["valid"]
    run_dir, program = stored_program(outcome)
    text = program.files[program.entry]
    # the writing cell was found by what ran (the path is no literal), the exploration left out
    assert "trial" not in text and "save(grid(26))" in text and "def save" in text
    assert program.text() == (run_dir / "submission" / "submission.source.py").read_text()
    assert_entry_writes_the_submission(run_dir, program)


def test_mlab_stores_the_script_that_wrote_the_submission_and_the_module_it_imports(tmp_path):
    steps = [
        mlab_step("Edit Script (AI)", "shapes.py", "a grid"),
        mlab_step("Edit Script (AI)", "solve.py", "use it"),
        mlab_step("Edit Script (AI)", "probe.py", "explore"),
        mlab_step("Execute Script", "solve.py"),
        mlab_step("Execute Script", "probe.py"),
        mlab_step("Final Answer", "submission.json"),
    ]
    solve = ("import json\nfrom shapes import grid\n"
             "json.dump({'circles': grid(26)}, open('submission.json', 'w'))\n")
    edits = [{"content": GRID}, {"content": solve}, {"content": "print('probing')\n"}]
    replies = {"mlab_action": steps, "mlab_edit": edits}
    with FakeLLM(replies=replies, in_call_order=True) as server:
        config = scripted_config("mlab", server.base_url)
        config.max_steps = 12
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    assert outcome["valid"]
    run_dir, program = stored_program(outcome)
    assert program.entry == "solve.py" and set(program.files) == {"solve.py", "shapes.py"}
    assert_entry_writes_the_submission(run_dir, program)


def test_aide_stores_the_nodes_program(tmp_path):
    with FakeLLM(replies={"aide_node": [{"plan": "grid", "code": SOLUTION_CODE}]}) as server:
        config = scripted_config("aide", server.base_url, num_drafts=1)
        config.max_steps = 3
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    assert outcome["valid"]
    run_dir, program = stored_program(outcome)
    assert program.files == {"program.py": SOLUTION_CODE} and program.entry == "program.py"
    assert_entry_writes_the_submission(run_dir, program)


def test_a_resumed_codeact_run_slices_the_cells_run_before_and_after_the_resume(tmp_path):
    """The run is stopped after three cells and resumed as a killed one (the trace cut back to its
    checkpoint); the interpreter replays those cells, and the slice still finds the writing cell
    by what ran."""
    cells = [
        {"action": "python", "code": "import json"},
        {"action": "python", "code": "trial = [i * i for i in range(5)]\nprint(sum(trial))"},
        {"action": "python", "code": GRID},
        {"action": "python", "code": "def save(c):\n    json.dump({'circles': c}, open("
                                     "'submission' + '.json', 'w'))"},
        {"action": "python", "code": "save(grid(26))"},
        {"action": "submit", "path": "submission.json", "code": ""},
        {"action": "finish", "code": ""},
    ]
    replies = [{"thought": "go", "path": "", **c} for c in cells]
    with FakeLLM(replies={"codeact_action": replies}, in_call_order=True) as server:
        config = scripted_config("codeact", server.base_url)
        config.max_steps = 3
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
        run_dir = Path(outcome["run_dir"])
        state_file = run_dir / "checkpoint" / "state.json"
        saved = json.loads(state_file.read_text())
        saved["budget"]["max_steps"] = 8
        state_file.write_text(json.dumps(saved))
        traces.truncate_to(run_dir, saved["trace"])
        outcome = runner.resume(run_dir, novelty=None, show_progress=False)
    assert outcome["dev_valid"]  # (score.json was written when the run first stopped)
    run_dir, program = stored_program(outcome)
    text = program.files[program.entry]
    assert "trial" not in text and "save(grid(26))" in text and "def grid" in text
    assert_entry_writes_the_submission(run_dir, program)
