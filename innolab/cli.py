"""The `innolab` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from innolab import __version__
from innolab.paths import project_root


def _reproduce(args: argparse.Namespace) -> int:
    from innolab.notebooks import NotebookError, reproduce, run_demos

    output = Path(args.output) if args.output else None
    extra = {}
    if args.sweep and not args.only:  # first: the analysis notebooks read its tables
        from innolab.paths import notebooks_dir
        from innolab.sweep import reference_sweep

        folder = reference_sweep(output)
        print(f"offline sweep: {folder}")
        extra["sweep_dir"] = os.path.relpath(folder, notebooks_dir())
    try:
        runs = reproduce(only=args.only, output=output, extra_parameters=extra)
    except NotebookError as error:
        print(f"innolab reproduce: {error}", file=sys.stderr)
        return 2
    for run in runs:
        print(f"{run.name}: {run.executed}")
    if args.demos and not args.only:
        print(f"demo runs: {run_demos(output, budget=args.demo_budget)}")
    return 0


def _tasks_list(args: argparse.Namespace) -> int:
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
        print(f"{task.id:28} {task.direction:4} {task.v_star:>16.10g}  {task.spec.compute:7} {task.spec.title}")
    return 0


def _tasks_show(args: argparse.Namespace) -> int:
    from innolab.novelty.scoring import task_diversity
    from innolab.tasks import get_task

    task = get_task(args.task)
    spec = task.spec
    print(f"{spec.id}: {spec.title}")
    print(f"  domain {spec.domain}; objective {spec.objective.name} ({spec.objective.direction}imise); "
          f"compute {spec.compute}; default budget {spec.default_budget_s} s")
    print(f"  V* = {spec.v_star.value!r} (the best published value)"
          + (f"; best reproduced {spec.v_star_reproduced!r}" if spec.v_star_reproduced is not None else "")
          + (f"; paper V* {spec.paper_v_star}" if spec.paper_v_star else "")
          + f"; tie margin {spec.min_improvement:g}·|V*|")
    for entry in spec.v_star.entries:
        print(f"    {entry.value!r:>22}  {entry.who} ({entry.year or '?'}), {entry.status}; {entry.source}")
    if spec.bounds.upper is not None or spec.bounds.lower is not None:
        print(f"  bounds: lower {spec.bounds.lower}, upper {spec.bounds.upper} {spec.bounds.note}")
    print(f"  known solutions: {', '.join(task.solution_names()) or 'none'}")
    div = task_diversity(task)
    shown = f"{div.value:.1f} (tfidf on method cards; {div.detail})" if div.value is not None else div.detail
    print(f"  Div(T): {shown}")
    print()
    print(task.description)
    return 0


def _tasks_check(args: argparse.Namespace) -> int:
    from innolab.agents import SCAFFOLDS
    from innolab.gym.agent_view import prompt_texts
    from innolab.tasks import get_task, list_tasks
    from innolab.tasks.checks import run_checks

    if not args.all and not args.task:
        print("innolab tasks check: give a task id or --all", file=sys.stderr)
        return 2
    tasks = list_tasks() if args.all else [get_task(args.task)]
    failed = 0
    for task in tasks:
        for result in run_checks(task, quick=not args.full, prompts=prompt_texts(SCAFFOLDS)):
            failed += not result.passed
            mark = "ok  " if result.passed else "FAIL"
            print(f"{mark} {result.task}: {result.check} — {result.detail}")
    print(f"{failed} check(s) failed" if failed else "all checks passed")
    return 1 if failed else 0


def _tasks_solve(args: argparse.Namespace) -> int:
    from innolab.tasks import get_task
    from innolab.tasks.evaluation import evaluate
    from innolab.tasks.solutions import get_solution

    task = get_task(args.task)
    solution = get_solution(task, args.solution)
    if args.full:
        from innolab.tasks.solutions import record

        recorded = record(solution, args.kind, seed=args.seed, time_limit_s=args.time_limit)
        print(json.dumps({"solution": solution.name, "kind": recorded.kind, "score": recorded.score,
                          "quick_score": recorded.quick_score, "recording": recorded.recording}))
        return 0
    out = Path(args.out or f"{task.id}-{solution.name}.json").resolve()
    run = solution.run(out, quick=args.quick, seed=args.seed, time_limit_s=args.time_limit, timeout_s=24 * 3600)
    sys.stderr.write(run.stderr)
    if run.returncode != 0:
        print(f"innolab tasks solve: {solution.name} exited with status {run.returncode}", file=sys.stderr)
        return 1
    verdict = evaluate(task, out)
    print(json.dumps({**verdict.as_dict(), "file": str(out)}))
    return 0 if verdict.valid else 1


def _tasks_score(args: argparse.Namespace) -> int:
    from innolab.tasks import get_task
    from innolab.tasks.evaluation import evaluate

    task = get_task(args.task)
    verdict = evaluate(task, Path(args.file))
    if args.json:
        print(json.dumps(verdict.as_dict()))
    elif verdict.valid:
        print(f"valid: score {verdict.score!r}; V* {verdict.v_star!r}; gain {verdict.gain:.6g}; "
              f"ratio {verdict.ratio:.6g}")
    else:
        print("invalid (V = 0, ratio -1):")
        for error in verdict.errors:
            print(f"  - {error}")
    return 0 if verdict.valid else 1


def _sandbox_build_image(args: argparse.Namespace) -> int:
    from innolab.gym.image import build_base_image

    return build_base_image(args.tag)


def _sandbox_exec(args: argparse.Namespace) -> int:
    from innolab.gym.factory import open_sandbox
    from innolab.gym.sandbox import SandboxError
    from innolab.tasks import get_task

    command = args.cmd[1:] if args.cmd and args.cmd[0] == "--" else args.cmd
    if not command:
        print("innolab sandbox exec: give a command after --", file=sys.stderr)
        return 2
    try:
        sandbox = open_sandbox(get_task(args.task), args.runtime, args.image)
    except SandboxError as error:
        print(f"innolab sandbox exec: {error}", file=sys.stderr)
        return 2
    try:
        result = sandbox.exec(command, timeout_s=args.timeout)
    finally:
        sandbox.close()
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


def _sandbox_clean(args: argparse.Namespace) -> int:
    from innolab.gym.leftovers import reap

    client = None
    if args.docker:
        from innolab.gym.docker_sandbox import docker_client
        from innolab.gym.sandbox import SandboxError

        try:
            client = docker_client()
        except SandboxError as error:
            print(f"innolab sandbox clean: {error}", file=sys.stderr)
            return 2
    reaped = reap(docker_client=client)
    for folder in reaped.folders:
        print(f"removed {folder}")
    for kind, names in (("container", reaped.containers), ("volume", reaped.volumes)):
        for name in names:
            print(f"removed Docker {kind} {name}")
    print(f"{len(reaped.folders)} folders, {reaped.processes} processes, {len(reaped.containers)} containers and "
          f"{len(reaped.volumes)} volumes of ended runs removed")
    return 0


def _run(args: argparse.Namespace) -> int:
    from innolab import runner
    from innolab.gym.budget import BudgetError, parse_duration
    from innolab.gym.run import RunError
    from innolab.llm import LLMError

    novelty = None if args.novelty == "none" else args.novelty
    try:
        if args.resume:
            outcome = runner.resume(Path(args.resume), novelty=novelty)
        else:
            if not args.agent or not args.task:
                print("innolab run: give --agent and --task (or --resume RUN_DIR)", file=sys.stderr)
                return 2
            config = runner.agent_config(args.agent, args.task, model=args.model, temperature=args.temperature,
                                  seed=args.seed, budget_s=parse_duration(args.budget), runtime=args.runtime,
                                  max_steps=args.max_steps, innovation_prompt=args.innovation_prompt,
                                  initial_solution=Path(args.initial_solution).read_text()
                                  if args.initial_solution else None,
                                  prior_name=Path(args.initial_solution).stem if args.initial_solution else None,
                                  task_options={k: v for k, v in (("repo", args.repo), ("data", args.expbench_data))
                                                if v} or None)
            outcome = runner.start(config, Path(args.run_dir) if args.run_dir else None, novelty=novelty)
    except (RunError, BudgetError, LLMError, ValueError) as error:
        print(f"innolab run: {error}", file=sys.stderr)
        return 2
    from innolab.traces import summary

    print(summary(outcome["run_dir"]), file=sys.stderr)
    print(outcome["run_dir"])
    return 0


def _view(args: argparse.Namespace) -> int:
    from innolab.rundir import RunDir
    from innolab.traces import TraceError
    from innolab.viewer.export import export_html

    folder = RunDir(Path(args.run_dir))
    if not folder.exists():
        print(f"innolab view: {args.run_dir} is not a run folder (no config.json)", file=sys.stderr)
        return 2
    try:
        print(export_html(folder.root, Path(args.html) if args.html else folder.root / "view.html"))
    except (TraceError, OSError, ValueError) as error:
        print(f"innolab view: {error}", file=sys.stderr)
        return 2
    return 0


def _sweep_run(args: argparse.Namespace) -> int:
    from innolab import sweep

    try:
        folder = sweep.run(Path(args.spec), output=Path(args.output) if args.output else None, workers=args.workers,
                           scheduler=args.scheduler, overrides=args.set)
    except sweep.SpecError as error:
        print(f"innolab sweep run: {error}", file=sys.stderr)
        return 2
    state = sweep.status(folder)
    print(f"{state['finished']} of {state['configurations']} configurations finished, {state['failed']} failed",
          file=sys.stderr)
    print(folder)
    return 0 if state["failed"] == 0 else 1


def _sweep_status(args: argparse.Namespace) -> int:
    from innolab import sweep

    try:
        state = sweep.status(Path(args.sweep_dir))
    except sweep.SpecError as error:
        print(f"innolab sweep status: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(state, indent=2))
        return 0
    print(f"sweep {state['name']}: {state['configurations']} configurations: {state['finished']} finished, "
          f"{state['interrupted']} interrupted, {state['failed']} failed, {state['pending']} pending")
    for identifier, run in state["runs"].items():
        levels = " ".join(f"{k}={v}" for k, v in run["levels"].items())
        print(f"  {identifier}  {run['state']:11}  {levels}" + (f"  ({run['error']})" if run["error"] else ""))
    return 0


def _warn_judge_failure(result: dict[str, object]) -> None:
    from innolab.expbench.report import JUDGE_FAILURE

    if JUDGE_FAILURE in result:
        print(f"innolab expbench judge: written as a failed judgement: {result[JUDGE_FAILURE]}", file=sys.stderr)


def _expbench(args: argparse.Namespace) -> int:
    """stats, list, show and report of EXP-Bench."""
    from innolab.expbench import data, report

    try:
        if args.expbench_command == "report":
            categories = report.read_categories(args.categories) if args.categories else None
            table = report.report(Path(args.results_dir), categories)
            if args.json:
                print(json.dumps(json.loads(table.to_json(orient="records")), indent=2))
            else:
                print(table.to_string(index=False, float_format=lambda v: f"{v:.1f}"))
                print(f"n counts attempted tasks: {table['n'].sum()} attempted, {table['n_judged'].sum()} judged, "
                      f"{table['n_judge_failed'].sum()} judge failures (each counted as failed)")
            return 0
        if args.expbench_command == "download":
            from innolab.expbench.download import download

            print(download(Path(args.out), **({"base_url": args.base_url} if args.base_url else {})))
            return 0
        if args.expbench_command == "execute":
            from innolab.expbench.execute import execute

            outcome = execute(Path(args.workspace), args.image, timeout_s=args.timeout, network=args.network,
                              conclusion=args.conclusion)
            print(json.dumps(outcome.result(), indent=2))
            return 0 if outcome.execution_success else 1
        if args.expbench_command == "judge" and args.run:
            from innolab.expbench.judge import Judge
            from innolab.expbench.runs import judge_run
            from innolab.llm.cache import ResponseCache
            from innolab.llm.client import LLMClient
            from innolab.llm.settings import LLMSettings

            if not args.results:
                print("innolab expbench judge: --run needs --results DIR", file=sys.stderr)
                return 2
            client = LLMClient(LLMSettings.from_env(), ResponseCache(Path(args.run) / "judge_cache.sqlite"))
            written = judge_run(Path(args.run), Path(args.results), Judge(client), execute_image=args.execute,
                                timeout_s=args.timeout)
            _warn_judge_failure(json.loads(written.read_text(encoding="utf-8")))
            print(written)
            return 0
        tasks = data.load(args.data)
        if args.expbench_command == "prepare":
            from innolab.expbench import workspace

            try:
                prepared = workspace.prepare(data.get(tasks, args.task_id), Path(args.repo), Path(args.out))
            except workspace.MaskingError as error:
                print(json.dumps({"invalid_task": error.invalid_task}))
                return 1
            (prepared.root.parent / f"{prepared.root.name}.prompt.txt").write_text(
                workspace.prompt(data.get(tasks, args.task_id), prepared), encoding="utf-8")
            print(f"masked {', '.join(prepared.masked)}; prompt in {prepared.root.name}.prompt.txt")
            print(prepared.root)
            return 0
        if args.expbench_command == "judge":
            from innolab.expbench.judge import Judge, write_result
            from innolab.llm.cache import ResponseCache
            from innolab.llm.client import LLMClient
            from innolab.llm.settings import LLMSettings

            if not (args.task_id and args.out):
                print("innolab expbench judge: give ID and --out FILE (or --run RUN_DIR --results DIR)",
                      file=sys.stderr)
                return 2
            generated = json.loads(Path(args.gen).read_text(encoding="utf-8")) if args.gen else {
                "no_answer": "No answer found in eval gen after 1 iterations."}
            patch = Path(args.patch).read_text(encoding="utf-8") if args.patch else ""
            log = Path(args.log).read_text(encoding="utf-8") if args.log else ""
            out = Path(args.out)
            client = LLMClient(LLMSettings.from_env(), ResponseCache(out.parent / "judge_cache.sqlite"))
            result = Judge(client).judge(data.get(tasks, args.task_id), generated, patch, log)
            _warn_judge_failure(result)
            print(write_result(result, out))
            return 0
        if args.expbench_command == "stats":
            numbers = data.stats(tasks)
            if args.json:
                print(json.dumps(numbers, indent=2))
            else:
                print(f"{numbers['tasks']} tasks from {numbers['papers']} papers; types "
                      + ", ".join(f"{k} {v}" for k, v in numbers["types"].items()))
                for conference, part in numbers["conferences"].items():
                    print(f"  {conference}: {part['tasks']} tasks, {part['papers']} papers, "
                          + ", ".join(f"{k} {v}" for k, v in part["types"].items()))
        elif args.expbench_command == "list":
            for task in tasks:
                if args.type in (None, task.type):
                    print(f"{task.id:28} {task.type}  {task.question[:90]}")
        else:
            task = data.get(tasks, args.task_id)
            print(f"{task.id} ({task.type}); repository {task.repository or 'unknown'}")
            print(f"masked: {', '.join(task.mask_list)}")
            print(f"\nQuestion: {task.question}\n\nMethod: {task.method}")
            if task.agent_instructions:
                print(f"\nAgent instructions: {task.agent_instructions}")
    except (data.ExpBenchError, report.ReportError, ValueError, OSError, RuntimeError) as error:
        print(f"innolab expbench {args.expbench_command}: {error}", file=sys.stderr)
        return 2
    return 0


def _sweep_collect(args: argparse.Namespace) -> int:
    from innolab import results

    folder = Path(args.sweep_dir)
    if not folder.is_dir():
        print(f"innolab sweep collect: {folder} is not a folder", file=sys.stderr)
        return 2
    runs_path, trajectory_path = results.collect(folder)
    table = results.runs(folder)
    print(f"{len(table)} runs, {int(table['complete'].sum())} complete -> {runs_path}, {trajectory_path}",
          file=sys.stderr)
    print(runs_path)
    return 0


def _llm_serve(args: argparse.Namespace) -> int:
    import time

    from innolab.llm import local

    url = local.start()
    print(url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        return 0


def _llm_replay(args: argparse.Namespace) -> int:
    from innolab.runner import replay

    outcome = replay(Path(args.run_dir))
    print(outcome["run_dir"])
    return 0


def _novelty_distance(args: argparse.Namespace) -> int:
    from innolab.novelty.backends import NoveltyError, make_backend
    from innolab.novelty.scoring import comparable, default_backend

    name = args.backend or default_backend()
    try:
        backend = make_backend(name)
        a, b = (comparable(Path(f).read_text(), name) for f in (args.file_a, args.file_b))
        value = backend.distance(a, b)
    except (NoveltyError, OSError) as error:
        print(f"innolab novelty distance: {error}", file=sys.stderr)
        return 2
    print(f"back end: {backend.name}", file=sys.stderr)
    print(f"{value:.2f}")
    return 0


def _novelty_validate(args: argparse.Namespace) -> int:
    from innolab.novelty.backends import NoveltyError
    from innolab.novelty.triplets import validation_table

    models = [m for m in (args.models or "").split(",") if m]
    output = Path(args.output) if args.output else project_root() / "results" / "novelty" / "dagent_validation.csv"
    try:
        table = validation_table(args.backend or ["ast", "tfidf", "embedding"], output.parent / "cache",
                                 models=models, llm_limit=args.limit)
    except NoveltyError as error:
        print(f"innolab novelty validate: {error}", file=sys.stderr)
        return 2
    output.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(output, index=False)
    columns = ["backend", "kind", "n", "mean_closer", "mean_farther", "agreement", "alpha"]
    print(table[[c for c in columns if c in table.columns]].to_string(index=False))
    print(output)
    return 0


def _novelty_card(args: argparse.Namespace) -> int:
    from innolab.novelty.cards import extract_card

    card = extract_card(Path(args.file).read_text())
    print(json.dumps({"summary": card.summary, "pseudocode": card.pseudocode}, indent=2))
    return 0


def _score(args: argparse.Namespace) -> int:
    from innolab.scoring import ScoringError, score_run

    try:
        row = score_run(Path(args.run_dir), novelty_backend=args.backend)
    except ScoringError as error:
        print(f"innolab score: {error}", file=sys.stderr)
        return 2
    print(json.dumps(row, default=str))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="innolab",
        description="Measure the innovation potential of AI agents: performance gain and novelty (InnoGym).",
    )
    parser.add_argument("--version", action="version", version=f"innolab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    rep = commands.add_parser(
        "reproduce",
        help="run the analysis notebooks with papermill and write results/ and figures/",
        description="Execute every analysis notebook headless (papermill); executed copies go to "
        "results/notebooks/ beside the outputs.",
    )
    rep.add_argument("--only", action="append", metavar="NAME",
                     help="run only this notebook (e.g. 10_main_results or main_results); repeatable")
    rep.add_argument("--output", metavar="DIR", help="root for results/ and figures/ (default: the repository)")
    rep.add_argument("--no-sweep", dest="sweep", action="store_false",
                     help="skip the offline reference sweep (data/sweeps/offline.yaml) the analysis notebooks read")
    rep.add_argument("--no-demos", dest="demos", action="store_false",
                     help="skip the short demo run of each scaffold on the embedded model")
    rep.add_argument("--demo-budget", default="60s", help="wall clock of each demo run (default 60s)")
    rep.set_defaults(handler=_reproduce)

    tasks = commands.add_parser("tasks", help="improvable tasks: list, show, check, solve, score")
    sub = tasks.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="the runnable tasks (built-in and $INNOLAB_TASK_PATH)")
    lst.add_argument("--ibench", action="store_true", help="list the paper's 18 iBench tasks instead")
    lst.set_defaults(handler=_tasks_list)
    show = sub.add_parser("show", help="a task's metadata, leaderboard and description")
    show.add_argument("task", metavar="ID")
    show.set_defaults(handler=_tasks_show)
    chk = sub.add_parser("check", help="standardisation checks (reproduction, baseline gap, method cards)")
    chk.add_argument("task", metavar="ID", nargs="?")
    chk.add_argument("--all", action="store_true", help="check every task")
    chk.add_argument("--full", action="store_true", help="rerun solutions in full rather than --quick mode")
    chk.set_defaults(handler=_tasks_check)
    solve = sub.add_parser("solve", help="run a known solution and score its output")
    solve.add_argument("task", metavar="ID")
    solve.add_argument("--solution", required=True, metavar="NAME")
    solve.add_argument("--quick", action="store_true", help="the fast mode used by the test suite")
    solve.add_argument("--seed", type=int, default=0)
    solve.add_argument("--time-limit", type=float, metavar="S", help="wall-clock limit the solver honours")
    solve.add_argument("--out", metavar="FILE", help="where to write the submission")
    solve.add_argument("--full", action="store_true",
                       help="re-record: run solve.py in full and --quick (seed, time limit as recorded unless "
                            "given), write solution.json and score.json with the recording's provenance")
    solve.add_argument("--kind", choices=["reference", "baseline"], help="with --full, for a new solution")
    solve.set_defaults(handler=_tasks_solve)
    score = sub.add_parser("score", help="score a submission file with the hidden evaluator")
    score.add_argument("task", metavar="ID")
    score.add_argument("file", metavar="FILE")
    score.add_argument("--json", action="store_true", help="print one JSON object")
    score.set_defaults(handler=_tasks_score)

    sandbox = commands.add_parser("sandbox", help="sandboxes: build the offline image, run a command")
    sandbox_sub = sandbox.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    build = sandbox_sub.add_parser("build-image", help="build the offline base image (debootstrap + docker import)")
    build.add_argument("--tag", default="innolab/base:latest")
    build.set_defaults(handler=_sandbox_build_image)
    sexec = sandbox_sub.add_parser("exec", help="run one command in a fresh sandbox of a task, as an agent would")
    sexec.add_argument("--task", required=True, metavar="ID")
    sexec.add_argument("--runtime", choices=["local", "docker"], default="local")
    sexec.add_argument("--image", default=None, help="docker image (default innolab/base:latest)")
    sexec.add_argument("--timeout", type=float, default=120.0)
    sexec.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD...")
    sexec.set_defaults(handler=_sandbox_exec)
    clean = sandbox_sub.add_parser("clean", help="remove what ended runs left: sandbox and validator folders in the "
                                   "temporary folder and their processes (and, with --docker, containers, volumes)")
    clean.add_argument("--docker", action="store_true", help="also Docker containers and volumes of ended runs")
    clean.set_defaults(handler=_sandbox_clean)

    run = commands.add_parser("run", help="run an agent on a task; --resume continues a killed run",
                              description="Run one agent on one task in a sandbox; prints the run directory last.")
    run.add_argument("--agent", choices=["aide", "mlab", "codeact"])
    run.add_argument("--task", metavar="ID")
    run.add_argument("--model", help="model name (default: $INNOLAB_LLM_MODEL or the embedded smollm2)")
    run.add_argument("--temperature", type=float)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--budget", default="10m", help="wall clock, e.g. 90s, 10m, 2h (default 10m)")
    run.add_argument("--max-steps", type=int, default=None)
    run.add_argument("--runtime", choices=["local", "docker"], default="local")
    run.add_argument("--innovation-prompt", action="store_true", help="ask explicitly for a novel method")
    run.add_argument("--initial-solution", metavar="FILE", help="start from this prior solution's code")
    run.add_argument("--run-dir", metavar="DIR", help="where to write the run (default results/runs/<id>)")
    run.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint")
    run.add_argument("--repo", metavar="PATH", help="an EXP-Bench task's repository clone (--task expbench:<id>)")
    run.add_argument("--expbench-data", metavar="DIR",
                     help="the EXP-Bench data for an expbench: task (default $INNOLAB_EXPBENCH_DIR)")
    run.add_argument("--novelty", default="default", choices=["default", "ast", "tfidf", "embedding", "llm", "none"],
                     help="back end for N when the run is scored at its end (default: the DAGENT judge where "
                          "$INNOLAB_LLM_BASE_URL is set, else ast; none: skip N)")
    run.set_defaults(handler=_run)

    view = commands.add_parser("view", help="a run as one self-contained HTML file (timeline, steps, journal)")
    view.add_argument("run_dir", metavar="RUN_DIR")
    view.add_argument("--html", metavar="OUT.html", help="where to write it (default RUN_DIR/view.html)")
    view.set_defaults(handler=_view)

    exb = commands.add_parser("expbench", help="EXP-Bench: dataset statistics, tasks, and reports of judged results")
    exb_sub = exb.add_subparsers(dest="expbench_command", metavar="ACTION", required=True)
    for name, text in (("stats", "task, paper and type counts recomputed from the data"),
                       ("list", "one line per task: id, type, question"), ("show", "one task")):
        sub = exb_sub.add_parser(name, help=text)
        sub.add_argument("--data", metavar="DIR", help="the EXP-Bench data (default $INNOLAB_EXPBENCH_DIR)")
        sub.set_defaults(handler=_expbench)
    exb_sub.choices["stats"].add_argument("--json", action="store_true")
    exb_sub.choices["list"].add_argument("--type", choices=["T1", "T2", "T3"])
    exb_sub.choices["show"].add_argument("task_id", metavar="ID", help="<conference>/<paper id>/<index>")
    prep = exb_sub.add_parser("prepare", help="a task's masked workspace from a local clone, and its agent prompt")
    prep.add_argument("task_id", metavar="ID")
    prep.add_argument("--repo", required=True, metavar="PATH", help="a local clone of the task's repository")
    prep.add_argument("--out", required=True, metavar="DIR", help="the workspace to make (a new folder)")
    prep.add_argument("--data", metavar="DIR")
    prep.set_defaults(handler=_expbench)
    jdg = exb_sub.add_parser("judge", help="judge one task's outputs (M, D, C, I) with the configured LLM")
    jdg.add_argument("task_id", metavar="ID", nargs="?")
    jdg.add_argument("--gen", metavar="FILE", help="the agent's {design, conclusion} JSON (absent: no answer)")
    jdg.add_argument("--patch", metavar="FILE")
    jdg.add_argument("--log", metavar="FILE", help="the agent's log, for the monitor")
    jdg.add_argument("--out", metavar="FILE", help="<prefix>_eval_judge.json")
    jdg.add_argument("--run", metavar="RUN_DIR", help="judge a gym run of an EXP-Bench task (its kept artefacts)")
    jdg.add_argument("--results", metavar="DIR", help="with --run: where <conf>/<paper>/<agent>/<model>/ goes")
    jdg.add_argument("--execute", metavar="IMAGE", help="with --run: also run E in a fresh container of IMAGE")
    jdg.add_argument("--timeout", type=float, default=3600.0, help="E's time limit in seconds (default 3600)")
    jdg.add_argument("--data", metavar="DIR")
    jdg.set_defaults(handler=_expbench)
    exe = exb_sub.add_parser("execute", help="the execution check E of a workspace in Docker")
    exe.add_argument("workspace", metavar="DIR")
    exe.add_argument("--image", required=True, help="the image the agent's workspace ran in")
    exe.add_argument("--timeout", type=float, default=3600.0, help="seconds (default 3600)")
    exe.add_argument("--network", choices=["none", "bridge", "host"], default="none")
    exe.add_argument("--conclusion", help="check that the files this conclusion cites were written by the run")
    exe.set_defaults(handler=_expbench)
    dwn = exb_sub.add_parser("download", help="upstream's data at the pinned commit, each file checked by sha256")
    dwn.add_argument("--out", required=True, metavar="DIR", help="where to put the data (then --data DIR)")
    dwn.add_argument("--base-url", help="a mirror of upstream's benchmark/exp_bench folder (default: the pinned one)")
    dwn.set_defaults(handler=_expbench)
    rpt = exb_sub.add_parser("report", help="judged results aggregated per (agent, model), with denominators")
    rpt.add_argument("results_dir", metavar="DIR", help="holds <conf>/<paper>/<agent>/<model>/*_eval_judge.json")
    rpt.add_argument("--json", action="store_true")
    rpt.add_argument("--categories", metavar="CSV", help="per category too: a CSV with columns paper (<conf>/<paper "
                     "id> or the id) and category (EXP-Bench's data carry none)")
    rpt.set_defaults(handler=_expbench)

    swp = commands.add_parser("sweep", help="sweeps of agent runs: run a YAML spec on Dask, status, collect tables")
    swp_sub = swp.add_subparsers(dest="sweep_command", metavar="ACTION", required=True)
    srun = swp_sub.add_parser("run", help="run every configuration of SPEC that has no finished run; prints the "
                              "sweep folder last", description="Each configuration executes notebooks/"
                              "20_agent_run.ipynb (papermill) as one Dask task into DIR/runs/<config id>/; a rerun "
                              "skips finished configurations and resumes interrupted ones.")
    srun.add_argument("spec", metavar="SPEC", help="a YAML sweep spec (see data/sweeps/)")
    srun.add_argument("--workers", type=int, default=None,
                      help="LocalCluster worker processes (default: cores / the runtime's CPU limit)")
    srun.add_argument("--scheduler", metavar="ADDRESS", help="use a running Dask scheduler, e.g. tcp://host:8786")
    srun.add_argument("--output", metavar="DIR", help="the sweep folder (default results/sweeps/<name>/)")
    srun.add_argument("--set", action="append", default=[], metavar="K=V",
                      help="override a base field (or name, seeds), e.g. --set budget=20s; repeatable")
    srun.set_defaults(handler=_sweep_run)
    sstat = swp_sub.add_parser("status", help="finished, interrupted, failed and pending configurations")
    sstat.add_argument("sweep_dir", metavar="DIR")
    sstat.add_argument("--json", action="store_true")
    sstat.set_defaults(handler=_sweep_status)
    scol = swp_sub.add_parser("collect", help="rebuild DIR/runs.parquet and DIR/trajectory.parquet from the runs")
    scol.add_argument("sweep_dir", metavar="DIR")
    scol.set_defaults(handler=_sweep_collect)

    llm = commands.add_parser("llm", help="the LLM layer: serve the embedded model, replay a run from its cache")
    llm_sub = llm.add_subparsers(dest="llm_command", metavar="ACTION", required=True)
    serve = llm_sub.add_parser("serve", help="serve SmolLM2-135M-Instruct on 127.0.0.1; prints the base URL")
    serve.set_defaults(handler=_llm_serve)
    rep_llm = llm_sub.add_parser("replay", help="re-run a finished run from its response cache, no endpoint")
    rep_llm.add_argument("run_dir", metavar="RUN_DIR")
    rep_llm.set_defaults(handler=_llm_replay)

    nov = commands.add_parser("novelty", help="method cards and novelty distances (DAGENT and others)")
    nov_sub = nov.add_subparsers(dest="novelty_command", metavar="ACTION", required=True)
    dist = nov_sub.add_parser("distance", help="distance 0-100 between two method descriptions or programs")
    dist.add_argument("--backend", choices=["ast", "llm", "embedding", "tfidf"], default=None,
                      help="default: llm where $INNOLAB_LLM_BASE_URL is set, else ast (prints the distance last)")
    dist.add_argument("file_a", metavar="FILE_A")
    dist.add_argument("file_b", metavar="FILE_B")
    dist.set_defaults(handler=_novelty_distance)
    val = nov_sub.add_parser("validate", help="every back end on the project's full triplet set: agreement, "
                             "means, Spearman where human scores exist, Krippendorff's alpha with >= 2 judges")
    val.add_argument("--backend", action="append", choices=["ast", "llm", "embedding", "tfidf"],
                     help="repeat for several (default: ast, tfidf, embedding)")
    val.add_argument("--models", help="comma-separated judge models for the llm back end (>= 2: alpha)")
    val.add_argument("--limit", type=int, help="judge only the first N triplets of each kind (llm)")
    val.add_argument("--output", help="CSV path (default results/novelty/dagent_validation.csv)")
    val.set_defaults(handler=_novelty_validate)
    card = nov_sub.add_parser("card", help="the method card (summary, pseudocode) of a solution file, by the LLM")
    card.add_argument("file", metavar="FILE")
    card.set_defaults(handler=_novelty_card)

    score_cmd = commands.add_parser("score", help="V, G, ratio and N of a finished run (scored once: a scored run "
                                    "prints its recorded score)")
    score_cmd.add_argument("run_dir", metavar="RUN_DIR")
    score_cmd.add_argument("--backend", choices=["default", "ast", "llm", "embedding", "tfidf"], default="default",
                           help="novelty back end when the run is not yet scored (default: llm where a judge "
                                "endpoint is configured, else ast)")
    score_cmd.set_defaults(handler=_score)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    from innolab.tasks.model import TaskError

    try:
        return int(args.handler(args))
    except TaskError as error:
        print(f"innolab: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
