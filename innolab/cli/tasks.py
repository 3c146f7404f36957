"""`innolab tasks`: list, show, check, solve and score the improvable tasks."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from innolab.cli.common import Commands, group

if TYPE_CHECKING:
    from innolab.tasks import LedgerEntry, Task


def register(commands: Commands) -> None:
    """Add `tasks list|show|check|solve|frontier|new|families|score`.

    Args:
        commands: The parent parser's subparsers.
    """
    sub = group(commands, "tasks", "improvable tasks: list, show, check, solve, frontier, score")
    lst = sub.add_parser("list", help="the runnable tasks (built-in and $INNOLAB_TASK_PATH)")
    lst.add_argument(
        "--ibench", action="store_true", help="list the paper's 18 iBench tasks instead"
    )
    lst.set_defaults(handler=list_tasks)
    show = sub.add_parser("show", help="a task's metadata, leaderboard and description")
    show.add_argument("task", metavar="ID")
    show.set_defaults(handler=show_task)
    chk = sub.add_parser(
        "check", help="standardisation checks (reproduction, baseline gap, method cards)"
    )
    chk.add_argument("task", metavar="ID", nargs="?")
    chk.add_argument("--all", action="store_true", help="check every task")
    chk.add_argument(
        "--full", action="store_true", help="rerun solutions in full rather than --quick mode"
    )
    chk.add_argument(
        "--ledger", action="store_true",
        help="only the ledger's rule: re-check every published construction the ledger names",
    )
    chk.set_defaults(handler=check)
    solve_cmd = sub.add_parser("solve", help="run a known solution and score its output")
    solve_cmd.add_argument("task", metavar="ID")
    solve_cmd.add_argument("--solution", required=True, metavar="NAME")
    solve_cmd.add_argument(
        "--quick", action="store_true", help="the fast mode used by the test suite"
    )
    solve_cmd.add_argument("--seed", type=int, default=0)
    solve_cmd.add_argument(
        "--time-limit", type=float, metavar="S", help="wall-clock limit the solver honours"
    )
    solve_cmd.add_argument("--out", metavar="FILE", help="where to write the submission")
    solve_cmd.add_argument(
        "--full",
        action="store_true",
        help="re-record: run solve.py in full and --quick (seed, time limit as recorded "
        "unless given), write solution.json and score.json with the recording's "
        "provenance",
    )
    solve_cmd.add_argument(
        "--kind", choices=["reference", "baseline"], help="with --full, for a new solution"
    )
    solve_cmd.set_defaults(handler=solve)
    frontier = sub.add_parser("frontier", help="a task's dated ledger: records and proven bounds")
    frontier.add_argument("task", metavar="ID")
    frontier.add_argument("--json", action="store_true", help="print one JSON object")
    frontier.set_defaults(handler=show_frontier)
    new = sub.add_parser(
        "new", help="write a task folder to fill (a family module of its own, known solutions "
        "recorded): it passes `innolab tasks check` as written")
    new.add_argument("task", metavar="ID")
    new.add_argument("--family", metavar="F",
                     help="the new family's module name (default: from the id)")
    new.add_argument("--path", default=".", metavar="DIR",
                     help="where the task folder is written (default: here)")
    new.set_defaults(handler=new_task)
    families_cmd = sub.add_parser(
        "families", help="the registered problem families (entry-point group innolab.families)")
    families_cmd.add_argument("--json", action="store_true", help="print one JSON list")
    families_cmd.set_defaults(handler=list_families)
    score_cmd = sub.add_parser("score", help="score a submission file with the hidden evaluator")
    score_cmd.add_argument("task", metavar="ID")
    score_cmd.add_argument("file", metavar="FILE")
    score_cmd.add_argument("--json", action="store_true", help="print one JSON object")
    score_cmd.set_defaults(handler=score)


def new_task(args: argparse.Namespace) -> int:
    """Write a task folder (innolab.tasks.skeleton) and say what to fill."""
    from innolab.cli.common import fail
    from innolab.tasks import TaskError
    from innolab.tasks.skeleton import new_task as write

    try:
        folder = write(args.task, args.family, args.path)
    except TaskError as error:
        return fail("tasks new", error)
    print(f"wrote {folder}: task.yaml (fill its ledger: holder, source, date), description.md, "
          f"{args.family or args.task.replace('-', '_')}.py (the family: check, outcome, hostile "
          "inputs, baseline template) and three solutions, recorded")
    print(f"next: innolab tasks check {folder}; innolab run --agent baseline --task {folder}")
    print(folder)
    return 0


def list_families(args: argparse.Namespace) -> int:
    """One line per registered family (broken ones with their error)."""
    from innolab.tasks.families import registered

    entries = registered()
    if args.json:
        print(json.dumps([e.as_dict() for e in entries.values()], indent=1))
        return 0
    for entry in entries.values():
        if entry.family is None:
            print(f"{entry.name:12} BROKEN ({entry.distribution}): {entry.error}")
            continue
        template = "baseline template" if entry.family.template_file else "no baseline template"
        print(f"{entry.name:12} {entry.distribution or '?':24} {template:21} "
              f"checks: {', '.join(entry.family.checks())}")
    return 0


def list_tasks(args: argparse.Namespace) -> int:
    """One line per runnable task (or per iBench task of the paper)."""
    from innolab.tasks import list_tasks

    if args.ibench:
        from innolab import paper

        catalogue = paper.load("ibench_tasks")
        for row in catalogue.itertuples():
            offline = "runnable offline" if row.runnable_offline else "not offline"
            print(f"{row.name:16} {row.domain:26} {offline:17} {row.offline_note}")
        return 0
    print(f"{'id':28} {'dir':4} {'V*':>16}  {'compute':7} title")
    for task in list_tasks():
        print(
            f"{task.id:28} {task.direction:4} {task.v_star:>16.10g}  {task.spec.compute:7} "
            f"{task.spec.title}"
        )
    return 0


def show_task(args: argparse.Namespace) -> int:
    """A task's metadata, V* entries, known solutions, Div(T) and description."""
    from innolab.novelty.scoring import task_diversity
    from innolab.tasks import PAPER_DATE, get_task

    task = get_task(args.task)
    spec = task.spec
    print(f"{spec.id}: {spec.title}")
    print(
        f"  domain {spec.domain}; objective {spec.objective.name} "
        f"({spec.objective.direction}imise); "
        f"compute {spec.compute}; default budget {spec.default_budget_s} s"
    )
    print(
        f"  V* = {task.v_star!r} (the best published value)"
        + (
            f"; best reproduced {spec.v_star_reproduced!r}"
            if spec.v_star_reproduced is not None
            else ""
        )
        + (f"; paper V* {spec.paper_v_star}" if spec.paper_v_star else "")
        + f"; tie margin {task.tie_margin():.3g} (half a unit of V*'s last published digit "
        f"+ {spec.min_improvement:g}·|V*|)"
    )
    today, paper = task.v_star_as_of("today"), paper_v_star(task)
    print(
        f"  V* as of today ({today.as_of}): {today.value!r}, held by {today.entry.holder} since "
        f"{today.entry.date_text}; as of the paper's date ({PAPER_DATE}): "
        f"{'no record yet' if paper is None else repr(paper)}"
    )
    print(f"  ledger (hash {task.ledger_hash}; `innolab tasks frontier {task.id}` for all of it):")
    for entry in sorted(task.ledger, key=lambda e: e.date):
        print(f"    {entry_line(entry)}")
    print(f"  {bound_line(task)}")
    if spec.bounds.note:
        print(f"  bounds: {spec.bounds.note}")
    print(f"  known solutions: {', '.join(task.solution_names()) or 'none'}")
    div = task_diversity(task)
    shown = (
        f"{div.value:.1f} (tfidf on method cards; {div.detail})"
        if div.value is not None
        else div.detail
    )
    print(f"  Div(T): {shown}")
    print()
    print(task.description)
    return 0


