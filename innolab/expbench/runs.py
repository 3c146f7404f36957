"""Judging a gym run of an EXP-Bench task: its kept artefacts through the judge (and E)."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from innolab.expbench.execute import DEFAULT_TIMEOUT_S, Network, execute
from innolab.expbench.gym_task import ARTEFACTS, load_task
from innolab.expbench.judge import Judge, write_result
from innolab.expbench.report import monitor_failed
from innolab.expbench.workspace import OUTPUT_SCRIPT
from innolab.gym.policy import RunConfig
from innolab.rundir import RunDir
from innolab.traces import Trace


class RunJudgeError(ValueError):
    """A run folder that cannot be judged as an EXP-Bench run; the message says why."""


def artefacts(run_dir: str | Path) -> dict[str, Path]:
    """The artefacts a finished EXP-Bench run kept: answer, patch, config, log and workspace.

    Raises:
        RunJudgeError: a run that has not finished or kept no EXP-Bench artefacts.
        TraceError: a run without a readable trace.
    """
    folder = Path(run_dir)
    finished = Trace.read(folder).finished
    if finished is None:
        raise RunJudgeError(f"{folder}: the run has not finished (resume it first)")
    kept = [folder / p for p in finished.artefacts]
    if not kept:
        raise RunJudgeError(f"{folder}: not a run of an EXP-Bench task (it kept no {ARTEFACTS}/ "
                            "artefacts)")
    found: dict[str, Path] = {}
    for path in kept:
        for key, suffix in (("answer", "_eval_gen.json"), ("patch", "_eval_gen.patch"),
                            ("config", "_eval_gen_config.json"), ("log", "_logs.txt")):
            if path.name.endswith(suffix):
                found[key] = path
        if path.name == "workspace":
            found["workspace"] = path
    return found


def model_folder(config: RunConfig) -> str:
    """The <model> level of upstream's layout.

    The model as the endpoint reported it, else as configured.
    """
    model = config.model_reported or (config.llm.model if config.llm else None) or "unknown"
    return re.sub(r"[^\w.-]+", "-", str(model)).strip("-")


def judge_run(run_dir: str | Path, results_dir: str | Path, judge: Judge,
              execute_image: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
              network: Network = "none") -> Path:
    """Judge one run and write its judgement in upstream's layout.

    M, D and C, I; and E in a fresh container of `execute_image`, on a copy of the run's final
    workspace, when given and the monitor passed, as upstream orders it. A judge that failed is
    written as a failed judgement with its reason (`judge_failure`), so the task stays in the
    report's `n`.

    Args:
        run_dir: the run folder of an `expbench:` task.
        results_dir: the root of upstream's results layout.
        judge: the judge (its model and settings).
        execute_image: the image E runs the workspace in (None: no E).
        timeout_s: E's time limit.
        network: E's network.

    Returns:
        The written `<results>/<conf>/<paper>/<agent>/<model>/<prefix>_eval_judge.json`.

    Raises:
        RunJudgeError: not a run of an EXP-Bench task, or one without its artefacts.
    """
    folder = RunDir(Path(run_dir))
    config = RunConfig.from_dict(folder.read_config())
    scheme, _, reference = config.task.partition(":")
    if scheme != "expbench":
        raise RunJudgeError(f"{folder.root}: task {config.task!r} is not an EXP-Bench task")
    task = load_task(reference, **config.task_options).task
    kept = artefacts(folder.root)
    generated: dict[str, Any] = json.loads(kept["answer"].read_text(encoding="utf-8"))
    scripts = ""
    script = kept["workspace"] / OUTPUT_SCRIPT
    if script.is_file():
        scripts = f"{OUTPUT_SCRIPT}:\n{script.read_text(encoding='utf-8', errors='replace')}"
    result = judge.judge(task, generated, kept["patch"].read_text(encoding="utf-8"),
                         kept["log"].read_text(encoding="utf-8"), scripts)
    if execute_image is not None and not monitor_failed(result):
        with tempfile.TemporaryDirectory(prefix="innolab-expbench-exec-") as scratch:
            copy = Path(scratch) / "workspace"
            shutil.copytree(kept["workspace"], copy, symlinks=True)
            copy.chmod(0o777)  # the script runs as the image's user
            for path in copy.rglob("*"):
                if not path.is_symlink():
                    path.chmod(0o777 if path.is_dir() else 0o666)
            outcome = execute(copy, execute_image, timeout_s=timeout_s, network=network,
                              conclusion=generated.get("conclusion"))  # None for a no-answer record
        result |= outcome.result()
    prefix = kept["answer"].name.removesuffix("_eval_gen.json")
    target = (Path(results_dir) / task.conference / task.paper_id / config.agent
              / model_folder(config) / f"{prefix}_eval_judge.json")
    return write_result(result, target)
