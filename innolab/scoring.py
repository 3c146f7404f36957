"""Scoring a finished run, once, outside the gym: V, G, ratio from the hidden evaluator and N from novelty.

The gym names the run's final submission (the best by the pristine dev score); this module is the only place
that runs the hidden evaluator on it and computes N against the task's known solutions. The result is written
once: `score.json` in the run folder, one `score` event in the trace and one row of the folder's results table.
Scoring a run that is already scored returns the recorded score and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from innolab.llm.errors import LLMError
from innolab.rundir import RunDir, RunDirError
from innolab.tasks.evaluation import evaluate
from innolab.tasks.registry import get_task
from innolab.traces import TraceWriter, read_events


class ScoringError(RuntimeError):
    """A run that cannot be scored (not finished, not a run folder); the message says why."""


def score_run(run_dir: str | Path, novelty_backend: str | None = "tfidf", settings: dict[str, Any] | None = None,
              table: Path | None = None) -> dict[str, Any]:
    """V, G, ratio and (with a back end) N of a finished run; written once (see the module's docstring).

    `novelty_backend=None` leaves N uncomputed (recorded as None with the reason); `settings` are the LLM
    settings for the method card and the llm back end (default: the run's own model settings).
    """
    folder = RunDir(Path(run_dir))
    recorded = folder.read_score()
    if recorded is not None:
        return {**recorded, "already_scored": True}
    try:
        config = folder.read_config()
    except RunDirError as error:
        raise ScoringError(str(error)) from None
    events = read_events(folder.root)
    finished = next((e for e in reversed(events) if e["type"] == "run_finished"), None)
    if finished is None:
        raise ScoringError(f"{folder.root}: the run has not finished (resume it first)")
    task = get_task(config["task"])
    submission = folder.final_submission if finished.get("final_submission") else None
    verdict = evaluate(task, submission) if submission is not None and submission.is_file() else None
    valid = bool(verdict and verdict.valid)
    row: dict[str, Any] = {
        "run": folder.name, "agent": config.get("agent"), "task": task.id, "valid": valid,
        "score": verdict.score if verdict else None, "v_star": task.v_star, "direction": task.direction,
        "gain": verdict.gain if verdict else None, "ratio": verdict.ratio if verdict else -1.0,
        "beats_v_star": bool(verdict and verdict.beats_v_star),
        "errors": verdict.errors if verdict else ["no submission"],
        "final_submission": finished.get("final_submission"), "dev_score": finished.get("dev_score"),
    }
    row.update(_novelty(folder, config, task, valid, novelty_backend, settings))
    folder.score.write_text(json.dumps(row, indent=2, default=str) + "\n", encoding="utf-8")
    writer = TraceWriter(folder.root, next_seq=events[-1]["seq"] + 1)
    writer.emit("score", step=None, **{k: v for k, v in row.items() if k not in ("run", "agent", "task")})
    writer.close()
    table = table or folder.scores_table
    flat = {k: v for k, v in row.items() if k not in ("errors", "distances")}
    pd.DataFrame([flat]).to_csv(table, mode="a", header=not table.exists(), index=False)
    return row


def _novelty(folder: RunDir, config: dict[str, Any], task, valid: bool, backend: str | None,
             settings: dict[str, Any] | None) -> dict[str, Any]:
    """N = C · min D against the task's known solutions, from the method card of the run's code."""
    if backend is None:
        return {"novelty": None, "novelty_backend": None, "nearest_known": None, "distances": {},
                "novelty_note": "not computed (no back end asked for)"}
    from innolab.novelty.backends import Scorer, make_backend
    from innolab.novelty.cards import extract_card, run_code
    from innolab.novelty.scoring import novelty

    run_settings = config.get("policy_args", {}).get("settings")
    if run_settings is None and settings is None:
        return {"novelty": None, "novelty_backend": None, "nearest_known": None, "distances": {},
                "novelty_note": "not computed: the run's policy has no model to extract a method card with"}
    card_settings = {**(run_settings or {}), **(settings or {})}
    code = run_code(folder)
    try:
        card = extract_card(code or "(no code)", card_settings, str(folder.llm_cache))
    except LLMError as error:
        return {"novelty": None, "novelty_backend": None, "nearest_known": None, "distances": {},
                "novelty_note": f"not computed: the model extracting the method card failed ({error})"[:500]}
    folder.method_card.write_text(json.dumps({"summary": card.summary, "pseudocode": card.pseudocode}, indent=2),
                                  encoding="utf-8")
    options = {"settings": card_settings, "cache_path": str(folder.llm_cache)} if backend == "llm" else {}
    scorer = Scorer(make_backend(backend, **options), folder.distance_cache)
    result = novelty(card, valid, task, scorer)
    return {"novelty": result.novelty, "novelty_backend": scorer.backend.name, "nearest_known": result.nearest,
            "distances": result.distances}
