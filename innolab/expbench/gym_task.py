"""An EXP-Bench task as a gym task: `expbench:<conference>/<paper>/<index>` with its repo's clone.

Any innolab scaffold works on it through the gym: the masked clone is the sandbox's workspace, the
agent's answer ({"design", "conclusion"}) is what it submits (`submission.json`, checked for its
keys by `answer.py`, which gives no score), and `reproduce_exp_bench.sh` is a file it writes. At the
end of the run the task keeps, in the run folder's `expbench/`, what upstream's tools read, named as
upstream names them (`<paper>_task_index_<i>_iter_1_duration_<h>` + `_eval_gen.json`,
`_eval_gen.patch`, `_eval_gen_config.json`, `_eval_gen_<agent>_logs.txt`) and the final workspace
itself (`workspace/`, for the execution check E). Judging is separate
(`innolab expbench judge --run RUN_DIR`): the gym scores nothing here. The scheme `expbench` is
registered from pyproject.toml (entry point group `innolab.task_schemes`): innolab.tasks.registry
calls this module's `load_task` and `resolve_options`.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from innolab.expbench import answer as answer_rules
from innolab.expbench.data import ExpTask, data_dir, get, load
from innolab.expbench.workspace import OUTPUT_SCRIPT, Workspace, capture_patch, prepare, prompt
from innolab.gym.policy import RunConfig
from innolab.gym.sandbox import Sandbox, safe_members
from innolab.gym.task import Compute, GymTask
from innolab.rundir import RunDir
from innolab.traces import (
    AnyEvent,
    LLMCall,
    ResearchLog,
    RunFinished,
    RunResumed,
    RunStarted,
    Submission,
    ToolCallEvent,
    ToolResultEvent,
    Validation,
    read_events,
)

ANSWER_FILE = "submission.json"
# upstream's record of a missing answer
NO_ANSWER = {"no_answer": "No answer found in eval gen after 1 iterations."}
ARTEFACTS = "expbench"
DEFAULT_DURATION_H = 0.67  # the paper's 40 minutes
WORKSPACE_RULES = (
    "Your workspace is the experiment's code repository (its README and some files have been "
    "removed). Work with the bash, python and file actions. Your answer is submission.json: write "
    "it and submit it (`submit`); the checker verifies only that it holds the keys design and "
    "conclusion, and the last valid submission is your answer, judged after the run together with "
    "your code changes and reproduce_exp_bench.sh."
)


def resolve_options(
    reference: str, repo: str | Path | None = None, data: str | Path | None = None
) -> dict[str, str]:
    """The task options written in a run's config, checked by loading the task.

    A wrong id or folder thus fails before the run starts.

    Args:
        reference: The task, `<conference>/<paper>/<index>`.
        repo: The local clone of the task's repository.
        data: The EXP-Bench data folder (None: the default one).

    Returns:
        The clone and the data folder as absolute paths.

    Raises:
        ValueError: No clone, a folder that is no git clone, or an unknown task.
    """
    if not repo:
        raise ValueError(
            "task_options.repo: an EXP-Bench task needs the local clone of its repository "
            "(--repo PATH)"
        )
    clone = Path(repo).resolve()
    if not (clone / ".git").exists():
        raise ValueError(f"task_options.repo: {clone} is not a git clone")
    options = {"repo": str(clone), "data": str(data_dir(data).resolve())}
    load_task(reference, **options)
    return options


def load_task(reference: str, repo: str | None = None, data: str | None = None) -> ExpBenchGymTask:
    """The gym task for `<conference>/<paper>/<index>` (what the registry calls for `expbench:`).

    Args:
        reference: The task, `<conference>/<paper>/<index>`.
        repo: The local clone of the task's repository.
        data: The EXP-Bench data folder (None: the default one).

    Returns:
        The task.

    Raises:
        ValueError: No clone given, or an unknown task.
    """
    if not repo:
        raise ValueError(
            f"expbench:{reference}: the task needs task_options.repo (the repository's local clone)"
        )
    return ExpBenchGymTask(get(load(data), reference), Path(repo))


class ExpBenchGymTask(GymTask):
    """An EXP-Bench task as a gym task, with workspace rules and `collect`.

    The scaffolds show its workspace rules; `collect` keeps upstream's artefacts at the end.

    Args:
        task: The EXP-Bench task.
        repo: The local clone of its repository.
    """

    direction: Literal["max", "min"] = "max"
    workspace_rules: str | None = WORKSPACE_RULES

    def __init__(self, task: ExpTask, repo: Path) -> None:
        self.task, self.repo = task, repo

    @property
    def id(self) -> str:
        """`expbench:<conference>/<paper>/<index>`."""
        return f"expbench:{self.task.id}"

    @property
    def compute(self) -> Compute:
        """The machine's GPUs where it has them."""
        return "gpu-if-available"

    @property
    def description(self) -> str:
        """Upstream's prompt for the task, and how to submit the answer."""
        text = prompt(self.task, Workspace(Path("."), [], ANSWER_FILE), repository_dir=None)
        return text + f"\n\nSubmit {ANSWER_FILE} with the submit action once it is written."

    @cached_property
    def _files(self) -> dict[str, bytes]:
        with tempfile.TemporaryDirectory(prefix="innolab-expbench-") as folder:
            workspace = prepare(self.task, self.repo, Path(folder) / "repo")
            return {
                str(p.relative_to(workspace.root)): p.read_bytes()
                for p in sorted(workspace.root.rglob("*"))
                if p.is_file() and not p.is_symlink()
            }

    def visible_files(self) -> dict[str, bytes]:
        """The masked clone, its git data included (the patch is taken against it after the run)."""
        return dict(self._files)

    def validator_files(self) -> dict[str, bytes]:
        """The answer's checker (its keys only; no score)."""
        return {"validate.py": Path(answer_rules.__file__).read_bytes()}

    def prefix(self, wall_clock_s: float | None) -> str:
        """Upstream's file prefix; the duration is the run's budget in hours (0.67 without one)."""
        hours = round(wall_clock_s / 3600, 2) if wall_clock_s else DEFAULT_DURATION_H
        return f"{self.task.paper_id}_task_index_{self.task.index}_iter_1_duration_{hours:g}"

    def collect(self, sandbox: Sandbox, run_dir: Path, config: RunConfig) -> list[str]:
        """Keep the final workspace and upstream's four files in `<run>/expbench/`.

        Called again on a resumed run, it replaces what an earlier call left.

        Args:
            sandbox: The run's sandbox, holding the final workspace.
            run_dir: The run folder.
            config: The run's configuration (its budget names the files; its agent and image are
                recorded).

        Returns:
            The run-relative paths of the four files and the workspace.
        """
        out = Path(run_dir) / ARTEFACTS
        workspace = out / "workspace"
        if workspace.exists():
            shutil.rmtree(workspace)
        workspace.mkdir(parents=True)
        with tempfile.TemporaryFile() as snapshot:
            snapshot.write(sandbox.snapshot())
            snapshot.seek(0)
            with tarfile.open(fileobj=snapshot) as archive:
                archive.extractall(workspace, members=safe_members(archive), filter="data")
        prefix = self.prefix(config.wall_clock_s)
        paths = {
            "answer": out / f"{prefix}_eval_gen.json",
            "patch": out / f"{prefix}_eval_gen.patch",
            "config": out / f"{prefix}_eval_gen_config.json",
            "log": out / f"{prefix}_eval_gen_{config.agent}_logs.txt",
        }
        paths["answer"].write_text(
            json.dumps(final_answer(Path(run_dir), workspace), indent=2) + "\n", encoding="utf-8"
        )
        paths["patch"].write_text(capture_patch(workspace), encoding="utf-8")
        paths["config"].write_text(
            json.dumps(
                {
                    "github_workspace_path": str(workspace.resolve()),
                    "docker_image": config.image,
                    "base_dir": str(Path(run_dir).resolve()),
                    "task": self.task.id,
                    "repository": self.task.repository,
                    "output_script": OUTPUT_SCRIPT,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
        paths["log"].write_text(agent_log(read_events(Path(run_dir))), encoding="utf-8")
        return [str(p.relative_to(run_dir)) for p in [*paths.values(), workspace]]


def final_answer(run_dir: Path, workspace: Path) -> dict[str, Any]:
    """The run's answer.

    Args:
        run_dir: The run folder.
        workspace: The final workspace, extracted.

    Returns:
        Its final submission when well formed, else a well-formed submission.json left in the
        workspace, else upstream's no-answer record.
    """
    for candidate in (RunDir(run_dir).final_submission, workspace / ANSWER_FILE):
        if candidate.is_file():
            try:
                answer = json.loads(candidate.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                continue
            if not answer_rules.errors(answer):
                return answer
    return dict(NO_ANSWER)


def agent_log(events: list[AnyEvent], max_output_chars: int = 4000) -> str:
    """The run's trajectory as text, as the monitor M reads an agent's log.

    Args:
        events: The run's trace.
        max_output_chars: The most characters kept of each reply, call and output.

    Returns:
        Every model reply, tool call and tool output, in order.
    """
    lines: list[str] = []
    for event in events:
        head = f"[step {event.step}] {event.type}"
        if isinstance(event, LLMCall):
            text = event.response or event.error or ""
            calls = "".join(
                f"\n  tool call: {json.dumps(c)[:max_output_chars]}" for c in event.tool_calls
            )
            lines.append(f"{head} ({event.purpose or 'agent'}):\n{text[:max_output_chars]}{calls}")
        elif isinstance(event, ToolCallEvent):
            lines.append(f"{head} {event.tool}: {json.dumps(event.arguments)[:max_output_chars]}")
        elif isinstance(event, ToolResultEvent):
            status = "ok" if event.ok else "failed"
            lines.append(
                f"{head} {event.tool} {status} in {event.duration_s:.1f} s:\n"
                f"{event.output[-max_output_chars:]}"
            )
        elif isinstance(event, Submission | Validation):
            fields = {k: v for k, v in event.payload().items() if k not in ("v", "seq", "time")}
            lines.append(f"{head}: {json.dumps(fields)}")
        elif isinstance(event, ResearchLog):
            lines.append(f"{head}:\n{event.entry}")
        elif isinstance(event, RunStarted | RunResumed | RunFinished):
            reason = event.reason if isinstance(event, RunFinished) else ""
            lines.append(f"{head}: {reason}".rstrip(": "))
    return "\n\n".join(lines) + "\n"
