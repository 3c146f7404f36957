"""Scoring a finished run once, outside the gym: V, G, ratio (hidden evaluator) and N (novelty).

The gym names the run's final submission (the best by the pristine dev score); this module is the
only place that runs the hidden evaluator on it and computes N against the task's known solutions.
The result is written once: `score.json` in the run folder, one `score` event in the trace and one
row of the folder's results table.
Scoring a run that is already scored returns the recorded score and writes nothing.

Runs know their frontier. A score records the V* it used (the task's V* as of the day it was
scored), that day (`v_star_as_of`) and the hash of the task's ledger (`ledger_hash`). `reread`
reads a recorded score again against V* as of another date, without rewriting it: G, ratio,
`beats_v_star` and `headroom_closed` of the run and of each improving candidate. The date is
`AsOf`: "run" (the UTC day of the run's `run_started` event), "today", an ISO date, or None (as
recorded). A score recorded before runs knew their frontier has no `v_star_as_of`,
`ledger_hash` or `headroom_closed`: as recorded, those read None (the record does not say), and
its recorded V* stays what it was; `as_of="run"` gives the V* of the day it started.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import math
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from innolab.gym.policy import RunConfig
from innolab.gym.provenance import Program, ProgramError
from innolab.gym.reproduce import SameOutcome, SourceCheck, check_source
from innolab.llm.errors import LLMError
from innolab.metrics import score_solution
from innolab.novelty.backends import NoveltyError, Scorer
from innolab.novelty.cards import extract_card
from innolab.novelty.deadcode import DEAD_CODE_RULES, keep_executed
from innolab.novelty.outcome import known_outputs, outcome_novelty
from innolab.novelty.registry import make_backend
from innolab.novelty.scoring import (
    comparable,
    compares_cards,
    default_backend,
    known_cards,
    known_code,
    novelty_against,
)
from innolab.rundir import RunDir, RunDirError, write_atomic
from innolab.runlock import RunLock
from innolab.tasks.evaluation import Evaluation, evaluate
from innolab.tasks.frontier import FrontierError, as_date, utc_today
from innolab.tasks.model import Task, TaskError
from innolab.tasks.registry import get_task, scheme_of
from innolab.traces import Score, Trace, TraceError, TraceWriter


class ScoringError(RuntimeError):
    """A run that cannot be scored (not finished, not a run folder); the message says why."""


AsOf = datetime.date | str | None  # "run", "today", an ISO date, a date, or None (as recorded)
AS_OF_CHOICES = "DATE (YYYY-MM-DD), run (the day the run started) or today"
# What a reading against V* as of a date sets, in the run's score and in each candidate.
READ_AS_OF = ("v_star", "v_star_as_of", "gain", "ratio", "beats_v_star", "headroom_closed")
CANDIDATE_AS_OF = ("gain", "ratio", "beats_v_star", "headroom_closed")  # V* is the run's
# How N of a submission came about: computed ("ok"; an invalid one's 0 by the paper's rule
# included), not asked for or not possible ("not_computed"), its back end failed
# ("judge_failed"), no code was recorded ("no_code"), or computed on a program that does not
# reproduce the submission ("not_reproducing": the value is kept, with this status).
NOVELTY_STATUSES = ("ok", "not_computed", "judge_failed", "no_code", "not_reproducing")
# What each assessed submission records of its program's re-run and of its outcome novelty.
SOURCE_FIELDS = ("source_status", "source_seconds", "source_detail", "source_time_limit_s",
                 "source_executed", "novelty_code", "novelty_code_note")
OUTCOME_FIELDS = ("novelty_out", "novelty_out_nearest", "novelty_out_note", "rederived_known")


def score_run(run_dir: str | Path, novelty_backend: str | None = "default",
              settings: dict[str, Any] | None = None, table: Path | None = None,
              source_time_limit_s: float | None = None, wait: bool = True) -> dict[str, Any]:
    """V, G, ratio and (with a back end) N of a finished run and of every improving candidate.

    Written once. Each assessed submission (the final one and every improving candidate) also
    records whether its stored program reproduces it (`source_status`, `source_seconds`,
    `source_detail`, `source_time_limit_s`: innolab.gym.reproduce, the hidden evaluator deciding
    on the host where the bytes differ), its outcome novelty (`novelty_out`,
    `novelty_out_nearest`, `novelty_out_note`; `rederived_known`: the known solution whose output
    it re-derives) and how its N came about (`novelty_status`, one of NOVELTY_STATUSES). N not
    computed is None, never 0 (an invalid submission's N is the paper's 0).

    The run's lock (innolab.runlock) is held while it is scored: a run executing elsewhere is
    scored after it ends (or, with wait False, refused), and two scorers never write twice.

    Args:
        run_dir: the run folder.
        novelty_backend: "default" (the DAGENT judge where a judge endpoint is configured, else the
            structural `ast` back end), a back end's name, or None to leave N uncomputed (recorded
            as None with the reason).
        settings: the LLM settings of the llm back end (default: the run's own model settings).
        table: the CSV the score's row is appended to (default: the run folder's scores table).
        source_time_limit_s: the time limit of each program's re-run (None: the run's exec time
            limit, innolab.gym.reproduce.exec_time_limit).
        wait: wait for another executor of the run (False: raise innolab.runlock.RunBusy).

    Returns:
        The score's row (with `already_scored` true when the run was scored before: then nothing
        is written). G, ratio, beats_v_star and headroom_closed are against V* as of the day of
        scoring, recorded with that V*, the day (`v_star_as_of`) and the ledger's hash.

    Raises:
        ScoringError: not a run folder, a run without a trace, or a run that has not finished.
        innolab.runlock.RunBusy: another executor holds the run and wait is False.
    """
    folder = RunDir(Path(run_dir))
    if not folder.exists():
        raise ScoringError(f"{folder.root} is not a run folder (no {folder.config.name})")
    try:
        recorded = folder.read_score()
    except ValueError:  # being written (never torn: it is written whole): read it under the lock
        recorded = None
    if recorded is not None:  # read without the lock: a scored run is never written again
        return {**recorded, "already_scored": True}
    with RunLock(folder.root, wait=wait):
        return _score_run(folder, novelty_backend, settings, table, source_time_limit_s)


def preload(task: Task) -> None:
    """Read what scoring a run of the task reads of its known solutions, into this process's caches.

    Their code as a code back end compares it (its dead code removed), their outputs and their
    outcome descriptors are each read once per process (innolab.novelty): a process that scores
    runs of a task reads them for the first alone. A sweep's kernels are forked from a process
    that preloaded its tasks (innolab.forkserver), so that no run of it reads them. Nothing
    is written; what fails is left to the scoring that meets it.

    Args:
        task: The task.
    """
    for text in known_code(task).values():
        comparable(text, "ast")
    outputs = known_outputs(task)
    if outputs:
        outcome_novelty(task, next(iter(outputs.values())), True)


def _score_run(folder: RunDir, novelty_backend: str | None, settings: dict[str, Any] | None,
               table: Path | None, source_time_limit_s: float | None) -> dict[str, Any]:
    """`score_run` of a folder whose lock is held."""
    recorded = folder.read_score()
    if recorded is not None:
        return {**recorded, "already_scored": True}
    try:
        config = folder.read_config()
    except RunDirError as error:
        raise ScoringError(str(error)) from None
    try:
        trace = Trace.read(folder.root)
    except TraceError as error:
        raise ScoringError(str(error)) from None
    finished = trace.finished
    if finished is None:
        raise ScoringError(f"{folder.root}: the run has not finished (resume it first)")
    completed = _completed(folder, trace, config, table)
    if completed is not None:
        return completed
    task = get_task(config["task"])
    today = utc_today()
    backend = default_backend() if novelty_backend == "default" else novelty_backend
    assess = _Assessor(folder, task, _Novelty(folder, config, task, backend, settings),
                       source_time_limit_s)
    final = finished.final_submission
    assess.announce([e.file for e in trace.best_so_far(task.direction)], final)
    candidates = _candidates(trace, task, assess, today)
    if final:
        verdict, measured = assess(final, trace.source_of(final))
    else:
        verdict, measured = None, {**assess.measure(None, False),
                                   **dict.fromkeys((*SOURCE_FIELDS, *OUTCOME_FIELDS))}
    measured = dict(measured)
    card = measured.pop("card", None)
    valid = bool(verdict and verdict.valid)
    standing = against_frontier(task, valid, verdict.score if verdict else None, today,
                                submitted=verdict is not None)
    row: dict[str, Any] = {
        "run": folder.name, "agent": config.get("agent"), "task": task.id, "valid": valid,
        "score": verdict.score if verdict else None, "v_star": standing["v_star"],
        "v_star_as_of": standing["v_star_as_of"], "ledger_hash": task.ledger_hash,
        "direction": task.direction, "gain": standing["gain"], "ratio": standing["ratio"],
        "beats_v_star": standing["beats_v_star"],
        "headroom_closed": standing["headroom_closed"],
        "errors": verdict.errors if verdict else ["no submission"],
        "final_submission": final, "dev_score": finished.dev_score, **measured,
    }
    if card is not None:
        text = json.dumps({"summary": card.summary, "pseudocode": card.pseudocode}, indent=2)
        folder.method_card.write_text(text, encoding="utf-8")
    row["candidates"] = candidates
    # the event first, then score.json whole (what says "scored"), then the table's row: a kill
    # between them leaves an event that the next scoring completes from (`_completed`)
    writer = TraceWriter(folder.root, next_seq=(trace.events[-1].seq or 0) + 1)
    fields = {k: v for k, v in row.items() if k not in ROW_ONLY}
    writer.emit(Score.model_validate(json.loads(json.dumps(fields, default=str))))
    writer.close()
    return _record(folder, row, table)


ROW_ONLY = ("run", "agent", "task")  # the fields of score.json that its event leaves out


def _record(folder: RunDir, row: dict[str, Any], table: Path | None) -> dict[str, Any]:
    """Write score.json (atomically) and the row of the folder's scores table."""
    write_atomic(folder.score, (json.dumps(row, indent=2, default=str) + "\n").encode())
    flat = {k: v for k, v in row.items() if k not in ("errors", "distances", "candidates")}
    _append_locked(table or folder.scores_table, pd.DataFrame([flat]))
    return row


