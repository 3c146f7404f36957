"""Every notebook runs headless under papermill; the analysis notebooks write the promised files."""

import json
from pathlib import Path

import pandas as pd
import pytest

from innolab import notebooks
from innolab.paths import notebooks_dir
from tests.fake_llm import FakeLLM
from tests.test_analysis_sweeps import SWEEP_NOTEBOOKS

ALL_NOTEBOOKS = sorted(notebooks_dir().glob("*.ipynb"))


# notebooks 01, 04 and 20 perform a run: their model endpoint (the network boundary) is the scripted
# server, and a step cap bounds the scripted run; every other parameter is the notebook's default
RUN_NOTEBOOKS = ("01_run_agent.ipynb", "04_bring_your_agent.ipynb", "20_agent_run.ipynb")
# what a notebook may leave different from the committed tree, and why: notebook 15's validation
# counts the model calls of this execution (none where its cache, results/novelty/cache/, is
# warm) and judges with the embedded model, whose replies depend on the machine's CPU
NOT_BYTE_FOR_BYTE = {"results/novelty/dagent_validation.csv": "15: model calls made here",
                     "figures/novelty/dagent_validation.png": "15: the embedded judge"}


@pytest.fixture(scope="module")
def reproduced(fresh_clone, tmp_path_factory):
    """Every notebook executed top to bottom with its defaults on a fresh clone (its tracked
    files only), in the clone: notebook 02 before the runs of 01 and 20, as a newcomer meets it
    (no run of their own yet). Returns the clone and the executed copies (kept outside it)."""
    from tests.conftest import clone_env

    executed = tmp_path_factory.mktemp("executed")
    order = [p for p in ALL_NOTEBOOKS if p.name not in RUN_NOTEBOOKS] + [
        p for p in ALL_NOTEBOOKS if p.name in RUN_NOTEBOOKS]
    with pytest.MonkeyPatch.context() as env, FakeLLM() as server:
        for name, value in clone_env(fresh_clone).items():
            env.setenv(name, value)
        with notebooks.forked_kernels():  # as `innolab reproduce`: one kernel server, the clone's
            execute_all(order, fresh_clone, executed, server)
    return fresh_clone, executed


def execute_all(order: list[Path], clone: Path, executed: Path, server: FakeLLM) -> None:
    for path in order:
        extra = ({"base_url": server.base_url, "max_steps": 8} if path.name in RUN_NOTEBOOKS
                 else {})
        notebooks.execute(clone / "notebooks" / path.name, executed / path.name, extra)


@pytest.mark.notebook
@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_parameters_cell_and_executes(path, reproduced):
    cells = json.loads(path.read_text())["cells"]
    assert any("parameters" in c.get("metadata", {}).get("tags", []) for c in cells), (
        "no cell tagged parameters"
    )
    _, executed = reproduced
    run = json.loads((executed / path.name).read_text())
    assert run["metadata"]["papermill"]["exception"] is None
    assert not run["metadata"]["papermill"]["input_path"].startswith("/")
    injected = run["metadata"]["papermill"]["parameters"]
    assert set(injected) <= {"base_url", "max_steps"}, injected  # the defaults, nothing else


@pytest.mark.notebook
def test_notebook_02_opens_a_run_the_clone_carries(reproduced):
    _, executed = reproduced
    cells = json.loads((executed / "02_explore_run.ipynb").read_text())["cells"]
    printed = "".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", []))
    assert "no run of your own yet: run " in printed and "of the reference sweep" in printed
    assert "runs beside it: offline" in printed


def _cell_output(executed: Path, marker: str) -> str:
    """The text/plain output of the executed notebook's code cell whose source holds marker."""
    cells = json.loads(executed.read_text())["cells"]
    (cell,) = [c for c in cells if c["cell_type"] == "code" and marker in "".join(c["source"])]
    texts = [o.get("data", {}).get("text/plain", "") for o in cell["outputs"]]
    return "".join("".join(t) if isinstance(t, list) else t for t in texts)


