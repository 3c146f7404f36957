"""Scoring a finished run once, outside the gym: V, G, ratio (hidden evaluator) and N (novelty).

The gym names the run's final submission (the best by the pristine dev score); this module is the
only place that runs the hidden evaluator on it and computes N against the task's known solutions.
The result is written once: `score.json` in the run folder, one `score` event in the trace and one
row of the folder's results table.
Scoring a run that is already scored returns the recorded score and writes nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from innolab.gym.policy import RunConfig
from innolab.llm.errors import LLMError
from innolab.metrics import FAILED_RATIO
from innolab.novelty.backends import NoveltyError, Scorer
from innolab.novelty.cards import extract_card
from innolab.novelty.registry import make_backend
from innolab.novelty.scoring import (
    comparable,
    compares_cards,
    default_backend,
    known_cards,
    known_code,
    novelty_against,
)
from innolab.rundir import RunDir, RunDirError
from innolab.tasks.evaluation import evaluate
from innolab.tasks.registry import get_task
from innolab.traces import Score, Trace, TraceWriter


class ScoringError(RuntimeError):
    """A run that cannot be scored (not finished, not a run folder); the message says why."""


def score_run(run_dir: str | Path, novelty_backend: str | None = "default",
              settings: dict[str, Any] | None = None, table: Path | None = None) -> dict[str, Any]:
    """V, G, ratio and (with a back end) N of a finished run and of every improving candidate.

    Written once.

    Args:
        run_dir: the run folder.
        novelty_backend: "default" (the DAGENT judge where a judge endpoint is configured, else the
            structural `ast` back end), a back end's name, or None to leave N uncomputed (recorded
            as None with the reason).
        settings: the LLM settings of the llm back end (default: the run's own model settings).
        table: the CSV the score's row is appended to (default: the run folder's scores table).

    Returns:
        The score's row (with `already_scored` true when the run was scored before: then nothing
        is written).

    Raises:
        ScoringError: not a run folder, or a run that has not finished.
    """
    folder = RunDir(Path(run_dir))
    recorded = folder.read_score()
    if recorded is not None:
        return {**recorded, "already_scored": True}
    try:
        config = folder.read_config()
    except RunDirError as error:
        raise ScoringError(str(error)) from None
    trace = Trace.read(folder.root)
    finished = trace.finished
    if finished is None:
        raise ScoringError(f"{folder.root}: the run has not finished (resume it first)")
    task = get_task(config["task"])
    backend = default_backend() if novelty_backend == "default" else novelty_backend
    assess = _Assessor(folder, task, _Novelty(folder, config, task, backend, settings))
    candidates = _candidates(trace, task, assess)
    final = finished.final_submission
    if final:
        verdict, measured = assess(final, trace.source_of(final))
    else:
        verdict, measured = None, assess.measure(None, False)
    measured = dict(measured)
    card = measured.pop("card", None)
    valid = bool(verdict and verdict.valid)
    row: dict[str, Any] = {
        "run": folder.name, "agent": config.get("agent"), "task": task.id, "valid": valid,
        "score": verdict.score if verdict else None, "v_star": task.v_star,
        "direction": task.direction, "gain": verdict.gain if verdict else None,
        "ratio": verdict.ratio if verdict else FAILED_RATIO,
        "beats_v_star": bool(verdict and verdict.beats_v_star),
        "errors": verdict.errors if verdict else ["no submission"],
        "final_submission": final, "dev_score": finished.dev_score, **measured,
    }
    if card is not None:
        text = json.dumps({"summary": card.summary, "pseudocode": card.pseudocode}, indent=2)
        folder.method_card.write_text(text, encoding="utf-8")
    row["candidates"] = candidates
    folder.score.write_text(json.dumps(row, indent=2, default=str) + "\n", encoding="utf-8")
    writer = TraceWriter(folder.root, next_seq=(trace.events[-1].seq or 0) + 1)
    fields = {k: v for k, v in row.items() if k not in ("run", "agent", "task")}
    writer.emit(Score.model_validate(json.loads(json.dumps(fields, default=str))))
    writer.close()
    table = table or folder.scores_table
    flat = {k: v for k, v in row.items() if k not in ("errors", "distances", "candidates")}
    _append_locked(table, pd.DataFrame([flat]))
    return row


def _append_locked(table: Path, frame: pd.DataFrame) -> None:
    """Append rows to a CSV shared by concurrent runs (a sweep's workers).

    One writer at a time, one header.
    """
    with open(table, "a", encoding="utf-8", newline="") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.write(frame.to_csv(header=os.fstat(handle.fileno()).st_size == 0, index=False))
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class _Assessor:
    """Hidden-evaluator verdict and N of one submission file.

    Each computed once (the final submission is usually also the last improving candidate).
    """

    def __init__(self, folder: RunDir, task, measure: _Novelty) -> None:
        self.folder, self.task, self.measure = folder, task, measure
        self._done: dict[str, tuple[Any, dict[str, Any]]] = {}

    def __call__(self, file: str, source_file: str | None) -> tuple[Any, dict[str, Any]]:
        if file not in self._done:
            verdict = evaluate(self.task, self.folder.resolve(file))
            path = self.folder.resolve(source_file) if source_file else None
            source = path.read_text(encoding="utf-8") if path and path.is_file() else ""
            self._done[file] = (verdict, self.measure(source, verdict.valid, file))
        return self._done[file]


def _candidates(trace: Trace, task, assess: _Assessor) -> list[dict[str, Any]]:
    """Every improving candidate (a submission whose pristine dev score beats every earlier one).

    Scored by the hidden evaluator and given its N, with its time since the run started (N over
    time; distances cached).
    """
    out = []
    for event in trace.best_so_far(task.direction):
        verdict, measured = assess(event.file, event.source)
        out.append({"file": event.file, "step": event.step,
                    "t_s": round(trace.since_start(event), 3),
                    "dev_score": event.dev_score, "valid": verdict.valid, "score": verdict.score,
                    "gain": verdict.gain, "ratio": verdict.ratio, "novelty": measured["novelty"],
                    "nearest_known": measured["nearest_known"],
                    "novelty_vs_prior": assess.measure.against_prior(event.file, verdict.valid)})
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

    def none(self, why: str) -> dict[str, Any]:
        return {"novelty": None, "novelty_backend": self.backend, "nearest_known": None,
                "distances": {}, "novelty_note": f"not computed: {why}"[:500]}

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
                    "distances": {}, "novelty_note": "invalid: N = C · min D = 0"}
        if not (source or "").strip():
            return self.none("no code was recorded with this submission")
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
            return self.none(f"the back end failed ({error})")
        return {"novelty": result.novelty, "novelty_backend": self.scorer().backend.name,
                "nearest_known": result.nearest, "distances": result.distances, "card": card}
