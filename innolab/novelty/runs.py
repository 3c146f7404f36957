"""Scoring a finished run: V, G, ratio (hidden evaluator) and N (method card vs known solutions), in the trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from innolab.gym.run import load_config
from innolab.novelty.backends import Scorer, make_backend
from innolab.novelty.cards import extract_card, run_code
from innolab.novelty.scoring import as_row, novelty
from innolab.tasks.evaluation import evaluate
from innolab.tasks.registry import get_task
from innolab.traces import TraceWriter, read_events

SCORES_TABLE = "scores.csv"


def score_run(run_dir: Path, backend: str = "tfidf", settings: dict[str, Any] | None = None,
              table: Path | None = None) -> dict[str, Any]:
    """Recompute V, G and ratio of the run's submission, extract its method card, compute N; append a score
    event to the trace and a row to the results table (results/runs/scores.csv by default)."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    task = get_task(config.task)
    events = read_events(run_dir)
    submission = run_dir / "submission" / "submission.json"
    verdict = evaluate(task, submission) if submission.is_file() else None
    valid = bool(verdict and verdict.valid)
    code = run_code(run_dir)
    card_settings = settings or {}
    card = extract_card(code or "(no code)", card_settings, str(run_dir / "llm_cache.sqlite"))
    (run_dir / "method_card.json").write_text(json.dumps({"summary": card.summary, "pseudocode": card.pseudocode},
                                                         indent=2), encoding="utf-8")
    options = {"settings": card_settings, "cache_path": str(run_dir / "llm_cache.sqlite")} if backend == "llm" else {}
    scorer = Scorer(make_backend(backend, **options), run_dir / "distances.sqlite")
    result = novelty(card, valid, task, scorer)
    row = {"run": run_dir.name, "agent": config.agent, "task": task.id, "valid": valid,
           "score": verdict.score if verdict else None, "v_star": task.v_star,
           "gain": verdict.gain if verdict else None, "ratio": verdict.ratio if verdict else -1.0,
           "backend": scorer.backend.name, **as_row(result)}
    writer = TraceWriter(run_dir, next_seq=events[-1]["seq"] + 1 if events else 0)
    writer.emit("score", step=None, **{k: v for k, v in row.items() if k not in ("run", "agent", "task")},
                errors=verdict.errors if verdict else ["no submission"], rescored=True)
    writer.close()
    table = table or run_dir.parent / SCORES_TABLE
    frame = pd.DataFrame([row])
    frame.to_csv(table, mode="a", header=not table.exists(), index=False)
    return row
