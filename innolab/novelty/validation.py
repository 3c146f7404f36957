"""Non-circular validation of the novelty distances: the hand-written triplet set and its agreement.

A triplet is an anchor program for a built-in task, a near variant made by one transformation the
normaliser does not undo (extract/inline a function; loop, comprehension or numpy expression of
one computation; meaningful renames; reordered independent statements; unused code added; a
different but equivalent library call), and a far variant: a different method for the same task.
The programs were written for this purpose and live with a manifest in data/triplets/handwritten/.

A distance agrees on a triplet when d(anchor, near) < d(anchor, far). `agreement_table` reports
the share of agreeing triplets per transformation family and back end on two axes: the method axis
(the code back ends, on programs as `innolab.novelty.scoring.comparable` prepares them) and the
outcome axis (`innolab.novelty.outcome.outcome_distance` on the submissions the programs write,
each program run once in a temporary workspace of its task and its output cached).

The older code triplets of data/triplets/code_triplets.json (near variants by
`innolab.novelty.variants`, which renames as the normaliser does) are circular: they check that
the normaliser inverts itself, and are kept only as that regression check
(`innolab.novelty.triplets.regression_table`).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from innolab.paths import data_dir

# The transformation families of issue 22 item 5, by the label the manifest uses.
FAMILIES: tuple[str, ...] = ("extract_inline", "loop_comprehension_numpy", "rename", "reorder",
                             "unused_code", "equivalent_call")
ROLES: tuple[str, ...] = ("anchor", "near", "far")
SUBMISSION = "submission.json"
OUTCOME_BACKEND = "outcome_distance"
TABLE_COLUMNS = ["axis", "backend", "family", "n", "scored", "mean_near", "mean_far",
                 "agreement", "note"]
DISTANCE_COLUMNS = ["axis", "backend", "triplet", "task", "family", "far", "d_near", "d_far",
                    "note"]


class TripletSetError(ValueError):
    """The hand-written triplet set's manifest breaks a rule (the message names field and rule)."""


@dataclass(frozen=True)
class CodeTriplet:
    """One hand-written triplet: program paths relative to the set's folder, and its labels.

    Attributes:
        id: A unique name, `<task>/<variant>`.
        task: The built-in task's id.
        family: The near variant's transformation family (one of FAMILIES).
        anchor: The anchor program.
        near: The near variant: the anchor transformed, writing the same submission.
        far: The far variant: a different method for the task.
        change: What the transformation changed, in words.
    """

    id: str
    task: str
    family: str
    anchor: str
    near: str
    far: str
    change: str

    def path(self, role: str, folder: Path | None = None) -> Path:
        """Return the file of one of the triplet's programs.

        Args:
            role: "anchor", "near" or "far".
            folder: The set's folder; None: the project's (`triplet_folder`).

        Returns:
            The program's path.
        """
        return (folder or triplet_folder()) / getattr(self, role)


def triplet_folder() -> Path:
    """Return the folder of the hand-written triplet set (programs and manifest.json)."""
    return data_dir() / "triplets" / "handwritten"


