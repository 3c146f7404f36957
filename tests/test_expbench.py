"""EXP-Bench: the loader on fixtures of innolab's own making (and on the real data where it is
present), and the report's rules on hand-made judge files."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from innolab.analysis.bootstrap import BootstrapError
from innolab.expbench import data, report

ROOT = Path(__file__).resolve().parents[1]
DESIGN = {
    "constant_variables": {"seed": "fixed"},
    "independent_variables": {"lr": ["1e-3", "1e-4"]},
    "dependent_variables": {"accuracy": "top-1"},
}


def task(**fields):
    base = {
        "question": "Does it help?",
        "method": "Compare.",
        "expected_outcome": "It helps.",
        "design_complexity": DESIGN,
    }
    return {**base, **fields}


@pytest.fixture
def dataset(tmp_path):
    """Two conferences, three papers, one task of each type, a nested design and both repository
    fields."""
    root = tmp_path / "expbench"
    papers = {
        ("confA", "111"): [
            task(
                masked_source=["/workspace/train.py", "/workspace/eval/run.py"],
                source=["/workspace/train.py"],
                requirements=["Step 1: train"],
                agent_instructions="Use the GPU.",
            ),
            task(
                source=["/workspace/tools/plot.py"],
                mode="A",
                design_complexity={"design_complexity": DESIGN},
            ),
        ],
        ("confB", "222"): [task(no_answer="No answer found after 2 iterations.")],
        ("confB", "333"): [
            {
                "hypothesis": "An old-style task.",
                "method": "M",
                "expected_outcome": "O",
                "design_complexity": DESIGN,
            }
        ],
    }
    for (conference, paper), questions in papers.items():
        folder = root / "outputs" / "logs" / conference / paper
        folder.mkdir(parents=True)
        (folder / f"{paper}_complete_final.json").write_text(json.dumps({"questions": questions}))
    for conference, records in {
        "confA": [{"id": "111", "code_url": "https://example.org/a/repo"}],
        "confB": [
            {"id": "222", "code_url": "", "reproduce_eval": {"code": "https://example.org/b"}},
            {"id": "333", "code_url": ""},
        ],
    }.items():
        (root / "logs" / conference).mkdir(parents=True)
        (root / "logs" / conference / "meta.json").write_text(
            "\n".join(json.dumps(r) for r in records) + "\n"
        )
    return root


def test_loader_types_masks_fallbacks_and_repositories(dataset):
    tasks = data.load(dataset)
    assert [t.id for t in tasks] == ["confA/111/0", "confA/111/1", "confB/222/0", "confB/333/0"]
    t1, t2, t3, old = tasks
    assert (t1.type, t2.type, t3.type, old.type) == ("T1", "T2", "T3", "T3")
    assert t1.mask_list == [
        "train.py",
        "eval/run.py",
        "README.md",
    ]  # masked_source wins over source
    assert t2.mask_list == ["tools/plot.py", "README.md"] and t3.mask_list == ["README.md"]
    assert t2.design == DESIGN  # the nested design_complexity unwrapped
    assert (
        old.question == "An old-style task."
        and old.agent_instructions == ""
        and old.requirements == "M"
    )
    assert (
        t1.repository == "https://example.org/a/repo" and t3.repository == "https://example.org/b"
    )
    assert old.repository is None
    numbers = data.stats(tasks)
    assert (
        numbers["tasks"] == 4
        and numbers["papers"] == 3
        and numbers["types"] == {"T1": 1, "T2": 1, "T3": 2}
    )
    assert numbers["nested_design"] == 1 and numbers["conferences"]["confB"]["papers"] == 2


def test_loader_errors_name_the_file_and_the_rule(dataset, tmp_path, monkeypatch):
    broken = dataset / "outputs" / "logs" / "confB" / "222" / "222_complete_final.json"
    broken.write_text(json.dumps({"questions": [{"method": "no question"}]}))
    with pytest.raises(
        data.ExpBenchError, match=r"222_complete_final.json: questions\[0\] has neither question"
    ):
        data.load(dataset)
    monkeypatch.delenv(data.DATA_VARIABLE, raising=False)
    with pytest.raises(data.ExpBenchError, match="--data DIR or set \\$INNOLAB_EXPBENCH_DIR"):
        data.load()
    with pytest.raises(data.ExpBenchError, match="not an EXP-Bench data folder"):
        data.load(tmp_path)


def test_cli_stats_list_show(dataset):
    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "innolab.cli", "expbench", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    stats = cli("stats", "--data", str(dataset), "--json")
    assert stats.returncode == 0 and json.loads(stats.stdout)["types"] == {
        "T1": 1,
        "T2": 1,
        "T3": 2,
    }
    listed = cli("list", "--data", str(dataset), "--type", "T3")
    assert listed.stdout.split()[0::1][:1] == ["confB/222/0"] and "confA" not in listed.stdout
    shown = cli("show", "confA/111/0", "--data", str(dataset))
    assert (
        "masked: train.py, eval/run.py, README.md" in shown.stdout
        and "Use the GPU." in shown.stdout
    )
    missing = cli("show", "confA/111/9", "--data", str(dataset))
    assert missing.returncode == 2 and "no EXP-Bench task 'confA/111/9'" in missing.stderr


def test_the_real_dataset_has_the_papers_counts(expbench_data_dir):
    numbers = data.stats(data.load(expbench_data_dir))
    assert (numbers["tasks"], numbers["papers"]) == (461, 51)
    assert numbers["types"] == {"T1": 210, "T2": 123, "T3": 128}  # the paper's Tables 4 and 5
    assert numbers["conferences"]["iclr2024"]["types"] == {"T1": 96, "T2": 50, "T3": 53}
    assert numbers["nested_design"] == 41 and numbers["with_repository"] == 461


@pytest.mark.parametrize(
    "required, code, says",
    [
        ("1", 1, "INNOLAB_REQUIRE_EXPBENCH_DATA=1 but the real EXP-Bench data cannot be read"),
        ("", 0, "1 skipped"),
    ],
)
def test_real_data_tests_fail_when_ci_requires_the_missing_data(required, code, says, tmp_path):
    env = {
        **os.environ,
        "INNOLAB_REQUIRE_EXPBENCH_DATA": required,
        data.DATA_VARIABLE: str(tmp_path / "absent"),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_expbench.py",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "test_the_real_dataset_has_the_papers_counts",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == code and says in done.stdout, done.stdout[-2000:]


# --------------------------------------------------------------------------------------- the report


def judged(design=100, setup=100, conclusion="correct", **extra):
    return {
        "design_score": design,
        "setup_score": setup,
        "conclusion_score": conclusion,
        "design_evaluation_explanation": "",
        "setup_evaluation_explanation": "",
        **extra,
    }


def write_results(
    root: Path, agent: str, model: str, results: list[dict], paper: str = "111"
) -> None:
    folder = root / "confA" / paper / agent / model
    folder.mkdir(parents=True)
    for i, result in enumerate(results):
        (folder / f"111_task_index_{i}_iter_1_duration_0.67_eval_judge.json").write_text(
            json.dumps(result)
        )


def test_report_follows_the_rules_with_every_denominator(tmp_path):
    write_results(
        tmp_path,
        "openhands",
        "o3-mini",
        [
            judged(execution_success=True),  # all correct, executed
            judged(design=50, execution_success=False),  # not all correct, not executed
            judged(setup=100, conclusion="incorrect", execution_success=True),  # I and E, not All
            judged(
                design=0,
                setup=0,
                conclusion=0,
                paper_access=True,
                git_operations=False,
                faked_or_nonexperimental_data=False,
                setup_monitor_comprehensive_reason="read the paper",
                execution_success=True,
            ),  # monitor failed: zeroed, out of E
            judged(design=80, setup=40),  # no execution key: not in the subset
        ],
    )
    write_results(
        tmp_path,
        "inspectai",
        "nova-pro",
        [
            judged(
                paper_access=PARSE,
                git_operations=PARSE,
                faked_or_nonexperimental_data=PARSE,
                setup_monitor_comprehensive_reason=PARSE,
            ),  # unparsed monitor: a failure
            judged(design=100, setup=100, conclusion="correct"),
        ],
    )
    done = subprocess.run(
        [sys.executable, "-m", "innolab.cli", "expbench", "report", str(tmp_path), "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = {(r["agent"], r["model"]): r for r in json.loads(done.stdout)}
    assert list(next(iter(rows.values()))) == report.REPORT_KEYS
    oh = rows[("openhands", "o3-mini")]
    assert (oh["n"], oh["n_judged"], oh["n_judge_failed"], oh["n_exec"]) == (5, 5, 0, 3)
    assert oh["M"] == pytest.approx(80.0)
    assert oh["D"] == pytest.approx((100 + 50 + 100 + 0 + 80) / 5)
    assert oh["I"] == pytest.approx((100 + 100 + 100 + 0 + 40) / 5)
    assert oh["C"] == pytest.approx(
        60.0
    )  # 3 of 5 "correct"; the zeroed task's integer 0 counts as not
    assert oh["E"] == pytest.approx(200 / 3) and oh["I_E"] == pytest.approx(200 / 3)
    assert oh["All"] == pytest.approx(20.0) and oh["All_E"] == pytest.approx(100 / 3)
    ia = rows[("inspectai", "nova-pro")]
    assert (ia["n"], ia["n_exec"], ia["M"], ia["All"]) == (2, 0, 50.0, 50.0)
    assert (ia["n_judged"], ia["n_judge_failed"]) == (
        1,
        1,
    )  # upstream's unparsed monitor: a judge failure
    assert ia["E"] is None and ia["All_E"] is None  # no execution subset: no number, not 0


PARSE = report.PARSE_ERROR


def test_report_per_category_with_a_users_map(tmp_path):
    write_results(
        tmp_path, "oh", "m", [judged(execution_success=True), judged(design=0)], paper="111"
    )
    write_results(tmp_path, "oh", "m", [judged(setup=50, execution_success=False)], paper="222")
    write_results(tmp_path, "oh", "m", [judged()], paper="333")
    (tmp_path / "categories.csv").write_text("paper,category\nconfA/111,RL\n222,Vision\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "innolab.cli",
            "expbench",
            "report",
            str(tmp_path),
            "--json",
            "--categories",
            str(tmp_path / "categories.csv"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [(r["category"], r["n"]) for r in json.loads(done.stdout)] == [
        ("RL", 2),
        ("Vision", 1),
        ("uncategorised", 1),
    ]
    tasks = report.with_categories(
        report.task_table(tmp_path), report.read_categories(tmp_path / "categories.csv")
    )
    assert dict(zip(tasks["paper"], tasks["category"], strict=False)) == {
        "confA/111": "RL",
        "confA/222": "Vision",
        "confA/333": "uncategorised",
    }
    rows = report.report(tmp_path, report.read_categories(tmp_path / "categories.csv")).set_index(
        "category"
    )
    assert list(rows.columns[:3]) == ["agent", "model", "n"]
    assert rows.loc["RL", "n"] == 2 and rows.loc["RL", "D"] == 50.0 and rows.loc["RL", "E"] == 100.0
    assert rows.loc["Vision", "I"] == 50.0 and rows.loc["Vision", "E"] == 0.0
    assert rows.loc["uncategorised", "n"] == 1 and pd.isna(rows.loc["uncategorised", "E"])
    (tmp_path / "bad.csv").write_text("paper,area\n111,RL\n")
    with pytest.raises(report.ReportError, match="paper and category"):
        report.read_categories(tmp_path / "bad.csv")


def test_report_refuses_what_it_cannot_read(tmp_path):
    write_results(tmp_path, "a", "m", [judged(design=150)])
    with pytest.raises(report.ReportError, match="design_score must be a number from 0 to 100"):
        report.report(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(report.ReportError, match=r"no \*_eval_judge.json files"):
        report.report(empty)


# ---------------------------------------------------------------------------------------- workspace


def git(*args, cwd):
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "protocol.file.allow=always",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def clone(tmp_path):
    """A repository with README.md, two scripts and a submodule holding a third."""
    sub = tmp_path / "sub"
    (sub / "lib").mkdir(parents=True)
    (sub / "lib" / "helper.py").write_text("HELP = 1\n")
    git("init", "-q", cwd=sub)
    git("add", ".", cwd=sub)
    git("commit", "-qm", "sub", cwd=sub)
    main = tmp_path / "repo"
    (main / "eval").mkdir(parents=True)
    for name, text in {
        "README.md": "# results: 99%\n",
        "train.py": "print('train')\n",
        "eval/run.py": "print('eval')\n",
        "keep.py": "print('keep')\n",
    }.items():
        (main / name).write_text(text)
    git("init", "-q", cwd=main)
    git("submodule", "add", "-q", str(sub), "vendor/sub", cwd=main)
    git("add", ".", cwd=main)
    git("commit", "-qm", "main", cwd=main)
    return main


def test_masked_workspace_removes_files_from_tree_and_index_submodules_included(clone, tmp_path):
    from innolab.expbench import workspace

    item = data._task(
        "confA",
        "111",
        0,
        task(masked_source=["/workspace/train.py", "/workspace/vendor/sub/lib/helper.py"]),
        None,
        "t",
    )
    prepared = workspace.prepare(item, clone, tmp_path / "ws")
    root = prepared.root
    assert prepared.masked == ["train.py", "vendor/sub/lib/helper.py", "README.md"]
    assert not (root / "train.py").exists() and not (root / "README.md").exists()
    assert (
        not (root / "vendor" / "sub" / "lib" / "helper.py").exists()
        and (root / "keep.py").is_file()
    )

    def tracked(folder):
        return subprocess.run(
            ["git", "ls-files"], cwd=folder, capture_output=True, text=True
        ).stdout.split()

    assert (
        "train.py" not in tracked(root)
        and "README.md" not in tracked(root)
        and "keep.py" in tracked(root)
    )
    assert "lib/helper.py" not in tracked(root / "vendor" / "sub")
    assert (clone / "train.py").is_file()  # the clone itself is untouched
    assert prepared.output_json == "111_task_index_0_iter_1_duration_0.67_eval_gen.json"
    text = workspace.prompt(item, prepared)
    assert "Does it help?" in text and "Compare." in text and prepared.output_json in text
    assert (
        "reproduce_exp_bench.sh" in text and "git" in text and "It helps." not in text
    )  # no ground truth
    missing = data._task("confA", "111", 1, task(masked_source=["/workspace/nope.py"]), None, "t")
    with pytest.raises(workspace.MaskingError) as error:
        workspace.prepare(missing, clone, tmp_path / "ws2")
    assert error.value.invalid_task == "Masking failed for files: ['nope.py']"


def test_chain_and_intervals(tmp_path):
    write_results(
        tmp_path,
        "oh",
        "m",
        [
            judged(execution_success=True),
            judged(design=50, execution_success=True),
            judged(
                paper_access=True,
                git_operations=False,
                faked_or_nonexperimental_data=False,
                setup_monitor_comprehensive_reason="x",
            ),
            judged(design=80),
        ],
    )  # not execution-checked: outside the chain
    tasks = report.task_table(tmp_path)
    steps = report.chain(tasks).set_index("step")
    assert steps["n"].tolist() == [3, 3, 3, 3]
    assert steps["percent"].round(6).tolist() == [
        round(200 / 3, 6),
        round(100 / 3, 6),
        round(100 / 3, 6),
        round(100 / 3, 6),
    ]
    ci = report.intervals(tasks, n_resamples=500).set_index("metric")
    assert ci.loc["D", "mean"] == pytest.approx((100 + 50 + 0 + 80) / 4) and ci.loc["E", "n"] == 2
    # 4 tasks: below the engine's 10 units, no interval, and the note says so
    assert np.isnan(ci.loc["D", "ci_low"]) and np.isnan(ci.loc["D", "ci_high"])
    assert "10" in ci.loc["D", "note"]
    many = report.intervals(pd.concat([tasks] * 3, ignore_index=True),
                            n_resamples=500).set_index("metric")
    assert many.loc["D", "n"] == 12 and many.loc["D", "note"] == ""
    assert many.loc["D", "ci_low"] <= many.loc["D", "mean"] <= many.loc["D", "ci_high"]
    same = report.intervals(
        tasks, confidence_level=0.9, n_resamples=500, rng=np.random.default_rng(3)
    )
    assert same.set_index("metric").loc["D", "mean"] == ci.loc["D", "mean"]
    with pytest.raises(TypeError):
        report.intervals(
            tasks, 0.9
        )  # settings are keyword-only, named as the bootstrap engine names them
    with pytest.raises(TypeError):
        report.intervals(tasks, confidence=0.9, seed=1)
    with pytest.raises(BootstrapError, match="confidence_level"):
        report.intervals(tasks, confidence_level=1.5)


@pytest.mark.notebook
def test_notebook_30_on_judge_files_and_a_dataset(dataset, tmp_path):
    from innolab import notebooks
    from innolab.paths import notebooks_dir

    write_results(
        tmp_path / "judged",
        "oh",
        "m",
        [
            judged(execution_success=True),
            judged(design=0),
            judged(design=0, conclusion="incorrect", judge_failure="no keys"),
        ],
    )
    notebooks.execute(
        notebooks_dir() / "30_expbench.ipynb",
        tmp_path / "30.ipynb",
        {
            "data_dir": str(dataset),
            "judged_dir": str(tmp_path / "judged"),
            "results_dir": str(tmp_path / "r"),
            "figures_dir": str(tmp_path / "f"),
            "n_resamples": 200,
        },
    )
    stats = json.loads((tmp_path / "30.ipynb").read_text())["metadata"]["papermill"]
    assert stats["exception"] is None
    table = pd.read_csv(tmp_path / "r" / "30_expbench" / "report.csv")
    assert table.loc[0, ["n", "n_judged", "n_judge_failed", "n_exec"]].tolist() == [3, 2, 1, 1]
    assert table.loc[0, "All"] == pytest.approx(100 / 3)  # the judge failure counts as a failure
    counted = pd.read_csv(tmp_path / "r" / "30_expbench" / "dataset_stats.csv")
    assert counted.loc[0, "tasks"] == 4
    assert (tmp_path / "f" / "30_expbench" / "chain.png").stat().st_size > 5_000


# ---------------------------------------------------------------------------------------- the judge


def judge_with(server, tmp_path, context_tokens=None):
    from innolab.expbench.judge import Judge
    from innolab.llm.cache import ResponseCache
    from innolab.llm.client import LLMClient
    from innolab.llm.settings import LLMSettings

    settings = LLMSettings(
        base_url=server.base_url, model="fake", api_key="k", backoff_s=0.0, timeout_s=5.0
    )
    return Judge(
        LLMClient(settings, ResponseCache(tmp_path / "judge.sqlite")), context_tokens=context_tokens
    )


MONITOR_OK = {
    "paper_access": False,
    "git_operations": False,
    "faked_or_nonexperimental_data": False,
    "setup_monitor_comprehensive_reason": "clean",
}
DC = {
    "design_evaluation_explanation": "2 of 3",
    "design_score": 67,
    "design_error_analysis": "missed seed",
    "conclusion_evaluation_explanation": "same claim",
    "conclusion_score": "correct",
    "conclusion_error_analysis": "",
}


def setup_reply(score):
    return {
        "setup_evaluation_explanation": f"{score}%",
        "setup_score": score,
        "setup_error_analysis": "x",
    }


def schema_of(request):
    return (request.get("response_format") or {}).get("json_schema", {}).get("name")


def test_judge_chunks_a_large_patch_and_keeps_upstreams_keys(tmp_path):
    from innolab.llm.client import estimate_tokens
    from tests.fake_llm import FakeLLM

    item = data._task(
        "confA", "111", 0, task(requirements=["Step 1: train", "Step 2: eval"]), None, "t"
    )
    replies = {
        "expbench_monitor": [MONITOR_OK],
        "expbench_design_conclusion": [{"design_score": 5}, DC],
        "expbench_setup": [setup_reply(30), setup_reply(50), setup_reply(80)],
    }
    patch = "".join(
        f"+line {i} of the agent's change\n" for i in range(600)
    )  # ~19,000 characters: 3 chunks of 7,000
    with FakeLLM(replies=replies, in_call_order=True) as server:
        judge = judge_with(server, tmp_path, context_tokens=4000)
        result = judge.judge(
            item, {"design": ["vary lr"], "conclusion": "it helps"}, patch, log="ran train.py"
        )
        requests = list(server.requests)
    setups = [r["messages"][0]["content"] for r in requests if schema_of(r) == "expbench_setup"]
    assert len(setups) == 3 and "(part 1 of 3)" in setups[0] and "(part 3 of 3)" in setups[2]
    assert "earlier parts of the diff" in setups[1] and '"setup_score": 50' in setups[2]
    assert result["setup_score"] == 80  # the last chunk's score is final
    assert (
        result["design_score"] == 67 and result["conclusion_score"] == "correct"
    )  # retried until keys matched
    assert sum(schema_of(r) == "expbench_design_conclusion" for r in requests) == 2
    assert all(
        r["messages"][1]["content"] == "" for r in requests
    )  # the whole prompt in the system message
    assert (
        "Step 2: eval" in setups[0]
        and "vary lr"
        in [r for r in requests if schema_of(r) == "expbench_design_conclusion"][1]["messages"][0][
            "content"
        ]
    )
    assert all(
        estimate_tokens(r["messages"][0]["content"]) <= 4000 - judge.reply_tokens for r in requests
    )
    row = report.task_row(result)
    assert row == {"judged": True, "M": True, "D": 67.0, "I": 80.0, "C": True, "executed": None}


def test_judge_monitor_failure_zeroes_the_task(tmp_path):
    from tests.fake_llm import FakeLLM

    item = data._task("confA", "111", 0, task(), None, "t")
    flagged = {
        **MONITOR_OK,
        "git_operations": True,
        "setup_monitor_comprehensive_reason": "git checkout",
    }
    with FakeLLM(replies={"expbench_monitor": [flagged]}, in_call_order=True) as server:
        result = judge_with(server, tmp_path).judge(
            item, {"no_answer": "nothing"}, "", log="git checkout v1"
        )
        asked = [schema_of(r) for r in server.requests]
    assert asked == ["expbench_monitor"]  # no D, C or I judging after a monitor failure
    assert (result["design_score"], result["setup_score"], result["conclusion_score"]) == (0, 0, 0)
    assert result["git_operations"] is True
    row = report.task_row(result)
    assert not row["M"] and row["D"] == 0 and not row["C"]


def test_a_judge_that_never_answers_is_a_failed_judgement_counted_in_n(dataset, tmp_path):
    from innolab.expbench.judge import NOT_JUDGED
    from tests.fake_llm import FakeLLM

    unusable_monitor = {**MONITOR_OK, "paper_access": "maybe"}  # not a boolean, three times
    replies = {
        "expbench_monitor": [MONITOR_OK, unusable_monitor],
        "expbench_setup": [setup_reply(40)],
        "expbench_design_conclusion": [{**DC, "design_score": "most of it"}],
    }
    folder = tmp_path / "results" / "confA" / "111" / "oh" / "fake"
    (tmp_path / "gen.json").write_text(json.dumps({"design": "vary lr", "conclusion": "it helps"}))
    (tmp_path / "log0.txt").write_text("ran train.py")
    (tmp_path / "log1.txt").write_text("ran eval.py")
    runs = []
    with FakeLLM(replies=replies, in_call_order=True) as server:
        env = {**os.environ, "INNOLAB_LLM_BASE_URL": server.base_url, "INNOLAB_LLM_MODEL": "fake"}
        for index in (0, 1):
            runs.append(
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "innolab.cli",
                        "expbench",
                        "judge",
                        f"confA/111/{index}",
                        "--gen",
                        str(tmp_path / "gen.json"),
                        "--log",
                        str(tmp_path / f"log{index}.txt"),
                        "--data",
                        str(dataset),
                        "--out",
                        str(
                            folder / f"111_task_index_{index}_iter_1_duration_0.67_eval_judge.json"
                        ),
                    ],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            )
        asked = [schema_of(r) for r in server.requests]
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    assert asked == [
        "expbench_monitor",
        *["expbench_design_conclusion"] * 3,
        "expbench_setup",
        *["expbench_monitor"] * 3,
    ]  # three attempts each; after the failed monitor, nothing more
    assert all("written as a failed judgement" in r.stderr for r in runs)
    design_failed = json.loads(
        (folder / "111_task_index_0_iter_1_duration_0.67_eval_judge.json").read_text()
    )
    assert design_failed["judge_failure"].startswith(
        "design and conclusion: the judge's replies never held"
    )
    assert "missing or invalid ['design_score']" in design_failed["judge_failure"]
    assert (
        '"design_score": "most of it"' in design_failed["judge_failure"]
    )  # the last reply, for the reader
    assert (
        design_failed["design_score"],
        design_failed["conclusion_score"],
        design_failed["setup_score"],
    ) == (0, "incorrect", 40)  # the step that answered keeps its grade
    assert design_failed["design_evaluation_explanation"] == NOT_JUDGED
    monitor_failed = json.loads(
        (folder / "111_task_index_1_iter_1_duration_0.67_eval_judge.json").read_text()
    )
    assert monitor_failed["judge_failure"].startswith(
        "monitor: the judge's replies never held the keys"
    )
    assert "missing or invalid ['paper_access']" in monitor_failed["judge_failure"]
    assert (
        monitor_failed["paper_access"] == report.PARSE_ERROR
    )  # upstream's record: the gate fails the task
    assert (
        monitor_failed["design_score"],
        monitor_failed["setup_score"],
        monitor_failed["conclusion_score"],
    ) == (0, 0, 0)
    (folder / "111_task_index_2_iter_1_duration_0.67_eval_judge.json").write_text(
        json.dumps(judged())
    )

    def cli(*args):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "innolab.cli",
                "expbench",
                "report",
                str(tmp_path / "results"),
                *args,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    [row] = json.loads(cli("--json"))
    assert (row["n"], row["n_judged"], row["n_judge_failed"]) == (
        3,
        1,
        2,
    )  # both failures stay in n
    assert row["M"] == pytest.approx(200 / 3) and row["D"] == pytest.approx(100 / 3)
    assert row["I"] == pytest.approx(140 / 3) and row["C"] == pytest.approx(100 / 3)
    assert row["All"] == pytest.approx(100 / 3)
    printed = cli()
    assert "n_judged" in printed and "n_judge_failed" in printed
    assert (
        "n counts attempted tasks: 3 attempted, 1 judged, 2 judge failures (each counted as failed)"
        in printed
    )


def test_report_counts_upstreams_unparsed_scores_as_failures(tmp_path):
    write_results(
        tmp_path,
        "oh",
        "m",
        [
            judged(design=PARSE, conclusion=PARSE, setup=60),
            judged(),
            judged(judge_failure="setup: no keys", setup=0),
        ],
    )
    row = report.report(tmp_path).iloc[0]
    assert (row["n"], row["n_judged"], row["n_judge_failed"]) == (3, 1, 2)
    assert (
        row["D"] == pytest.approx(200 / 3)
        and row["C"] == pytest.approx(200 / 3)
        and row["M"] == 100.0
    )
    write_results(tmp_path / "bad", "oh", "m", [judged(judge_failure="")])
    with pytest.raises(report.ReportError, match="judge_failure must be a non-empty text"):
        report.report(tmp_path / "bad")


def test_a_long_log_is_judged_in_chunks_each_within_the_context(tmp_path):
    from innolab.llm.client import estimate_tokens
    from tests.fake_llm import FakeLLM

    item = data._task("confA", "111", 0, task(), None, "t")
    log = "".join(f"[step {i}] tool_call bash: python train.py --epoch {i}\n" for i in range(1500))
    # ~72,000 characters; the forbidden act at the end
    log += "[step 1500] tool_call bash: git checkout v1\n"
    context = 4000
    with FakeLLM(replies={"expbench_monitor": [MONITOR_OK]}, in_call_order=True) as server:
        judge = judge_with(server, tmp_path / "clean", context_tokens=context)
        verdict = judge.monitor(log)
        prompts = [r["messages"][0]["content"] for r in server.requests]
    assert len(prompts) >= 10 and verdict["git_operations"] is False
    assert all(
        estimate_tokens(p) <= context - judge.reply_tokens for p in prompts
    )  # room for the reply, always
    assert (
        f"(part 1 of {len(prompts)};" in prompts[0]
        and f"(part {len(prompts)} of {len(prompts)};" in prompts[-1]
    )
    assert (
        "".join(p.split(" alone):\n", 1)[1] for p in prompts) == log
    )  # every line read, none twice
    assert all(p.endswith("\n") for p in prompts)  # cut at line ends

    flagged = {
        **MONITOR_OK,
        "git_operations": True,
        "setup_monitor_comprehensive_reason": "git checkout v1",
    }
    script = {"expbench_monitor": [MONITOR_OK] * (len(prompts) - 1) + [flagged]}
    with FakeLLM(replies=script, in_call_order=True) as server:
        result = judge_with(server, tmp_path / "flagged", context_tokens=context).judge(
            item, {"design": "d", "conclusion": "c"}, "", log
        )
        asked = [schema_of(r) for r in server.requests]
    assert asked == ["expbench_monitor"] * len(
        prompts
    )  # a flag in the last part fails the task: no D, C, I
    assert result["git_operations"] is True and result["paper_access"] is False
    assert f"[part {len(prompts)}] git checkout v1" in result["setup_monitor_comprehensive_reason"]
    assert not report.task_row(result)["M"] and report.task_row(result)["judged"]


def test_a_prompt_that_cannot_fit_is_a_judge_failure(tmp_path):
    from tests.fake_llm import FakeLLM

    item = data._task(
        "confA", "111", 0, task(requirements=["a requirement " * 1500]), None, "t"
    )  # ~6,000 tokens
    replies = {"expbench_monitor": [MONITOR_OK], "expbench_design_conclusion": [DC]}
    with FakeLLM(replies=replies, in_call_order=True) as server:
        result = judge_with(server, tmp_path, context_tokens=4000).judge(
            item, {"design": "d", "conclusion": "c"}, "+x = 1\n", "ran"
        )
        asked = [schema_of(r) for r in server.requests]
    assert "expbench_setup" not in asked  # nothing sent that would overflow the judge
    assert result["judge_failure"].startswith("setup: the prompt without the text to judge takes")
    assert result["setup_score"] == 0 and result["design_score"] == 67
    assert report.task_row(result) == {
        "judged": False,
        "M": True,
        "D": 67.0,
        "I": 0.0,
        "C": True,
        "executed": None,
    }


def test_a_request_the_model_refuses_is_a_failed_judgement_and_an_endpoint_down_raises(tmp_path):
    from innolab.llm import LLMError
    from tests.fake_llm import FakeLLM

    item = data._task("confA", "111", 0, task(), None, "t")
    replies = {
        "expbench_monitor": [MONITOR_OK],
        "expbench_design_conclusion": [DC],
        "expbench_setup": [setup_reply(40)],
    }
    with FakeLLM(
        faults=["none", "400"], replies=replies, in_call_order=True
    ) as server:  # the design step: 400
        result = judge_with(server, tmp_path).judge(
            item, {"design": "d", "conclusion": "c"}, "+x = 1\n", "ran"
        )
        asked = [schema_of(r) for r in server.requests]
    assert asked == [
        "expbench_monitor",
        "expbench_design_conclusion",
        "expbench_setup",
    ]  # a 400 is not retried
    assert result["judge_failure"].startswith(
        "design and conclusion: the model refused the request"
    )
    assert "maximum context length is 4096" in result["judge_failure"]
    assert (result["design_score"], result["conclusion_score"], result["setup_score"]) == (
        0,
        "incorrect",
        40,
    )
    assert report.task_row(result)["judged"] is False  # written, so it stays in n as a failure
    with (
        FakeLLM(faults=["500"] * 5, replies=replies, in_call_order=True) as server,
        pytest.raises(LLMError, match="after 5 attempt"),
    ):  # the client's retries spent on a 5xx
        judge_with(server, tmp_path / "down").judge(
            item, {"design": "d", "conclusion": "c"}, "+x = 1\n", "ran"
        )
    with FakeLLM(replies=replies) as server:
        judge = judge_with(server, tmp_path / "gone")
    with pytest.raises(LLMError):  # the endpoint is gone: no judgement recorded
        judge.judge(item, {"design": "d", "conclusion": "c"}, "+x = 1\n", "ran")


# -------------------------------------------------------------------------------------- E in Docker


@pytest.mark.parametrize(
    "script, success, timed_out",
    [
        ("mkdir -p out && echo 0.93 > out/accuracy.txt && echo done", True, False),
        ("echo broken >&2; exit 3", False, False),
        ("sleep 60", False, True),
    ],
)
@pytest.mark.docker
def test_execution_check_in_docker(script, success, timed_out, tmp_path, docker_client, base_image):
    from innolab.expbench.execute import execute

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "reproduce_exp_bench.sh").write_text(f"#!/bin/bash\n{script}\n")
    outcome = execute(
        workspace,
        base_image,
        timeout_s=5,
        conclusion="Accuracy is 0.93 (out/accuracy.txt).",
        client=docker_client,
    )
    assert (outcome.execution_success, outcome.timed_out) == (success, timed_out)
    if success:
        assert "done" in outcome.execution_message and outcome.outputs_written
        assert (workspace / "out" / "accuracy.txt").read_text().strip() == "0.93"
    elif timed_out:
        assert (
            outcome.execution_message.startswith("timed out after 5 s")
            and not outcome.outputs_written
        )
    else:
        assert outcome.returncode == 3 and "broken" in outcome.execution_message
        assert "not written by the run: ['out/accuracy.txt']" in outcome.outputs_note
    assert set(outcome.result()) >= {"execution_success", "execution_message"}


def test_execution_needs_the_script(tmp_path):
    from innolab.expbench.execute import cited_files, execute

    assert not execute(tmp_path, "unused").execution_success
    assert cited_files("see results/acc.csv and ./plots/fig.png, not /etc/passwd.txt") == [
        "plots/fig.png",
        "results/acc.csv",
    ]


def test_cli_prepare_and_judge(dataset, clone, tmp_path):
    from tests.fake_llm import FakeLLM

    (dataset / "outputs" / "logs" / "confA" / "111" / "111_complete_final.json").write_text(
        json.dumps({"questions": [task(masked_source=["/workspace/train.py"])]})
    )
    prepared = subprocess.run(
        [
            sys.executable,
            "-m",
            "innolab.cli",
            "expbench",
            "prepare",
            "confA/111/0",
            "--repo",
            str(clone),
            "--out",
            str(tmp_path / "ws"),
            "--data",
            str(dataset),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert prepared.returncode == 0, prepared.stderr
    assert (
        not (tmp_path / "ws" / "train.py").exists()
        and "Does it help?" in (tmp_path / "ws.prompt.txt").read_text()
    )
    (tmp_path / "gen.json").write_text(json.dumps({"design": "vary lr", "conclusion": "it helps"}))
    replies = {
        "expbench_monitor": [MONITOR_OK],
        "expbench_design_conclusion": [DC],
        "expbench_setup": [setup_reply(40)],
    }
    with FakeLLM(replies=replies, in_call_order=True) as server:
        env = {**os.environ, "INNOLAB_LLM_BASE_URL": server.base_url, "INNOLAB_LLM_MODEL": "fake"}
        out = tmp_path / "judged" / "111_task_index_0_iter_1_duration_0.67_eval_judge.json"
        judged_run = subprocess.run(
            [
                sys.executable,
                "-m",
                "innolab.cli",
                "expbench",
                "judge",
                "confA/111/0",
                "--gen",
                str(tmp_path / "gen.json"),
                "--out",
                str(out),
                "--data",
                str(dataset),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert judged_run.returncode == 0, judged_run.stderr
    assert json.loads(out.read_text())["setup_score"] == 40


def test_download_verifies_every_file(tmp_path):
    from innolab.expbench.download import DownloadError, download, manifest

    upstream = tmp_path / "upstream"
    (upstream / "outputs" / "logs" / "c" / "1").mkdir(parents=True)
    good = upstream / "outputs" / "logs" / "c" / "1" / "1_complete_final.json"
    good.write_text('{"questions": []}')

    listed = {
        "outputs/logs/c/1/1_complete_final.json": hashlib.sha256(good.read_bytes()).hexdigest()
    }
    out = download(tmp_path / "copy", base_url=upstream.as_uri(), checksums=listed)
    assert (
        out / "outputs" / "logs" / "c" / "1" / "1_complete_final.json"
    ).read_text() == '{"questions": []}'
    good.write_text(
        '{"questions": [1]}'
    )  # upstream changed: refused, and nothing unverified is kept
    with pytest.raises(
        DownloadError, match=r"1_complete_final.json: sha256 .* differs from the pinned"
    ):
        download(tmp_path / "other", base_url=upstream.as_uri(), checksums=listed)
    assert not (tmp_path / "other" / "outputs").exists()
    assert len(manifest()) == 53  # 51 task files and 2 metadata files at the pinned commit


def test_the_shipped_checksums_match_the_real_data(expbench_data_dir, tmp_path):
    from innolab.expbench.download import download

    copy = download(tmp_path / "copy", base_url=expbench_data_dir.resolve().as_uri())
    assert data.stats(data.load(copy))["tasks"] == 461


def test_patch_capture_includes_untracked_files_and_submodules(clone, tmp_path):
    from innolab.expbench import workspace

    item = data._task("confA", "111", 0, task(masked_source=["/workspace/train.py"]), None, "t")
    root = workspace.prepare(item, clone, tmp_path / "ws").root
    (root / "keep.py").write_text("print('changed')\n")
    (root / "new_experiment.py").write_text("print('new')\n")
    (root / "vendor" / "sub" / "lib" / "helper.py").write_text("HELP = 2\n")
    patch = workspace.capture_patch(root)
    assert "+print('changed')" in patch and "+print('new')" in patch and "+HELP = 2" in patch
    assert "diff --git" not in patch and "\nindex " not in patch
    assert "README" not in patch and "train.py" not in patch  # masking is not the agent's change
