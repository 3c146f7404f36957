"""Agents from other distributions: a third party's agent, installed beside innolab (no file of
innolab changed), is listed, runs, takes its option from the CLI and a sweep spec, and is a column;
a broken entry point is listed with its error and naming it is a clear error. So is an agent whose
options break a rule (named like a part of a run's record, or another agent's option of another
type) or whose module exits when imported: the listing, the other agents' runs and every runs table
go on. A run is built only through the registry."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "data" / "plugins" / "innolab-example-agent"
EDGES = ROOT / "tests" / "data" / "plugins" / "innolab-edge-agents"  # agents that break rules
INNOLAB = Path(sys.executable).parent / "innolab"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example distribution and the rule breakers, built and installed by pip into a folder
    of their own."""
    target = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--disable-pip-version-check", "--target", str(target), str(PLUGIN),
                           str(EDGES)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (target / "innolab_example_agent-0.2.0.dist-info" / "entry_points.txt").is_file()
    assert (target / "innolab_edge_agents-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def python(site: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    """Python code run with the installed distributions on the path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    env = {k: v for k, v in env.items() if not k.startswith("INNOLAB_LLM_")}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600, check=False)


def innolab(site: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    env = {k: v for k, v in env.items() if not k.startswith("INNOLAB_LLM_")}
    return subprocess.run([str(INNOLAB), *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=timeout, check=False)


def test_a_third_partys_agent_is_listed_with_its_option_and_distribution(site):
    listed = {e["name"]: e for e in json.loads(innolab(site, "agents", "list", "--json").stdout)}
    walker = listed["grid-walker"]
    assert (walker["mode"], walker["needs_model"], walker["distribution"], walker["version"]) == (
        "no model", False, "innolab-example-agent", "0.2.0")
    assert walker["options"]["rows"]["default"] == 5 and not walker["broken"]
    assert {"aide", "mlab", "codeact", "baseline"} <= set(listed)  # the built-ins, the same way
    assert all(listed[n]["distribution"] == "innolab" for n in ("aide", "baseline"))
    broken = listed["broken-walker"]
    assert broken["broken"] and "ModuleNotFoundError" in broken["error"]
    text = innolab(site, "agents", "list").stdout
    assert re.search(r"^broken-walker +BROKEN", text, re.M) and "--rows (int, default 5)" in text


def test_naming_a_broken_agent_in_a_run_is_a_clear_error(site):
    done = innolab(site, "run", "--agent", "broken-walker", "--task", "circle-packing-26")
    assert done.returncode == 2
    assert "agent 'broken-walker'" in done.stderr and "does not load" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_third_partys_agent_runs_with_its_option_and_is_a_column(site, tmp_path):
    run_dir = tmp_path / "runs" / "walker"
    done = innolab(site, "run", "--agent", "grid-walker", "--task", "circle-packing-26",
                   "--rows", "4", "--budget", "60s", "--novelty", "ast", "--run-dir",
                   str(run_dir))
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["policy"] == "innolab_example_agent:GridWalker"
    assert config["policy_args"] == {"rows": 4} and config["llm"] is None
    score = json.loads((run_dir / "score.json").read_text())
    assert score["valid"] and score["novelty"] is not None
    table = innolab(site, "sweep", "collect", str(tmp_path / "runs"))
    assert table.returncode == 0, table.stderr[-2000:]
    code = ("import pandas as pd, sys; t = pd.read_parquet(sys.argv[1]); "
            "print(t.loc[0, 'rows'], t.loc[0, 'agent'])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    shown = subprocess.run([sys.executable, "-c", code, str(tmp_path / "runs" / "runs.parquet")],
                           capture_output=True, text=True, env=env, check=True)
    assert shown.stdout.split() == ["4", "grid-walker"]


def test_a_sweep_spec_varies_a_third_partys_option(site, tmp_path):
    spec = tmp_path / "walker.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "walker", "base": {"task": "circle-packing-26", "agent": "grid-walker",
                                   "budget": "30s", "novelty": "none"},
        "grid": {"rows": [4, 5]}}))
    done = innolab(site, "sweep", "run", str(spec), "--workers", "1", "--output",
                   str(tmp_path / "sweep"), timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    code = ("import pandas as pd, sys; t = pd.read_parquet(sys.argv[1]); "
            "print(sorted(t['rows'].tolist()), t['valid'].all())")
    shown = subprocess.run([sys.executable, "-c", code, str(tmp_path / "sweep" / "runs.parquet")],
                           capture_output=True, text=True, env=env, check=True)
    assert shown.stdout.strip() == "[4, 5] True"


def test_without_the_distribution_innolab_knows_no_such_agent():
    from innolab.agents import registry

    assert "grid-walker" not in registry.registered(reload=True)


# ------------------------------------------------------------------------- the registry's rules


def test_agents_that_break_a_rule_are_listed_broken_with_it(site):
    """An option named like a runs-table column, a run setting or a notebook 20 parameter, an
    option another agent declares with another type, a module that exits when imported: each is
    listed as broken with what it broke, and the listing goes on."""
    done = innolab(site, "agents", "list", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    listed = {e["name"]: e for e in json.loads(done.stdout)}
    said = {name: listed[name]["error"] for name in listed if listed[name]["broken"]}
    assert "option 'valid': named like a column of the runs table: rename it" in said[
        "column-walker"]
    assert "option 'seed': named like a run setting" in said["setting-walker"]
    assert "option 'figures_dir': named like a parameter of notebook 20" in said["param-walker"]
    # another type than the agent that comes first (innolab's own, then by name), naming both
    assert ("option 'rows' is str here but int in agent 'grid-walker' (innolab-example-agent)"
            in said["typed-walker"])
    assert "option 'persistent' is str here but bool in agent 'codeact' (innolab)" in said[
        "typed-walker"]
    assert said["exiting-walker"] == "SystemExit: 3"  # it exited at import; the listing did not
    assert not listed["grid-walker"]["broken"] and not listed["shared-walker"]["broken"]
    assert not listed["codeact"]["broken"]  # a third party's clash never breaks innolab's own
    text = innolab(site, "agents", "list")
    assert text.returncode == 0 and re.search(r"^exiting-walker +BROKEN", text.stdout, re.M)
    assert re.search(r"^column-walker +BROKEN .*named like a column", text.stdout, re.M)
    # naming one in a run: a clear error with the rule, no traceback
    run = innolab(site, "run", "--agent", "column-walker", "--task", "circle-packing-26")
    assert run.returncode == 2 and "named like a column of the runs table" in run.stderr
    assert "Traceback" not in run.stderr


def test_broken_agents_leave_the_schema_and_the_runs_table_alone(site, tmp_path):
    """The schema composes only the agents that load: no option of a broken one is a setting;
    an option two agents share with one type is one setting, each agent checking its own rule;
    every runs table builds."""
    code = """if True:
        import json, sys
        from pathlib import Path
        from innolab import results, runner, runspec
        from innolab.runspec import SettingsError
        fields = runspec.schema().model_fields
        print(json.dumps({"broken": [n for n in ("valid", "figures_dir") if n in fields],
                          "rows": fields["rows"].description,
                          "columns": results.run_table_columns() and "ok"}))
        for agent, rows in (("shared-walker", 12), ("grid-walker", 12)):
            try:
                print(agent, runner.resolve(runspec.schema()(agent=agent, rows=rows)).policy_args)
            except SettingsError as error:
                print(agent, "refused:", error)
        config = runner.resolve(runspec.schema()(agent="grid-walker", rows=3, budget="20s"))
        runner.create_run(config, Path(sys.argv[1]) / "walker")
        table = results.runs(Path(sys.argv[1]))
        print(table.loc[0, "agent"], int(table.loc[0, "rows"]))
    """
    done = python(site, code, str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr[-3000:]
    first, shared, grid, row = done.stdout.strip().splitlines()
    composed = json.loads(first)
    assert composed["broken"] == [] and composed["columns"] == "ok"
    assert composed["rows"] == ("grid-walker: rows of the first grid (default grid-walker 5, "
                                "shared-walker 3; grid-walker, shared-walker only)")
    assert shared.startswith("shared-walker refused:") and "less than or equal to 8" in shared
    assert grid == "grid-walker {'rows': 12}"
    assert row == "grid-walker 3"


def test_notebook_20_is_rendered_as_shipped_whatever_is_installed(site):
    """With third parties' agents installed, the parameters cell as shipped is still the
    committed one; the cell in force shows their options and names."""
    code = """if True:
        import json
        from innolab import runspec
        notebook = json.load(open("notebooks/20_agent_run.ipynb", encoding="utf-8"))
        cell = next(c for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
        print("".join(cell["source"]) == runspec.parameters_cell(shipped=True))
        full = runspec.parameters_cell()
        print("rows = None" in full, "grid-walker" in full, "rows = None" in cell["source"])
    """
    done = python(site, code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "True", "True", "False"]


def test_the_names_no_option_may_take_are_the_run_records():
    """The runs table's own columns as innolab.runspec names them (the rule's list) are the
    table's; an added setting may not take one either."""
    from pydantic import Field

    from innolab import results, runspec

    own = [c for c in results.RUN_COLUMNS if c not in results.BASE_SETTING_COLUMNS]
    assert own == list(runspec.TABLE_COLUMNS)
    assert runspec.taken("valid") == "named like a column of the runs table"
    assert runspec.taken("attempts") == "named like a column of the runs table"
    assert runspec.taken("budget") == "named like a run setting"
    assert runspec.taken("run_dir") == "named like a column of the runs table"
    assert runspec.taken("embedded_url") == "named like a parameter of notebook 20"
    assert runspec.taken("rows") is None
    with pytest.raises(ValueError, match="named like a column of the runs table"):
        runspec.add_setting("valid", bool, Field(default=None), goes="policy")


def test_a_run_is_built_only_through_the_registry(tmp_path, monkeypatch):
    """No factory is imported from the path a config.json names: an agent not registered is
    refused (its module never imported), and a registered agent's run recorded with another
    factory is refused rather than built by the one registered now."""
    from innolab.agents import registry
    from innolab.gym.policy import RunConfig

    (tmp_path / "planted_policy.py").write_text(
        "from pathlib import Path\nPath(__file__).with_suffix('.imported').touch()\n"
        "class Planted:\n    def __init__(self, **kw): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    planted = RunConfig(task="circle-packing-26", policy="planted_policy:Planted",
                        agent="planted")
    with pytest.raises(registry.AgentError, match="agent 'planted' is not registered"):
        registry.build_policy(planted, tmp_path / "run")
    assert not (tmp_path / "planted_policy.imported").exists()
    # innolab's own runs recorded the paths their agents declare (the reference sweep's): they
    # are built, never refused
    recorded = [RunConfig.from_dict(json.loads(path.read_text())) for path in
                (ROOT / "results" / "sweeps" / "offline" / "runs").glob("*/config.json")]
    assert {c.agent for c in recorded} == {"aide", "codeact", "baseline"}
    assert all(registry.get(c.agent).policy == c.policy for c in recorded)
    other = RunConfig(task="circle-packing-26", policy="innolab.agents.aide:make", agent="aide")
    with pytest.raises(registry.AgentError, match=r"made with the factory "
                       r"'innolab.agents.aide:make'; innolab .* registers "
                       r"'innolab.agents.aide:AideAgent'"):
        registry.build_policy(other, tmp_path / "run")


@pytest.mark.parametrize("agent", ["planted", "codeact"])
def test_a_run_whose_recorded_factory_is_not_the_registered_one_is_refused_before_import(
        agent, tmp_path, monkeypatch):
    """runner.start scans the agent's prompt texts for leaks before it builds the policy: those
    texts are read only once the registry has checked the recorded factory, so a planted path
    (an unregistered agent, or a registered agent's name with another factory) is refused
    before anything is imported from it."""
    from innolab import runner
    from innolab.agents import registry
    from innolab.gym.policy import RunConfig

    (tmp_path / "planted_policy.py").write_text(
        "from pathlib import Path\nPath(__file__).with_suffix('.imported').touch()\n"
        "class Planted:\n    def __init__(self, **kw): pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    planted = RunConfig(task="circle-packing-26", policy="planted_policy:Planted", agent=agent)
    with pytest.raises(registry.AgentError):
        runner.start(planted, tmp_path / "run", novelty=None, show_progress=False)
    assert not (tmp_path / "planted_policy.imported").exists()
    assert not (tmp_path / "run").exists()