def load_manifest(folder: Path | None = None) -> dict[str, Any]:
    """Return the set's manifest, checked.

    Args:
        folder: The set's folder; None: the project's.

    Returns:
        The parsed manifest.json: `families` (label -> description), `methods` (program ->
        method in words), `triplets` (list of entries).

    Raises:
        TripletSetError: The manifest is missing, not JSON, or breaks a rule: families must be
            exactly FAMILIES; every triplet needs id (unique), task, family (a known label),
            anchor, near, far (existing .py files inside the folder, three different ones) and
            change (non-empty text).
    """
    folder = folder or triplet_folder()
    path = folder / "manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TripletSetError(f"{path.name}: cannot be read as JSON ({error})") from None
    if not isinstance(manifest, dict):
        raise TripletSetError(f"{path.name}: must be a JSON object")
    families = manifest.get("families")
    if not isinstance(families, dict) or set(families) != set(FAMILIES):
        raise TripletSetError(f"families: must describe exactly {', '.join(FAMILIES)}")
    entries = manifest.get("triplets")
    if not isinstance(entries, list) or not entries:
        raise TripletSetError("triplets: must be a non-empty list")
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"triplets[{index}]"
        if not isinstance(entry, dict):
            raise TripletSetError(f"{where}: must be an object")
        for key in ("id", "task", "family", *ROLES, "change"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise TripletSetError(f"{where}.{key}: must be a non-empty string")
        if entry["id"] in seen:
            raise TripletSetError(f"{where}.id: {entry['id']!r} is not unique")
        seen.add(entry["id"])
        if entry["family"] not in FAMILIES:
            raise TripletSetError(f"{where}.family: must be one of {', '.join(FAMILIES)}, "
                                  f"got {entry['family']!r}")
        files = [entry[role] for role in ROLES]
        if len(set(files)) != 3:
            raise TripletSetError(f"{where}: anchor, near and far must be three different files")
        for role in ROLES:
            target = (folder / entry[role]).resolve()
            if not target.is_relative_to(folder.resolve()) or target.suffix != ".py" \
                    or not target.is_file():
                raise TripletSetError(f"{where}.{role}: must name a .py file inside the set's "
                                      f"folder, got {entry[role]!r}")
    return manifest


def load_code_triplets(folder: Path | None = None) -> list[CodeTriplet]:
    """Return the hand-written triplets, in manifest order.

    Args:
        folder: The set's folder; None: the project's.

    Returns:
        The triplets.

    Raises:
        TripletSetError: The manifest breaks a rule (`load_manifest`).
    """
    manifest = load_manifest(folder)
    return [CodeTriplet(**{key: entry[key] for key in CodeTriplet.__dataclass_fields__})
            for entry in manifest["triplets"]]


@dataclass(frozen=True)
class ProgramOutput:
    """What running one program once gave.

    Attributes:
        submission: The cached submission file it wrote, or None.
        seconds: The run's wall time (0 when read from the cache).
        error: Why there is no submission ("" when there is one).
        cached: Whether the output came from the cache.
    """

    submission: Path | None
    seconds: float
    error: str = ""
    cached: bool = False


def output_key(task_id: str, source: str) -> str:
    """Return the cache key of a program's output: a hash of the task's id and the source."""
    return hashlib.sha256(f"{task_id}\0{source}".encode()).hexdigest()[:32]


def run_program(task_id: str, program: Path, cache_dir: Path, timeout_s: float = 120.0
                ) -> ProgramOutput:
    """Run a program once in a fresh workspace of its task; cache the submission it writes.

    The workspace holds the task's visible files only (as a sandbox's does); the program runs as
    `python program.py` there, in a child process with innolab's numeric environment, the way
    known solutions are run (`innolab.tasks.solutions.Solution.run`), and must write
    submission.json. Trusted code only: this is not a sandbox.

    Args:
        task_id: The built-in task's id.
        program: The program's file.
        cache_dir: The outputs' cache folder (one `<key>.json` per program and task).
        timeout_s: The child process's time limit.

    Returns:
        The cached submission, or None with the reason (non-zero exit, timeout, no submission).
    """
    from innolab.tasks.numerics import numeric_env
    from innolab.tasks.registry import get_task

    source = program.read_text(encoding="utf-8")
    cached = cache_dir / f"{output_key(task_id, source)}.json"
    if cached.is_file():
        return ProgramOutput(cached, 0.0, cached=True)
    task = get_task(task_id)
    with tempfile.TemporaryDirectory(prefix="innolab-triplet-") as tmp:
        workspace = Path(tmp)
        task.write_visible(workspace)
        (workspace / "program.py").write_text(source, encoding="utf-8")
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "program.py"], cwd=workspace,
                                  capture_output=True, text=True, timeout=timeout_s, check=False,
                                  env=numeric_env())
        except subprocess.TimeoutExpired:
            return ProgramOutput(None, time.perf_counter() - start,
                                 f"timeout after {timeout_s:g} s")
        seconds = time.perf_counter() - start
        written = workspace / SUBMISSION
        if done.returncode != 0:
            tail = done.stderr.strip().splitlines()[-1:] or [""]
            return ProgramOutput(None, seconds, f"exit status {done.returncode}: {tail[0]}")
        if not written.is_file():
            return ProgramOutput(None, seconds, f"wrote no {SUBMISSION}")
        cache_dir.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".part")
        shutil.copyfile(written, partial)
        partial.replace(cached)
    return ProgramOutput(cached, seconds)