def _completed(folder: RunDir, trace: Trace, config: dict[str, Any],
               table: Path | None) -> dict[str, Any] | None:
    """A scoring a kill cut after its event: score.json and the table's row from the event."""
    event = trace.score
    if event is None:
        return None
    fields = {k: v for k, v in event.payload().items() if k not in ("v", "seq", "time", "type",
                                                                     "step")}
    row = {"run": folder.name, "agent": config.get("agent"), "task": config.get("task"),
           **fields}
    return {**_record(folder, row, table), "already_scored": True}


def _append_locked(table: Path, frame: pd.DataFrame) -> None:
    """Append rows to a CSV shared by concurrent runs (a sweep's workers).

    One writer at a time, one header. Rows are written in the header's column order; a row with
    a column the header lacks (a table begun before the column existed) rewrites the table once
    with the columns of both, the old rows empty in the new columns. A table that cannot be read
    (rows of several layouts, from before) is kept beside it under another name and started again.
    """
    with open(table, "a+", encoding="utf-8", newline="") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.fstat(handle.fileno()).st_size == 0:
                handle.write(frame.to_csv(index=False))
                return
            handle.seek(0)
            header = pd.read_csv(handle, nrows=0).columns.tolist()
            if set(frame.columns) <= set(header):
                handle.seek(0, os.SEEK_END)
                handle.write(frame.reindex(columns=header).to_csv(header=False, index=False))
                return
            handle.seek(0)
            try:
                both = pd.concat([pd.read_csv(handle), frame], ignore_index=True)
            except pd.errors.ParserError:  # rows of several layouts (written before one header)
                stamp = time.strftime("%Y%m%d-%H%M%S")
                kept = table.with_name(f"{table.stem}.unreadable-{stamp}.csv")
                shutil.copyfile(table, kept)
                warnings.warn(f"{table}: rows of more than one layout; kept as {kept.name}, "
                              "the table starts again", stacklevel=2)
                both = frame
            handle.seek(0)
            handle.truncate()
            handle.write(both.to_csv(index=False))
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def against_frontier(task: Task, valid: bool, score: float | None, day: datetime.date,
                     submitted: bool = True) -> dict[str, Any]:
    """A value read against the task's V* as of a day: V*, G, ratio, beats_v_star, headroom.

    G and ratio are `metrics.score_solution`'s (an invalid value: ratio −1, G = −|V*|);
    `beats_v_star` is a gain beyond the task's tie margin as of that day (`Task.tie_margin`);
    `headroom_closed` is `Task.headroom_closed` with V* and the bound of that day.

    Args:
        task: The task.
        valid: Whether the value is valid.
        score: The value V (None when invalid).
        day: The date of V*.
        submitted: False for a run without a submission: its gain is None, as recorded.

    Returns:
        v_star, v_star_as_of (ISO date), gain, ratio, beats_v_star and headroom_closed (None
        where NaN: no bound, no headroom, or an invalid value).

    Raises:
        ScoringError: No record of the task is dated on or before `day`.
    """
    try:
        v_star = task.v_star_as_of(day)
        margin = task.tie_margin(day)
    except TaskError as error:
        raise ScoringError(str(error)) from None
    solution = score_solution(valid, score if valid else None, v_star.value, task.direction)
    headroom = task.headroom_closed(solution.v, day) if valid else math.nan
    return {
        "v_star": v_star.value, "v_star_as_of": v_star.as_of.isoformat(),
        "gain": solution.gain if submitted else None, "ratio": solution.ratio,
        "beats_v_star": bool(valid and solution.gain > margin),
        "headroom_closed": None if math.isnan(headroom) else headroom,
    }


