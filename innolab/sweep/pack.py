"""Packing a finished sweep folder to be shared or committed: its record kept, caches dropped.

A packed sweep is still a sweep folder every tool opens (`innolab sweep status`, SweepView and its
"Open run", RunView, `innolab view`, the tables and `as_of` re-reading, notebooks 02, 03 and
21-25): each run keeps its config.json, trace.jsonl, score.json, submissions with their programs,
research log, method card and executed run notebook, and the sweep its sweep.json and tables.
What only a run still executing, resuming or replaying needs is dropped: checkpoints (the
workspace archives), the model's response cache (a replay's and the step browser's prompts: the
replies stay in the trace), the novelty distance cache (recomputed on demand), and the lock and
heartbeat files. Paths of this machine (the project's folder) are written relative to the project
in sweep.json and in the executed notebooks, so that the folder holds no machine path.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from innolab.paths import project_root
from innolab.results import MANIFEST, read_manifest, run_folders
from innolab.rundir import ATTEMPTS, CHECKPOINT_DIR, RunDir
from innolab.sweep import state
from innolab.sweep.spec import SpecError

DROPPED = ("llm_cache.sqlite", "distances.sqlite", ".lock", ".lock.guard", "heartbeat.json")


@dataclass(frozen=True)
class Packed:
    """What packing did.

    Attributes:
        folder: The sweep folder.
        runs: How many run folders it holds.
        dropped: How many files and folders were removed.
        freed_bytes: Their size in bytes.
        size_bytes: The folder's size after packing.
        rewritten: The files whose machine paths were made relative to the project.
    """

    folder: Path
    runs: int
    dropped: int
    freed_bytes: int
    size_bytes: int
    rewritten: list[Path]


def size_of(path: Path) -> int:
    """The bytes of a file, or of every file under a folder (links not followed)."""
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() or p.is_symlink())


def pack(folder: Path, root: Path | None = None) -> Packed:
    """Pack a sweep folder whose runs have all ended (see the module's docstring).

    Args:
        folder: The sweep folder (it holds sweep.json).
        root: The folder machine paths are made relative to (default: the project's).

    Returns:
        What was dropped and rewritten, and the folder's size.

    Raises:
        innolab.sweep.spec.SpecError: Not a sweep folder, or a run of it still executing (its
            checkpoint is what a resume needs).
    """
    folder = Path(folder).resolve()
    if read_manifest(folder) is None:
        raise SpecError(f"{folder} is not a sweep folder (no {MANIFEST}): give the folder "
                        "`innolab sweep run` wrote (results/sweeps/<name>/)")
    runs = run_folders(folder)
    busy = [run.name for run in runs if state.running(run)]
    if busy:
        raise SpecError(f"{folder}: runs {busy} are still executing: pack it once they end "
                        "(innolab sweep status says which run)")
    dropped, freed = 0, 0
    for run in runs:
        for record in [run, *sorted((run / ATTEMPTS).glob("*"))]:
            for name in (*DROPPED, CHECKPOINT_DIR):
                target = record / name
                if target.exists() or target.is_symlink():
                    freed += size_of(target)
                    dropped += 1
                    shutil.rmtree(target) if target.is_dir() and not target.is_symlink() \
                        else target.unlink()
    prefix = str((root or project_root()).resolve()).rstrip("/") + "/"
    rewritten = [path for path in [folder / MANIFEST, *(RunDir(r).notebook for r in runs)]
                 if path.is_file() and _relative_paths(path, prefix)]
    return Packed(folder, len(runs), dropped, freed, size_of(folder), rewritten)


def _relative_paths(path: Path, prefix: str) -> bool:
    """Write the project's paths in a JSON file relative to the project; True if any was."""
    text = path.read_text(encoding="utf-8")
    escaped = json.dumps(prefix)[1:-1]  # as the path appears inside a JSON string
    if prefix not in text and escaped not in text:
        return False
    path.write_text(text.replace(escaped, "").replace(prefix, ""), encoding="utf-8")
    json.loads(path.read_text(encoding="utf-8"))  # still JSON
    return True
