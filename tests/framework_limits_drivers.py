"""Framework drivers for the gateway's limits and the framework process's confinement (tests).

`spend`: ask the gateway for completions until it refuses one, then say what it answered.
`probe`: try what a framework must not be able to do (read the runner's environment and the
real key, write the run folder, read the tasks' known solutions, call the embedded model without
the gateway), and report each attempt (`framework_counts.json`, which innolab copies to the run).
The bridge runs `python -m <driver>`: each has a module of its own (tests/framework_spend.py,
tests/framework_probe.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from innolab.agents.frameworks._driver import run_from_environment, write_counts

SECRET = "sk-probe-secret-0123456789"  # the runner's "real" key in the probe test


def build_bridge(config: Any, run_dir: Path) -> Any:
    """The policy of a test run of the bridge: `policy_args["driver"]` run as its framework."""
    from innolab.agents.bridge import FrameworkPolicy
    from innolab.rundir import RunDir

    args = dict(config.policy_args)
    return FrameworkPolicy(args.pop("driver"), args, settings=config.llm,
                           cache_path=str(RunDir(run_dir).llm_cache))


def execute_bridge(run_dir: str) -> None:
    """`python -c ...execute_bridge(RUN_DIR)`: execute a prepared test run of the bridge."""
    from innolab.gym.run import execute

    execute(Path(run_dir), build_bridge, show_progress=False)


def spend() -> None:
    """Chat with the gateway until it refuses (402), print its answer; exit normally."""
    run = run_from_environment()
    headers = {"Authorization": f"Bearer {run.key}"}
    calls = 0
    while True:
        reply = httpx.post(f"{run.base_url}/chat/completions", headers=headers, timeout=120,
                           json={"model": run.model,
                                 "messages": [{"role": "user", "content": f"call {calls}"}]})
        if reply.status_code != 200:
            print(f"gateway answered {reply.status_code}: {reply.text}", flush=True)
            write_counts(calls, refused_status=reply.status_code,
                         refused_message=reply.json()["error"]["message"])
            return
        calls += 1


def _attempt(action: Callable[[], object]) -> str:
    try:
        return f"done: {action()}"[:300]
    except Exception as error:  # what stopped it, reported
        return f"refused: {type(error).__name__}: {error}"[:300]


def _append(path: Path, text: str) -> int:
    with path.open("a", encoding="utf-8") as handle:
        return handle.write(text)


def _git(folder: Path, *args: str) -> str:
    """A git command in `folder`; its output, or an error where git fails."""
    import subprocess

    done = subprocess.run(["git", "-c", f"safe.directory={folder}", "-C", str(folder), *args],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or not done.stdout.strip():
        raise OSError(f"git {args[0]}: status {done.returncode}: {done.stderr.strip()[:200]}")
    return done.stdout


def probe() -> None:
    """Try each thing a framework must not do; report what happened."""
    run_from_environment()
    parent = os.getppid()
    report: dict[str, object] = {"uid": os.geteuid()}
    report["parent_environ"] = _attempt(
        lambda: SECRET in Path(f"/proc/{parent}/environ").read_text(errors="replace"))
    report["parent_memory"] = _attempt(lambda: len(Path(f"/proc/{parent}/mem").read_bytes()))
    report["own_environ_has_secret"] = any(SECRET in v for v in os.environ.values())
    run_dir = Path(os.environ["PROBE_RUN_DIR"])
    report["write_run_folder"] = _attempt(
        lambda: (run_dir / "planted.txt").write_text("planted"))
    report["append_trace"] = _attempt(lambda: _append(run_dir / "trace.jsonl", "{}\n"))
    import innolab

    solutions = Path(innolab.__file__).parent / "tasks" / "builtin" / "circle-packing-26"
    report["read_solutions"] = _attempt(
        lambda: sorted(p.name for p in (solutions / "solutions").iterdir()))
    report["root_home"] = _attempt(lambda: sorted(os.listdir("/root")))
    # the checkout's history, results and data hold the same solutions, V* and earlier scores
    checkout = Path(innolab.__file__).resolve().parents[1]
    report["git_show_solution"] = _attempt(lambda: _git(
        checkout, "show", "HEAD:innolab/tasks/builtin/circle-packing-26/task.yaml"))
    report["git_ls_tree_solutions"] = _attempt(lambda: _git(
        checkout, "ls-tree", "-r", "--name-only", "HEAD", "innolab/tasks/builtin"))
    report["git_folder"] = _attempt(lambda: sorted(os.listdir(checkout / ".git")))
    report["read_scores"] = _attempt(lambda: [
        p.read_text()[:40] for p in (checkout / "results").rglob("score.json")][:1] or
        sorted(os.listdir(checkout / "results")))
    report["read_data"] = _attempt(lambda: sorted(os.listdir(checkout / "data")))
    report["read_solvers"] = _attempt(
        lambda: len((checkout / "innolab" / "tasks" / "solvers" / "circles.py").read_text()))
    embedded = os.environ.get("PROBE_EMBEDDED_URL")
    if embedded:
        key_file = Path(os.environ["PROBE_EMBEDDED_KEY_FILE"])
        report["embedded_key_file"] = _attempt(lambda: key_file.read_text())
        report["embedded_without_key"] = httpx.post(
            f"{embedded}/chat/completions", timeout=60,
            json={"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}).status_code
    write_counts(0, report=json.dumps(report))