def paper_v_star(task: Task) -> float | None:
    """V* as of the paper's date (arXiv 2512.01822 v1, 2025-12-01).

    Args:
        task: The task.

    Returns:
        The value, or None when the ledger has no record dated that early.
    """
    from innolab.tasks import PAPER_DATE, TaskError

    try:
        return task.v_star_as_of(PAPER_DATE).value
    except TaskError:
        return None


def entry_line(entry: LedgerEntry) -> str:
    """One ledger entry on one line: date, kind, value, digits, status, holder, source, note.

    The published construction innolab holds, where it holds one, is named at the end.

    Args:
        entry: The entry.

    Returns:
        The line.
    """
    digits = "?" if entry.digits is None else str(entry.digits)
    note = f" ({entry.note})" if entry.note else ""
    if entry.construction is not None:
        note += f" [construction {entry.construction}]"
    return (
        f"{entry.date_text:10} {entry.kind:11} {entry.value!r:>22} {digits:>2}d {entry.status:8} "
        f"{entry.holder}; {entry.source}{note}"
    )


def bound_line(task: Task) -> str:
    """The proven bound beyond V*, the headroom left and what has none.

    Args:
        task: The task.

    Returns:
        A line (more lines, indented, when V* and the bound are sums over parts).
    """
    bound = task.bound
    if bound is None:
        return "proven bound beyond V*: none known (headroom_closed is NaN)"
    v_star = task.v_star_as_of("today")
    side = "V* >= B" if bound.kind == "lower_bound" else "V* <= B"
    lines = [
        f"proven bound beyond V*: B = {bound.value!r} ({bound.kind}, {side}; {bound.holder}, "
        f"{bound.source}, {bound.date_text}); headroom |B - V*| = "
        f"{abs(bound.value - v_star.value):.6g}"
    ]
    closed = task.no_headroom()
    if closed == [task.id]:
        lines.append("  NO HEADROOM: V* equals the proven bound; the task cannot be improved")
    mine, theirs = v_star.entry.parts or {}, bound.parts or {}
    if mine and theirs:
        lines.append(
            f"  V* and B are sums over {len(mine)} instances: V* = {v_star.value:g} "
            f"(sum of the best upper bounds), B = {bound.value:g} (sum of the lower bounds)"
        )
        for name, value in mine.items():
            gap = value - theirs[name] if name in theirs else float("nan")
            flag = "  NO HEADROOM (proven optimal)" if name in closed else ""
            lines.append(f"    {name:6} V* {value:>10g}  B {theirs.get(name, float('nan')):>10g}  "
                         f"headroom {gap:g}{flag}")
    if closed and closed != [task.id]:
        lines.append(f"  no headroom on: {', '.join(closed)} (V* = B there)")
    return "\n".join(lines)


