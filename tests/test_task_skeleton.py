"""`innolab tasks new`: the folder it writes passes `innolab tasks check` unchanged, and bad input
is refused by name."""

import subprocess
import sys
from pathlib import Path

import yaml

INNOLAB = Path(sys.executable).parent / "innolab"


def innolab(*args, cwd=None):
    return subprocess.run([str(INNOLAB), *args], capture_output=True, text=True, timeout=600,
                          check=False, cwd=cwd)


def test_tasks_new_output_passes_tasks_check_unchanged(tmp_path):
    done = innolab("tasks", "new", "my-problem", "--family", "myfam", "--path", str(tmp_path))
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "my-problem"
    assert done.stdout.splitlines()[-1] == str(folder)
    assert {p.name for p in folder.iterdir()} == {"task.yaml", "description.md", "myfam.py",
                                                  "myfam_baseline.py", "solutions"}
    spec = yaml.safe_load((folder / "task.yaml").read_text())
    entry = spec["v_star"]["entries"][0]
    assert "TO FILL" in entry["holder"] and "TO FILL" in entry["source"] and entry["date"]
    for name in ("greedy", "greedy-restarts", "powers-of-two"):
        assert {p.name for p in (folder / "solutions" / name).iterdir()} == {
            "solve.py", "summary.md", "pseudocode.tex", "solution.json", "score.json"}
    checked = innolab("tasks", "check", str(folder))
    assert checked.returncode == 0, checked.stdout[-3000:]
    assert checked.stdout.strip().endswith("all checks passed")


def test_tasks_new_refuses_a_registered_family_a_bad_id_and_an_existing_folder(tmp_path):
    taken = innolab("tasks", "new", "x-task", "--family", "circles", "--path", str(tmp_path))
    assert taken.returncode == 2 and "'circles' is a registered family" in taken.stderr
    bad = innolab("tasks", "new", "Bad_Id", "--path", str(tmp_path))
    assert bad.returncode == 2 and "id: 'Bad_Id'" in bad.stderr
    (tmp_path / "there").mkdir()
    there = innolab("tasks", "new", "there", "--path", str(tmp_path))
    assert there.returncode == 2 and "exists" in there.stderr