def run_started_on(trace: Trace) -> datetime.date | None:
    """The day a run started: the UTC date of its `run_started` event.

    Args:
        trace: The run's trace.

    Returns:
        The date, or None when the trace has no timed `run_started` event.
    """
    started = trace.started
    if started is None or started.time is None:
        return None
    return datetime.datetime.fromtimestamp(started.time, tz=datetime.UTC).date()


def resolve_as_of(as_of: AsOf, trace: Trace) -> datetime.date | None:
    """The date a run's score is read as of.

    Args:
        as_of: "run" (the day the run started, `run_started_on`), "today", an ISO date
            (YYYY-MM-DD; YYYY-MM and YYYY stand for their first day), a date, or None.
        trace: The run's trace (read for "run").

    Returns:
        The date, or None for None (as recorded).

    Raises:
        ScoringError: Not one of these, or "run" for a trace without a `run_started` time.
    """
    if as_of is None:
        return None
    if isinstance(as_of, str) and as_of.strip().lower() == "run":
        day = run_started_on(trace)
        if day is None:
            raise ScoringError("as_of 'run': the trace has no run_started event with a time")
        return day
    try:
        return as_date(as_of)
    except FrontierError as error:
        raise ScoringError(f"{error}; as_of is {AS_OF_CHOICES}") from None


