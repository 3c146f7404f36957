"""A newcomer's first hour meets no dead end: errors say their cause where the user looks (an
unreachable endpoint, a widget's click, a bad path), a sweep shows its plan before it spends,
scoring says what it does, the committed reference sweep opens in every tool, and figures do not
mislead."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from tests.fake_llm import FakeLLM

ROOT = Path(__file__).resolve().parents[1]
OFFLINE = ROOT / "results" / "sweeps" / "offline"


def innolab(*args: str, env: dict | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "innolab.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --------------------------------------------------------------- errors with their cause, on stderr


def test_an_unreachable_endpoint_is_said_with_its_cause_host_and_attempts(tmp_path):
    from innolab.viewer.model import load_run
    from innolab.viewer.render import header_html

    port = closed_port()
    done = innolab("run", "--agent", "codeact", "--task", "circle-packing-26", "--base-url",
                   f"http://127.0.0.1:{port}/v1", "--model", "m", "--budget", "60s",
                   "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 5, done.stderr  # the model could not be reached
    # each failed attempt said while it happens, with the wait before the next
    retries = re.findall(rf"model call to 127\.0\.0\.1:{port}: attempt (\d) of 5 failed "
                         r"\(APIConnectionError: Connection error\.\); backing off, trying again "
                         r"in [\d.]+ s", done.stderr)
    assert retries == ["1", "2", "3", "4"], done.stderr
    ended = re.search(rf"ended: llm_error \(the model at 127\.0\.0\.1:{port} could not be reached: "
                      r"Connection error\.; 5 attempts over ([\d.]+) s\)", done.stderr)
    assert ended, done.stderr
    assert done.stdout.strip() == str(tmp_path / "run")  # the run folder, last, on stdout
    header = header_html(load_run(tmp_path / "run"))  # RunView's header and the HTML export's
    assert f'<td class="cause">the model at 127.0.0.1:{port} could not be reached' in header
    assert "5 attempts" in header
    assert "exit status" in innolab("run", "--help").stdout  # the statuses, documented


def test_a_model_down_longer_than_the_budget_is_a_failure_not_a_result(tmp_path):
    """The clock runs out while the retries go on: the run still ends llm_error (exit 5), its
    cause and host said, so that a sweep counts it failed and --retry-failed runs it again."""
    port = closed_port()
    done = innolab("run", "--agent", "codeact", "--task", "circle-packing-26", "--base-url",
                   f"http://127.0.0.1:{port}/v1", "--model", "m", "--budget", "3s",
                   "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 5, done.stderr
    assert re.search(rf"ended: llm_error \(the model at 127\.0\.0\.1:{port} could not be "
                     r"reached: Connection error\.; \d attempts? over [\d.]+ s; the run's time ran "
                     r"out while it was retried\)", done.stderr), done.stderr
    assert "ended: wall_clock" not in done.stderr


@pytest.mark.parametrize("fault, says", [
    ("401", "refused the key (HTTP 401: Incorrect API key provided.): check "
            "INNOLAB_LLM_API_KEY"),
    ("404", "does not know the model 'nope' (HTTP 404: The model `nope` does not exist.): name "
            "a model it serves"),
    ("400", "refused the request (HTTP 400: This model's maximum context length is 4096 tokens"),
])
def test_a_refused_request_says_what_was_refused_not_that_the_model_was_down(fault, says,
                                                                             tmp_path):
    with FakeLLM(faults=[fault]) as server:
        done = innolab("run", "--agent", "codeact", "--task", "circle-packing-26", "--base-url",
                       server.base_url, "--model", "nope", "--budget", "60s",
                       "--run-dir", str(tmp_path / "run"))
        requests = len(server.log)
    assert done.returncode == 5, done.stderr
    assert requests == 1  # refused: not retried
    host = server.base_url.split("//")[1].removesuffix("/v1")
    (ended,) = [line for line in done.stderr.splitlines() if "ended: llm_error" in line]
    assert f"(the model at {host} {says}" in ended, ended
    assert "could not be reached" not in ended and not re.search(r"attempt \d of", done.stderr)
    epilog = innolab("run", "--help").stdout
    assert "refused the request" in " ".join(epilog.split())


def test_an_agent_error_says_its_cause_in_the_summary_and_the_headers(tmp_path):
    from innolab.traces import AgentError, RunFinished, RunStarted, TraceWriter, summary
    from innolab.viewer.model import load_run
    from innolab.viewer.render import header_html

    run = tmp_path / "run"
    run.mkdir()
    config = {"agent": "smolagents", "task": "circle-packing-26", "endpoint": "127.0.0.1:9"}
    (run / "config.json").write_text(json.dumps(config))
    writer = TraceWriter(run)
    writer.emit(RunStarted(step=0, config=config))
    writer.emit(AgentError(step=1, error="the framework's process exited with status 1",
                           traceback="Traceback (most recent call last):\n  File \"x.py\"\n"
                                     "RuntimeError: boom: the framework failed\n"))
    writer.emit(RunFinished(step=1, reason="agent_error", budget={}, final_submission=None,
                            dev_valid=False, dev_score=None))
    cause = ("the agent failed: the framework's process exited with status 1: RuntimeError: boom: "
             "the framework failed (its traceback is in the trace's agent_error event)")
    assert summary(run).endswith(f"ended: agent_error ({cause})")  # what innolab run prints
    assert f'<td class="cause">{cause}' in header_html(load_run(run)).replace("&#x27;", "'")


def test_scoring_says_its_stages_and_the_last_lines_give_the_scores_with_their_statuses(tmp_path):
    with FakeLLM() as server:
        done = innolab("run", "--agent", "codeact", "--task", "circle-packing-26", "--base-url",
                       server.base_url, "--model", "fake", "--budget", "120s", "--max-steps", "6",
                       "--requests-per-minute", "20", "--run-dir", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    # a wait for the endpoint's limits is said (a request every 3 s)
    assert re.search(r"model call to 127\.0\.0\.1:\d+: waited [\d.]+ s for the endpoint's limits "
                     r"\(requests_per_minute 20, this run's own\)", done.stderr), done.stderr
    assert "shared by the sweep's runs" not in done.stderr  # one run: no sweep
    lines = done.stderr.splitlines()
    stages = [line for line in lines if line.startswith("scoring ")]
    assert "1 submission to assess (1 improving candidate, the final submission among them)" \
        in stages[0] and "re-run check" in stages[0]
    assert any(re.search(r"\[1/1\] submission/\S+: valid, V [\d.]+; re-run check", s)
               for s in stages), stages
    assert any(re.search(r"re-run reproduces \([\d.]+ s\); N \(method, ast\) \.\.\.", s)
               for s in stages), stages
    assert any("N_out (outcome) ..." in s for s in stages) and "N_out " in stages[-1]
    score = json.loads((tmp_path / "run" / "score.json").read_text())
    v_line, n_line = lines[-2], lines[-1]
    assert v_line.startswith(f"V {score['score']:.10g} (valid), V* {score['v_star']:.10g}, G ")
    assert f"ratio {score['ratio']:.4g} (below V*)" in v_line
    assert n_line.startswith(f"N {score['novelty']:.3g} (ast, {score['novelty_status']}")
    assert f"N_out {score['novelty_out']:.3g} (ok" in n_line
    assert not re.search(r"\d{12,}", done.stderr)  # no 17-digit float anywhere


def test_a_flagged_program_is_said_in_the_last_line(tmp_path):
    from innolab.cli.runs import score_lines

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "score.json").write_text(json.dumps({
        "valid": True, "score": 2.6, "v_star": 2.635983, "gain": -0.0359, "ratio": -0.01362,
        "beats_v_star": False, "novelty": 7.891212, "novelty_backend": "ast",
        "novelty_status": "not_reproducing", "source_status": "differs",
        "nearest_known": "lp-hex-pattern", "novelty_out": 22.5,
        "novelty_out_nearest": "ils-slsqp"}))
    first, second = score_lines(run)
    assert first == "V 2.6 (valid), V* 2.635983, G -0.0359, ratio -0.01362 (below V*)"
    assert second == ("N 7.89 (ast, not_reproducing, nearest lp-hex-pattern) FLAGGED: its program "
                      "differs when re-run alone; N_out 22.5 (ok, nearest ils-slsqp)")


RUN_ADVICE = ("give a run folder (innolab run prints it last; results/runs/<id>/ or "
              "results/sweeps/<name>/runs/<id>/)")
SWEEP_ADVICE = "give a sweep folder (innolab sweep run prints it last; results/sweeps/<name>/"


@pytest.mark.parametrize("args, says", [
    (("view", "/nonexistent/run"), f"/nonexistent/run does not exist: {RUN_ADVICE}"),
    (("view", "data"), f"data is not a run folder (no config.json): {RUN_ADVICE}"),
    (("score", "/nonexistent/run"), f"/nonexistent/run does not exist: {RUN_ADVICE}"),
    (("score", "data"), f"data is not a run folder (no config.json): {RUN_ADVICE}"),
    (("llm", "replay", "/nonexistent/run"), f"/nonexistent/run does not exist: {RUN_ADVICE}"),
    (("run", "--resume", "/nonexistent/run"),
     f"--resume: /nonexistent/run does not exist: {RUN_ADVICE}"),
    (("sweep", "status", "data"), f"data is not a sweep folder (no sweep.json): {SWEEP_ADVICE}"),
    (("sweep", "status", "/nonexistent"), f"/nonexistent does not exist: {SWEEP_ADVICE}"),
    (("sweep", "collect", "/nonexistent"), f"/nonexistent does not exist: {SWEEP_ADVICE}"),
    (("sweep", "pack", "data"), f"data is not a sweep folder (no sweep.json): {SWEEP_ADVICE}"),
    (("sweep", "plan", "nope.yaml"), "nope.yaml: no such spec file: give a YAML sweep spec "
                                     "(data/sweeps/ holds the shipped ones"),
    (("sweep", "run", "data/sweeps/offline.yaml", "--workers", "0"),
     "innolab sweep run: error: argument --workers: must be at least 1, got 0 (see innolab "
     "sweep run --help)"),
    (("run", "--agent"), "innolab run: error: argument --agent: expected one argument (see "
                         "innolab run --help)"),
    (("frobnicate",), "innolab: error: argument COMMAND: invalid choice: 'frobnicate'"),
    (("sweep", "run"), "innolab sweep run: error: the following arguments are required: SPEC "
                       "(see innolab sweep run --help)"),
])
def test_a_cli_error_is_one_line_that_says_what_to_do(args, says):
    done = innolab(*args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and says in done.stderr, done.stderr
    assert "usage:" not in done.stderr


def test_a_spec_that_is_not_yaml_is_one_line_with_its_line_and_column(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\nbase: {task: a: b}\n")
    done = innolab("sweep", "plan", str(spec))
    assert done.returncode == 2
    assert done.stderr == (f"innolab sweep plan: {spec}: not valid YAML: line 2, column 15: "
                           "expected ',' or '}', but got ':' (while parsing a flow mapping)\n")


def test_the_runs_kernels_do_not_warn_about_tcp(tmp_path, capfd):
    import nbformat

    from innolab import notebooks

    source = tmp_path / "one.ipynb"
    cell = nbformat.v4.new_code_cell("x = 1")
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), source)
    notebooks.execute(source, tmp_path / "out.ipynb")  # innolab's kernel manager: IPC sockets
    assert "without encryption" not in capfd.readouterr().err


@pytest.mark.notebook
def test_a_sweep_says_why_a_run_failed_on_its_driver_and_in_its_status(tmp_path):
    """A sweep against a closed port: the run's retries go to its run notebook, but the driver
    says in one line why the run failed, and `sweep status` shows the cause with the host."""
    import yaml

    port = closed_port()
    spec = tmp_path / "down.yaml"
    spec.write_text(yaml.safe_dump({"name": "down", "seeds": [0], "base": {
        "task": "circle-packing-26", "agent": "codeact", "budget": "60s", "runtime": "local",
        "base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "novelty": "none"}}))
    out = tmp_path / "sweep"
    done = innolab("sweep", "run", str(spec), "--workers", "1", "--output", str(out),
                   timeout=600)
    assert done.returncode == 1, done.stderr[-3000:]  # a configuration failed
    cause = rf"the model at 127\.0\.0\.1:{port} could not be reached: Connection error\.; " \
            r"5 attempts over [\d.]+ s"
    assert re.search(rf"run \w+ failed: {cause}", done.stderr), done.stderr[-3000:]
    status = innolab("sweep", "status", str(out))
    assert status.returncode == 0, status.stderr
    (line,) = [x for x in status.stdout.splitlines() if " failed " in x]
    assert re.search(rf"  \(({cause})\)$", line), status.stdout
    shown = json.loads(innolab("sweep", "status", str(out), "--json").stdout)
    (run,) = shown["runs"].values()
    assert run["state"] == "failed" and run["end_reason"] == "llm_error"
    assert re.fullmatch(cause, run["cause"]) and run["error"] is None


# ---------------------------------------------------------------------- a plan before any spend


BACKBONES = {"GEMINI_25_PRO": None, "GPT_5": (1.25, 10.0), "DEEPSEEK_V31": (0.27, 1.1)}


def backbone_env(monkeypatch, priced: bool = True) -> None:
    for prefix, price in BACKBONES.items():
        monkeypatch.setenv(f"{prefix}_BASE_URL", f"https://{prefix.lower()}.invalid/v1")
        monkeypatch.setenv(f"{prefix}_MODEL", prefix.lower())
        if price and priced:
            monkeypatch.setenv(f"{prefix}_PRICE_IN", str(price[0]))
            monkeypatch.setenv(f"{prefix}_PRICE_OUT", str(price[1]))


@pytest.mark.parametrize("spec", sorted((ROOT / "data" / "sweeps").glob("*.yaml")),
                         ids=lambda p: p.stem)
def test_sweep_plan_of_every_shipped_spec(spec, monkeypatch, tmp_path):
    from innolab.sweep import expand, load_spec

    backbone_env(monkeypatch)
    configurations = expand(load_spec(spec))
    done = innolab("sweep", "plan", str(spec), "--output", str(tmp_path / "sweep"),
                   env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"configurations: {len(configurations)} ({len(configurations)} to run, 0 already " \
           "scored)" in out
    seeds = sorted({c.levels["seed"] for c in configurations})
    assert f"seeds: {', '.join(map(str, seeds))}" in out
    for configuration in configurations:
        assert configuration.config_id in out
    if any(c.config.get("endpoint") == "gemini_25_pro.invalid" for c in configurations):
        assert "unknown price: set GEMINI_25_PRO_PRICE_IN and GEMINI_25_PRO_PRICE_OUT" in out
    if any(c.config.get("endpoint") == "gpt_5.invalid" for c in configurations):
        assert "gpt_5.invalid (gpt_5): $1.25 / $10 per million tokens in / out" in out
    assert "at most, over the" in out
    if {c.config.get("endpoint") for c in configurations} <= {"embedded", None}:
        # the offline sweep: a real bound (the embedded model costs nothing), no cap needed
        assert re.search(r"^  at most, over the 13 run\(s\) to run: model calls no bound, tokens "
                         r"no bound, cost ≤ \$0\.00$", out, re.M), out
        assert all(line.endswith("≤ $0.00") for line in out.splitlines()
                   if re.match(r"  [0-9a-f]{12}  ", line))
        assert "WARNING" not in out
    else:  # a paid endpoint and no cap: said, with what to set
        assert re.search(r"^  WARNING: no cost cap: \d+ run\(s\) on a paid endpoint may spend "
                         r"with no bound; set budget\.max_cost_usd in the spec, or --max-cost USD$",
                         out, re.M), out
    assert not (tmp_path / "sweep").exists()  # a plan writes nothing


def test_a_plan_refuses_an_unknown_task_naming_the_field_and_the_configuration(tmp_path):
    import yaml

    spec = tmp_path / "nope.yaml"
    spec.write_text(yaml.safe_dump({"name": "nope", "seeds": [0, 1], "base": {
        "agent": "aide", "budget": "20s", "runtime": "local"},
        "grid": {"task": ["circle-packing-26", "nope"]}}))
    done = innolab("sweep", "plan", str(spec), "--output", str(tmp_path / "s"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("innolab sweep plan: configuration {'task': 'nope', 'seed': 0} "
                                  "(and 1 more configuration(s)): task: unknown task 'nope'; "
                                  "known: circle-packing-26, "), done.stderr
    assert not (tmp_path / "s").exists()


def test_a_plan_bounds_calls_tokens_and_cost_by_the_rules_innolab_enforces(monkeypatch, tmp_path):
    from innolab.sweep.preview import plan_lines, preview

    backbone_env(monkeypatch)
    spec = {"name": "bounds", "base": {"task": "circle-packing-26", "agent": "codeact",
                                       "backbone": "GPT_5", "budget": "10m",
                                       "requests_per_minute": 30, "tokens_per_minute": 60000},
            "grid": {"temperature": [0.5, 1.0]}, "seeds": [0, 1],
            "budget": {"max_cost_usd": 5}}
    plan = preview(spec, output=tmp_path / "sweep", workers=2)
    assert len(plan.runs) == 4 and not plan.unresolved and plan.seeds == [0, 1]
    run = plan.runs[0]
    assert run.calls.value == math.floor(600 * 30 / 60) + 1  # requests spaced evenly
    assert run.tokens.value == 600 * 60000 / 60 + 60000  # a minute's tokens beyond
    assert run.cost.value == pytest.approx(run.tokens.value * 10.0 / 1e6)  # at the higher price
    total = plan.total("cost")  # 4 runs of $6.6 each, but the cap stops new runs at $5
    assert total.value == pytest.approx(5 + 2 * run.cost.value) and "cap" in total.rule
    assert plan.total("calls").value == 4 * run.calls.value
    text = "\n".join(plan_lines(plan))
    assert "≤ 301" in text and "≤ 660,000" in text and "≤ $6.60" in text and "≤ $18.20" in text
    unbounded = preview({**spec, "base": {**spec["base"], "requests_per_minute": None,
                                          "tokens_per_minute": None}}, output=tmp_path / "b")
    assert unbounded.runs[0].calls.value is None and "not its calls" in unbounded.runs[0].calls.rule
    assert unbounded.total("cost").value is None  # the cap cannot bound a run in flight
    # a step limit bounds steps, not calls (innolab caps no step's calls); the judge's calls at
    # scoring are said beside the bounds
    stepped = preview({**spec, "base": {**unbounded_base(spec), "max_steps": 50,
                                        "novelty": "llm"}}, output=tmp_path / "c")
    assert stepped.runs[0].calls.value is None
    assert "max_steps 50 bounds a run's steps, not its calls" in stepped.runs[0].calls.rule
    shown = "\n".join(plan_lines(stepped))
    assert ("at scoring: N by the llm judge on gpt_5.invalid: 3 method cards of the known "
            "solutions, then per valid submission assessed 1 card + 3 judge calls") in shown
    assert "WARNING" not in shown  # a cap
    uncapped = preview({k: v for k, v in spec.items() if k != "budget"}, output=tmp_path / "d")
    assert ("WARNING: no cost cap: 4 run(s) on a paid endpoint may spend up to $26.40 by the "
            "bounds above") in "\n".join(plan_lines(uncapped))


def unbounded_base(spec: dict) -> dict:
    return {**spec["base"], "requests_per_minute": None, "tokens_per_minute": None}


def test_sweep_run_prints_the_plan_first_and_dry_run_stops_there(monkeypatch, tmp_path):
    backbone_env(monkeypatch, priced=False)
    spec = ROOT / "data" / "sweeps" / "backbone.yaml"
    env = dict(os.environ)
    dry = innolab("sweep", "run", str(spec), "--dry-run", "--output", str(tmp_path / "s"), env=env)
    plan = innolab("sweep", "plan", str(spec), "--output", str(tmp_path / "s"), env=env)
    assert dry.returncode == plan.returncode == 0 and dry.stdout == plan.stdout
    assert not (tmp_path / "s").exists()
    env.pop("DEEPSEEK_V31_BASE_URL")
    refused = innolab("sweep", "run", str(spec), "--output", str(tmp_path / "s"), env=env)
    assert refused.returncode == 2 and not (tmp_path / "s").exists()
    assert refused.stderr.startswith("sweep backbone -> ")  # the plan, before anything starts
    assert "cannot run here (3: backbone=DEEPSEEK_V31 seed=0" in refused.stderr
    assert refused.stderr.strip().splitlines()[-1].startswith(
        "innolab sweep run: 3 configuration(s) cannot run here")
    assert "set DEEPSEEK_V31_BASE_URL and DEEPSEEK_V31_MODEL" in refused.stderr


def readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    return text[start:text.index("\n## ", start + 1)]


def offline_env(folder: Path) -> dict[str, str]:
    """A fresh clone's environment with no endpoint of any kind set (no key, no backbone)."""
    from tests.conftest import clone_env

    return {k: v for k, v in clone_env(folder).items()
            if not k.startswith("INNOLAB_LLM_") and not k.endswith(("_BASE_URL", "_MODEL"))}


