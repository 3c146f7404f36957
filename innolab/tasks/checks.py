"""Standardisation checks of a task (InnoGym §3.2): reproduction, baseline gap, normalisation."""

from __future__ import annotations

import json
import math
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from innolab.metrics import better
from innolab.tasks import families, taskkit
from innolab.tasks.evaluation import evaluate
from innolab.tasks.frontier import AGREEMENT_RTOL
from innolab.tasks.leaks import scan, shipped_priors
from innolab.tasks.model import Task
from innolab.tasks.solutions import CARD_FILES, Solution, solutions
from innolab.tasks.taskkit import load_submission

# Reproduction of a recorded score by a rerun: optimisers may differ in the last bits across
# machines and library builds. This tolerance applies to *reproduction* only; validity is always
# checked with zero tolerance.
REPRODUCTION_RTOL = 1e-6
PEARSON_MIN = 0.9
KENDALL_MIN = 0.8


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one standardisation check of one task.

    Attributes:
        task: The task's id.
        check: What was checked, in words.
        passed: Whether the check passed.
        detail: What was found (counts, scores, errors).
    """

    task: str
    check: str
    passed: bool
    detail: str


def run_checks(
    task: Task, quick: bool = True, prompts: dict[str, bytes] | None = None
) -> list[CheckResult]:
    """Run all standardisation checks of one task.

    The leak scan covers what an agent sees: the visible part (the description among it), the
    shipped prior solutions of the task and `prompts`.

    Args:
        task: The task to check.
        quick: Rerun each solution in its --quick mode (else in full).
        prompts: The scaffolds' fixed prompt texts by name (innolab.gym.agent_view.prompt_texts,
            given by the caller: the tasks know no agents); None scans no prompt text.

    Returns:
        One result per check, in the order run.

    Raises:
        TaskError: A known solution's recorded score cannot be read.
    """
    results: list[CheckResult] = []

    def record(check: str, passed: bool, detail: str) -> None:
        results.append(CheckResult(task.id, check, passed, detail))

    visible, priors = {**task.visible_files(), **task.data_files()}, shipped_priors(task.id)
    template = task.family.template() if task.family.template_file is not None else None
    shown = {**visible, **priors, **(prompts or {})}
    if template is not None:  # what the baseline writes into the sandbox
        shown[f"baseline template of family {task.family.name}"] = template.encode()
    leaks = scan(task, shown)
    record("what the agent sees leaks no hidden number or key", not leaks,
           "; ".join(str(leak) for leak in leaks[:10]) if leaks else
           f"scanned {len(visible)} visible file(s), {len(priors)} shipped prior(s), "
           f"{len(prompts or {})} prompt text(s)")
    results.append(headroom(task))
    results += ledger_constructions(task)
    results += fuzz(task)
    results.append(outcome_descriptor(task))
    known = solutions(task)
    references = [s for s in known if s.recorded.kind == "reference"]
    baselines = [s for s in known if s.recorded.kind == "baseline"]
    record("two or more reference solutions", len(references) >= 2,
           f"{len(references)} reference solution(s)")
    record("a trivial baseline", len(baselines) >= 1, f"{len(baselines)} baseline(s)")
    for solution in known:
        missing = [f for f in CARD_FILES if not (solution.folder / f).is_file()]
        detail = f"missing {missing}" if missing else "summary + pseudocode"
        record(f"{solution.name}: method card", not missing, detail)
        results += _reproduction(task, solution, quick)
    for baseline in baselines:
        for reference in references:
            b, r = baseline.recorded.score, reference.recorded.score
            record(f"baseline {baseline.name} worse than {reference.name}",
                   better(r, b, task.direction),
                   f"{b:.10g} vs {r:.10g} ({task.direction}imise)")
    return results


FUZZ_MUTATIONS = 40
JUNK: tuple[object, ...] = (None, True, "1", -1, 0, 2**70, 1e308, -1e308, 0.5, [], {}, [0.5],
                            float("nan"), float("inf"))


def _leaves(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    if isinstance(value, list):
        return [path] + [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))]
    if isinstance(value, dict):
        return [path] + [p for k, v in value.items() for p in _leaves(v, (*path, k))]
    return [path]


def _mutate(data: object, rng: np.random.Generator) -> str:
    """A JSON text of `data` with one random place replaced by junk, dropped or doubled."""
    copy = json.loads(json.dumps(data))
    paths = [p for p in _leaves(copy) if p]
    path = paths[int(rng.integers(len(paths)))]
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    last, how = path[-1], int(rng.integers(4))
    if how == 0 and isinstance(parent, list):
        del parent[last]
    elif how == 1 and isinstance(parent, list):
        parent.insert(last, parent[last])
    else:
        parent[last] = JUNK[int(rng.integers(len(JUNK)))]
    return json.dumps(copy)  # NaN and Infinity are written as bare tokens, as a hostile file would


def _attempt(family: families.Family, function: str, params: dict[str, object],
             text: str) -> tuple[bool, str]:
    """Check one submission text in-process: (accepted, what happened) or raise on a crash."""
    try:
        data = taskkit.parse_submission(text)
    except taskkit.Invalid as error:
        return False, str(error)
    errors, score = families.check_data(family, function, params, data)
    return not errors, "; ".join(errors) if errors else f"accepted, score {score!r}"


def fuzz(task: Task, mutations: int = FUZZ_MUTATIONS, seed: int = 0) -> list[CheckResult]:
    """The family's hostile inputs and seeded mutations of the known outputs, against the check.

    Every hostile input (the family's `HOSTILE`) must be rejected with an error, never accepted,
    never crash the check; each known solution's output with one place replaced by junk (NaN,
    infinities, strings, booleans, huge numbers, nesting), dropped or doubled must never crash it
    (a mutation may stay valid; then its objective is finite, by taskkit's rule).

    Args:
        task: The task.
        mutations: Mutations per known output.
        seed: The mutations' seed.

    Returns:
        Two results: the hostile inputs, and the mutations.
    """
    family, function, params = task.family, task.spec.problem.function, task.problem_params
    hostile = family.hostile(function, params)
    accepted, crashed = [], []
    for label, text in hostile.items():
        try:
            ok, _ = _attempt(family, function, params, text)
        except Exception as error:  # a check that crashes on bad input: the failure reported
            crashed.append(f"{label}: {type(error).__name__}: {error}")
            continue
        if ok:
            accepted.append(label)
    results = [CheckResult(
        task.id, f"family {family.name}: every hostile input is rejected, none crashes the check",
        bool(hostile) and not accepted and not crashed,
        (f"accepted: {accepted}; " if accepted else "") + (f"crashed: {crashed[:3]}; "
                                                           if crashed else "")
        + (f"{len(hostile)} hostile input(s)" if hostile else
           f"the family declares no hostile inputs for {function} (HOSTILE)"))]
    rng = np.random.default_rng(seed)
    tried, crashes = 0, []
    for solution in solutions(task):
        if not solution.output.is_file():
            continue
        base = json.loads(solution.output.read_text(encoding="utf-8"))
        for _ in range(mutations):
            text = _mutate(base, rng)
            tried += 1
            try:
                _attempt(family, function, params, text)
            except Exception as error:  # reported, with the input's start
                crashes.append(f"{type(error).__name__}: {error} on {text[:80]!r}")
    results.append(CheckResult(
        task.id, f"family {family.name}: mutated known outputs never crash the check",
        not crashes, f"{len(crashes)} crash(es) of {tried}: {crashes[:3]}" if crashes else
        f"{tried} mutation(s) of {tried // max(mutations, 1)} known output(s), seed {seed}"))
    return results


# The distance of an output to itself is 0 up to rounding: symmetry searches in floating point
# (rotations, affine fits) leave about 1e-14 on the 0-100 scale, far below any family's tie.
SELF_DISTANCE_ATOL = 1e-9


def outcome_descriptor(task: Task) -> CheckResult:
    """Whether the family's outcome descriptor (N_out) describes and compares the known outputs.

    The family must declare an outcome (`OUTCOMES`) for the task's check; it must describe every
    known solution's committed output; the distance of each output to itself must be 0 (up to
    rounding, SELF_DISTANCE_ATOL) and the distance between any two a finite number in [0, 100].

    Args:
        task: The task.

    Returns:
        The check's result, naming the family and what failed.
    """
    family, function = task.family, task.spec.problem.function
    check = f"family {family.name}: its outcome descriptor describes and compares the known outputs"
    found = family.outcome(function)
    if found is None:
        return CheckResult(task.id, check, False, f"family {family.name} ({family.origin}) "
                           f"declares no outcome descriptor for its check {function} (OUTCOMES)")
    problems: list[str] = []
    described: dict[str, object] = {}
    for solution in solutions(task):
        if not solution.output.is_file():
            problems.append(f"{solution.name}: no committed output to describe")
            continue
        try:
            data = load_submission(solution.output, task.spec.limits.max_submission_bytes)
            described[solution.name] = found.describe(data, task.problem_params)
        except Exception as error:  # a family's descriptor may raise anything: reported
            problems.append(f"{solution.name}: not described ({type(error).__name__}: {error})")

    def distance(a: str, b: str) -> float | str:
        try:
            return float(found.distance(described[a], described[b]))
        except Exception as error:  # reported, never a crash of the check
            return f"{type(error).__name__}: {error}"

    names = list(described)
    for name in names:
        itself = distance(name, name)
        if isinstance(itself, str) or not abs(itself) <= SELF_DISTANCE_ATOL:
            problems.append(f"distance({name}, {name}) = {itself!r}, not 0 (within "
                            f"{SELF_DISTANCE_ATOL:g})")
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            between = distance(a, b)
            if isinstance(between, str) or not (math.isfinite(between) and 0 <= between <= 100):
                problems.append(f"distance({a}, {b}) = {between!r}, not a number in [0, 100]")
    pairs = len(names) * (len(names) - 1) // 2
    return CheckResult(task.id, check, not problems and bool(names),
                       "; ".join(problems[:5]) if problems else
                       f"{len(names)} known output(s) described, each at distance 0 from itself "
                       f"(within {SELF_DISTANCE_ATOL:g}), "
                       f"{pairs} pair(s) at finite distances in [0, 100]" if names else
                       "no known output to describe")


def headroom(task: Task) -> CheckResult:
    """Whether headroom is left between V* and the proven bound beyond it (as of today).

    A task with none is not improvable and fails; parts (instances) with none are named, and the
    check passes while the task as a whole keeps headroom.

    Args:
        task: The task.

    Returns:
        The check's result, naming what has no headroom.
    """
    check = "headroom left between V* and the proven bound"
    bound = task.bound
    if bound is None:
        return CheckResult(task.id, check, True, "no proven bound beyond V* is known")
    v_star, closed = task.v_star_as_of("today"), task.no_headroom()
    span = f"V* {v_star.value:.10g}, bound {bound.value:.10g} ({bound.holder}, {bound.date_text})"
    if closed == [task.id]:
        return CheckResult(task.id, check, False,
                           f"no headroom: {span}; the task cannot be improved")
    if closed:
        sums = " (V* and the bound are sums over the instances)" if bound.parts else ""
        return CheckResult(task.id, check, True,
                           f"{span}{sums}; no headroom on {', '.join(closed)} (V* = bound)")
    return CheckResult(task.id, check, True, span)


VIOLATIONS = re.compile(r"^[^|:]+: \d+ violation\(s\): (?P<items>.*?)(?: \(and \d+ more\))?$")


def violation_items(errors: list[str]) -> list[str]:
    """The single violations in an evaluator's errors, each as innolab words it.

    An error "containment: 2 violation(s): a; b | disjointness: 1 violation(s): c" holds a, b
    and c; an error of another form is one item as it stands.

    Args:
        errors: The evaluator's errors.

    Returns:
        The violations, in order.
    """
    items: list[str] = []
    for error in errors:
        for part in error.split(" | "):
            match = VIOLATIONS.match(part)
            items += match.group("items").split("; ") if match else [part]
    return items


def ledger_constructions(task: Task) -> list[CheckResult]:
    """The ledger says what innolab's own checks say: every published construction re-checked.

    Each entry that names a construction is scored by the hidden evaluator (zero tolerance).
    Rules: an accepted construction scoring the entry's value (`LedgerEntry.agrees`) makes a
    record that must be `verified`; a `verified` entry's construction must be accepted at its
    value; an entry whose construction is rejected must not be `verified`, and its note must quote
    every violation innolab measures; `v_star_reproduced` must be the best value of a
    non-refuted record whose construction innolab accepts (None when there is none).

    Args:
        task: The task.

    Returns:
        One result per construction, then one for v_star_reproduced.
    """
    results: list[CheckResult] = []
    accepted: list[float] = []
    for i, entry in enumerate(task.ledger):
        if entry.construction is None:
            continue
        name = (f"ledger entries.{i} ({entry.holder}, {entry.value!r}, {entry.status}): "
                f"construction {entry.construction}")
        file = task.construction_file(entry)
        verdict = evaluate(task, file) if file is not None else None
        if verdict is None:
            results.append(CheckResult(task.id, name, False, "not a regular file in the task"))
        elif verdict.valid and verdict.score is not None:
            agrees = entry.agrees(verdict.score)
            if agrees and entry.status != "refuted":
                accepted.append(entry.value)
            if agrees:
                passed = entry.status == "verified"
                detail = ("innolab's evaluator accepts it (zero tolerance), "
                          f"score {verdict.score!r}"
                          + ("" if passed else "; an accepted construction at the published "
                             "value makes the entry 'verified'"))
            else:
                passed = entry.status != "verified"
                detail = (f"accepted, but it scores {verdict.score!r}, not the published value "
                          f"(agreement: {AGREEMENT_RTOL:g} relative or the tie margin)"
                          + ("; a value innolab does not reproduce is not 'verified'"
                             if not passed else ""))
            results.append(CheckResult(task.id, name, passed, detail))
        else:
            items = violation_items(verdict.errors)
            unstated = [item for item in items if item not in (entry.note or "")]
            if entry.status == "verified":
                detail = (f"innolab's exact check rejects it: {'; '.join(items)}; mark the entry "
                          "'reported' (a rounding-level violation) or 'refuted', with the "
                          "violation in its note")
            elif unstated:
                detail = (f"rejected, as its status says, but the note does not state the "
                          f"measured violation(s): {'; '.join(unstated)}")
            else:
                detail = f"rejected, as its status and note say: {'; '.join(items)}"
            results.append(CheckResult(task.id, name, entry.status != "verified" and not unstated,
                                       detail))
    best = (max if task.direction == "max" else min)(accepted) if accepted else None
    claimed = task.spec.v_star_reproduced
    results.append(CheckResult(
        task.id, "v_star_reproduced is the best value of a construction innolab accepts",
        claimed == best,
        f"v_star_reproduced {claimed!r}; best accepted construction {best!r} "
        f"({len(accepted)} accepted)"))
    return results


def _reproduction(task: Task, solution: Solution, quick: bool) -> list[CheckResult]:
    out: list[CheckResult] = []
    recorded = solution.recorded
    verdict = evaluate(task, solution.output)
    same = verdict.valid and verdict.score == recorded.score
    out.append(CheckResult(
        task.id, f"{solution.name}: committed output scores as recorded", same,
        f"evaluated {verdict.score!r}, recorded {recorded.score!r}; errors {verdict.errors}"))
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "submission.json"
        run = solution.run(target, quick=quick)
        if run.returncode != 0 or not target.is_file():
            tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
            out.append(CheckResult(task.id, f"{solution.name}: rerun", False,
                                   f"exit {run.returncode}: {tail}"))
            return out
        rerun = evaluate(task, target)
        expected = recorded.quick_score if quick else recorded.score
        ok = (rerun.valid and rerun.score is not None
              and math.isclose(rerun.score, expected, rel_tol=REPRODUCTION_RTOL))
        mode = "--quick rerun" if quick else "full rerun"
        out.append(CheckResult(
            task.id, f"{solution.name}: {mode} reproduces its recorded score", ok,
            f"got {rerun.score!r}, recorded {expected!r} (rtol {REPRODUCTION_RTOL:g})"))
    return out


# ------------------------------------------------------------------------- evaluator normalisation


def log_normalise(scores: np.ndarray | list[float], best: float, worst: float) -> np.ndarray:
    """Map raw scores to [0, 1] on a log scale between fixed leaderboard extrema (App. G.2.1).

    Works for either direction: 1 at `best`, 0 at `worst`; the gap to `best` is measured in log
    space, so that relative improvements near the top count as much as large ones further down.

    Args:
        scores: Raw scores; they must lie between the extrema (inclusive) and share their sign.
        best: The leaderboard's best score (maps to 1).
        worst: The leaderboard's worst score (maps to 0).

    Returns:
        The normalised scores, one per raw score.

    Raises:
        ValueError: A score or an extremum is not finite, best equals worst, or a score lies
            outside the extrema.
    """
    x = np.asarray(scores, dtype=float)
    if (not np.isfinite(x).all() or not (math.isfinite(best) and math.isfinite(worst))
            or best == worst):
        raise ValueError("log_normalise: scores and extrema must be finite, with best != worst")
    lo, hi = min(best, worst), max(best, worst)
    if ((x < lo) | (x > hi)).any():
        raise ValueError(f"log_normalise: scores must lie within the fixed extrema [{lo}, {hi}]")
    gap = np.abs(x - best)
    span = abs(worst - best)
    return 1.0 - np.log1p(gap) / np.log1p(span)


@dataclass(frozen=True)
class Consistency:
    """How well a normalised score keeps the leaderboard's order.

    Attributes:
        pearson: Pearson's correlation with the leaderboard.
        kendall: Kendall's τ with the leaderboard.
        passed: Whether both reach their thresholds (PEARSON_MIN, KENDALL_MIN).
    """

    pearson: float
    kendall: float
    passed: bool


def normalisation_consistency(
    normalised: np.ndarray | list[float],
    leaderboard: np.ndarray | list[float],
    higher_is_better: bool = True,
) -> Consistency:
    """Test whether a normalised score keeps the leaderboard's order (§3.2).

    It does when Pearson's r ≥ 0.9 and Kendall's τ ≥ 0.8.

    Args:
        normalised: The normalised scores.
        leaderboard: The leaderboard's raw scores, in the same order.
        higher_is_better: Whether a higher raw score is better.

    Returns:
        Both correlations and whether they pass.

    Raises:
        ValueError: The series differ in shape or hold fewer than 3 scores.
    """
    a = np.asarray(normalised, dtype=float)
    b = np.asarray(leaderboard, dtype=float) * (1 if higher_is_better else -1)
    if a.shape != b.shape or a.size < 3:
        raise ValueError(
            "normalisation_consistency: need two equally long series of at least 3 scores")
    from scipy import stats  # here: `tasks check` needs none of it, and it is slow to import

    pearson = float(stats.pearsonr(a, b).statistic)
    kendall = float(stats.kendalltau(a, b).statistic)
    return Consistency(pearson, kendall, pearson >= PEARSON_MIN and kendall >= KENDALL_MIN)
