"""EXP-Bench tasks as gym tasks: a scaffold works in the masked clone (Docker and local), the run
keeps upstream's artefacts (answer, patch with untracked files and submodule diffs, config, log,
workspace), and the run is judged and executed into upstream's layout, which the report reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from innolab import runner, traces
from tests.fake_llm import FakeLLM
from tests.test_expbench import DC, MONITOR_OK, ROOT, clone, dataset, setup_reply  # noqa: F401 (fixtures)

WRITE = (
    "import json, pathlib\n"
    "pathlib.Path('train.py').write_text('print(0.93)\\n')\n"
    "helper = pathlib.Path('vendor/sub/lib/helper.py')\n"
    "helper.write_text(helper.read_text() + 'SEED = 7\\n')\n"
    "pathlib.Path('reproduce_exp_bench.sh')"
    ".write_text('mkdir -p out && python3 train.py > out/accuracy.txt\\n')\n"
    "json.dump({'design': ['vary lr', 'hold the seed'], "
    "'conclusion': 'Accuracy 0.93 (out/accuracy.txt).'},\n"
    "          open('submission.json', 'w'))\n"
)
STEPS = [
    {"thought": "look", "action": "bash", "code": "ls -a; ls eval vendor/sub/lib"},
    {"thought": "write the experiment", "action": "python", "code": WRITE},
    {
        "thought": "run it",
        "action": "bash",
        "code": "bash reproduce_exp_bench.sh && cat out/accuracy.txt",
    },
    {"thought": "submit", "action": "submit", "path": "submission.json", "code": ""},
    {"thought": "done", "action": "finish", "code": ""},
]
PREFIX = "111_task_index_0_iter_1_duration_0.08"  # a 5-minute budget, in upstream's naming


def cli(*args, env=None, timeout=300, last_line=True):
    done = subprocess.run(
        [sys.executable, "-m", "innolab.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1] if last_line else done.stdout


@pytest.mark.docker
def test_a_scaffold_on_an_expbench_task_in_docker_then_judged_and_executed(
    dataset,  # noqa: F811
    clone,  # noqa: F811
    tmp_path,
    base_image,
):
    with FakeLLM(replies={"codeact_action": STEPS}, in_call_order=True) as server:
        env = {
            **os.environ,
            "INNOLAB_LLM_BASE_URL": server.base_url,
            "INNOLAB_LLM_MODEL": "fake",
            "INNOLAB_LLM_API_KEY": "k",
        }
        run_dir = Path(
            cli(
                "run",
                "--agent",
                "codeact",
                "--task",
                "expbench:confA/111/0",
                "--repo",
                str(clone),
                "--expbench-data",
                str(dataset),
                "--runtime",
                "docker",
                "--budget",
                "5m",
                "--max-steps",
                "8",
                "--run-dir",
                str(tmp_path / "run"),
                env=env,
            )
        )
        system = server.requests[0]["messages"][0]["content"]
    assert (
        "experiment's code repository" in system and "taskkit" not in system
    )  # the task's own rules
    events = traces.read_events(run_dir)
    outputs = [e.output for e in events if e.type == "tool_result"]
    assert (
        "README.md" not in outputs[0] and "train.py" not in outputs[0] and "keep.py" in outputs[0]
    )
    assert "run.py" not in outputs[0] and "helper.py" in outputs[0]  # masked, in the submodule too
    assert "0.93" in outputs[2]
    submission = next(e for e in events if e.type == "submission")
    assert (
        submission.dev_valid and submission.dev_score is None
    )  # checked for its keys, never scored
    finished = events[-1]
    assert finished.type == "run_finished" and finished.reason == "agent_finished"
    out = run_dir / "expbench"
    assert sorted(finished.artefacts) == sorted(
        f"expbench/{name}"
        for name in (
            f"{PREFIX}_eval_gen.json",
            f"{PREFIX}_eval_gen.patch",
            f"{PREFIX}_eval_gen_config.json",
            f"{PREFIX}_eval_gen_codeact_logs.txt",
            "workspace",
        )
    )
    answer = json.loads((out / f"{PREFIX}_eval_gen.json").read_text())
    assert answer == {
        "design": ["vary lr", "hold the seed"],
        "conclusion": "Accuracy 0.93 (out/accuracy.txt).",
    }
    patch = (out / f"{PREFIX}_eval_gen.patch").read_text()
    assert (
        "+mkdir -p out" in patch and "+print(0.93)" in patch and "+SEED = 7" in patch
    )  # untracked + submodule
    assert "diff --git" not in patch and "\nindex " not in patch and "README" not in patch
    log = (out / f"{PREFIX}_eval_gen_codeact_logs.txt").read_text()
    assert "reproduce_exp_bench.sh" in log and "[step 3] tool_call submit" in log
    config = json.loads((out / f"{PREFIX}_eval_gen_config.json").read_text())
    assert config["docker_image"] == base_image and Path(config["github_workspace_path"]).is_dir()
    recorded = json.loads((run_dir / "config.json").read_text())
    assert recorded["task_options"] == {
        "repo": str(clone.resolve()),
        "data": str(dataset.resolve()),
    }
    assert not (run_dir / "score.json").exists()  # judged, not scored

    replies = {
        "expbench_monitor": [MONITOR_OK],
        "expbench_design_conclusion": [DC],
        "expbench_setup": [setup_reply(100)],
    }
    with FakeLLM(replies=replies, in_call_order=True) as judge:
        env = {**os.environ, "INNOLAB_LLM_BASE_URL": judge.base_url, "INNOLAB_LLM_MODEL": "fake"}
        judged = Path(
            cli(
                "expbench",
                "judge",
                "--run",
                str(run_dir),
                "--results",
                str(tmp_path / "results"),
                "--execute",
                base_image,
                "--timeout",
                "60",
                env=env,
            )
        )
        prompts = [r["messages"][0]["content"] for r in judge.requests]
    assert (
        judged
        == tmp_path / "results" / "confA" / "111" / "codeact" / "fake" / f"{PREFIX}_eval_judge.json"
    )
    result = json.loads(judged.read_text())
    assert result["execution_success"] is True and result["outputs_written"] is True
    assert any("+SEED = 7" in p for p in prompts) and any(
        "[step 1] tool_call python_session" in p for p in prompts
    )
    table = json.loads(
        cli("expbench", "report", str(tmp_path / "results"), "--json", last_line=False)
    )
    assert table == [
        {
            "agent": "codeact",
            "model": "fake",
            "n": 1,
            "n_judged": 1,
            "n_judge_failed": 0,
            "n_exec": 1,
            "M": 100.0,
            "D": 67.0,
            "I": 100.0,
            "C": 100.0,
            "E": 100.0,
            "I_E": 100.0,
            "All": 0.0,
            "All_E": 0.0,
        }
    ]


def test_aide_answers_an_expbench_task_locally_and_a_missing_answer_is_recorded(
    dataset,  # noqa: F811
    clone,  # noqa: F811
    tmp_path,
):
    nodes = [{"plan": "write the answer", "code": WRITE}]
    with FakeLLM(replies={"aide_node": nodes}, in_call_order=True) as server:
        settings = {
            "base_url": server.base_url,
            "model": "fake",
            "backoff_s": 0.0,
            "timeout_s": 5.0,
        }
        config = runner.agent_config(
            "aide",
            "expbench:confA/111/0",
            budget_s=120,
            max_steps=3,
            settings=settings,
            task_options={"repo": str(clone), "data": str(dataset)},
            num_drafts=1,
        )
        outcome = runner.start(config, tmp_path / "run", show_progress=False)
    assert (
        outcome["dev_valid"] and outcome["final_submission"]
    )  # a valid answer without a score is submitted
    kept = json.loads(next((tmp_path / "run" / "expbench").glob("*_eval_gen.json")).read_text())
    assert kept["conclusion"].startswith("Accuracy 0.93")

    silent = [{"thought": "done", "action": "bash", "code": "true"}]
    with FakeLLM(replies={"codeact_action": silent}, in_call_order=True) as server:
        settings = {
            "base_url": server.base_url,
            "model": "fake",
            "backoff_s": 0.0,
            "timeout_s": 5.0,
        }
        config = runner.agent_config(
            "codeact",
            "expbench:confA/111/0",
            budget_s=120,
            max_steps=1,
            settings=settings,
            task_options={"repo": str(clone), "data": str(dataset)},
        )
        runner.start(config, tmp_path / "silent", show_progress=False)
    kept = json.loads(next((tmp_path / "silent" / "expbench").glob("*_eval_gen.json")).read_text())
    assert kept == {
        "no_answer": "No answer found in eval gen after 1 iterations."
    }  # upstream's record


def test_expbench_task_options_are_checked_before_the_run(dataset, clone, tmp_path):  # noqa: F811
    with pytest.raises(ValueError, match=r"task_options\.repo"):
        runner.agent_config("codeact", "expbench:confA/111/0", task_options={"data": str(dataset)})
    with pytest.raises(ValueError, match="no EXP-Bench task"):
        runner.agent_config(
            "codeact",
            "expbench:confA/111/9",
            task_options={"repo": str(clone), "data": str(dataset)},
        )
    with pytest.raises(ValueError, match="takes none"):
        runner.agent_config("codeact", "circle-packing-26", task_options={"repo": str(clone)})
