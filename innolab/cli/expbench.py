"""`innolab expbench`: EXP-Bench's data, workspaces, judging, execution and reports.

Each action is one handler; the errors EXP-Bench's modules raise for bad input are reported the same
way for all.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from innolab.cli.common import Commands, fail, group

Handler = Callable[[argparse.Namespace], int]


def register(commands: Commands) -> None:
    """Add `expbench stats|list|show|prepare|judge|execute|download|report`.

    Args:
        commands: The parent parser's subparsers.
    """
    sub = group(
        commands, "expbench", "EXP-Bench: dataset statistics, tasks, and reports of judged results"
    )
    for name, text, handler in (
        ("stats", "task, paper and type counts recomputed from the data", stats),
        ("list", "one line per task: id, type, question", list_tasks),
        ("show", "one task", show),
    ):
        action = sub.add_parser(name, help=text)
        action.add_argument(
            "--data", metavar="DIR", help="the EXP-Bench data (default $INNOLAB_EXPBENCH_DIR)"
        )
        action.set_defaults(handler=_guarded(handler))
    sub.choices["stats"].add_argument("--json", action="store_true")
    sub.choices["list"].add_argument("--type", choices=["T1", "T2", "T3"])
    sub.choices["show"].add_argument(
        "task_id", metavar="ID", help="<conference>/<paper id>/<index>"
    )
    prep = sub.add_parser(
        "prepare", help="a task's masked workspace from a local clone, and its agent prompt"
    )
    prep.add_argument("task_id", metavar="ID")
    prep.add_argument(
        "--repo", required=True, metavar="PATH", help="a local clone of the task's repository"
    )
    prep.add_argument(
        "--out", required=True, metavar="DIR", help="the workspace to make (a new folder)"
    )
    prep.add_argument("--data", metavar="DIR")
    prep.set_defaults(handler=_guarded(prepare))
    jdg = sub.add_parser(
        "judge", help="judge one task's outputs (M, D, C, I) with the configured LLM"
    )
    jdg.add_argument("task_id", metavar="ID", nargs="?")
    jdg.add_argument(
        "--gen", metavar="FILE", help="the agent's {design, conclusion} JSON (absent: no answer)"
    )
    jdg.add_argument("--patch", metavar="FILE")
    jdg.add_argument("--log", metavar="FILE", help="the agent's log, for the monitor")
    jdg.add_argument("--out", metavar="FILE", help="<prefix>_eval_judge.json")
    jdg.add_argument(
        "--run", metavar="RUN_DIR", help="judge a gym run of an EXP-Bench task (its kept artefacts)"
    )
    jdg.add_argument(
        "--results", metavar="DIR", help="with --run: where <conf>/<paper>/<agent>/<model>/ goes"
    )
    jdg.add_argument(
        "--execute", metavar="IMAGE", help="with --run: also run E in a fresh container of IMAGE"
    )
    jdg.add_argument(
        "--timeout", type=float, default=3600.0, help="E's time limit in seconds (default 3600)"
    )
    jdg.add_argument("--data", metavar="DIR")
    jdg.set_defaults(handler=_guarded(judge))
    exe = sub.add_parser("execute", help="the execution check E of a workspace in Docker")
    exe.add_argument("workspace", metavar="DIR")
    exe.add_argument("--image", required=True, help="the image the agent's workspace ran in")
    exe.add_argument("--timeout", type=float, default=3600.0, help="seconds (default 3600)")
    exe.add_argument("--network", choices=["none", "bridge", "host"], default="none")
    exe.add_argument(
        "--conclusion", help="check that the files this conclusion cites were written by the run"
    )
    exe.set_defaults(handler=_guarded(execute))
    dwn = sub.add_parser(
        "download", help="upstream's data at the pinned commit, each file checked by sha256"
    )
    dwn.add_argument(
        "--out", required=True, metavar="DIR", help="where to put the data (then --data DIR)"
    )
    dwn.add_argument(
        "--base-url",
        help="a mirror of upstream's benchmark/exp_bench folder (default: the pinned one)",
    )
    dwn.set_defaults(handler=_guarded(download))
    rpt = sub.add_parser(
        "report", help="judged results aggregated per (agent, model), with denominators"
    )
    rpt.add_argument(
        "results_dir", metavar="DIR", help="holds <conf>/<paper>/<agent>/<model>/*_eval_judge.json"
    )
    rpt.add_argument("--json", action="store_true")
    rpt.add_argument(
        "--categories",
        metavar="CSV",
        help="per category too: a CSV with columns paper "
        "(<conf>/<paper id> or the id) and category (EXP-Bench's data carry none)",
    )
    rpt.set_defaults(handler=_guarded(report))


def _guarded(handler: Handler) -> Handler:
    """The handler, with EXP-Bench's errors of bad input reported as exit status 2.

    Bad input is the data, reports or files.
    """

    @functools.wraps(handler)
    def run(args: argparse.Namespace) -> int:
        from innolab.expbench import data
        from innolab.expbench import report as reports

        try:
            return handler(args)
        except (
            data.ExpBenchError,
            reports.ReportError,
            ValueError,
            OSError,
            RuntimeError,
        ) as error:
            return fail(f"expbench {args.expbench_command}", error)

    return run


def stats(args: argparse.Namespace) -> int:
    """Task, paper and type counts, recomputed from the data."""
    from innolab.expbench import data

    numbers = data.stats(data.load(args.data))
    if args.json:
        print(json.dumps(numbers, indent=2))
        return 0
    print(
        f"{numbers['tasks']} tasks from {numbers['papers']} papers; types "
        + ", ".join(f"{k} {v}" for k, v in numbers["types"].items())
    )
    for conference, part in numbers["conferences"].items():
        print(
            f"  {conference}: {part['tasks']} tasks, {part['papers']} papers, "
            + ", ".join(f"{k} {v}" for k, v in part["types"].items())
        )
    return 0


def list_tasks(args: argparse.Namespace) -> int:
    """One line per task (of one type, with --type)."""
    from innolab.expbench import data

    for task in data.load(args.data):
        if args.type in (None, task.type):
            print(f"{task.id:28} {task.type}  {task.question[:90]}")
    return 0


def show(args: argparse.Namespace) -> int:
    """One task: repository, masked files, question, method, instructions."""
    from innolab.expbench import data

    task = data.get(data.load(args.data), args.task_id)
    print(f"{task.id} ({task.type}); repository {task.repository or 'unknown'}")
    print(f"masked: {', '.join(task.mask_list)}")
    print(f"\nQuestion: {task.question}\n\nMethod: {task.method}")
    if task.agent_instructions:
        print(f"\nAgent instructions: {task.agent_instructions}")
    return 0


def prepare(args: argparse.Namespace) -> int:
    """A task's masked workspace and its prompt.

    Returns 1 (with the reason as JSON) when the task cannot be masked.
    """
    from innolab.expbench import data, workspace

    task = data.get(data.load(args.data), args.task_id)
    try:
        prepared = workspace.prepare(task, Path(args.repo), Path(args.out))
    except workspace.MaskingError as error:
        print(json.dumps({"invalid_task": error.invalid_task}))
        return 1
    (prepared.root.parent / f"{prepared.root.name}.prompt.txt").write_text(
        workspace.prompt(task, prepared), encoding="utf-8"
    )
    print(f"masked {', '.join(prepared.masked)}; prompt in {prepared.root.name}.prompt.txt")
    print(prepared.root)
    return 0


def judge(args: argparse.Namespace) -> int:
    """Judge one task's outputs, or a gym run of an EXP-Bench task.

    One task's outputs: ID --out FILE; a gym run: --run --results.
    """
    from innolab.expbench.judge import Judge, write_result
    from innolab.llm.cache import ResponseCache
    from innolab.llm.client import LLMClient
    from innolab.llm.settings import LLMSettings

    if args.run:
        if not args.results:
            return fail("expbench judge", "--run needs --results DIR")
        from innolab.expbench.runs import judge_run

        client = LLMClient(
            LLMSettings.from_env(), ResponseCache(Path(args.run) / "judge_cache.sqlite")
        )
        written = judge_run(
            Path(args.run),
            Path(args.results),
            Judge(client),
            execute_image=args.execute,
            timeout_s=args.timeout,
        )
        _warn_judge_failure(json.loads(written.read_text(encoding="utf-8")))
        print(written)
        return 0
    if not (args.task_id and args.out):
        return fail("expbench judge", "give ID and --out FILE (or --run RUN_DIR --results DIR)")
    from innolab.expbench import data

    tasks = data.load(args.data)
    generated = (
        json.loads(Path(args.gen).read_text(encoding="utf-8"))
        if args.gen
        else {"no_answer": "No answer found in eval gen after 1 iterations."}
    )
    patch = Path(args.patch).read_text(encoding="utf-8") if args.patch else ""
    log = Path(args.log).read_text(encoding="utf-8") if args.log else ""
    out = Path(args.out)
    client = LLMClient(LLMSettings.from_env(), ResponseCache(out.parent / "judge_cache.sqlite"))
    result = Judge(client).judge(data.get(tasks, args.task_id), generated, patch, log)
    _warn_judge_failure(result)
    print(write_result(result, out))
    return 0


def _warn_judge_failure(result: dict[str, Any]) -> None:
    from innolab.expbench.report import JUDGE_FAILURE

    if JUDGE_FAILURE in result:
        print(
            f"innolab expbench judge: written as a failed judgement: {result[JUDGE_FAILURE]}",
            file=sys.stderr,
        )


def execute(args: argparse.Namespace) -> int:
    """The execution check E of a workspace; 1 when it failed."""
    from innolab.expbench.execute import execute

    outcome = execute(
        Path(args.workspace),
        args.image,
        timeout_s=args.timeout,
        network=args.network,
        conclusion=args.conclusion,
    )
    print(json.dumps(outcome.result(), indent=2))
    return 0 if outcome.execution_success else 1


def download(args: argparse.Namespace) -> int:
    """Upstream's data at the pinned commit; print where it went."""
    from innolab.expbench.download import download

    print(download(Path(args.out), **({"base_url": args.base_url} if args.base_url else {})))
    return 0


def report(args: argparse.Namespace) -> int:
    """Judged results aggregated per (agent, model), as a table or JSON."""
    from innolab.expbench import report as reports

    categories = reports.read_categories(args.categories) if args.categories else None
    table = reports.report(Path(args.results_dir), categories)
    if args.json:
        print(json.dumps(json.loads(table.to_json(orient="records")), indent=2))
        return 0
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
    print(
        f"n counts attempted tasks: {table['n'].sum()} attempted, "
        f"{table['n_judged'].sum()} judged, "
        f"{table['n_judge_failed'].sum()} judge failures (each counted as failed)"
    )
    return 0
