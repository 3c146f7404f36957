"""EXP-Bench results: the `*_eval_judge.json` files under a folder, aggregated per (agent, model).

Each metric comes with its denominator (the rules of reference §5; upstream has no aggregation
code).

* `n` counts every attempted task (one judge file each); `n_judged` those the judge answered in
  full and `n_judge_failed` those whose judge never returned valid keys: a file with a
  `judge_failure` reason, or a value still "Error parsing response" (upstream's record). A judge
  failure fails the checks it left unjudged (0 in D or I, not correct in C; a failed monitor fails
  M), so failures stay in every denominator.
* A task fails the monitor (M) when a monitor flag (paper access, git operations, faked data) is
  true or a monitor value is still "Error parsing response"; it then counts 0 in D, I and C and
  leaves the execution subset.
* D, I, C, M and All are over all attempted tasks (`n`); E, I_E and All_E over the execution
  subset (`n_exec`): tasks with an `execution_success` key whose monitor passed.
* D = mean design_score, I = mean setup_score, C = share of "correct" (`conclusion_score` may be
  the integer 0); I_E, All and All_E are per-task binary conjunctions: setup 100 and executed;
  design 100, setup 100 and correct; that and executed. Values in percent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from innolab.analysis.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, Rng, bootstrap_ci

MONITOR_FLAGS = ("paper_access", "git_operations", "faked_or_nonexperimental_data")
PARSE_ERROR = "Error parsing response"
JUDGE_FAILURE = "judge_failure"  # innolab's key for the reason a task's judge failed
REPORT_KEYS = ["agent", "model", "n", "n_judged", "n_judge_failed", "n_exec", "M", "D", "I", "C",
               "E", "I_E", "All", "All_E"]
JUDGE_SUFFIX = "_eval_judge.json"


class ReportError(ValueError):
    """A judge file that cannot be read; the message names the file and the field."""


def _score(value: Any, where: str, key: str) -> float:
    if value == PARSE_ERROR:  # upstream's record of a judge that never answered: the check failed
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ReportError(f"{where}: {key} must be a number from 0 to 100, got {value!r}")
    return float(value)


def monitor_failed(result: dict[str, Any]) -> bool:
    """Upstream's gate.

    A monitor flag is true, or a monitor value is still "Error parsing response".
    """
    keys = (*MONITOR_FLAGS, "setup_monitor_comprehensive_reason")
    values = [result[k] for k in keys if k in result]
    return any(result.get(k) is True for k in MONITOR_FLAGS) or PARSE_ERROR in values


def judge_failed(result: dict[str, Any], where: str = "judge file") -> bool:
    """Whether the task's judge never returned valid keys.

    A `judge_failure` reason, or a value still "Error parsing response".

    Raises:
        ReportError: a `judge_failure` that is not a non-empty text.
    """
    reason = result.get(JUDGE_FAILURE)
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        raise ReportError(f"{where}: {JUDGE_FAILURE} must be a non-empty text (why the judge "
                          f"failed), got {reason!r}")
    return reason is not None or PARSE_ERROR in result.values()


def task_row(result: dict[str, Any], where: str = "judge file") -> dict[str, Any]:
    """One attempted task as per-task values.

    Args:
        result: the task's judge file.
        where: the file, for errors.

    Returns:
        Judged in full, monitor pass, D, I (0-100), C, executed (None: not checked).

    Raises:
        ReportError: a score, conclusion or execution value out of its rule.
    """
    failed_monitor = monitor_failed(result)
    if failed_monitor:
        design = setup = 0.0
        correct = False
    else:
        design = _score(result.get("design_score"), where, "design_score")
        setup = _score(result.get("setup_score"), where, "setup_score")
        conclusion = result.get("conclusion_score")
        if conclusion not in ("correct", "incorrect", 0, PARSE_ERROR):
            raise ReportError(f"{where}: conclusion_score must be 'correct', 'incorrect' or 0, got "
                              f"{conclusion!r}")
        correct = conclusion == "correct"
    executed = None
    if "execution_success" in result and not failed_monitor:
        if not isinstance(result["execution_success"], bool):
            raise ReportError(f"{where}: execution_success must be true or false")
        executed = result["execution_success"]
    return {"judged": not judge_failed(result, where), "M": not failed_monitor, "D": design,
            "I": setup, "C": correct, "executed": executed}


def judge_files(folder: Path) -> list[tuple[str, str, str, Path]]:
    """(agent, model, paper, file) for every judge file.

    In the upstream layout <conf>/<paper>/<agent>/<model>/ (paper: `<conf>/<paper id>`, "" where DIR
    starts below the paper level).

    Raises:
        ReportError: a judge file outside the layout.
    """
    found = []
    for path in sorted(Path(folder).rglob(f"*{JUDGE_SUFFIX}")):
        parts = path.relative_to(folder).parts
        if len(parts) < 3:
            raise ReportError(f"{path}: expected <conference>/<paper>/<agent>/<model>/<file> under "
                              f"{folder}")
        paper = f"{parts[-5]}/{parts[-4]}" if len(parts) >= 5 else ""
        found.append((parts[-3], parts[-2], paper, path))
    return found


def task_table(folder: str | Path) -> pd.DataFrame:
    """One row per attempted task (judge file).

    Agent, model, paper, task file and its per-task values.

    Raises:
        ReportError: a judge file that is not a JSON object, or breaks a rule of `task_row`.
    """
    rows = []
    for agent, model, paper, path in judge_files(Path(folder)):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ReportError(f"{path}: not valid JSON: {error}") from None
        if not isinstance(result, dict):
            raise ReportError(f"{path}: a judge file is a JSON object")
        rows.append({"agent": agent, "model": model, "paper": paper, "file": path.name,
                     **task_row(result, str(path))})
    return pd.DataFrame(rows, columns=["agent", "model", "paper", "file", "judged", "M", "D", "I",
                                       "C", "executed"])


def read_categories(path: str | Path) -> dict[str, str]:
    """A paper-to-category map read from a CSV file.

    The CSV has the columns `paper` and `category`; a paper is `<conference>/<paper id>` or the
    paper id alone. EXP-Bench's data carry no category, so the user supplies the map.

    Raises:
        ReportError: a column missing, or a row without a paper or a category.
    """
    table = pd.read_csv(path, dtype=str)
    missing = {"paper", "category"} - set(table.columns)
    if missing:
        raise ReportError(f"{path}: a category map needs the columns paper and category (missing "
                          f"{sorted(missing)})")
    if table["paper"].isna().any() or table["category"].isna().any():
        raise ReportError(f"{path}: every row needs a paper and a category")
    return dict(zip(table["paper"].str.strip(), table["category"].str.strip(), strict=True))


def with_categories(tasks: pd.DataFrame, categories: dict[str, str]) -> pd.DataFrame:
    """The task table with a `category` column.

    The category is "uncategorised" where the map names neither the paper's
    `<conference>/<paper id>` nor its id.
    """
    def category(paper: str) -> str:
        return categories.get(paper) or categories.get(paper.rpartition("/")[2]) or "uncategorised"

    return tasks.assign(category=tasks["paper"].map(category))


def aggregate(tasks: pd.DataFrame, by: tuple[str, ...] = ("agent", "model")) -> pd.DataFrame:
    """The report: one row per (agent, model) with REPORT_KEYS.

    Args:
        tasks: the task table (`task_table`).
        by: the grouping columns; a column besides agent and model (such as `category`) leads
            each row.

    Returns:
        Values in percent over the attempted tasks (`n`, judge failures included as failures) or
        the execution subset, NaN where a subset is empty.
    """
    rows = []
    extra = [c for c in by if c not in ("agent", "model")]
    for keys, part in tasks.groupby(list(by), sort=True):
        group = dict(zip(by, keys, strict=True))
        agent, model = group["agent"], group["model"]
        full = (part["D"] == 100) & (part["I"] == 100) & part["C"]
        checked = part[part["executed"].notna()]
        executed = checked["executed"].astype(bool)
        subset = len(checked)

        def share(mask: pd.Series, denominator: int) -> float:
            return 100.0 * float(mask.sum()) / denominator if denominator else float("nan")

        judged = int(part["judged"].astype(bool).sum())
        rows.append({**{c: group[c] for c in extra}, "agent": agent, "model": model,
                     "n": len(part), "n_judged": judged, "n_judge_failed": len(part) - judged,
                     "n_exec": subset, "M": share(part["M"].astype(bool), len(part)),
                     "D": float(part["D"].mean()), "I": float(part["I"].mean()),
                     "C": share(part["C"].astype(bool), len(part)), "E": share(executed, subset),
                     "I_E": share((checked["I"] == 100) & executed, subset),
                     "All": share(full, len(part)),
                     "All_E": share(full.loc[checked.index] & executed, subset)})
    return pd.DataFrame(rows, columns=[*extra, *REPORT_KEYS])


def report(folder: str | Path, categories: dict[str, str] | None = None) -> pd.DataFrame:
    """`innolab expbench report DIR`.

    Every judge file under DIR, aggregated per (agent, model), or per (category, agent, model) with
    a paper-to-category map.

    Raises:
        ReportError: no judge file under DIR, or one that breaks a rule.
    """
    tasks = task_table(folder)
    if tasks.empty:
        raise ReportError(f"{folder}: no *{JUDGE_SUFFIX} files")
    if categories is not None:
        return aggregate(with_categories(tasks, categories), by=("category", "agent", "model"))
    return aggregate(tasks)


def chain(tasks: pd.DataFrame) -> pd.DataFrame:
    """The conjunctive chain per (agent, model): M, M·C·D, M·C·D·I, M·C·D·I·E in percent.

    The paper's Fig. 6b: 20.6, 3.7, 0.4, 0.2. Each is a per-task binary conjunction, over the
    tasks that went to the execution check plus those the monitor failed (which upstream drops
    before it: without them M would be 100 by construction).
    """
    rows = []
    for (agent, model), part in tasks.groupby(["agent", "model"], sort=True):
        # monitor failures count as failing M
        subset = part[part["executed"].notna() | ~part["M"].astype(bool)]
        monitor = subset["M"].astype(bool)
        mcd = monitor & subset["C"].astype(bool) & (subset["D"] == 100)
        mcdi = mcd & (subset["I"] == 100)
        mcdie = mcdi & subset["executed"].fillna(False).astype(bool)
        size = len(subset)
        rows += [{"agent": agent, "model": model, "step": step, "n": size,
                  "percent": 100.0 * float(mask.sum()) / size if size else float("nan")}
                 for step, mask in (("M", monitor), ("M·C·D", mcd), ("M·C·D·I", mcdi),
                                    ("M·C·D·I·E", mcdie))]
    return pd.DataFrame(rows, columns=["agent", "model", "step", "n", "percent"])


def intervals(tasks: pd.DataFrame, *, confidence_level: float = DEFAULT_CONFIDENCE,
              n_resamples: int = DEFAULT_RESAMPLES, rng: Rng = 0) -> pd.DataFrame:
    """Percentile bootstrap intervals over tasks of D, I, C, M and All per (agent, model).

    And of E over the execution subset (settings as `innolab.analysis.bootstrap.bootstrap_ci` takes
    them). Below `MIN_UNITS` tasks the bounds are NaN and `note` says why.
    """
    rows = []
    for (agent, model), part in tasks.groupby(["agent", "model"], sort=True):
        full = ((part["D"] == 100) & (part["I"] == 100) & part["C"].astype(bool)).astype(float)
        full = full * 100
        columns = {"D": part["D"], "I": part["I"], "C": part["C"].astype(float) * 100,
                   "M": part["M"].astype(float) * 100, "All": full,
                   "E": part["executed"].dropna().astype(float) * 100}
        for metric, values in columns.items():
            interval = bootstrap_ci(values.to_numpy(dtype=float),
                                    confidence_level=confidence_level, n_resamples=n_resamples,
                                    rng=rng)
            rows.append({"agent": agent, "model": model, "metric": metric, "n": interval.n,
                         "mean": interval.mean, "ci_low": interval.ci_low,
                         "ci_high": interval.ci_high, "note": interval.note})
    return pd.DataFrame(rows, columns=["agent", "model", "metric", "n", "mean", "ci_low",
                                       "ci_high", "note"])
