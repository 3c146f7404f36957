"""The run schema: one model of a run's settings, and the four things derived from it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from pydantic import Field

from innolab import runner, runspec
from innolab.runspec import RunSettings, SettingsError
from innolab.sweep import spec as sweep_spec

ROOT = Path(__file__).parents[1]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("INNOLAB_LLM"):
            monkeypatch.delenv(name)


def test_a_sampling_setting_added_in_one_place_reaches_everything(monkeypatch, tmp_path):
    """`runspec.add_setting("frequency_penalty", ...)`, nothing else: the CLI takes it, a sweep spec
    varies it, notebook 20 has it as a parameter, the endpoint receives it in every request, each
    llm_call event records it, and the runs table has its column."""
    from innolab import results
    from innolab.cli import build_parser
    from innolab.traces import read_events
    from tests.fake_llm import FakeLLM

    runspec.add_setting("frequency_penalty", float,
                        Field(default=None, ge=-2.0, le=2.0,
                              description="penalise tokens by how often they came"),
                        goes="request")
    try:
        # the command line, with its type and rule
        parser = build_parser()
        args = parser.parse_args(["run", "--agent", "codeact", "--task", "circle-packing-26",
                                  "--frequency-penalty", "0.5"])
        assert runspec.settings_from_args(args).frequency_penalty == 0.5
        bad = parser.parse_args(["run", "--agent", "codeact", "--frequency-penalty", "3"])
        with pytest.raises(SettingsError, match="frequency_penalty: Input should be less than"):
            runspec.settings_from_args(bad)
        # a sweep spec varies it; each configuration sends its level
        spec = sweep_spec.load_spec({
            "name": "penalty", "base": {"task": "circle-packing-26", "agent": "codeact",
                                        "budget": "20s"},
            "grid": {"frequency_penalty": [0.0, 0.5]}})
        configurations = sweep_spec.expand(spec)
        assert [c.config["llm"]["sampling"] for c in configurations] == [
            {"frequency_penalty": 0.0}, {"frequency_penalty": 0.5}]
        assert len({c.config_id for c in configurations}) == 2
        # notebook 20's parameters
        assert ("frequency_penalty = None  # penalise tokens by how often they came"
                in runspec.parameters_cell())
        # the environment, under the backbone's prefix
        monkeypatch.setenv("INNOLAB_LLM_FREQUENCY_PENALTY", "0.25")
        from_env = runner.resolve(runspec.schema()(agent="codeact"))
        assert from_env.llm.sampling == {"frequency_penalty": 0.25}
        monkeypatch.delenv("INNOLAB_LLM_FREQUENCY_PENALTY")
        # the request the endpoint receives, the llm_call event, the runs table
        with FakeLLM() as server:
            settings = runspec.schema()(agent="codeact", frequency_penalty=0.5, max_steps=2,
                                        base_url=server.base_url, model="fake")
            config = runner.resolve(settings)
            runner.start(config, tmp_path / "runs" / "r1", novelty=None, show_progress=False)
            sent = [r for r in server.requests if "messages" in r]
        assert sent and all(r["frequency_penalty"] == 0.5 for r in sent)
        calls = [e for e in read_events(tmp_path / "runs" / "r1") if e.type == "llm_call"]
        assert calls and all(e.sampling == {"frequency_penalty": 0.5} for e in calls)
        table = results.runs(tmp_path / "runs")
        assert table.loc[0, "frequency_penalty"] == 0.5
    finally:
        runspec.remove_setting("frequency_penalty")
    assert "frequency_penalty" not in runspec.schema().model_fields
    assert "frequency_penalty" not in vars(build_parser().parse_args(["run"]))


def test_an_agents_options_are_settings_of_their_own(tmp_path):
    """AIDE's options (a pydantic model it declares) are CLI flags, spec fields, notebook 20's
    parameters and run-table columns; another agent's option, or a bad value, is refused."""
    from innolab import results
    from innolab.cli import build_parser

    args = build_parser().parse_args(["run", "--agent", "aide", "--num-drafts", "3"])
    settings = runspec.settings_from_args(args)
    config = runner.resolve(settings)
    # every option is recorded, those not given at their defaults (named in option_defaults)
    assert config.policy_args == {"num_drafts": 3, "debug_prob": 0.5, "max_debug_depth": 3}
    assert config.option_defaults == ["debug_prob", "max_debug_depth"]
    with pytest.raises(SettingsError, match="codeact takes no option num_drafts"):
        runner.resolve(runspec.schema()(agent="codeact", num_drafts=3))
    with pytest.raises(SettingsError, match="num_drafts: Input should be greater than or equal"):
        runspec.validate_settings({"agent": "aide", "num_drafts": 0})
    no_tool = build_parser().parse_args(["run", "--agent", "codeact", "--no-persistent"])
    assert runner.resolve(runspec.settings_from_args(no_tool)).policy_args == {
        "native_tools": False, "persistent": False}
    spec = sweep_spec.load_spec({"name": "drafts", "base": {"agent": "aide", "budget": "20s",
                                                         "task": "circle-packing-26"},
                                 "grid": {"num_drafts": [1, 4]}})
    assert [(c.config["policy_args"]["num_drafts"], c.config["option_defaults"])
            for c in sweep_spec.expand(spec)] == [
        (1, ["debug_prob", "max_debug_depth"]), (4, ["debug_prob", "max_debug_depth"])]
    assert "num_drafts = None  # AIDE: drafts before improving (default 2; aide only)" in (
        runspec.parameters_cell())
    runner.create_run(config, tmp_path / "runs" / "r1")
    table = results.runs(tmp_path / "runs")
    assert table.loc[0, "num_drafts"] == 3 and "persistent" in table.columns
    assert table.loc[0, "debug_prob"] == 0.5  # the default it ran with, a column like any