def _distance_rows(axis: str, backend: str, triplets: Sequence[CodeTriplet],
                   near: Sequence[float], far: Sequence[float], notes: Sequence[str]
                   ) -> list[dict[str, Any]]:
    """Return one DISTANCE_COLUMNS row per triplet."""
    return [{"axis": axis, "backend": backend, "triplet": t.id, "task": t.task,
             "family": t.family, "far": t.far, "d_near": float(n), "d_far": float(f),
             "note": note} for t, n, f, note in zip(triplets, near, far, notes, strict=True)]


def method_distances(backend: str, triplets: Sequence[CodeTriplet], cache_dir: Path,
                     folder: Path | None = None, llm_settings: dict[str, Any] | None = None
                     ) -> list[dict[str, Any]]:
    """Return the method axis's distances of one code back end, one row per triplet.

    Args:
        backend: A registered back end's name.
        triplets: The triplets.
        cache_dir: The folder of the distance (and LLM response) caches.
        folder: The set's folder; None: the project's.
        llm_settings: LLM settings of the judge (llm back end only).

    Returns:
        DISTANCE_COLUMNS rows; a distance the back end could not compute is NaN. A back end that
        cannot be used here (e.g. the local encoder's packages missing) gives NaN rows whose note
        says why.

    Raises:
        NoveltyError: When `backend` is not registered.
    """
    from innolab.novelty.backends import LLMJudge, NoveltyError, Scorer
    from innolab.novelty.registry import BACKENDS, make_backend
    from innolab.novelty.scoring import comparable

    if backend not in BACKENDS:
        raise NoveltyError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    texts = {}
    for t in triplets:
        for role in ROLES:
            path = t.path(role, folder)
            if path not in texts:
                texts[path] = comparable(path.read_text(encoding="utf-8"), backend)
    try:
        if backend == "llm":
            engine: Any = LLMJudge(llm_settings, cache_path=str(cache_dir / "llm_cache.sqlite"))
        else:
            engine = make_backend(backend)
        scorer = Scorer(engine, cache_dir / "distances.sqlite",
                        workers=1 if backend in ("llm", "embedding") else 4)
        pairs = [(texts[t.path("anchor", folder)], texts[t.path(role, folder)])
                 for role in ("near", "far") for t in triplets]
        values = scorer.distances(pairs, failures="nan")
    except (NoveltyError, ImportError, OSError) as error:
        nan = [math.nan] * len(triplets)
        return _distance_rows("method", backend, triplets, nan, nan,
                              [f"not computed: {error}"] * len(triplets))
    notes = ["" if not (math.isnan(n) or math.isnan(f)) else f"{backend} could not score a pair"
             for n, f in zip(values[: len(triplets)], values[len(triplets):], strict=True)]
    name = engine.name if backend == "llm" else backend
    return _distance_rows("method", name, triplets, values[: len(triplets)],
                          values[len(triplets):], notes)


def outcome_distances(triplets: Sequence[CodeTriplet], cache_dir: Path,
                      folder: Path | None = None, timeout_s: float = 120.0
                      ) -> tuple[list[dict[str, Any]], dict[str, ProgramOutput]]:
    """Return the outcome axis's distances: `outcome_distance` of the programs' submissions.

    Each program runs once (`run_program`; outputs cached under `cache_dir/outputs`).

    Args:
        triplets: The triplets.
        cache_dir: The cache folder.
        folder: The set's folder; None: the project's.
        timeout_s: Each program's time limit.

    Returns:
        DISTANCE_COLUMNS rows (NaN, with the reason in the note, where a program wrote no
        submission or the family cannot describe it) and each program's output by its manifest
        path.
    """
    from innolab.novelty.outcome import OutcomeError, outcome_distance

    outputs: dict[str, ProgramOutput] = {}
    for t in triplets:
        for role in ROLES:
            name = getattr(t, role)
            if name not in outputs:
                outputs[name] = run_program(t.task, t.path(role, folder), cache_dir / "outputs",
                                            timeout_s)
    near, far, notes = [], [], []
    for t in triplets:
        anchor = outputs[t.anchor]
        pair, problems = [], []
        for role in ("near", "far"):
            other = outputs[getattr(t, role)]
            failed = anchor if anchor.submission is None else other
            if anchor.submission is None or other.submission is None:
                problems.append(f"{getattr(t, 'anchor' if failed is anchor else role)}: "
                                f"{failed.error}")
                pair.append(math.nan)
                continue
            try:
                pair.append(float(outcome_distance(t.task, anchor.submission, other.submission)))
            except OutcomeError as error:
                problems.append(str(error))
                pair.append(math.nan)
        near.append(pair[0])
        far.append(pair[1])
        notes.append("; ".join(dict.fromkeys(problems)))
    return _distance_rows("outcome", OUTCOME_BACKEND, triplets, near, far, notes), outputs