def reread(score: dict[str, Any], task: Task, day: datetime.date) -> dict[str, Any]:
    """A recorded score read against V* as of a day; the record itself is not changed.

    Args:
        score: The run's score.json, as read.
        task: The run's task.
        day: The date of V*.

    Returns:
        The score with `READ_AS_OF` recomputed for the run and for each improving candidate,
        `v_star_entry` the ledger entry that holds that V*, `ledger_hash` the task's ledger now,
        and `recorded`: the recorded V*, its date and the ledger's hash then.

    Raises:
        ScoringError: No record of the task is dated on or before `day`.
    """
    submitted = score.get("gain") is not None or bool(score.get("valid"))
    standing = against_frontier(task, bool(score.get("valid")), score.get("score"), day,
                                submitted=submitted)
    candidates = []
    for candidate in score.get("candidates", []):
        again = against_frontier(task, bool(candidate.get("valid")), candidate.get("score"), day)
        candidates.append({**candidate, **{k: again[k] for k in CANDIDATE_AS_OF}})
    recorded = {k: score.get(k) for k in ("v_star", "v_star_as_of", "ledger_hash")}
    holder = task.v_star_as_of(day).entry.as_json()
    return {**score, **standing, "v_star_entry": holder, "ledger_hash": task.ledger_hash,
            "candidates": candidates, "recorded": recorded}