def test_notebook_20_parameters_cell_is_the_rendered_schema():
    """The cell as innolab ships it: rendered with innolab's own agents, whatever else is
    installed (tests/test_plugins.py renders it with a third party's agent on the path too)."""
    notebook = json.loads((ROOT / "notebooks" / "20_agent_run.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
    assert "".join(cell["source"]) == runspec.parameters_cell(shipped=True), (
        "notebooks/20_agent_run.ipynb's parameters cell is out of date: "
        "paste runspec.parameters_cell(shipped=True) into it"
    )


def test_todays_columns_in_order_and_as_the_run_table_read_them(tmp_path):
    assert runspec.columns() == [
        "task",
        "agent",
        "backbone",
        "model",
        "temperature",
        "top_p",
        "seed",
        "budget_s",
        "runtime",
        "innovation_prompt",
        "prior_solution",
        # the built-in agents' options (innolab.agents.registry), in the registry's order
        "num_drafts",
        "debug_prob",
        "max_debug_depth",
        "native_tools",
        "persistent",
        "tool_call_mode",
        "step_limit",
        "max_turns",
        "smol_agent",
        "smol_max_steps",
    ]
    prior = tmp_path / "lattice.py"
    prior.write_text("print('start')\n")
    config = runner.resolve(
        RunSettings(
            agent="mlab",
            temperature=0.3,
            top_p=0.9,
            seed=4,
            budget="2m",
            prior_solution=str(prior),
            innovation_prompt=True,
        )
    )
    assert runspec.config_columns(config) == {
        "task": "circle-packing-26",
        "agent": "mlab",
        "backbone": "INNOLAB_LLM",
        "model": "smollm2",
        "temperature": 0.3,
        "top_p": 0.9,
        "seed": 4,
        "budget_s": 120.0,
        "runtime": "local",
        "innovation_prompt": True,
        "prior_solution": "lattice",
        **dict.fromkeys(["num_drafts", "debug_prob", "max_debug_depth", "native_tools",
                         "persistent", "tool_call_mode", "step_limit", "max_turns", "smol_agent",
                         "smol_max_steps"]),
    }
    config.model_reported = (
        "SmolLM2-135M-Instruct.Q4_1"  # what the endpoint reports wins over the configured id
    )
    assert runspec.config_columns(config)["model"] == "SmolLM2-135M-Instruct.Q4_1"


def test_allowed_values_come_from_their_registries(monkeypatch):
    from innolab.agents import registry as agents
    from innolab.agents.codeact import CodeActAgent
    from innolab.gym import policy
    from innolab.gym.policy import AgentSpec
    from innolab.novelty import registry

    with pytest.raises(
        SettingsError, match="agent: must be one of aide, baseline, codeact, mini-swe-agent, mlab, "
        "openai-agents, smolagents, got 'gpt'"
    ):
        runspec.validate_settings({"agent": "gpt"})
    with pytest.raises(SettingsError, match="runtime: must be one of local, docker, got 'k8s'"):
        runspec.validate_settings({"runtime": "k8s"})
    reflexion = agents.Registered("reflexion", "x:AGENT", "x", "1", AgentSpec("reflexion",
                                                                           CodeActAgent))
    monkeypatch.setattr(agents, "_loaded", {**agents.registered(), "reflexion": reflexion})
    monkeypatch.setattr(policy, "RUNTIMES", (*policy.RUNTIMES, "k8s"))
    monkeypatch.setattr(registry, "BACKENDS", (*registry.BACKENDS, "bleu"))
    assert runspec.validate_settings({"agent": "reflexion"}).agent == "reflexion"
    assert runspec.validate_settings({"runtime": "k8s"}).runtime == "k8s"
    assert (
        'agent = "aide"  # the scaffold: aide | baseline | codeact | mini-swe-agent | mlab | '
        'openai-agents | smolagents | reflexion'
        in runspec.parameters_cell()
    )
    assert "bleu" in runspec.novelty_choices()
    parser = argparse.ArgumentParser()
    runspec.add_options(parser)
    assert parser.parse_args(["--agent", "reflexion"]).agent == "reflexion"
    assert sweep_spec.RunFields(novelty="bleu").novelty == "bleu"


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"temperature": 2.5}, "temperature: Input should be less than or equal to 2"),
        ({"top_p": 0}, "top_p: Input should be greater than 0"),
        ({"max_tokens": 0}, "max_tokens: Input should be greater than 0"),
        (
            {"budget": "12 parsecs"},
            "budget: '12 parsecs': expected a duration like 90s, 10m or 1.5h",
        ),
        ({"budget": 0}, "budget: must be positive, got 0"),
        ({"max_steps": 0}, "max_steps: Input should be greater than 0"),
        ({"backbone": "1OPENAI"}, "backbone: String should match pattern"),
        ({"prior_solution": " "}, "prior_solution: a prior solution is the path of a file of code"),
        ({"colour": "red"}, "colour: Extra inputs are not permitted"),
    ],
)
def test_bad_settings_name_the_field_and_the_rule(values, says):
    with pytest.raises(SettingsError, match=says):
        runspec.validate_settings(values)
    with pytest.raises(SettingsError, match=says):
        runner.config_from_parameters(values)