def test_readmes_sweep_example_is_the_shipped_spec_and_its_commands_plan_offline(fresh_clone):
    import yaml

    section = readme_section("Sweeps")
    shown = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    assert yaml.safe_load(shown) == yaml.safe_load(
        (ROOT / "data" / "sweeps" / "temperature.yaml").read_text())
    commands = re.findall(r"^(innolab sweep (?:plan|run) [^#\n]*?)\s*(?:#.*)?$",
                          re.search(r"```bash\n(.*?)```", section, re.S).group(1), re.M)
    assert [c.split()[2] for c in commands] == ["plan", "run"]
    for command in commands:  # as a newcomer types them on a fresh clone, offline
        words = command.split()[1:] + (["--dry-run"] if command.split()[2] == "run" else [])
        done = subprocess.run([sys.executable, "-m", "innolab.cli", *words], cwd=fresh_clone,
                              env=offline_env(fresh_clone), capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, (command, done.stderr)
        assert "configurations: 15 (15 to run, 0 already scored)" in done.stdout, done.stdout
        assert "endpoints: embedded (smollm2)" in done.stdout
    assert not (fresh_clone / "results" / "sweeps" / "temperature").exists()  # nothing ran


def test_make_reproduce_rereads_the_reference_sweep_and_readme_says_how_to_rerun_it(fresh_clone):
    text = " ".join(readme_section("Two commands").split())
    assert "re-reads the committed offline reference sweep" in text
    rerun = re.search(r"`(innolab sweep plan data/sweeps/offline\.yaml --output \S+)` shows the 13 "
                      r"configurations to run, and `(innolab sweep run data/sweeps/offline\.yaml "
                      r"--output \S+)` runs them", text)
    assert rerun, text
    env = offline_env(fresh_clone)

    def plan(*words: str) -> str:
        done = subprocess.run([sys.executable, "-m", "innolab.cli", *words], cwd=fresh_clone,
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    # what make reproduce does: the committed sweep's 13 runs are scored, none runs again
    assert "configurations: 13 (0 to run, 13 already scored)" in plan(
        "sweep", "plan", "data/sweeps/offline.yaml")
    # README's command, into a new folder: all 13 run (its `sweep run` twin, as a dry run)
    assert "configurations: 13 (13 to run, 0 already scored)" in plan(*rerun.group(1).split()[1:])
    assert "configurations: 13 (13 to run, 0 already scored)" in plan(
        *rerun.group(2).split()[1:], "--dry-run")


# ------------------------------------------------------ the committed reference sweep, every tool


def test_the_reference_sweep_opens_in_every_tool(tmp_path):
    from innolab import results
    from innolab.viewer import RunView, SweepView

    status = innolab("sweep", "status", str(OFFLINE))
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith("sweep offline: 13 configurations: 13 scored")
    text = (OFFLINE / "sweep.json").read_text()
    # no path of the machine it was made on: no absolute path at all, nor this checkout's
    assert not re.search(r'"/[^"]*"', text) and str(ROOT) not in text
    view = SweepView(OFFLINE)
    view.open_button.click()  # nothing selected: said in the view
    assert "Open run: select a run first" in view.message.value
    for position in view.runs.index:
        view.select([view.run_key(position)])
        view.open_button.click()
        assert view.message.value == "" and isinstance(view.run_view, RunView)
        assert view.run_view.run.finished is not None
    folder = next((OFFLINE / "runs").iterdir())
    page = innolab("view", str(folder), "--html", str(tmp_path / "v.html"))
    assert page.returncode == 0 and (tmp_path / "v.html").stat().st_size > 10_000
    for as_of in ("today", "run", "2025-06-15"):
        table = results.runs(OFFLINE, as_of=as_of)
        assert len(table) == 13 and table["complete"].all(), as_of
        assert len(results.trajectory(OFFLINE, as_of=as_of)) == len(results.trajectory(OFFLINE))
    assert (OFFLINE / "runs").is_dir() and sum(
        p.stat().st_size for p in OFFLINE.rglob("*") if p.is_file()) < 30e6


def test_pack_keeps_the_record_and_drops_caches_and_machine_paths(tmp_path):
    from innolab.results import runs
    from innolab.sweep.pack import pack

    folder = shutil.copytree(OFFLINE, tmp_path / "project" / "results" / "sweeps" / "offline")
    run = next((folder / "runs").iterdir())
    (run / "checkpoint").mkdir()
    (run / "checkpoint" / "workspace-00001.tar").write_bytes(b"x" * 5000)
    (run / "llm_cache.sqlite").write_bytes(b"y" * 3000)
    manifest = json.loads((folder / "sweep.json").read_text())
    where = str(tmp_path / "project" / "data" / "sweeps" / "priors" / "p.py")
    manifest["configurations"][0]["parameters"]["prior_solution"] = where
    (folder / "sweep.json").write_text(json.dumps(manifest))
    packed = pack(folder, root=tmp_path / "project")
    assert packed.runs == 13 and packed.dropped == 2 and packed.freed_bytes == 8000
    assert not (run / "checkpoint").exists() and not (run / "llm_cache.sqlite").exists()
    again = json.loads((folder / "sweep.json").read_text())
    assert again["configurations"][0]["parameters"]["prior_solution"] == "data/sweeps/priors/p.py"
    assert packed.rewritten == [folder / "sweep.json"]
    assert len(runs(folder, as_of="today")) == 13  # still a sweep every tool reads


# ---------------------------------------------------------------------- figures that do not mislead


def test_each_agent_has_one_colour_in_every_figure():
    from matplotlib.colors import to_hex

    from innolab.analysis import baseline as bl
    from innolab.analysis import plots
    from innolab.analysis.colours import AGENT_COLOURS

    curves = pd.DataFrame([{"agent": agent, "t_s": t, "mean_ratio": -0.5, "ci_low": -0.6,
                            "ci_high": -0.4, "mean_novelty": 10.0, "mean_novelty_out": 5.0}
                           for agent in ("aide", bl.BASELINE_LABEL, "codeact") for t in (0, 30)])
    seen = {}
    for fig in (plots.time_budget_curves(curves, "agent"),
                bl.novelty_axes_plot(curves, "t_s", "agent", y=("mean_novelty", "mean_novelty_out"),
                                     kind="lines")):
        for line in fig.axes[0].get_lines():
            if line.get_label() in ("aide", "codeact", bl.BASELINE_LABEL):
                seen.setdefault(line.get_label(), set()).add(to_hex(line.get_color()))
        assert fig.axes[0].get_xlabel() in ("time budget t (s)", "seconds since the start")
        plt.close(fig)
    assert seen == {"aide": {AGENT_COLOURS["aide"].lower()},
                    "codeact": {AGENT_COLOURS["codeact"].lower()},
                    bl.BASELINE_LABEL: {AGENT_COLOURS["baseline"].lower()}}


def test_points_in_one_place_are_counted_and_labels_do_not_overlap():
    from matplotlib.text import Text

    from innolab.analysis import plots

    points = pd.DataFrame({"ratio": [-0.002, -0.0021, -0.0019, -0.002, -0.0022, -0.178, -0.178],
                           "novelty": [7.9, 7.9, 7.89, 7.92, 7.91, 23.7, 23.7],
                           "label": ["baseline (classical search)"] * 5 + ["aide T=0.25",
                                                                           "aide T=0.75"]})
    fig = plots.gain_novelty_plane(points)
    texts = [t for t in fig.axes[0].texts if t.get_text()]
    shown = sorted(t.get_text() for t in texts)
    assert shown == ["aide T=0.25", "aide T=0.75", "baseline (classical search) (5 at this point)"]
    fig.canvas.draw()
    boxes = [Text.get_window_extent(t) for t in texts]  # the text, not its leader line
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    plt.close(fig)


def test_the_frontier_chart_and_tables_are_the_same_any_day_and_hide_nothing():
    from matplotlib.dates import date2num

    from innolab.analysis import frontier as fr

    ledger = pd.DataFrame([
        {"value": 0.380927, "date": "2016-01-01", "date_precision": "year", "status": "reported",
         "kind": "record", "holder": "A", "source": "s"},
        {"value": 0.38092303510845016, "date": "2025-05-01", "date_precision": "month",
         "status": "verified", "kind": "record", "holder": "B", "source": "s"},
        {"value": 0.38092303510845016, "date": "2025-05-01", "date_precision": "month",
         "status": "reported", "kind": "record", "holder": "C", "source": "s"}])
    fig = fr.frontier_chart(ledger, "min")
    ax = fig.axes[0]
    # the last entry's date and a margin of 30 days: not today's
    assert ax.get_xlim()[1] == pytest.approx(date2num(pd.Timestamp("2025-05-31")))
    at_may = [c for c in ax.collections if len(c.get_offsets())
              and np.allclose(c.get_offsets()[:, 1], 0.38092303510845016)]
    verified = [c for c in at_may if c.get_facecolor()[0][:3].tolist() != [1.0, 1.0, 1.0]]
    reported = [c for c in at_may if c.get_facecolor()[0][:3].tolist() == [1.0, 1.0, 1.0]]
    assert verified and reported
    assert min(c.get_zorder() for c in verified) > max(c.get_zorder() for c in reported)
    plt.close(fig)
    shown = fr.readable(fr.record_over_time(ledger, "min"), ledger)
    assert shown["date"].tolist() == ["2016", "2025-05"]
    assert shown["record"].tolist() == ["0.380927", "0.38092303510845016"]


def test_sweep_curves_end_where_their_runs_ended_with_round_ticks():
    from innolab.viewer.render import curves_svg, tick_labels, value_ticks

    svg = curves_svg({"short": [(5.0, 2.5), (12.0, 2.6)], "long": [(3.0, 2.4)]},
                     ends={"short": 30.0, "long": 56.0})
    short = re.search(r'data-run="short" data-end="30.000" points="([^"]+)"', svg)
    long_ = re.search(r'data-run="long" data-end="56.000" points="([^"]+)"', svg)
    assert short and long_
    x_end_short = float(short.group(1).split()[-1].split(",")[0])
    x_end_long = float(long_.group(1).split()[-1].split(",")[0])
    assert x_end_short == pytest.approx(80 + 30 / 56 * (880 - 80), abs=0.1)
    assert x_end_long == pytest.approx(880, abs=0.1)
    time_ticks = re.findall(r'text-anchor="middle">(\d+)</text>', svg)
    assert time_ticks == ["0", "10", "20", "30", "40", "50"]
    assert value_ticks(2.392, 2.608) == [2.4, 2.45, 2.5, 2.55, 2.6]
    assert tick_labels([2.6359, 2.636, 2.6361]) == ["2.6359", "2.636", "2.6361"]


def test_the_step_browser_shows_a_tool_arguments_numbers_to_six_digits():
    from innolab.viewer.render import arguments_text

    shown = arguments_text({"timeout": 17.99968635350001, "path": "a.json", "n": 3,
                            "xs": [0.1 + 0.2, 1e-07], "code": "x = 0.30000000000000004\n"})
    assert shown.splitlines()[:3] == ["timeout: 17.9997", "path: a.json", "n: 3"]
    assert "0.3," in shown and "1e-07" in shown and "0.30000000000000004\n" not in shown.split(
        "code:")[0]
    assert shown.endswith("code:\nx = 0.30000000000000004\n")  # code as it is


def test_an_empty_best_so_far_panel_says_why(tmp_path):
    from innolab.viewer.model import load_run
    from innolab.viewer.render import timeline_svg

    run = next(p for p in sorted((OFFLINE / "runs").iterdir())
               if not json.loads((p / "score.json").read_text())["valid"])
    svg = timeline_svg(load_run(run))
    assert re.search(r'class="empty"[^>]*>no valid submission: (nothing was submitted|\d+ '
                     r'submissions?, none valid on the dev check)</text>', svg)


def test_a_figure_made_in_a_widget_callback_never_reaches_pyplot(monkeypatch):
    """Under JupyterLab's inline backend a figure left registered with pyplot by a callback is
    shown later, in the log console: the explorer's figures are made with pyplot off, closed once
    drawn, and one whose drawing fails half way is closed too, its error said in the view."""
    from innolab import widgets

    before = set(plt.get_fignums())
    box = widgets.metrics_explorer(54.86, 83.45, "max", [70.83])
    with plt.ion():  # as under JupyterLab's inline backend: interactive
        box.controls["v"].value = 95.0
        box.controls["distances"].value = "10, 20"
    assert set(plt.get_fignums()) == before and "error" not in box.summary

    def half_made(*args, **kwargs):  # a figure registered with pyplot, then its drawing fails
        plt.subplots()
        raise ValueError("no room for the labels")

    monkeypatch.setattr(widgets, "gain_novelty_plane", half_made)
    # (the code before the fix raised out of the callback: JupyterLab's log console's)
    with plt.ion(), contextlib.suppress(ValueError):
        box.controls["v"].value = 90.0
    assert set(plt.get_fignums()) == before  # nothing left for the backend to show later
    assert box.summary == {"error": "no room for the labels"}  # said in the view instead


@pytest.fixture(scope="module")
def kernels():
    """One kernel server for the notebooks these tests execute (notebooks.forked_kernels)."""
    from innolab import notebooks

    with notebooks.forked_kernels():
        yield


@pytest.mark.notebook
@pytest.mark.parametrize("as_of", ["today", "run"])
def test_notebook_21_reads_the_reference_sweep_as_of_a_date(as_of, kernels, tmp_path):
    from innolab import notebooks
    from innolab.paths import notebooks_dir

    notebooks.execute(notebooks_dir() / "21_time_budget.ipynb", tmp_path / "nb.ipynb",
                      {"sweep_dir": str(OFFLINE), "as_of": as_of, "n_resamples": 200,
                       "results_dir": str(tmp_path / "results"),
                       "figures_dir": str(tmp_path / "figures")})
    curves = pd.read_csv(tmp_path / "results" / "21_time_budget" / "anytime.csv")
    assert curves["t_s"].max() == 60 and len(curves) > 31
    trends = pd.read_csv(tmp_path / "results" / "21_time_budget" / "trends.csv")
    assert (trends["n_units"] >= 4).all()


@pytest.mark.notebook
@pytest.mark.parametrize("notebook, as_of", [("23_temperature", "today"),
                                             ("24_prior_solution", "run")])
def test_notebooks_22_to_25_read_the_reference_sweep_as_of_a_date(notebook, as_of, kernels,
                                                                    tmp_path):
    from innolab import notebooks, results
    from innolab.paths import notebooks_dir

    notebooks.execute(notebooks_dir() / f"{notebook}.ipynb", tmp_path / "nb.ipynb",
                      {"sweep_dir": str(OFFLINE), "as_of": as_of, "n_resamples": 200,
                       "results_dir": str(tmp_path / "results"),
                       "figures_dir": str(tmp_path / "figures")})
    out = tmp_path / "results" / notebook
    if notebook == "23_temperature":
        effect = pd.read_csv(out / "temperature_effect.csv")
        assert {"0.25", "0.75", "baseline (classical search)"} <= set(
            effect["temperature"].astype(str))
        assert set(effect["kind"]) == {"per_run", "best_of_k"} and (effect["n"] > 0).all()
    else:  # each candidate's V* is the one as of its run's start
        trajectory = pd.read_csv(out / "prior_trajectory.csv")
        read = results.runs(OFFLINE, as_of=as_of).set_index("config_id")
        assert len(trajectory) >= 2 and trajectory["v_star"].notna().all()
        for row in trajectory.itertuples():
            assert row.v_star == pytest.approx(read.loc[row.config_id, "v_star"])