def show_frontier(args: argparse.Namespace) -> int:
    """A task's dated ledger, oldest first, with the steps of the record and the bound."""
    from innolab.tasks import PAPER_DATE, get_task
    from innolab.tasks.frontier import record_steps

    task = get_task(args.task)
    today = task.v_star_as_of("today")
    steps = record_steps(task.ledger, task.direction)
    ledger = sorted(task.ledger, key=lambda e: e.date)
    if args.json:
        bound = task.bound
        print(json.dumps({
            "task": task.id, "direction": task.direction, "ledger_hash": task.ledger_hash,
            "as_of": today.as_of.isoformat(), "v_star": today.value,
            "v_star_entry": today.entry.as_json(),
            "paper_date": PAPER_DATE.isoformat(), "v_star_paper": paper_v_star(task),
            "bound": bound.as_json() if bound else None, "no_headroom": task.no_headroom(),
            "entries": [{**e.as_json(), "sets_v_star": e in steps} for e in ledger],
        }, indent=1))
        return 0
    print(f"{task.id}: {task.spec.objective.name} ({task.direction}imise); ledger hash "
          f"{task.ledger_hash}")
    print("  dates: YYYY-MM and YYYY count from the first day of the month or year")
    print(f"  {'date':10} {'kind':11} {'value':>22} dig status   holder; source")
    for entry in ledger:
        mark = "*" if entry in steps else " "
        print(f"{mark} {entry_line(entry)}")
    print("  * sets a new V* (the record over time); V* as of a date is the last * on or before it")
    print(f"  V* today ({today.as_of}): {today.value!r}; as of the paper's date ({PAPER_DATE}): "
          f"{paper_v_star(task)}")
    print(f"  {bound_line(task)}")
    return 0