def _series(text: str) -> dict[str, str]:
    """A pandas Series' text/plain output as its index -> value text (the Name line left out)."""
    return dict(line.rsplit(maxsplit=1) for line in text.splitlines()
                if line.strip() and not line.startswith("Name:"))


def check_notebook_04(executed: Path, runs: Path) -> None:
    """Notebook 04's framework run, as its outputs show it: tool calls made through MCP, every
    model call counted alike by the gateway, the trace and the framework itself, and the run
    scored; its run folder (under `runs`) says the same."""
    counts = {k.strip(): v for k, v in _series(_cell_output(executed, "counts = {")).items()}
    assert int(counts["tool_call events"]) >= 1
    assert int(counts["tool_call events"]) == int(counts["MCP tool calls"])
    assert (int(counts["llm_call events"]) == int(counts["gateway requests"])
            == int(counts["the framework's own count"]) >= 1)
    row = _series(_cell_output(executed, "results.run_row(run_dir)"))
    assert row["agent"] == "smolagents" and row["complete"] == "True" and row["valid"] == "True"
    assert row["source_status"] == "reproduces" and row["novelty"] != "NaN"
    assert int(row["tool_calls"]) == int(counts["tool_call events"])
    (run,) = [p.parent for p in runs.glob("*/score.json")
              if json.loads((p.parent / "config.json").read_text())["agent"] == "smolagents"]
    score = json.loads((run / "score.json").read_text())
    assert score["valid"] and score["novelty"] is not None and score["novelty_out"] is not None


@pytest.mark.notebook
def test_notebook_04_runs_a_framework_and_counts_every_call_alike(reproduced):
    """Notebook 04 with its defaults (smolagents on circle-packing-26), its model the scripted
    server, as the fresh clone executed it (no second execution of it alone: that cost make test
    14 s and checked the same)."""
    clone, executed = reproduced
    check_notebook_04(executed / "04_bring_your_agent.ipynb", clone / "results" / "runs")


@pytest.mark.notebook
def test_notebooks_leave_the_committed_tree_as_it_was(reproduced):
    """Outputs go where `make reproduce` writes them (results/, figures/), and running a notebook
    again writes what is committed there: a fresh clone stays clean (nothing new, nothing
    changed), but for what NOT_BYTE_FOR_BYTE names."""
    from tests.conftest import git

    clone, _ = reproduced
    status = git(clone, "status", "--porcelain", "--untracked-files=all").splitlines()
    dirty = [line for line in status if line[3:] not in NOT_BYTE_FOR_BYTE]
    assert not dirty, ("notebooks changed the committed tree (run `innolab reproduce`, commit its "
                       "outputs; or write where it writes): " + "; ".join(dirty[:20]))


@pytest.mark.notebook
def test_main_results_files_and_columns(reproduced):
    out, _ = reproduced
    results = out / "results" / "paper"
    t4 = pd.read_csv(results / "table4_means.csv")
    assert list(t4.columns) == ["framework", "mean_ratio", "mean_novelty", "n_valid"]
    assert t4.set_index("framework")["mean_ratio"].to_dict() == {
        "MLAB": -0.62,
        "CodeAct": -0.81,
        "AIDE": -0.82,
    }
    ci = pd.read_csv(results / "bootstrap_ci.csv")
    assert list(ci.columns) == ["framework", "metric", "mean", "ci_low", "ci_high"]
    assert set(ci["framework"]) == {"MLAB", "CodeAct", "AIDE"} and set(ci["metric"]) == {
        "ratio",
        "novelty",
    }
    tests = pd.read_csv(results / "paired_tests.csv")
    assert list(tests.columns) == [
        "framework_a",
        "framework_b",
        "metric",
        "mean_diff",
        "ci_low",
        "ci_high",
        "p_value",
    ]
    assert set(zip(tests["framework_a"], tests["framework_b"], strict=True)) == {
        ("MLAB", "CodeAct"),
        ("MLAB", "AIDE"),
    }
    for figure in (
        "paper/table2.png",
        "paper/bootstrap_ci.png",
        "metrics/gain_novelty_plane.png",
        "metrics/complex_plane.png",
    ):
        assert (out / "figures" / figure).stat().st_size > 10_000


