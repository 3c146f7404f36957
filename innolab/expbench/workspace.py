"""An EXP-Bench task's masked workspace, made from a local clone, and the prompt its agent gets.

Masking follows upstream: README.md and the task's mask list are removed from the index
(`git rm --cached`, run in the repository that owns each file, so files of submodules are masked in
the submodule) and from the tree. A file to mask that does not exist makes the task invalid, with
upstream's message.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from innolab.expbench.data import ExpTask

OUTPUT_SCRIPT = "reproduce_exp_bench.sh"


class MaskingError(ValueError):
    """The task cannot be prepared: `invalid_task` holds upstream's message."""

    def __init__(self, missing: list[str]) -> None:
        """Name the files to mask that do not exist.

        Args:
            missing: The files' paths, relative to the repository root.
        """
        self.invalid_task = f"Masking failed for files: {missing}"
        super().__init__(self.invalid_task)


@dataclass(frozen=True)
class Workspace:
    """A prepared workspace.

    Attributes:
        root: The workspace's folder.
        masked: The files masked, relative to the root.
        output_json: The name of the agent's answer file.
        output_script: The name of the script the execution check runs.
    """

    root: Path
    masked: list[str]
    output_json: str
    output_script: str = OUTPUT_SCRIPT


def output_json_name(task: ExpTask, iteration: int = 1, duration_h: float = 0.67) -> str:
    """Name the agent's answer file as upstream does.

    Args:
        task: The task.
        iteration: The attempt's number.
        duration_h: The attempt's duration in hours.

    Returns:
        <paper>_task_index_<i>_iter_<n>_duration_<h>_eval_gen.json
    """
    return (f"{task.paper_id}_task_index_{task.index}_iter_{iteration}_duration_{duration_h:g}"
            "_eval_gen.json")


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def _owner(root: Path, relative: str) -> Path:
    """The innermost git repository (the clone or one of its submodules) that holds a path."""
    path = (root / relative).parent
    while path != root and not (path / ".git").exists():
        path = path.parent
    return path


def prepare(task: ExpTask, clone: str | Path, target: str | Path) -> Workspace:
    """Copy a local clone (submodules included) to `target` and mask the task's files there.

    Args:
        task: The task.
        clone: The repository's local clone.
        target: The new workspace's folder (must not exist).

    Returns:
        The workspace.

    Raises:
        ValueError: `clone` is not a git clone, or `target` exists.
        MaskingError: A file to mask does not exist in the clone.
    """
    clone, target = Path(clone), Path(target)
    if not (clone / ".git").exists():
        raise ValueError(
            f"{clone}: not a git clone (pass the repository's local clone with --repo)")
    if target.exists():
        raise ValueError(f"{target}: exists already; a workspace is made in a new folder")
    missing = [f for f in task.mask_list if f != "README.md" and not (clone / f).is_file()]
    if missing:
        raise MaskingError(missing)
    shutil.copytree(clone, target, symlinks=True)
    masked = []
    for relative in task.mask_list:
        path = target / relative
        if not path.exists():
            continue  # README.md may be absent
        owner = _owner(target, relative)
        inside = str(path.relative_to(owner))
        _git("rm", "--cached", "--quiet", "--ignore-unmatch", "--", inside, cwd=owner)
        path.unlink()
        masked.append(relative)
    return Workspace(root=target, masked=masked, output_json=output_json_name(task))


def prompt(task: ExpTask, workspace: Workspace, repository_dir: str | None = "/workspace") -> str:
    """Write the agent's instructions: innolab's wording of upstream's generation prompt's rules.

    Args:
        task: The task.
        workspace: The prepared workspace.
        repository_dir: Where the agent finds the repository; None: the repository is the current
            folder, and paths are given relative to it.

    Returns:
        The prompt.
    """
    where = f"at {repository_dir}" if repository_dir else "(the current folder)"
    prefix = f"{repository_dir}/" if repository_dir else ""
    parts = [
        "You are reproducing an experiment from a research paper, "
        f"in its code repository {where}.",
        f"Research question:\n{task.question}",
        f"Method:\n{task.method}",
    ]
    if task.agent_instructions:
        parts.append(f"Instructions:\n{task.agent_instructions}")
    parts += [
        "Form a hypothesis, design the experiment (the variables you hold constant, vary and "
        "measure), write and run the code, analyse the results and draw a conclusion.",
        "Rules: do not read the paper or look for it; do not use any git operation (no checkout, "
        "branches, log or other versions); results printed in a README are not answers (use it "
        "only for setup facts); stay inside the repository and save your code there.",
        f"When done, write {prefix}{workspace.output_json} holding exactly the keys \"design\" "
        f"(text or a list of texts) and \"conclusion\" (text), and "
        f"{prefix}{workspace.output_script}: one script, run from the repository root, that sets "
        "up the environment, runs the experiment end to end and produces the result behind your "
        "conclusion.",
    ]
    return "\n\n".join(parts)


MAX_PATCH_BYTES = 70_000_000  # upstream cuts larger patches
PATCH_SUFFIX = "_eval_gen.patch"


def _diff(repository: Path) -> str:
    _git("add", "-N", "--", ".", cwd=repository)  # untracked files show in the diff
    diff = _git("diff", "-G.", cwd=repository).stdout
    kept = [line for line in diff.splitlines(keepends=True)
            if not (line.startswith("diff --git") or line.startswith("index "))]
    return "".join(kept)


def capture_patch(root: str | Path) -> str:
    """Capture the agent's changes as upstream records them.

    Untracked files are included (`git add -N`); `git diff -G.` without its `diff --git` and
    `index` lines, each submodule's diff appended; above 70 MB, the first and last 5,000 lines,
    halved until it fits.

    Args:
        root: The workspace.

    Returns:
        The patch.
    """
    root = Path(root)
    patch = _diff(root)
    listed = _git("submodule", "--quiet", "foreach", "--recursive", "echo $displaypath",
                  cwd=root).stdout
    for sub in [line.strip() for line in listed.splitlines() if line.strip()]:
        patch += _diff(root / sub)
    keep = 5000
    while len(patch.encode()) > MAX_PATCH_BYTES and keep > 1:
        lines = patch.splitlines(keepends=True)
        patch = "".join([*lines[:keep], "...\n", *lines[-keep:]])
        keep //= 2
    return patch