def check(args: argparse.Namespace) -> int:
    """The standardisation checks of one task or all (with --ledger, the ledger's rule only).

    Every check names its task; the ledger's name the entry, its construction and what innolab's
    exact check measured. Exit status 1 when one fails.
    """
    from innolab.agents.registry import policies
    from innolab.gym.agent_view import prompt_texts
    from innolab.tasks import get_task, list_tasks
    from innolab.tasks.checks import ledger_constructions, run_checks

    if not args.all and not args.task:
        print("innolab tasks check: give a task id or --all", file=sys.stderr)
        return 2
    tasks = list_tasks() if args.all else [get_task(args.task)]
    failed = 0
    for task in tasks:
        results = (ledger_constructions(task) if args.ledger else
                   run_checks(task, quick=not args.full, prompts=prompt_texts(policies())))
        for result in results:
            failed += not result.passed
            mark = "ok  " if result.passed else "FAIL"
            print(f"{mark} {result.task}: {result.check} — {result.detail}")
    print(f"{failed} check(s) failed" if failed else "all checks passed")
    return 1 if failed else 0


def solve(args: argparse.Namespace) -> int:
    """Run a known solution and score its output (or, with --full, re-record it)."""
    from innolab.tasks import get_task
    from innolab.tasks.evaluation import evaluate
    from innolab.tasks.solutions import get_solution

    task = get_task(args.task)
    solution = get_solution(task, args.solution)
    if args.full:
        from innolab.tasks.solutions import record

        recorded = record(solution, args.kind, seed=args.seed, time_limit_s=args.time_limit)
        print(
            json.dumps(
                {
                    "solution": solution.name,
                    "kind": recorded.kind,
                    "score": recorded.score,
                    "quick_score": recorded.quick_score,
                    "recording": recorded.recording,
                }
            )
        )
        return 0
    out = Path(args.out or f"{task.id}-{solution.name}.json").resolve()
    run = solution.run(
        out, quick=args.quick, seed=args.seed, time_limit_s=args.time_limit, timeout_s=24 * 3600
    )
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print(
            f"innolab tasks solve: {solution.name} exited with status {run.returncode}",
            file=sys.stderr,
        )
        return 1
    verdict = evaluate(task, out)
    print(json.dumps({**verdict.as_dict(), "file": str(out)}))
    return 0 if verdict.valid else 1


def score(args: argparse.Namespace) -> int:
    """A submission file scored by the hidden evaluator; 1 when it is invalid."""
    from innolab.tasks import get_task
    from innolab.tasks.evaluation import evaluate

    task = get_task(args.task)
    verdict = evaluate(task, Path(args.file))
    if args.json:
        print(json.dumps(verdict.as_dict()))
    elif verdict.valid:
        print(
            f"valid: score {verdict.score!r}; V* {verdict.v_star!r}; gain {verdict.gain:.6g}; "
            f"ratio {verdict.ratio:.6g}"
        )
    else:
        print("invalid (V = 0, ratio -1):")
        for error in verdict.errors:
            print(f"  - {error}")
    return 0 if verdict.valid else 1