@pytest.mark.notebook
def test_teaching_notebook_follows_its_parameters(tmp_path):
    source = notebooks_dir() / "00_innovation_metrics.ipynb"
    notebooks.execute(
        source,
        tmp_path / "nb.ipynb",
        {
            "results_dir": str(tmp_path / "results"),
            "figures_dir": str(tmp_path / "figures"),
            "v": 12.0,
            "v_star": 12.889,
            "direction": "min",
            "distances": [30.0, 90.0],
        },
    )
    examples = pd.read_csv(tmp_path / "results" / "metrics" / "examples.csv").set_index("label")
    assert examples.at["parameters", "G"] == pytest.approx(0.889)
    assert examples.at["parameters", "N"] == 30.0
    assert examples.at["parameters", "region"] == "performance innovation"


def test_innolab_loads_nbformat_without_jsonschemas_iri_grammars():
    """jsonschema's optional iri checker compiles its grammars on import (0.9 s a process): an
    innolab process loads nbformat without it, and still validates notebooks."""
    import subprocess
    import sys

    probe = ("import sys, innolab.notebooks, nbformat; "
             "nbformat.validate(nbformat.read(sys.argv[1], as_version=4)); "
             "print(sys.modules.get('rfc3987_syntax'), 'lark' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe,
                           str(notebooks_dir() / "10_main_results.ipynb")],
                          capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split() == ["None", "False"], done.stdout + done.stderr


KERNEL_PROBE = """import json, os, sys
import pandas as pd
from tqdm.auto import tqdm
try:
    import probe_helper  # a module beside the notebook
except ImportError:
    probe_helper = None
print(json.dumps({"pid": os.getpid(), "parent": os.getppid(), "probe": os.environ.get("PROBE"),
                  "max_columns": pd.get_option("display.max_columns"), "tqdm": tqdm.__module__,
                  "backend": __import__("matplotlib").get_backend().lower(),
                  "helper": probe_helper and probe_helper.VALUE,
                  "path": [p for p in sys.path if p in ("", os.getcwd())],
                  "secret": "secret" in globals()}))
secret = 42
"""