def read_score(run_dir: str | Path, as_of: AsOf = None) -> dict[str, Any]:
    """A scored run's score, as recorded or read against V* as of a date (nothing is written).

    Args:
        run_dir: The run folder.
        as_of: "run", "today", an ISO date, a date, or None (as recorded); see `resolve_as_of`.

    Returns:
        The score (see `reread`; as recorded: score.json as it is).

    Raises:
        ScoringError: Not a run folder, a run not scored, a task that has no ledger (another
            benchmark's), or a date that is none of the above.
    """
    folder = RunDir(Path(run_dir))
    if not folder.exists():
        raise ScoringError(f"{folder.root} is not a run folder (no config.json)")
    score = folder.read_score()
    if score is None:
        raise ScoringError(f"{folder.root}: the run is not scored (innolab score RUN_DIR)")
    day = resolve_as_of(as_of, Trace.read(folder.root)) if as_of is not None else None
    if day is None:
        return score
    task_ref = folder.read_config()["task"]
    if scheme_of(task_ref) is not None:
        raise ScoringError(f"{task_ref}: a task of another benchmark has no ledger to read "
                           "as of a date")
    try:
        task = get_task(task_ref)
    except TaskError as error:
        raise ScoringError(str(error)) from None
    return reread(score, task, day)


def say(line: str) -> None:
    """One line of scoring's progress, on stderr as it happens (above any progress bar).

    Args:
        line: What scoring does or found.
    """
    import sys

    from tqdm import tqdm

    tqdm.write(f"scoring {line}", file=sys.stderr)


def _shown(value: float | None) -> str:
    return "not computed" if value is None else f"{value:.3g}"


