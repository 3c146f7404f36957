"""`innolab run`, `score` and `view`: start or resume a run, score it, view it as HTML."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from innolab.cli.common import Commands, fail, folder_problem

# The command line's own defaults: no task and no agent unless given (a run says which agent on
# which task); every other default is the run schema's.
RUN_DEFAULTS: dict[str, str | None] = {"task": None, "agent": None}
BUSY = 4  # the exit status of a run another process is executing (innolab.runlock.RunBusy)
# `innolab run`'s exit status by how the run ended: a spent budget ("wall_clock", "steps",
# "tokens", "cost"), an agent that finished or stalled are results (0); a model that failed (it
# stayed unreachable through its retries, or refused the request) is a failure (5), an agent that
# failed another (6). 2 is bad input, 4 a busy run.
MODEL_FAILED = 5
AGENT_FAILED = 6
END_STATUSES = {"llm_error": MODEL_FAILED, "agent_error": AGENT_FAILED}
RUN_EPILOG = (
    "exit status: 0 the run ended with a result (its budget spent, the agent finished or "
    "stalled); 2 bad input (the error says which option); 4 another process executes the run "
    "(--wait waits); 5 the model failed (llm_error; the cause, the endpoint and the attempts "
    "are printed): it could not be reached through its retries, also where the run's time ran "
    "out meanwhile (rerun when it is back, or --resume), or it refused the request: the key "
    "(401/403: check the key's variable), the model's name (404: name one it serves) or the "
    "request (400: the server's message) (fix what the cause names, then rerun); 6 the agent "
    "failed (agent_error: an external framework raised or exited in error; the error's last line "
    "is printed, its traceback is in the trace's agent_error event; its workspace and "
    "submissions are kept and scored)"
)


# the commands `register` adds, with their help (innolab.cli.build_parser adds them by these alone
# where another command is about to be parsed: the run schema is slow to import)
COMMANDS = {
    "run": "run an agent on a task; --resume continues a killed run",
    "view": "a run as one self-contained HTML file (timeline, steps, journal)",
    "score": "V, G, ratio and N of a finished run (scored once: a scored run prints its recorded "
             "score)",
}


def register(commands: Commands) -> None:
    """Add `run` (its options derived from the run schema), `view` and `score`.

    Args:
        commands: The parent parser's subparsers.
    """
    from innolab.novelty.registry import BACKENDS
    from innolab.runspec import add_options, novelty_choices

    run_cmd = commands.add_parser(
        "run",
        help=COMMANDS["run"],
        description="Run one agent on one task in a sandbox; prints the run "
        "directory last. Every setting of the run schema is an option.",
        epilog=RUN_EPILOG,
    )
    add_options(run_cmd, defaults=RUN_DEFAULTS)
    run_cmd.add_argument(
        "--run-dir", metavar="DIR", help="where to write the run (default results/runs/<id>)"
    )
    run_cmd.add_argument(
        "--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint"
    )
    run_cmd.add_argument(
        "--wait",
        action="store_true",
        help="with --resume: wait while another process executes the run, then report it "
        "(default: refuse, naming that process, exit status 4)",
    )
    run_cmd.add_argument(
        "--repo", metavar="PATH", help="an EXP-Bench task's repository clone (--task expbench:<id>)"
    )
    run_cmd.add_argument(
        "--expbench-data",
        metavar="DIR",
        help="the EXP-Bench data for an expbench: task (default $INNOLAB_EXPBENCH_DIR)",
    )
    run_cmd.add_argument(
        "--novelty",
        default="default",
        choices=novelty_choices(),
        help="back end for N when the run is scored at its end (default: the DAGENT judge "
        "where $INNOLAB_LLM_BASE_URL is set, else ast; none: skip N)",
    )
    run_cmd.set_defaults(handler=run)

    view = commands.add_parser("view", help=COMMANDS["view"])
    view.add_argument("run_dir", metavar="RUN_DIR")
    view.add_argument(
        "--html", metavar="OUT.html", help="where to write it (default RUN_DIR/view.html)"
    )
    view.set_defaults(handler=view_run)

    score_cmd = commands.add_parser("score", help=COMMANDS["score"])
    score_cmd.add_argument("run_dir", metavar="RUN_DIR")
    score_cmd.add_argument(
        "--backend",
        choices=["default", *BACKENDS],
        default="default",
        help="novelty back end when the run is not yet scored (default: llm where a judge "
        "endpoint is configured, else ast)",
    )
    score_cmd.add_argument(
        "--wait",
        action="store_true",
        help="wait while another process executes or scores the run (default: refuse, naming "
        "that process, exit status 4)",
    )
    score_cmd.add_argument(
        "--as-of",
        metavar="DATE|run|today",
        help="read the score against V* as of a date (YYYY-MM-DD), the day the run started "
        "(run) or today; prints G, ratio and beats_v_star then, and leaves score.json as "
        "recorded",
    )
    score_cmd.set_defaults(handler=score)


def run(args: argparse.Namespace) -> int:
    """Start a run of the given settings (or resume one), print its summary, then its folder."""
    from innolab import runner
    from innolab.gym.budget import BudgetError
    from innolab.gym.run import RunError
    from innolab.llm import LLMError
    from innolab.runlock import RunBusy
    from innolab.runspec import settings_from_args

    novelty = None if args.novelty == "none" else args.novelty
    problem = folder_problem(args.resume, "run") if args.resume else None
    if problem:
        return fail("run", f"--resume: {problem}")
    try:
        if args.resume:
            outcome = runner.resume(Path(args.resume), novelty=novelty, wait=args.wait)
        else:
            if not args.agent or not args.task:
                return fail("run", "give --agent and --task (or --resume RUN_DIR)")
            task_options = {
                k: v for k, v in (("repo", args.repo), ("data", args.expbench_data)) if v
            }
            settings = settings_from_args(args, defaults=RUN_DEFAULTS, task_options=task_options)
            config = runner.resolve(settings)  # type: ignore[arg-type]
            outcome = runner.start(
                config, Path(args.run_dir) if args.run_dir else None, novelty=novelty
            )
    except RunBusy as error:
        fail("run", f"{error} (or give --wait)")
        return BUSY
    except (RunError, BudgetError, LLMError, ValueError) as error:
        return fail("run", error)
    from innolab.traces import summary

    print(summary(outcome["run_dir"]), file=sys.stderr)
    for line in score_lines(Path(outcome["run_dir"])):
        print(line, file=sys.stderr)
    print(outcome["run_dir"])
    return END_STATUSES.get(str(outcome.get("reason")), 0)


def score_lines(run_dir: Path) -> list[str]:
    """A scored run's V, G, ratio, N and N_out, each with its status, as a person reads them.

    Args:
        run_dir: The run folder.

    Returns:
        Two lines (none for a run not scored): V, G and ratio against V* (and whether it beats
        it); N (its back end and status: `not_reproducing` where the stored program gave another
        result when re-run alone, with the re-run's `source_status`) and N_out (its nearest
        known output, a known solution it re-derives).
    """
    from innolab.rundir import RunDir

    score = RunDir(run_dir).read_score()
    if score is None:
        return []

    def num(value: object, spec: str) -> str:
        return "-" if not isinstance(value, int | float) else format(value, spec)

    if score.get("valid"):
        beats = "beats V*" if score.get("beats_v_star") else "below V*"
        first = (f"V {num(score.get('score'), '.10g')} (valid), "
                 f"V* {num(score.get('v_star'), '.10g')}, G {num(score.get('gain'), '.4g')}, "
                 f"ratio {num(score.get('ratio'), '.4g')} ({beats})")
    else:
        errors = "; ".join(score.get("errors") or [])[:200]
        first = (f"V 0 (invalid: {errors or 'no valid submission'}), ratio -1 (the paper's "
                 "imputation)")
    status = score.get("novelty_status") or "not recorded"
    source = score.get("source_status")
    flag = (f" FLAGGED: its program {source} when re-run alone"
            if source not in (None, "reproduces") and score.get("valid") else "")
    nearest = f", nearest {score['nearest_known']}" if score.get("nearest_known") else ""
    out_note = (f", re-derives {score['rederived_known']}" if score.get("rederived_known")
                else f", nearest {score['novelty_out_nearest']}"
                if score.get("novelty_out_nearest") else "")
    out_status = "ok" if score.get("novelty_out") is not None else (
        score.get("novelty_out_note") or "not computed")
    second = (f"N {num(score.get('novelty'), '.3g')} ({score.get('novelty_backend') or 'none'}, "
              f"{status}{nearest}){flag}; N_out {num(score.get('novelty_out'), '.3g')} "
              f"({out_status}{out_note})")
    return [first, second]


def view_run(args: argparse.Namespace) -> int:
    """Write a run's HTML view; print its path."""
    from innolab.rundir import RunDir
    from innolab.traces import TraceError
    from innolab.viewer.export import export_html

    folder = RunDir(Path(args.run_dir))
    problem = folder_problem(args.run_dir, "run")
    if problem:
        return fail("view", problem)
    try:
        print(export_html(folder.root, Path(args.html) if args.html else folder.root / "view.html"))
    except (TraceError, OSError, ValueError) as error:
        return fail("view", error)
    return 0