def test_the_sweep_fields_are_the_schema_all_optional():
    fields = sweep_spec.RunFields
    assert list(fields.model_fields) == [*RunSettings.model_fields, "novelty"]
    assert all(f.default is None for f in fields.model_fields.values())
    assert fields().model_dump(exclude_none=True) == {}
    for bad in ({"temperature": 3}, {"agent": "gpt"}, {"budget": "soon"}, {"novelty": "bleu"}):
        with pytest.raises(SettingsError, match=next(iter(bad))):
            runspec.validate_settings(bad, fields)


def test_command_line_dict_settings_and_own_defaults():
    parser = argparse.ArgumentParser()
    runspec.add_options(parser, defaults={"budget": "10m", "agent": None})
    args = parser.parse_args(
        [
            "--agent",
            "aide",
            "--agent-options",
            "num_drafts=3",
            "--agent-options",
            "debug_prob=0.5",
            "--initial-solution",
            "prior.py",
        ]
    )
    settings = runspec.settings_from_args(
        args, defaults={"budget": "10m", "agent": None}, task_options={"repo": "clone"}
    )
    assert settings.agent_options == {"num_drafts": 3, "debug_prob": 0.5}
    assert settings.budget == "10m" and settings.prior_solution == "prior.py"
    assert settings.task_options == {"repo": "clone"}
    with pytest.raises(SettingsError, match="agent_options: write KEY=VALUE"):
        runspec.settings_from_args(parser.parse_args(["--agent-options", "num_drafts"]))


def test_the_sweep_hands_the_worker_the_configuration_it_hashed(tmp_path):
    from innolab.gym.policy import RunConfig

    spec = sweep_spec.load_spec(
        {
            "name": "one",
            "base": {
                "task": "circle-packing-26",
                "agent": "aide",
                "budget": "20s",
                "temperature": 0.25,
            },
        }
    )
    (configuration,) = sweep_spec.expand(spec)
    config = RunConfig.from_dict(
        json.loads(json.dumps(configuration.config))
    )  # as papermill hands it over
    assert runner.config_id(config) == configuration.config_id
    assert config.llm.temperature == 0.25 and config.wall_clock_s == 20.0


def test_an_option_named_like_a_runs_table_column_is_refused_by_name(monkeypatch):
    """Refused where it is declared, not when a runs table is built: an added setting here, an
    agent's option by the registry (listed as broken, tests/test_plugins.py)."""
    from innolab import results

    with pytest.raises(ValueError, match=r"'tool_calls': named like a column of the runs table"):
        runspec.add_setting("tool_calls", int, Field(default=None), goes="policy")
    assert "tool_calls" not in runspec.schema().model_fields
    assert [c.name for c in results.run_table_columns()].count("tool_calls") == 1