class _Assessor:
    """Hidden-evaluator verdict, N, outcome novelty and the program's re-run of one submission.

    Each computed once per file within a scoring (the final submission is usually also the last
    improving candidate).
    """

    def __init__(self, folder: RunDir, task, measure: _Novelty,
                 time_limit_s: float | None = None) -> None:
        self.folder, self.task, self.measure = folder, task, measure
        self.time_limit_s = time_limit_s
        self._done: dict[str, tuple[Any, dict[str, Any]]] = {}

    def announce(self, candidates: list[str], final: str | None) -> None:
        """Say what scoring will assess, and set the count its stage lines are numbered by.

        Args:
            candidates: The improving candidates' files.
            final: The final submission's file (None: none).
        """
        files = list(dict.fromkeys([*candidates, *([final] if final else [])]))
        self._total = len(files)
        axes = "N by " + (self.measure.backend or "no back end (not computed)")
        def count(n: int, what: str) -> str:
            return f"{n} {what}{'s' * (n != 1)}"

        among = "among them" if final in candidates else "beside them"
        say(f"{self.folder.name}: {count(len(files), 'submission')} to assess "
            f"({count(len(candidates), 'improving candidate')}, the final submission {among}): "
            f"the hidden evaluator, the re-run check of each one's program, {axes}, N_out "
            "(outcome)" if files else f"{self.folder.name}: no submission to assess")

    def __call__(self, file: str, source_file: str | None) -> tuple[Any, dict[str, Any]]:
        if file not in self._done:
            where = f"[{len(self._done) + 1}/{getattr(self, '_total', '?')}] {file}"
            verdict = evaluate(self.task, self.folder.resolve(file))
            path = self.folder.resolve(source_file) if source_file else None
            source = path.read_text(encoding="utf-8") if path and path.is_file() else ""
            found = f"valid, V {verdict.score:.10g}" if verdict.valid else "invalid"
            say(f"{where}: {found}; re-run check (its program alone, in a fresh sandbox) ...")
            check = check_source(self.folder.root, file, source_file, self.time_limit_s,
                                 same_outcome=self.same_outcome(verdict))
            kept, rule = self.kept_code(source, source_file, check)
            say(f"{where}: re-run {check.status}"
                + (f" ({check.seconds:.1f} s)" if check.seconds else "")
                + f"; N (method, {self.measure.backend or 'none'}) ...")
            measured = self.measure(kept, verdict.valid, file)
            if measured["novelty_status"] == "ok" and verdict.valid and \
                    check.status != "reproduces":
                measured["novelty_status"] = "not_reproducing"
            say(f"{where}: N {_shown(measured['novelty'])} ({measured['novelty_status']}); "
                "N_out (outcome) ...")
            measured.update(source_fields(check), **rule, **self.outcome(file, verdict.valid))
            say(f"{where}: N_out {_shown(measured['novelty_out'])}"
                + (f", re-derives {measured['rederived_known']}"
                   if measured.get("rederived_known") else ""))
            self._done[file] = (verdict, measured)
        return self._done[file]

    def kept_code(self, source: str, source_file: str | None,
                  check: SourceCheck) -> tuple[str, dict[str, Any]]:
        """The program as novelty compares it, and which rule kept it.

        What ran in the re-run, where its line coverage can be trusted (`keep_executed`; the
        static rule then applies on top, in `comparable`); else the static rule alone, with why.

        Args:
            source: The stored program's text.
            source_file: Its run-relative file (its program's data beside it).
            check: The re-run (innolab.gym.reproduce.check_source), with its coverage.

        Returns:
            The text, and `novelty_code` ("executed" or "static") with `novelty_code_note`.
        """
        note = f"coverage {check.coverage_note}"
        if check.executed is not None and check.traced_program is not None:
            try:
                traced = Program.from_dict(check.traced_program)
            except ProgramError as error:
                note = f"coverage not mapped onto the program: {error}"
            else:  # the program as it ran traced: its statements one a line
                kept = keep_executed(traced.text(), traced.text_lines(check.executed))
                if kept is not None:
                    return kept, {"novelty_code": "executed",
                                  "novelty_code_note": DEAD_CODE_RULES["executed"]}
                note = "coverage not applied: nothing of the program ran under the tracer"
        return source, {"novelty_code": "static",
                        "novelty_code_note": f"{DEAD_CODE_RULES['static']}; {note}"[:500]}

    def same_outcome(self, verdict: Evaluation) -> SameOutcome:
        """Whether a reproduced file scores as the recorded one did (the hidden evaluator, here).

        Identical means the same validity and score (and, both invalid, the same errors).

        Args:
            verdict: The hidden evaluator's verdict on the recorded file.

        Returns:
            The comparison innolab.gym.reproduce.check_source calls with (recorded, reproduced).
        """
        def compare(recorded: Path, reproduced: Path) -> tuple[bool, str]:
            again = evaluate(self.task, reproduced)
            same = again.valid == verdict.valid and again.score == verdict.score and \
                (verdict.valid or again.errors == verdict.errors)
            return same, f"recorded {_verdict(verdict)}, reproduced {_verdict(again)}"
        return compare

    def outcome(self, file: str, valid: bool) -> dict[str, Any]:
        """Outcome novelty of a submission (innolab.novelty.outcome).

        Args:
            file: The submission's run-relative file.
            valid: Whether the hidden evaluator found it valid.

        Returns:
            OUTCOME_FIELDS: N_out (None where not computed, the note says why), the nearest
            known solution's output and the known solution it re-derives (None: none).
        """
        try:
            result = outcome_novelty(self.task, self.folder.resolve(file), valid)
        except (ValueError, OSError) as error:
            return {"novelty_out": None, "novelty_out_nearest": None, "rederived_known": None,
                    "novelty_out_note": f"not computed: {error}"[:500]}
        value = float(result.novelty_out)
        return {"novelty_out": None if math.isnan(value) else value,
                "novelty_out_nearest": result.nearest, "rederived_known": result.rederived_known,
                "novelty_out_note": result.note or None}