def probe_kernel(folder: Path, name: str) -> dict:
    """Execute a two-cell notebook that reports on its kernel; return the report."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell("x = 0", metadata={"tags": ["parameters"]}),
                      nbformat.v4.new_code_cell(KERNEL_PROBE)]
    source = folder / "probe.ipynb"
    nbformat.write(notebook, source)
    (folder / "probe_helper.py").write_text("VALUE = 7\n")
    executed = folder / f"{name}.ipynb"
    notebooks.execute(source, executed)
    cell = json.loads(executed.read_text())["cells"][1]
    return json.loads("".join(cell["outputs"][0]["text"]))


def test_forked_kernels_fork_each_notebooks_kernel_from_one_server_as_a_new_kernel(
        tmp_path, monkeypatch):
    """Within `forked_kernels`, each notebook gets a kernel of its own forked from the scope's one
    server, which shows what a kernel started as a new interpreter shows (pandas' display, tqdm's
    front end, matplotlib's backend, no name of an earlier notebook); a kernel whose environment
    is not the scope's starts as usual; the server ends with the scope."""
    import os

    import psutil

    monkeypatch.delenv("PROBE", raising=False)
    cold = probe_kernel(tmp_path, "cold")
    assert cold["parent"] == os.getpid()  # started by jupyter_client, as a new interpreter
    with notebooks.forked_kernels():
        first = probe_kernel(tmp_path, "first")
        second = probe_kernel(tmp_path, "second")
        server = psutil.Process(first["parent"])
        assert "innolab.forkserver" in " ".join(server.cmdline())
        assert server.ppid() == os.getpid() and second["parent"] == server.pid
        monkeypatch.setenv("PROBE", "another environment")
        other = probe_kernel(tmp_path, "other")
        monkeypatch.delenv("PROBE")
    assert other["parent"] == os.getpid() and other["probe"] == "another environment"
    assert len({cold["pid"], first["pid"], second["pid"], other["pid"]}) == 4
    shown = ("max_columns", "tqdm", "backend", "helper", "path", "secret", "probe")
    assert {k: first[k] for k in shown} == {k: second[k] for k in shown} == {
        k: cold[k] for k in shown}
    assert cold["max_columns"] == 20 and cold["helper"] == 7 and cold["secret"] is False
    assert not server.is_running() or server.status() == psutil.STATUS_ZOMBIE


def test_reproduce_rejects_unknown_names(tmp_path):
    with pytest.raises(notebooks.NotebookError, match="no analysis notebook named \\['nope'\\]"):
        notebooks.reproduce(only=["nope"], output=tmp_path)


def test_analysis_notebooks_are_discovered():
    names = [p.stem for p in notebooks.analysis_notebooks()]
    assert {"00_innovation_metrics", "03_frontier", "10_main_results"} <= set(names)
    assert all(isinstance(p, Path) for p in notebooks.analysis_notebooks())


@pytest.mark.notebook
def test_demo_runs_keep_their_notebook_and_summaries(tmp_path):
    with FakeLLM() as server:
        table = notebooks.run_demos(
            tmp_path,
            budget="60s",
            agents=["aide", "codeact"],
            show_progress=False,
            extra_parameters={"base_url": server.base_url, "max_steps": 8},
        )
    demo = pd.read_csv(table)
    assert (
        demo["complete"].all()
        and demo["valid"].all()
        and list(demo["agent"]) == ["aide", "codeact"]
    )
    for run in demo["run"]:
        assert (tmp_path / "results" / "runs" / run / "run.ipynb").is_file()


def test_demo_runs_refuse_a_number_of_workers_below_one(tmp_path):
    with pytest.raises(notebooks.NotebookError, match="workers: 0 is not a positive number"):
        notebooks.run_demos(tmp_path, agents=["aide"], workers=0, show_progress=False)
    assert not (tmp_path / "results").exists()


@pytest.mark.notebook
def test_run_notebook_performs_the_run_keeps_its_record_and_never_runs_twice(tmp_path):
    from innolab import traces
    from innolab.rundir import RunDir

    folder = RunDir(tmp_path / "runs" / "r1")
    parameters = {
        "agent": "codeact",
        "budget": "60s",
        "max_steps": 8,
        "temperature": 0.5,
        "seed": 2,
    }
    with FakeLLM() as server:
        record = notebooks.execute_run_notebook(
            {**parameters, "base_url": server.base_url}, folder.root
        )
        first = traces.read_events(folder.root)
        notebooks.execute_run_notebook({**parameters, "base_url": server.base_url}, folder.root)
    assert record == folder.notebook and record.is_file()
    assert (
        json.loads(record.read_text())["metadata"]["papermill"]["parameters"]["temperature"] == 0.5
    )
    assert folder.read_score()["valid"] and first[0].config["llm"]["temperature"] == 0.5
    assert len(traces.read_events(folder.root)) == len(
        first
    )  # the second execution only reported the run


def copy_runs_started_on(folder: Path, days: dict[str, str]) -> Path:
    """The committed test run folders, each trace moved to start at noon UTC of a chosen day."""
    import datetime
    import shutil

    shutil.copytree(Path(__file__).parent / "data" / "run_tables" / "runs", folder)
    for name, day in days.items():
        trace = folder / name / "trace.jsonl"
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        started = next(e["time"] for e in events if e["type"] == "run_started")
        noon = datetime.datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
        for event in events:
            event["time"] += noon - started
        trace.write_text("".join(json.dumps(e) + "\n" for e in events))
    return folder


@pytest.mark.notebook
def test_frontier_notebook_draws_the_record_and_places_a_sweeps_runs(tmp_path):
    from innolab import results
    from innolab.tasks import PAPER_DATE, get_task

    task = get_task("circle-packing-26")
    days = {"aide": "2025-06-15", "codeact": "2025-12-15"}  # FICO's record, then AlphaEvolve V2's
    runs = copy_runs_started_on(tmp_path / "runs", days)
    notebooks.execute(
        notebooks_dir() / "03_frontier.ipynb",
        tmp_path / "nb.ipynb",
        {"task": task.id, "sweep_dir": str(runs), "since": None,
         "results_dir": str(tmp_path / "results"), "figures_dir": str(tmp_path / "figures")},
    )
    out = tmp_path / "results" / "03_frontier"
    record = pd.read_csv(out / f"{task.id}_record.csv", parse_dates=["date"])
    assert record["record"].iloc[-1] == task.v_star
    at_paper = record[record["date"] <= pd.Timestamp(PAPER_DATE)]["record"].iloc[-1]
    assert at_paper == task.v_star_as_of(PAPER_DATE).value
    placed = pd.read_csv(out / f"{task.id}_runs.csv", parse_dates=["date"])
    assert [d.date().isoformat() for d in placed["date"]] == list(days.values())
    assert placed["record"].tolist() == [task.v_star_as_of(d).value for d in days.values()]
    assert placed["record"].iloc[0] != placed["record"].iloc[1]  # the frontier moved between
    assert placed["valid"].all() and placed["value"].notna().all()
    table = results.runs(runs, as_of="run").dropna(subset=["v_star_as_of"])  # read as of start
    assert placed["record"].tolist() == table.sort_values("v_star_as_of")["v_star"].tolist()
    figure = tmp_path / "figures" / "03_frontier" / f"{task.id}_record.png"
    assert figure.stat().st_size > 10_000 and figure.with_suffix(".pdf").is_file()


def test_sweep_notebooks_take_as_of_and_read_as_recorded_by_default():
    import papermill

    for name in SWEEP_NOTEBOOKS:
        path = notebooks_dir() / f"{name}.ipynb"
        assert papermill.inspect_notebook(str(path))["as_of"]["default"] == "None", name
        code = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
        assert "results.runs(sweep_dir, as_of=as_of)" in code, name
        assert "results.trajectory(sweep_dir, as_of=as_of)" in code, name


@pytest.mark.notebook
def test_sweep_notebook_reads_the_runs_against_v_star_as_of_a_date(tmp_path):
    from innolab.tasks import get_task

    runs = copy_runs_started_on(tmp_path / "runs", {})
    scores = {json.loads(p.read_text())["score"] for p in runs.glob("*/score.json")}
    recorded_v_star = {json.loads(p.read_text())["v_star"] for p in runs.glob("*/score.json")}
    assert len(recorded_v_star) == 1
    then = get_task("circle-packing-26").v_star_as_of("2025-06-15").value  # FICO, 2025-06
    assert then != recorded_v_star == {get_task("circle-packing-26").v_star}
    tables = {}
    for label, as_of in (("recorded", None), ("then", "2025-06-15")):
        notebooks.execute(
            notebooks_dir() / "25_success_and_prompt.ipynb",
            tmp_path / f"{label}.ipynb",
            {"sweep_dir": str(runs), "as_of": as_of, "n_resamples": 200,
             "results_dir": str(tmp_path / label), "figures_dir": str(tmp_path / f"{label}-fig")},
        )
        tables[label] = pd.read_csv(tmp_path / label / "25_success_and_prompt" /
                                    "table2_from_runs.csv")
    for label, v_star in (("recorded", recorded_v_star.pop()), ("then", then)):
        table = tables[label]
        assert len(table) == 2 and table["valid"].all()
        for gain, ratio in zip(table["gain"], table["ratio"], strict=True):
            assert any(gain == pytest.approx(s - v_star, abs=1e-12) for s in scores), label
            assert ratio == pytest.approx(gain / abs(v_star), abs=1e-12), label
    assert (tables["then"]["gain"] > tables["recorded"]["gain"]).all()  # a lower V* then


@pytest.mark.notebook
def test_sweep_notebooks_write_agent_vs_baseline_from_the_committed_tables(reproduced):
    from innolab.analysis.baseline import VERSUS_COLUMNS

    out, _ = reproduced  # the committed offline tables (with or without baseline runs)
    committed = Path(__file__).parents[1] / "results" / "sweeps" / "offline" / "runs.parquet"
    has_baseline = "baseline" in set(pd.read_parquet(committed)["agent"])
    for name in SWEEP_NOTEBOOKS:
        table = pd.read_csv(out / "results" / name / "agent_vs_baseline.csv")
        assert list(table.columns) == VERSUS_COLUMNS, name
        assert set(table["agent"]) == {"aide", "codeact"}, name
        if has_baseline:
            assert (table[table["metric"] == "ratio"]["n_pairs"] >= 1).all(), name
        else:
            assert (table["n_pairs"] == 0).all(), name
            assert table["note"].str.contains("no baseline runs").all(), name


@pytest.mark.notebook
def test_sweep_notebooks_show_the_baseline_beside_the_agents(tmp_path):
    from innolab.analysis.baseline import BASELINE_LABEL, VERSUS_COLUMNS
    from tests.test_baseline_analysis import with_baseline

    sweep_dir = with_baseline(tmp_path / "sweep")  # the committed tables + baseline runs + N_out
    with notebooks.forked_kernels():  # one kernel server for the five
        for name in SWEEP_NOTEBOOKS:
            executed = tmp_path / f"{name}.ipynb"
            notebooks.execute(
                notebooks_dir() / f"{name}.ipynb", executed,
                {"sweep_dir": str(sweep_dir), "results_dir": str(tmp_path / "results"),
                 "figures_dir": str(tmp_path / "figures"), "n_resamples": 200},
            )
            assert json.loads(executed.read_text())["metadata"]["papermill"]["exception"] is None
            versus = pd.read_csv(tmp_path / "results" / name / "agent_vs_baseline.csv")
            assert list(versus.columns) == VERSUS_COLUMNS
            ratio = versus[versus["metric"] == "ratio"].set_index("agent")
            assert (ratio["n_pairs"] == 1).all() and (ratio["runs_baseline"] == 1).all(), name
            assert (set(versus["metric"]) == {"ratio", "novelty", "novelty_out"}
                    or name == "22_backbone")
            figure = "anytime_novelty_axes" if name == "21_time_budget" else "novelty_axes"
            assert (tmp_path / "figures" / name / f"{figure}.png").stat().st_size > 10_000, name
    trends = pd.read_csv(tmp_path / "results" / "21_time_budget" / "trends.csv")
    gain = trends[(trends["agent"] == BASELINE_LABEL) & (trends["axis"] == "ratio")].iloc[0]
    # rises, then flattens at 30 s of its 60: 5 runs, too few for the verdict's bootstrap bound
    # (see test_baseline_trend_over_runs_decides), so no verdict, the effect reported
    assert gain["this sweep"] == "not enough data" and "needs at least 10" in gain["detail"]
    assert gain["unit"] == "config_id" and gain["n_units"] == 5
    curves = pd.read_csv(tmp_path / "results" / "21_time_budget" / "anytime.csv")
    assert BASELINE_LABEL in set(curves["agent"]) and curves["mean_novelty_out"].notna().any()
    rates = pd.read_csv(tmp_path / "results" / "25_success_and_prompt" / "success_rates.csv")
    assert BASELINE_LABEL in set(rates["agent"])