def agreement(distances: pd.DataFrame) -> pd.DataFrame:
    """Return agreement per axis, back end and family (and `all`) from per-triplet distances.

    Args:
        distances: DISTANCE_COLUMNS rows (`distance_table`).

    Returns:
        TABLE_COLUMNS rows: `n` triplets, `scored` those with both distances, the mean distances
        to near and far over the scored ones, `agreement` the share of scored triplets with
        d(anchor, near) < d(anchor, far) (NaN when none is scored), `note` the distinct notes.
    """
    rows = []
    for (axis, backend), group in distances.groupby(["axis", "backend"], sort=False):
        present = [f for f in FAMILIES if f in set(group["family"])]
        for family in [*present, "all"]:
            part = group if family == "all" else group[group["family"] == family]
            scored = part.dropna(subset=["d_near", "d_far"])
            count = len(scored)
            notes = [n for n in dict.fromkeys(part["note"]) if isinstance(n, str) and n]
            rows.append({
                "axis": axis, "backend": backend, "family": family, "n": len(part),
                "scored": count,
                "mean_near": float(scored["d_near"].mean()) if count else math.nan,
                "mean_far": float(scored["d_far"].mean()) if count else math.nan,
                "agreement": float((scored["d_near"] < scored["d_far"]).mean()) if count
                else math.nan,
                "note": "; ".join(notes) or ("" if count else "no triplet could be scored"),
            })
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def default_backends() -> list[str]:
    """Return the back ends validated by default: ast, tfidf, embedding; llm where configured.

    Returns:
        The names; `llm` only where a judge endpoint is set (`$INNOLAB_LLM_BASE_URL`).
    """
    from innolab.llm.settings import LLMSettings

    names = ["ast", "tfidf", "embedding"]
    return [*names, "llm"] if LLMSettings.from_env().base_url else names


def backend_notes(backends: Sequence[str]) -> list[str]:
    """Return what a report should say about back ends left out (the llm judge, and why).

    Args:
        backends: The back ends validated.

    Returns:
        A line for the llm judge where it was not validated, else none.
    """
    if "llm" in backends:
        return []
    why = ("not requested" if "llm" in default_backends()
           else "no judge endpoint configured: $INNOLAB_LLM_BASE_URL unset")
    return [f"llm judge: not run ({why}); `innolab novelty validate --backend llm` runs it on "
            "whatever endpoint is set"]


def distance_table(backends: Sequence[str], cache_dir: Path,
                   axes: Sequence[Literal["method", "outcome"]] = ("method", "outcome"),
                   triplets: Sequence[CodeTriplet] | None = None, folder: Path | None = None,
                   llm_settings: dict[str, Any] | None = None, timeout_s: float = 120.0
                   ) -> pd.DataFrame:
    """Return every triplet's two distances per back end and axis on the hand-written set.

    Args:
        backends: The code back ends of the method axis.
        cache_dir: The cache folder (distances, LLM replies, program outputs).
        axes: Which axes to report.
        triplets: The triplets; None: the whole set.
        folder: The set's folder; None: the project's.
        llm_settings: LLM settings of the judge (llm back end only).
        timeout_s: Each program's time limit (outcome axis).

    Returns:
        DISTANCE_COLUMNS rows: axis, back end, the triplet's id, task, family and far program,
        d(anchor, near), d(anchor, far) (NaN where not computed) and a note saying why.

    Raises:
        NoveltyError: When a back end is not registered.
        TripletSetError: When the manifest breaks a rule.
    """
    chosen = list(triplets) if triplets is not None else load_code_triplets(folder)
    rows: list[dict[str, Any]] = []
    if "method" in axes:
        for backend in backends:
            rows += method_distances(backend, chosen, cache_dir, folder, llm_settings)
    if "outcome" in axes:
        rows += outcome_distances(chosen, cache_dir, folder, timeout_s)[0]
    return pd.DataFrame(rows, columns=DISTANCE_COLUMNS)


