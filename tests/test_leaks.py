"""The leak scan: every spelling of a hidden number, in everything the agent sees, checked where a
run starts and by `innolab tasks check`."""

import json
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from innolab import runner
from innolab.agents.registry import policies
from innolab.gym.agent_view import agent_view, prompt_texts
from innolab.paths import data_dir
from innolab.tasks import PAPER_DATE, TaskError, builtin_ids, get_task, leaks, load_task
from tests.test_tasks import EXPECTED, GOOD_YAML, _write_task, cli

SCAFFOLDS = policies()  # every registered agent's factory, by name

V_STAR_26 = 2.6359830849176076
PRIORS = data_dir() / "sweeps" / "priors"
INNOLAB = Path(sys.executable).parent / "innolab"


def copy_task(task_id: str, root: Path) -> Path:
    """A temporary copy of a built-in task folder (loaded as a user task)."""
    copy = root / task_id
    shutil.copytree(get_task(task_id).root, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def found_in(task, name: str, text: str) -> list[str]:
    return [leak.found for leak in leaks.scan(task, {name: text.encode()})]


# ------------------------------------------------------------------------------- no false positives


@pytest.mark.parametrize("task_id", sorted(EXPECTED))
def test_every_builtin_task_passes_with_every_scaffold_and_its_shipped_priors(task_id):
    task = get_task(task_id)
    numbers = leaks.hidden_numbers(task)
    assert "v_star" in numbers and any(k.startswith("solution ") for k in numbers)
    prompts = prompt_texts(SCAFFOLDS)
    scaffolds = [a for a in SCAFFOLDS if a in ("aide", "mlab", "codeact", "baseline")]
    assert {f"{agent} prompt text innolab.agents.{agent}.ROLE" for agent in scaffolds} <= set(
        prompts
    )
    # the frameworks' own prompt files are read too (smolagents' and mini-swe-agent's templates)
    if "smolagents" in SCAFFOLDS:
        assert {"smolagents prompt text smolagents/prompts/toolcalling_agent.yaml",
                "mini-swe-agent prompt text minisweagent/config/mini.yaml",
                "openai-agents prompt text innolab.agents.frameworks.openai_agents_driver string "
                "literals"} <= set(prompts)
    assert leaks.scan(task) == []
    assert leaks.scan(task, {**prompts, **leaks.shipped_priors(task_id)}) == []


def test_every_shipped_prior_is_named_after_its_task_and_leaks_nothing():
    shipped = sorted(p.name for p in PRIORS.glob("*.py"))
    assert shipped, "no shipped priors found"
    covered = {name for task_id in EXPECTED for name in leaks.shipped_priors(task_id)}
    assert covered == {
        f"priors/{name}" for name in shipped
    }  # so `innolab tasks check` scans each of them
    for task_id in EXPECTED:  # stricter than needed: no prior spells any task's hidden numbers
        task = get_task(task_id)
        assert leaks.scan(task, {p.name: p.read_bytes() for p in PRIORS.glob("*.py")}) == [], (
            task_id
        )


def test_the_row_lattice_prior_no_longer_gives_v_star_away():
    text = (PRIORS / "circle-packing-26-row-lattice.py").read_text()
    assert "V*" not in text and "ratio" not in text and "2.1667" not in text
    # its own sum of radii (a known baseline's recorded score) was in the docstring: the scan reads
    # it as a leak
    task = get_task("circle-packing-26")
    assert found_in(
        task, "prior.py", '"""sum of radii about 2.1667 (ratio about -0.18 to V*)"""'
    ) == ["2.1667"]


@pytest.mark.parametrize("agent", sorted(SCAFFOLDS))
def test_a_run_with_the_shipped_prior_starts_clean(agent):
    prior = PRIORS / "circle-packing-26-row-lattice.py"
    config = runner.agent_config(
        agent,
        "circle-packing-26",
        initial_solution=prior.read_text(),
        prior_name=prior.stem,
        budget_s=30,
    )
    runner.refuse_leaks(config)  # raises on a leak
    view = agent_view(config, get_task("circle-packing-26"))
    assert view["prior solution circle-packing-26-row-lattice"] == prior.read_bytes()
    assert b"26 circles" in view["description.md"] and b"python_session" in view["tool specs"]


# ----------------------------------------------------------------------------------- every spelling


@pytest.mark.parametrize(
    ("planted", "expected"),
    [
        (
            "the record is 2.6359830849176076",
            "2.6359830849176076",
        ),  # repr of V* (17 significant digits)
        ("the record is 2.635983084918", "2.635983084918"),  # 13 significant digits
        ("the record is 2.63598308491760", "2.63598308491760"),  # 15, a trailing zero
        (f"exactly {V_STAR_26:.20f}", f"{V_STAR_26:.20f}"),  # the float's binary expansion
        ("best so far: 2.636 (rounded)", "2.636"),  # rounded to 4 digits
        ("best so far: 2.6359 (cut)", "2.6359"),  # cut to 5 digits
        ("about 2.64", "2.64"),  # rounded to the minimum, 3 digits
        ("reach 2.6359830849 or more", "2.6359830849"),  # rounded to 10 decimals
        ("in exponent form 2.63598e0", "2.63598e0"),
        ("a ratio of 2.636x", "2.636"),  # glued to a letter
        ("run v2.636 scored", "2.636"),
        ("26359.83e-4 ×", "26359.83e-4"),
        ("float64 and sha256 digests", None),  # parts of identifiers: not hidden values
        ("or 263.598e-2", "263.598e-2"),
        ("the lp-hex layout gives 2.5", None),  # a two-digit spelling carries nothing
        ("about 2.6", None),
        ("2.637 is not it", None),  # three digits, but not V* rounded or cut
        ('{"v_star": 1}', "v_star"),  # a hidden key name
        ("upper_bound per instance", "upper_bound"),
    ],
)
def test_leak_scan_finds_a_planted_leak(planted, expected):
    task = get_task("circle-packing-26")
    found = found_in(task, "notes.md", planted)
    assert found == ([] if expected is None else [expected])


@pytest.mark.parametrize(
    "planted",
    [
        "19474",
        "19474.0",
        "19,474",
        "19_474",
        "19'474",
        "19\u202f474",
        "1.9474e4",
        "1.9474e+04",
        "1.9474E+04",
        "1.9474E4",
        "19.474e3",
        "1.947e4",
        "1.95e4",
        "1.9474 × 10^4",
        r"$1.9474 \times 10^{4}$",
        "1.9474*10**4",
        "-19,474",
        "19,474.00",
        "19474ms",
        "19474th",
        "v19474",
        "(v19474)",
        "1.9474·10⁴",
        "1.9474×10⁴",
        "1.9474 × 10⁴",
        "19474x",
    ],
)
def test_job_shop_v_star_is_caught_in_every_spelling(planted):
    task = get_task("job-shop-taillard-41-50")
    assert leaks.hidden_numbers(task)["v_star"] == 19474  # V* today: a sum over the instances
    leaked = leaks.scan(task, {"notes.md": f"The best known total makespan is {planted}.".encode()})
    assert [(leak.file, leak.source) for leak in leaked] == [("notes.md", "v_star")], planted


@pytest.mark.parametrize(
    "planted",
    [
        "19,500",
        "19 481",
        "1.9e4",
        "19",
        "481",
        "[1, 2, 19, 481]",
        "1.9481·10⁵",
        "x86_64, float64, int32, sha256",
    ],
)
def test_job_shop_spellings_that_do_not_pin_v_star_pass(planted):
    """An integer means exact (19,500 is not 19481 rounded); two digits carry nothing; a plain space
    separates two numbers."""
    task = get_task("job-shop-taillard-41-50")
    assert leaks.scan(task, {"notes.md": planted.encode()}) == []


def test_readings_of_a_written_number():
    assert leaks.readings("19,481") == [(Decimal("19481"), 5), (Decimal("19.481"), 5)]
    assert leaks.readings("1,234,567.5") == [(Decimal("1234567.5"), 8)]
    assert leaks.readings("1.9481E+04") == [(Decimal("19481"), 5)]
    assert leaks.readings("1.9481·10⁴") == [(Decimal("19481"), 5)]
    assert leaks.readings("2.5 × 10⁻³") == [(Decimal("0.0025"), 2)]
    assert set(leaks.numbers_in("took 19481ms, v2.5, 3rd")) == {"19481", "2.5", "3"}
    assert (
        leaks.readings("2.000") == [(Decimal("2.000"), 1)] and leaks.significant_digits("2005") == 4
    )
    assert leaks.significant_digits("2000.0") == 4 and leaks.significant_digits("0.0360") == 2
    assert leaks.readings("two") == []
    with pytest.raises(ValueError, match="not a number"):
        leaks.significant_digits("n/a")


def test_spellings_sample_what_the_scan_recognises():
    forms = leaks.spellings(19481.0)
    assert {
        "19481",
        "19,481",
        "19_481",
        "1.9481e4",
        "1.9481e+04",
        "1.9481E+04",
        "1.948e+04",
    } <= forms
    assert "604" in leaks.spellings(604.0) and "22" not in leaks.spellings(22.0)
    assert f"{V_STAR_26:.12e}" in leaks.spellings(V_STAR_26)  # 13 significant digits
    task = get_task("job-shop-taillard-41-50")
    for form in forms:  # every listed spelling is caught by the scan
        assert [leak.found for leak in leaks.scan(task, {"f": f"x {form} y".encode()})] == [form]


# ----------------------------------------------- planted in a task copy: description and prior file


@pytest.mark.parametrize(
    ("task_id", "planted"),
    [
        ("job-shop-taillard-41-50", "19,474"),
        ("job-shop-taillard-41-50", "1.9474e4"),
        ("circle-packing-26", "2.635983084918"),  # V* to 13 significant digits
    ],
)
def test_a_leak_planted_in_a_description_or_a_prior_file_is_caught(tmp_path, task_id, planted):
    folder = copy_task(task_id, tmp_path)
    description = folder / "description.md"
    description.write_text(
        description.read_text() + f"\nFor reference, the best known value is {planted}.\n"
    )
    task = load_task(folder)
    assert [(leak.file, leak.found, leak.source) for leak in leaks.scan(task)] == [
        ("description.md", planted, "v_star")
    ]
    prior = tmp_path / "leaky-prior.py"
    prior.write_text(f'"""Start here; the frontier sits at {planted}."""\nprint("hello")\n')
    config = runner.agent_config(
        "aide", str(folder), initial_solution=prior.read_text(), prior_name=prior.stem
    )
    with pytest.raises(leaks.LeakError) as refused:
        runner.refuse_leaks(config)
    message = str(refused.value)
    assert f"description.md: {planted!r} (v_star)" in message
    assert f"prior solution leaky-prior: {planted!r} (v_star)" in message


def test_a_run_with_a_leaking_prior_refuses_to_start(tmp_path):
    prior = tmp_path / "leaky-prior.py"
    prior.write_text('"""A start: the record is 19,474 (ratio 0 to V*)."""\nprint("start")\n')
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [
            str(INNOLAB),
            "run",
            "--agent",
            "codeact",
            "--task",
            "job-shop-taillard-41-50",
            "--initial-solution",
            str(prior),
            "--budget",
            "30s",
            "--run-dir",
            str(run_dir),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "prior solution leaky-prior: '19,474' (v_star)" in done.stderr
    assert not (run_dir / "config.json").exists()  # nothing ran: no run folder, no model call
    with pytest.raises(leaks.LeakError, match="prior solution leaky-prior: '19,474'"):
        runner.start(
            runner.agent_config(
                "mlab",
                "job-shop-taillard-41-50",
                initial_solution=prior.read_text(),
                prior_name=prior.stem,
                budget_s=30,
            ),
            tmp_path / "run2",
        )
    assert not (tmp_path / "run2").exists()


def test_a_leak_in_a_scaffold_prompt_text_refuses_the_run(monkeypatch):
    from innolab.agents import codeact

    monkeypatch.setattr(codeact, "NOT_YET", codeact.NOT_YET + " The record is 2.636.")
    config = runner.agent_config("codeact", "circle-packing-26", budget_s=30)
    with pytest.raises(
        leaks.LeakError, match=r"codeact prompt text innolab\.agents\.codeact\.NOT_YET: '2\.636'"
    ):
        runner.refuse_leaks(config)


def test_prompts_written_inside_methods_are_scanned(tmp_path, monkeypatch):
    from innolab.gym.agent_view import policy_texts

    prompts = prompt_texts(SCAFFOLDS)
    assert any(key.startswith("baseline prompt text") for key in prompts)  # no model, still scanned
    for agent in set(SCAFFOLDS) - {"baseline"}:  # LLM scaffolds: the summary prompt, in a method
        base = prompts[f"{agent} prompt text innolab.agents.base string literals"]
        assert b"Summarise an agent's earlier work" in base
    mlab = prompts["mlab prompt text innolab.agents.mlab string literals"].decode()
    assert "You read a file and answer a question about it" in mlab
    assert "Script " in mlab  # the literal part of an f-string
    (tmp_path / "leaky_scaffold.py").write_text(
        "from innolab.agents.base import LLMAgent\n\n\n"
        "class Leaky(LLMAgent):\n"
        "    def helper(self, file):\n"
        "        return [{'role': 'system', 'content': 'Answer briefly.'},\n"
        "                {'role': 'user', "
        "'content': f'File {file}: the best known is 2.636x the baseline'}]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    texts = policy_texts("leaky_scaffold:Leaky")
    assert "the best known is 2.636x the baseline" in texts["leaky_scaffold string literals"]
    found = leaks.scan(get_task("circle-packing-26"), {k: v.encode() for k, v in texts.items()})
    assert [(leak.file, leak.found) for leak in found] == [
        ("leaky_scaffold string literals", "2.636")
    ]


# --------------------------------------------------------------------- recorded scores, tasks check


def test_an_unreadable_recorded_score_is_an_error_not_skipped(tmp_path):
    folder = copy_task("kissing-number-11", tmp_path)
    score = folder / "solutions" / "root-system-d11" / "score.json"
    score.write_text(json.dumps({"kind": "reference", "score": "n/a", "quick_score": 220.0}))
    with pytest.raises(TaskError, match=r"solution root-system-d11 cannot be read.*score\.json"):
        leaks.hidden_numbers(load_task(folder))
    done = cli("tasks", "check", str(folder))
    assert done.returncode == 2 and "root-system-d11 cannot be read" in done.stderr


def test_a_leaking_task_folder_fails_tasks_check(tmp_path):
    folder = _write_task(
        tmp_path,
        GOOD_YAML.replace("value: 1.0,", "value: 1.2345,").replace(
            "[{value: 1.0,", "[{value: 1.2345,"
        ),
    )
    (folder / "description.md").write_text("Beat 1.2345 if you can, or 1,2345 as some write it.")
    done = cli("tasks", "check", str(folder))
    assert done.returncode == 1
    line = next(x for x in done.stdout.splitlines() if "what the agent sees leaks" in x)
    assert line.startswith("FAIL my-task") and "description.md: '1.2345' (v_star)" in line
    assert "description.md: '1,2345' (v_star)" in line


# ------------------------------------------------------- the dated ledger


@pytest.mark.parametrize("task_id", builtin_ids())
def test_every_ledger_value_planted_in_a_visible_file_is_caught(task_id):
    """Every entry (records, refuted ones, bounds, the parts of a sum) and the V* a date selects.

    Planted as repr writes it, and as the integer where the value is one."""
    task = get_task(task_id)
    planted = {f"ledger entry {i}": e.value for i, e in enumerate(task.ledger)}
    planted |= {
        f"ledger entry {i} part {name}": value
        for i, e in enumerate(task.ledger) for name, value in (e.parts or {}).items()
    }
    planted |= {"V* today": task.v_star, "V* as of the paper": task.v_star_as_of(PAPER_DATE).value}
    planted |= {"bound": task.bound.value} if task.bound is not None else {}
    # a spelling of fewer than MIN_SIGNIFICANT_DIGITS pins nothing (the scan's documented rule):
    # the old two-digit values of the Packing Center pages are that short, and so are numbers of
    # colours (the board's side and its clique bound say as much) and MNIST-1D's Table 1
    # accuracies, published to two digits (its V*, 0.988, has three and is scanned)
    short = {w: v for w, v in planted.items() if leaks.significant_digits(repr(v)) < 3}
    allowed = {0.036} | ({e.value for e in task.ledger} if task.family.name == "colouring"
                         else {0.32, 0.68, 0.91, 0.94, 0.96} if task_id == "mnist1d" else set())
    assert set(short.values()) <= allowed, short
    visible = task.visible_files()
    for what, value in planted.items():
        if what in short:
            continue
        for name in ("description.md", "task.json"):
            spelled = str(int(value)) if float(value).is_integer() else repr(value)
            files = {**visible, name: visible[name] + f"\nnote: {spelled}\n".encode()}
            found = [leak for leak in leaks.scan(task, files) if leak.file == name]
            assert found, f"{task_id}: {what} = {value!r} planted in {name} was not caught"
    assert leaks.scan(task, visible) == []