def score(args: argparse.Namespace) -> int:
    """Score a finished run once (a scored run: its recorded score); print the row as JSON.

    With --as-of, the score (recorded first when the run was not scored yet) is read against V*
    as of that date: the reading is printed as JSON and summed up in one line on stderr; the
    record is not rewritten.

    Args:
        args: run_dir, backend and as_of.

    Returns:
        0, or 2 with the reason when the run cannot be scored or read as of that date, or 4 when
        another process holds the run (without --wait).
    """
    from innolab.runlock import RunBusy
    from innolab.scoring import ScoringError, read_score, score_run

    problem = folder_problem(args.run_dir, "run")
    if problem:
        return fail("score", problem)
    try:
        row = score_run(Path(args.run_dir), novelty_backend=args.backend, wait=args.wait)
        if args.as_of is not None:
            row = read_score(Path(args.run_dir), as_of=args.as_of)
            print(as_of_line(row), file=sys.stderr)
    except RunBusy as error:
        fail("score", f"{error} (or give --wait)")
        return BUSY
    except ScoringError as error:
        return fail("score", error)
    print(json.dumps(row, default=str))
    return 0


def as_of_line(reading: dict) -> str:
    """One line for a score read as of a date: V* and who holds it, G, ratio, beats_v_star.

    Args:
        reading: innolab.scoring.read_score's reading (as of a date).

    Returns:
        The line, with the recorded V* and its date for comparison.
    """
    entry, recorded = reading["v_star_entry"], reading["recorded"]
    gain = "none" if reading["gain"] is None else f"{reading['gain']:.6g}"
    then = recorded["v_star_as_of"]
    def value(number: object) -> str:  # 10 significant digits: enough beside V*, never 17
        return f"{number:.10g}" if isinstance(number, int | float) else str(number)

    return (
        f"{reading['task']} as of {reading['v_star_as_of']}: V* {value(reading['v_star'])} "
        f"({entry['holder']}, {entry['date']}); V {value(reading['score'])}, G {gain}, "
        f"ratio {reading['ratio']:.6g}, beats_v_star {str(reading['beats_v_star']).lower()} "
        f"(recorded: V* {value(recorded['v_star'])}, "
        + (f"as of {then})" if then else "its date not recorded)")
    )