def agreement_table(backends: Sequence[str], cache_dir: Path,
                    axes: Sequence[Literal["method", "outcome"]] = ("method", "outcome"),
                    triplets: Sequence[CodeTriplet] | None = None, folder: Path | None = None,
                    llm_settings: dict[str, Any] | None = None, timeout_s: float = 120.0
                    ) -> pd.DataFrame:
    """Return agreement per transformation family, back end and axis on the hand-written set.

    `agreement(distance_table(...))`; the arguments are `distance_table`'s.

    Returns:
        TABLE_COLUMNS rows (`agreement`).

    Raises:
        NoveltyError: When a back end is not registered.
        TripletSetError: When the manifest breaks a rule.
    """
    return agreement(distance_table(backends, cache_dir, axes, triplets, folder, llm_settings,
                                    timeout_s))


def _cell(value: float, digits: int = 2) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def markdown_report(table: pd.DataFrame, regression: pd.DataFrame | None = None,
                    notes: Sequence[str] = (), distances: pd.DataFrame | None = None) -> str:
    """Return the agreement table as a short markdown report.

    Args:
        table: `agreement_table`'s result.
        regression: The circular normaliser regression check's table, shown apart, or None.
        notes: More lines for the notes (e.g. a back end not run, and why).
        distances: `distance_table`'s result, to list the triplets each back end gets wrong.

    Returns:
        Markdown: agreement by family (rows) and back end (columns), then mean distances near /
        far, the notes, and the regression check's figures, labelled circular.
    """
    columns = list(dict.fromkeys(zip(table["axis"], table["backend"], strict=True)))
    counts = table.drop_duplicates("family").set_index("family")["n"]
    families = [f for f in [*FAMILIES, "all"] if f in counts.index]
    head = [f"{b} ({a})" for a, b in columns]
    lines = ["# Novelty distances on the hand-written triplet set", "",
             "Agreement: the share of triplets with d(anchor, near) < d(anchor, far). Near "
             "variants come from transformations the normaliser does not undo; far variants are "
             "different methods for the same task. Method axis: code back ends; outcome axis: "
             "`outcome_distance` on the programs' submissions (each near variant writes the "
             "anchor's submission by construction, so there the axis checks that the far "
             "methods' solutions lie elsewhere).", "",
             "| family | n | " + " | ".join(head) + " |",
             "|---|---|" + "---|" * len(head)]
    index = table.set_index(["axis", "backend", "family"])
    for family in families:
        cells = [_cell(index.loc[(a, b, family), "agreement"]) for a, b in columns]
        lines.append(f"| {family} | {counts[family]} | " + " | ".join(cells) + " |")
    lines += ["", "Mean distance anchor-near / anchor-far (0-100), all triplets:", "",
              "| back end | axis | near | far | scored |", "|---|---|---|---|---|"]
    for a, b in columns:
        row = index.loc[(a, b, "all")]
        lines.append(f"| {b} | {a} | {_cell(row['mean_near'], 1)} | {_cell(row['mean_far'], 1)} "
                     f"| {row['scored']}/{row['n']} |")
    listed = [f"* {b} ({a}): {n}" for (a, b), n in
             table[table["family"] == "all"].set_index(["axis", "backend"])["note"].items()
             if isinstance(n, str) and n]
    listed += [f"* {line}" for line in notes]
    if distances is not None:
        wrong = distances[~(distances["d_near"] < distances["d_far"])
                          & distances["d_near"].notna() & distances["d_far"].notna()]
        for (axis, backend), group in wrong.groupby(["axis", "backend"], sort=False):
            cases = ", ".join(f"{row.triplet} ({row.d_near:.1f} vs {row.d_far:.1f})"
                              for row in group.itertuples())
            listed.append(f"* {backend} ({axis}) orders wrongly (near vs far): {cases}")
    if listed:
        lines += ["", "Notes:", "", *listed]
    if regression is not None and not regression.empty:
        lines += ["", "## Normaliser regression check (circular; not a validation)", "",
                  "The older code triplets' near variants rename to v0, v1, ... as the normaliser "
                  "does, so agreement there only shows that the normaliser inverts its own "
                  "renaming.", "", "| back end | kind | n | near | far | agreement |",
                  "|---|---|---|---|---|---|"]
        for _, row in regression.iterrows():
            lines.append(f"| {row['backend']} | {row['kind']} | {row['n']} | "
                         f"{_cell(row['mean_closer'], 1)} | {_cell(row['mean_farther'], 1)} | "
                         f"{_cell(row['agreement'])} |")
    return "\n".join(lines) + "\n"