def _verdict(verdict: Evaluation) -> str:
    return f"score {verdict.score!r}" if verdict.valid else f"invalid ({'; '.join(verdict.errors)})"


def source_fields(check: SourceCheck) -> dict[str, Any]:
    """A source check as the fields a score records (SOURCE_FIELDS).

    Args:
        check: The check (innolab.gym.reproduce.check_source).

    Returns:
        source_status, source_seconds, source_detail, source_time_limit_s and
        source_executed (the lines of each file that ran; None without a trusted coverage).
    """
    return {"source_status": check.status, "source_seconds": check.seconds,
            "source_detail": check.detail, "source_time_limit_s": check.time_limit_s,
            "source_executed": check.executed}


def novelty_status(record: dict[str, Any]) -> str | None:
    """How a recorded N came about (NOVELTY_STATUSES), also for scores recorded before it was said.

    A record without `novelty_status` (an older score.json or candidate) is read from its N and
    note: N present is "ok" ("not_reproducing" where its program did not reproduce and it is
    valid); N absent is "no_code" or "judge_failed" where the note says so, else "not_computed".

    Args:
        record: A score.json or one of its candidates (None: not scored).

    Returns:
        The status, or None for no record.
    """
    if not record:
        return None
    if record.get("novelty_status") is not None:
        return str(record["novelty_status"])
    note = str(record.get("novelty_note") or "")
    if record.get("novelty") is None:
        if "no code" in note:
            return "no_code"
        if "failed" in note:
            return "judge_failed"
        return "not_computed"
    reproduced = record.get("source_status") in (None, "reproduces")
    return "ok" if reproduced or not record.get("valid") else "not_reproducing"


def _candidates(trace: Trace, task, assess: _Assessor,
                day: datetime.date) -> list[dict[str, Any]]:
    """Every improving candidate (a submission whose pristine dev score beats every earlier one).

    Scored by the hidden evaluator against V* as of `day` and given its N, with its time since the
    run started (N over time; distances cached).
    """
    out = []
    for event in trace.best_so_far(task.direction):
        verdict, measured = assess(event.file, event.source)
        standing = against_frontier(task, verdict.valid, verdict.score, day)
        out.append({"file": event.file, "step": event.step,
                    "t_s": round(trace.since_start(event), 3),
                    "dev_score": event.dev_score, "valid": verdict.valid, "score": verdict.score,
                    "gain": standing["gain"], "ratio": standing["ratio"],
                    "beats_v_star": standing["beats_v_star"],
                    "headroom_closed": standing["headroom_closed"],
                    "novelty": measured["novelty"], "nearest_known": measured["nearest_known"],
                    "novelty_vs_prior": assess.measure.against_prior(event.file, verdict.valid),
                    "novelty_backend": measured["novelty_backend"],
                    **{k: measured[k] for k in ("novelty_status", *OUTCOME_FIELDS,
                                                *SOURCE_FIELDS)}})
    return out


