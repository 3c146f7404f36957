"""Problem families from outside innolab: a distribution that declares families in the entry-point
group `innolab.families` (installed with pip beside innolab), and a task folder carrying its own
family module. Each passes `innolab tasks check`, runs with the baseline in both runtimes, is scored
and gets N_out, with no file of innolab changed; a family without a template is named in the
baseline's refusal, and one that fails to import is reported by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "data" / "plugins" / "innolab-example-family"
TASKS = ROOT / "tests" / "data" / "plugin_tasks"
INNOLAB = Path(sys.executable).parent / "innolab"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example distribution, built and installed by pip into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--disable-pip-version-check", "--target", str(target), str(PLUGIN)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (target / "innolab_example_family-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def innolab(site: Path | None, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    paths = [str(site), str(ROOT)] if site is not None else [str(ROOT)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    env = {k: v for k, v in env.items() if not k.startswith("INNOLAB_LLM_")}
    return subprocess.run([str(INNOLAB), *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout, check=False)


def innolab_knows_nothing_of(family: str) -> bool:
    """No file of innolab names the family: it comes from outside (no edit of innolab needed)."""
    return not any(family in p.read_text(encoding="utf-8", errors="replace")
                   for p in (ROOT / "innolab").rglob("*") if p.suffix in (".py", ".toml", ".yaml"))


def test_the_distributions_families_are_listed_beside_the_builtins(site):
    listed = {e["name"]: e for e in json.loads(innolab(site, "tasks", "families", "--json").stdout)}
    assert listed["sidon"]["distribution"] == "innolab-example-family"
    assert listed["sidon"]["baseline_template"] and listed["sidon"]["checks"] == ["sidon_set"]
    assert not listed["bare"]["baseline_template"] and not listed["bare"]["broken"]
    assert listed["broken"]["broken"] and "ModuleNotFoundError" in listed["broken"]["error"]
    assert {"circles", "colouring", "prediction"} <= set(listed)  # the built-ins, the same way
    assert listed["colouring"]["distribution"] == "innolab"


def test_a_registered_family_from_another_distribution_passes_tasks_check(site):
    done = innolab(site, "tasks", "check", str(TASKS / "sidon-60"))
    assert done.returncode == 0, done.stdout[-3000:]
    assert "family sidon: every hostile input is rejected" in done.stdout
    assert innolab_knows_nothing_of("sidon")


def test_a_task_folder_carrying_its_family_module_passes_tasks_check():
    done = innolab(None, "tasks", "check", str(TASKS / "ruler-local"))
    assert done.returncode == 0, done.stdout[-3000:]
    assert "family ruler: every hostile input is rejected" in done.stdout


@pytest.mark.parametrize("runtime", ["local", pytest.param("docker", marks=pytest.mark.docker)])
@pytest.mark.parametrize("task", ["sidon-60", "ruler-local"])
def test_the_baseline_runs_such_a_task_is_scored_and_gets_n_out(site, tmp_path, runtime, task,
                                                                 request):
    if runtime == "docker":
        request.getfixturevalue("base_image")
    run_dir = tmp_path / "run"
    done = innolab(site, "run", "--agent", "baseline", "--task", str(TASKS / task), "--budget",
                   "20s", "--runtime", runtime, "--novelty", "ast", "--run-dir", str(run_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    score = json.loads((run_dir / "score.json").read_text())
    assert score["valid"] and score["score"] >= 6
    assert score["novelty_out"] is not None and score["novelty_out"] == score["novelty_out"]


def test_a_family_without_a_template_is_named_in_the_baselines_refusal(site):
    done = innolab(site, "run", "--agent", "baseline", "--task", str(TASKS / "bare-60"),
                   "--budget", "10s")
    assert done.returncode == 2
    assert "no search template for problem family 'bare'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_family_that_fails_to_import_is_reported_by_name_never_a_crash(site):
    done = innolab(site, "tasks", "check", str(TASKS / "broken-60"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "family 'broken' (innolab-example-family) does not load: ModuleNotFoundError" in (
        done.stderr)


def test_without_the_distribution_no_such_family_is_known():
    done = innolab(None, "tasks", "check", str(TASKS / "sidon-60"))
    assert done.returncode == 2 and "no problem family 'sidon' is registered" in done.stderr


def ruler_with(tmp_path: Path, appended: str) -> Path:
    """A copy of the task folder ruler-local whose family module ends with `appended`."""
    folder = tmp_path / "ruler-local"
    shutil.copytree(TASKS / "ruler-local", folder)
    module = folder / "ruler.py"
    module.write_text(module.read_text() + appended)
    return folder


def test_a_family_module_that_exits_at_import_is_reported_by_name_never_a_silent_exit(tmp_path):
    done = innolab(None, "tasks", "check", str(ruler_with(tmp_path, "\nimport sys\nsys.exit(3)\n")))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "family 'ruler'" in done.stderr and "fails to import: SystemExit: 3" in done.stderr


def test_a_family_without_an_outcome_descriptor_fails_tasks_check_naming_it(tmp_path):
    done = innolab(None, "tasks", "check", str(ruler_with(tmp_path, "\nOUTCOMES = {}\n")))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    failed = [line for line in done.stdout.splitlines() if "outcome descriptor" in line]
    assert failed and "FAIL" in failed[0], done.stdout[-3000:]
    assert "family ruler" in failed[0] and "declares no outcome descriptor for its check " \
        "golomb_ruler (OUTCOMES)" in failed[0]


def test_an_outcome_distance_out_of_range_or_not_zero_on_itself_fails_tasks_check(tmp_path):
    from innolab.tasks import load_task
    from innolab.tasks.checks import outcome_descriptor

    folder = tmp_path / "ruler-local"
    shutil.copytree(TASKS / "ruler-local", folder)
    module = folder / "ruler.py"
    original = module.read_text()
    assert outcome_descriptor(load_task(folder)).passed
    module.write_text(original + "\nOUTCOMES['golomb_ruler'] = Outcome(_describe, "
                      "lambda a, b: 101.0, SCALE)\n")
    result = outcome_descriptor(load_task(folder))
    assert not result.passed and "not 0" in result.detail and "not a number in [0, 100]" in (
        result.detail)
    module.write_text(original + "\nOUTCOMES['golomb_ruler'] = Outcome(_describe, "
                      "lambda a, b: 0.0 if a is b else float('nan'), SCALE)\n")
    result = outcome_descriptor(load_task(folder))
    assert not result.passed and "nan" in result.detail and "not 0" not in result.detail
