"""Prediction on hidden labels: one prediction per development and test id; a metric, exact rules.

A prediction task gives its data in a read-only folder beside the workspace (`../data`): training
and development series with labels, test series without. A submission predicts every
development and test id once: `{"predictions": [[id, value], ...]}` in any order. The sandbox's
validator scores the development predictions against the visible development labels (the dev
score the agent sees); the hidden evaluator, whose parameters alone hold the test labels, scores
the test predictions. Either way every row is checked: ids (each expected id once, no other),
types (a class label is a JSON integer in [0, classes); a score or value a finite number), NaN,
infinities and the row count (the file's size is capped before it is read).

Metrics (`METRICS`, each with its direction and what its values are): accuracy, macro-F1 (over
every label in the truth or the predictions, as scikit-learn's default) and ROC AUC (binary,
from scores; ties count half) maximised, RMSE minimised. The tie margin of a finite test set is
the metric's sampling error (`tie_margin`): a gain inside it is a tie.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .core import Invalid, Outcome, exact_integer, finite_number, only_keys, violations

# the two-sided 99 % quantile of the normal distribution: a tie margin of z·SE
Z_99 = 2.5758293035489004


def _accuracy(truth: np.ndarray, guess: np.ndarray) -> float:
    return float((truth == guess).mean())


def _macro_f1(truth: np.ndarray, guess: np.ndarray) -> float:
    """Macro-F1: the mean per-class F1 over every label in the truth or the predictions.

    As scikit-learn's default: a class predicted but absent from the truth counts, with F1 0.
    """
    scores = []
    for label in np.union1d(truth, guess):
        tp = int(((guess == label) & (truth == label)).sum())
        fp = int(((guess == label) & (truth != label)).sum())
        fn = int(((guess != label) & (truth == label)).sum())
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


def _roc_auc(truth: np.ndarray, score: np.ndarray) -> float:
    positive, negative = score[truth == 1], score[truth == 0]
    if not len(positive) or not len(negative):
        raise Invalid("roc_auc needs both classes among the labels")
    order = np.argsort(np.concatenate([positive, negative]), kind="stable")
    ranks = np.empty(len(order))
    values = np.concatenate([positive, negative])[order]
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and values[j + 1] == values[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u = ranks[:len(positive)].sum() - len(positive) * (len(positive) + 1) / 2
    return float(u / (len(positive) * len(negative)))


def _rmse(truth: np.ndarray, value: np.ndarray) -> float:
    return float(math.sqrt(float(np.mean((truth - value) ** 2))))


# name -> (function, direction, what a prediction is)
METRICS: dict[str, tuple[Any, str, str]] = {
    "accuracy": (_accuracy, "max", "label"),
    "macro_f1": (_macro_f1, "max", "label"),
    "roc_auc": (_roc_auc, "max", "score"),
    "rmse": (_rmse, "min", "value"),
}


def _rows(data: dict[str, Any], ids: list[str], kind: str, classes: int | None) -> dict[str, Any]:
    """Each expected id's predicted value, every rule checked and every violation listed."""
    only_keys(data, ("predictions",))
    rows = data["predictions"]
    if not isinstance(rows, list):
        raise Invalid(f"predictions must be a list of [id, value] rows, got {type(rows).__name__}")
    if len(rows) != len(ids):
        raise Invalid(f"predictions must have exactly {len(ids)} rows (one per development and "
                      f"test id), got {len(rows)}")
    expected = set(ids)
    found: dict[str, Any] = {}
    broken: list[str] = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != 2:
            broken.append(f"predictions[{i}] must be a row [id, value]")
            continue
        key, value = row
        if not isinstance(key, str):
            broken.append(f"predictions[{i}][0] must be an id (a string), got "
                          f"{type(key).__name__}")
            continue
        if key not in expected:
            broken.append(f"predictions[{i}] names an unknown id {key[:40]!r}")
            continue
        if key in found:
            broken.append(f"predictions[{i}] repeats the id {key!r}")
            continue
        try:
            if kind == "label":
                label = exact_integer(value, f"predictions[{i}][1]", 31)
                if not 0 <= label < int(classes or 0):
                    raise Invalid(f"predictions[{i}][1] = {label} is not a class in "
                                  f"[0, {classes})")
                found[key] = label
            else:
                found[key] = finite_number(value, f"predictions[{i}][1]")
        except Invalid as error:
            broken.append(str(error))
    missing = [k for k in ids if k not in found]
    if missing and not broken:
        broken.append(f"ids without a prediction: {missing[:5]}"
                      + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    violations("predictions", broken)
    return found


def predictions(data: dict[str, Any], dev_ids: list[str], test_ids: list[str],
                dev_labels: list[float], metric: str = "accuracy", classes: int | None = None,
                test_labels: list[float] | None = None) -> float:
    """Check a prediction file; score the metric on the test labels (hidden) or the dev labels.

    Args:
        data: The submission: {"predictions": [[id, value], ...]}, every id once.
        dev_ids: The development ids (their labels are visible).
        test_ids: The test ids (their labels are hidden).
        dev_labels: The development labels, in the order of dev_ids.
        metric: The metric, a key of METRICS.
        classes: The number of classes (labels are 0..classes-1) for label metrics.
        test_labels: The test labels, in the order of test_ids: given to the hidden evaluator
            only. Without them the development predictions are scored (the sandbox's validator).

    Returns:
        The metric on the test set (the dev set without test labels).

    Raises:
        Invalid: The submission breaks a rule (every violation listed), or the parameters are
            inconsistent (an error of the task's).
    """
    if metric not in METRICS:
        raise Invalid(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    function, _, kind = METRICS[metric]
    if len(dev_labels) != len(dev_ids) or (test_labels is not None
                                           and len(test_labels) != len(test_ids)):
        raise Invalid("the task's labels do not match its ids (an error of the task's)")
    found = _rows(data, [*dev_ids, *test_ids], kind, classes)
    ids, labels = (test_ids, test_labels) if test_labels is not None else (dev_ids, dev_labels)
    truth = np.array(labels, dtype=np.float64)
    guess = np.array([found[k] for k in ids], dtype=np.float64)
    return function(truth, guess)


def tie_margin(params: dict[str, Any], best: float) -> float:
    """The sampling error of the metric on the test set: z_99 · SE at the record (two-sided 99 %).

    The rule, per metric (n test items, p the record): accuracy and macro-F1, the binomial
    standard error sqrt(p(1 − p)/n) (macro-F1 approximated so); ROC AUC, Hanley and McNeil's
    (1982) standard error from the counts of each class; RMSE, p/sqrt(2n) (normal residuals). On
    1,000 test items at an accuracy of 98.8 % this is 2.576 × 0.34 points = 0.89 points.

    Args:
        params: The task's check parameters (with the hidden test labels).
        best: The record the margin is taken at.

    Returns:
        The margin, in the metric's units; 0 without test labels.
    """
    labels = params.get("test_labels")
    if not labels:
        return 0.0
    n = len(labels)
    metric = params.get("metric", "accuracy")
    if metric in ("accuracy", "macro_f1"):
        p = min(max(best, 0.0), 1.0)
        return Z_99 * math.sqrt(p * (1 - p) / n)
    if metric == "roc_auc":
        a = min(max(best, 0.0), 1.0)
        n1 = sum(1 for v in labels if v == 1)
        n2 = n - n1
        q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
        variance = (a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n2 - 1) * (q2 - a * a)) / (n1 * n2)
        return Z_99 * math.sqrt(max(variance, 0.0))
    return Z_99 * abs(best) / math.sqrt(2 * n)


TIE_MARGINS = {"predictions": tie_margin}

# ---------------------------------------------------------------------------- outcome descriptors

PREDICTION_SCALE = (
    "predictions: the test predictions in the order of the test ids; for labels 100 × the share "
    "of test items two submissions label differently, for scores 100 × (1 − Spearman's rank "
    "correlation)/2, for values 100 × the mean absolute difference over the mean absolute "
    "deviation of the two (capped): 0 the same predictions"
)


def _describe(data: dict[str, Any], params: dict[str, Any]) -> np.ndarray:
    metric = params.get("metric", "accuracy")
    if metric not in METRICS:
        raise Invalid(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    kind = METRICS[metric][2]
    found = _rows(data, [*params["dev_ids"], *params["test_ids"]], kind, params.get("classes"))
    values = np.array([found[k] for k in params["test_ids"]], dtype=np.float64)
    return np.concatenate([[{"label": 0.0, "score": 1.0, "value": 2.0}[kind]], values])


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    kind, x, y = a[0], a[1:], b[1:]
    if len(x) != len(y) or kind != b[0]:
        raise Invalid("predictions of different tasks cannot be compared")
    if kind == 0.0:
        return float(100 * (x != y).mean())
    if kind == 1.0:
        rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
        rho = np.corrcoef(rx, ry)[0, 1] if rx.std() and ry.std() else 1.0
        return float(100 * (1 - rho) / 2)
    spread = (np.abs(x - x.mean()).mean() + np.abs(y - y.mean()).mean()) / 2
    return float(min(100.0, 100 * np.abs(x - y).mean() / spread)) if spread else 0.0


OUTCOMES = {"predictions": Outcome(_describe, _distance, PREDICTION_SCALE)}

# ------------------------------------------------------------------------------- hostile inputs

CHECKS = ("predictions",)


def _hostile(params: dict[str, Any]) -> dict[str, str]:
    ids = [*params["dev_ids"], *params["test_ids"]]
    metric = params.get("metric", "accuracy")
    label = METRICS.get(metric, METRICS["accuracy"])[2] == "label"
    rows = [[k, 0 if label else 0.5] for k in ids]

    def text(value: Any) -> str:
        return json.dumps({"predictions": value})

    slot = text([[ids[0], "\x00"], *rows[1:]])

    def first(spelling: str) -> str:
        return slot.replace(json.dumps("\x00"), spelling, 1)

    out = {
        "a row missing": text(rows[:-1]),
        "a row repeated instead of another": text([*rows[:-1], rows[0]]),
        "an unknown id": text([["no-such-id", rows[0][1]], *rows[1:]]),
        "an id that is a number": text([[0, rows[0][1]], *rows[1:]]),
        "a NaN prediction": first("NaN"),
        "an Infinity prediction": first("Infinity"),
        "a 1e999 prediction": first("1e999"),
        "a string prediction": first('"7"'),
        "a boolean prediction": first("true"),
        "a null prediction": first("null"),
        "an integer of 400 digits": first("1" + "0" * 400),
        "a row of three": text([[ids[0], 0, 0], *rows[1:]]),
        "a reported score": json.dumps({"predictions": rows, "accuracy": 1.0}),
        "predictions not a list": text({k: v for k, v in rows}),
        "ten times the rows": text(rows * 10),
    }
    if label:
        out["a float label"] = first("1.0")
        out["a label beyond the classes"] = first(str(int(params.get("classes") or 0)))
        out["a negative label"] = first("-1")
    return out


HOSTILE = {"predictions": _hostile}