class _Novelty:
    """N of a program's code with one back end.

    Code with code, or (llm) card with card by one extractor. The known solutions' texts are
    prepared once per run, whatever the number of candidates.
    """

    def __init__(self, folder: RunDir, config: dict[str, Any], task, backend: str | None,
                 settings: dict[str, Any] | None) -> None:
        self.folder, self.task, self.backend = folder, task, backend
        run_settings = RunConfig.from_dict(config).as_dict()["llm"]
        both = run_settings is None and settings is None
        self.settings = None if both else {**(run_settings or {}), **(settings or {})}
        self._scorer: Scorer | None = None
        self._known: dict[str, str] | None = None
        self._prior_code = (config.get("prior_solution") or {}).get("code")
        self._texts: dict[str, str] = {}  # the compared text of each assessed submission, by file

    def none(self, why: str, status: str = "not_computed") -> dict[str, Any]:
        return {"novelty": None, "novelty_backend": self.backend, "nearest_known": None,
                "distances": {}, "novelty_note": f"not computed: {why}"[:500],
                "novelty_status": status}

    def scorer(self) -> Scorer:
        if self._scorer is None:
            options = {"settings": self.settings, "cache_path": str(self.folder.llm_cache)} \
                if compares_cards(self.backend or "") else {}
            backend = make_backend(self.backend or "", **options)
            self._scorer = Scorer(backend, self.folder.distance_cache)
        return self._scorer

    def known(self) -> dict[str, str]:
        if self._known is None:
            name = self.scorer().backend.name
            if compares_cards(name):
                cards = known_cards(self.task, self.settings, str(self.folder.llm_cache))
                self._known = {n: c.text() for n, c in cards.items()}
            else:
                code = known_code(self.task)
                self._known = {n: comparable(text, name) for n, text in code.items()}
        return self._known

    def against_prior(self, file: str, valid: bool) -> float | None:
        """N of an assessed submission against the run's prior solution alone.

        Fig. 5: how far the run moved from where it started; None without a prior, a back end or
        a compared text.
        """
        text = self._texts.get(file)
        if not self._prior_code or self.backend is None or text is None:
            return 0.0 if self._prior_code and not valid else None
        try:
            if compares_cards(self.backend):
                card = extract_card(self._prior_code, self.settings, str(self.folder.llm_cache))
                prior = card.text()
            else:
                prior = comparable(self._prior_code, self.scorer().backend.name)
            return novelty_against(text, valid, {"prior": prior}, self.scorer()).novelty
        except (LLMError, NoveltyError):
            return None

    def __call__(self, source: str | None, valid: bool, file: str | None = None) -> dict[str, Any]:
        if self.backend is None:
            return {**self.none("no back end asked for"), "novelty_backend": None}
        if not valid:
            return {"novelty": 0.0, "novelty_backend": self.backend, "nearest_known": None,
                    "distances": {}, "novelty_note": "invalid: N = C · min D = 0",
                    "novelty_status": "ok"}
        if not (source or "").strip():
            return self.none("no code was recorded with this submission", "no_code")
        card = None
        try:
            if compares_cards(self.backend):
                if self.settings is None:
                    return self.none("the llm back end needs model settings (the run has none)")
                card = extract_card(source or "", self.settings, str(self.folder.llm_cache))
                text = card.text()
            else:
                text = comparable(source or "", self.scorer().backend.name)
            result = novelty_against(text, valid, self.known(), self.scorer())
            if file is not None:
                self._texts[file] = text
        except (LLMError, NoveltyError) as error:
            return self.none(f"the back end failed ({error})", "judge_failed")
        return {"novelty": result.novelty, "novelty_backend": self.scorer().backend.name,
                "nearest_known": result.nearest, "distances": result.distances, "card": card,
                "novelty_status": "ok"}
