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


class WithReflections(RunSettings):
    """The run schema with one setting more (a scaffold option, as a new setting is by default)."""

    reflections: int = Field(
        default=2, ge=0, le=5, description="times the scaffold reviews its draft"
    )


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("INNOLAB_LLM"):
            monkeypatch.delenv(name)


def test_a_new_setting_appears_in_the_cli_a_sweep_spec_notebook_20_and_the_run_table(
    monkeypatch, tmp_path
):
    # the command line: `innolab run` has an option for it (its type and rule), read back into the
    # settings
    monkeypatch.setattr(runspec, "RunSettings", WithReflections)
    from innolab.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(
        ["run", "--agent", "codeact", "--task", "circle-packing-26", "--reflections", "3"]
    )
    assert args.reflections == 3
    settings = runspec.settings_from_args(args)
    assert isinstance(settings, WithReflections) and settings.reflections == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--reflections", "many"])  # an int
    bad = parser.parse_args(
        ["run", "--agent", "codeact", "--task", "circle-packing-26", "--reflections", "9"]
    )
    with pytest.raises(SettingsError, match="reflections: Input should be less than or equal to 5"):
        runspec.settings_from_args(bad)
    monkeypatch.undo()
    assert "reflections" not in vars(
        build_parser().parse_args(["run"])
    )  # the real schema has no such option

    # a sweep spec: a field of its base and a grid factor, with the same rule; its runs resolve with
    # it
    data = {
        "name": "reflect",
        "base": {"task": "circle-packing-26", "agent": "codeact", "budget": "20s"},
        "grid": {"reflections": [0, 3]},
    }
    spec = sweep_spec.load_spec(data, settings=WithReflections)
    configurations = sweep_spec.expand(spec)
    assert [c.config["policy_args"] for c in configurations] == [
        {"reflections": 0},
        {"reflections": 3},
    ]
    assert len({c.config_id for c in configurations}) == 2
    assert (
        sweep_spec.load_spec(data, ["reflections=1"], settings=WithReflections).base.reflections
        == 1
    )
    with pytest.raises(
        sweep_spec.SpecError,
        match=r"grid\.reflections\[1\]: Input should be less than or equal to 5",
    ):
        sweep_spec.load_spec({**data, "grid": {"reflections": [0, 9]}}, settings=WithReflections)
    with pytest.raises(sweep_spec.SpecError, match="'reflections' is not a run field"):
        sweep_spec.load_spec(data)  # the real schema's spec does not know it

    # notebook 20's parameters cell, as rendered from the schema
    cell = runspec.parameters_cell(WithReflections).splitlines()
    line = "reflections = 2  # times the scaffold reviews its draft"
    assert cell.index(line) == len(WithReflections.model_fields) - 1  # after the other settings
    assert line not in runspec.parameters_cell()

    # the run table's configuration columns, read from the resolved configuration
    config = runner.resolve(WithReflections(agent="codeact", reflections=4))
    assert runspec.columns(WithReflections) == [*runspec.columns(), "reflections"]
    assert runspec.config_columns(config, WithReflections)["reflections"] == 4
    assert "reflections" not in runspec.config_columns(config)
    # ... and in the runs table built from a run folder of that configuration
    from innolab import results

    runner.create_run(config, tmp_path / "runs" / "r1")
    table, _ = results.build(tmp_path, model=WithReflections)
    assert table.loc[0, "reflections"] == 4
    assert list(table.columns[: len(runspec.columns()) + 3]) == [
        "config_id",
        "run_dir",
        *runspec.columns(),
        "reflections",
    ]
    assert "reflections" not in results.build(tmp_path)[0].columns


def test_notebook_20_parameters_cell_is_the_rendered_schema():
    notebook = json.loads((ROOT / "notebooks" / "20_agent_run.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if "parameters" in c["metadata"].get("tags", []))
    assert "".join(cell["source"]) == runspec.parameters_cell(), (
        "notebooks/20_agent_run.ipynb's parameters cell is out of date: "
        "paste runspec.parameters_cell() into it"
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
    }
    config.model_reported = (
        "SmolLM2-135M-Instruct.Q4_1"  # what the endpoint reports wins over the configured id
    )
    assert runspec.config_columns(config)["model"] == "SmolLM2-135M-Instruct.Q4_1"


def test_allowed_values_come_from_their_registries(monkeypatch):
    from innolab import agents
    from innolab.gym import policy
    from innolab.novelty import registry

    with pytest.raises(
        SettingsError, match="agent: must be one of aide, mlab, codeact, baseline, got 'gpt'"
    ):
        runspec.validate_settings({"agent": "gpt"})
    with pytest.raises(SettingsError, match="runtime: must be one of local, docker, got 'k8s'"):
        runspec.validate_settings({"runtime": "k8s"})
    monkeypatch.setitem(agents.SCAFFOLDS, "reflexion", "innolab.agents.codeact:CodeActAgent")
    monkeypatch.setattr(policy, "RUNTIMES", (*policy.RUNTIMES, "k8s"))
    monkeypatch.setattr(registry, "BACKENDS", (*registry.BACKENDS, "bleu"))
    assert runspec.validate_settings({"agent": "reflexion"}).agent == "reflexion"
    assert runspec.validate_settings({"runtime": "k8s"}).runtime == "k8s"
    assert (
        'agent = "aide"  # the scaffold: aide | mlab | codeact | baseline | reflexion'
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
