"""Config ids are known answers, computed with the code before the run schema.

A refactor never changes them; only a change of what a configuration resolves to does. The one
such change: the embedded model's reply cap, 512 -> 256 tokens (EMBEDDED_MAX_TOKENS in
innolab.llm.settings), which gave every embedded configuration a new id. A config.json written
before (512 in it) keeps its id, as do the committed offline sweep's runs
(`test_ids_of_config_files_written_before`).

Since config.json records every option of the agent (the defaults too: a run records what it
used), `RunConfig.option_defaults` names the options that took their default, and those stay out
of the id: no id changed, the built-ins', the frameworks' and the reference sweep's included
(`test_every_option_is_recorded_and_defaults_keep_the_ids`).
"""

from __future__ import annotations

import json

import pytest

from innolab import runner, runspec
from innolab.gym.policy import SEED_RULE, RunConfig
from innolab.paths import data_dir


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith(("INNOLAB_LLM", "OPENAI_")):
            monkeypatch.delenv(name)


def test_ids_of_resolved_configurations(tmp_path, monkeypatch):
    # a run's default budget is stated once (the run schema's 60 s): agent_config had its own
    # 600 s (id d5b30ce4fb85), and now resolves the defaults as every caller does
    assert runner.config_id(runner.agent_config("aide", "circle-packing-26")) == "0d9c5d13f903"
    assert runner.config_id(runner.config_from_parameters({})) == "0d9c5d13f903"
    assert runner.config_id(runner.agent_config("aide", "circle-packing-26", budget_s=600.0)) \
        == "d5b30ce4fb85"
    # an int budget was written as given (300, not 300.0), so its id stays that of the int
    assert (
        runner.config_id(runner.agent_config("aide", "circle-packing-26", budget_s=300))
        == "becfc7f06e81"
    )
    assert (
        runner.config_id(
            runner.agent_config(
                "codeact",
                "circle-packing-26",
                temperature=1.1,
                seed=5,
                budget_s=600.0,
                max_steps=None,
                innovation_prompt=False,
                task_options=None,
            )
        )
        == "3e129caa51ae"
    )
    sampling = {
        "agent": "codeact",
        "temperature": 0.3,
        "top_p": 0.9,
        "max_tokens": 256,
        "budget": "2m",
        "max_steps": 7,
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m1",
    }
    assert runner.config_id(runner.config_from_parameters(sampling)) == "094f80e182b6"
    prior = tmp_path / "prior_best.py"
    prior.write_text("print('prior')\n")
    assert (
        runner.config_id(
            runner.config_from_parameters(
                {"prior_solution": str(prior), "innovation_prompt": True, "budget": 30}
            )
        )
        == "736a6904c665"
    )
    assert (
        runner.config_id(
            runner.config_from_parameters(
                {
                    "runtime": "docker",
                    "task": "job-shop-taillard-41-50",
                    "agent_options": {"num_drafts": 3},
                    "task_options": {},
                }
            )
        )
        == "30d5129810a8"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.org/v1")
    monkeypatch.setenv("OPENAI_MODEL", "gpt-x")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    assert (
        runner.config_id(
            runner.config_from_parameters({"agent": "mlab", "backbone": "OPENAI", "seed": 2})
        )
        == "07c3384d4496"
    )


def test_ids_of_the_reference_sweep():
    from innolab.sweep import expand, load_spec

    configurations = expand(load_spec(data_dir() / "sweeps" / "offline.yaml"))
    baseline = sorted(c.config_id for c in configurations if c.levels.get("agent") == "baseline")
    assert baseline == [  # the baseline's include entries: 4 x 60 s and 1 x 30 s
        "3b3d6cbc1fc0",
        "5d0307c75d81",
        "e8464ed50834",
        "ee623442f801",
        "f9de627d2146",
    ]
    ids = sorted(c.config_id for c in configurations if c.levels.get("agent") != "baseline")
    assert ids == [
        "1daaef198e26",
        "2212ae2d8e19",
        "4188c5e09ae4",
        "69bfaebed96d",
        "c6dd28ffc2d6",
        "d9091bd26eed",
        "ec5ee32984e8",
        "f24685496e3b",
    ]


def test_ids_of_config_files_written_before():
    written = {  # a config.json of the reference sweep, as the run wrote it
        "task": "circle-packing-26",
        "policy": "innolab.agents.codeact:CodeActAgent",
        "policy_args": {},
        "agent": "codeact",
        "llm": {
            "base_url": None,
            "api_key_env": "INNOLAB_LLM_API_KEY",
            "model": "smollm2",
            "temperature": 0.25,
            "top_p": None,
            "seed": 0,
            "max_tokens": 512,
            "timeout_s": 120.0,
            "max_retries": 4,
            "backoff_s": 0.5,
            "price_in": None,
            "price_out": None,
        },
        "endpoint": "embedded",
        "model_reported": "SmolLM2-135M-Instruct.Q4_1",
        "innovation_prompt": False,
        "prior_solution": None,
        "runtime": "local",
        "image": None,
        "wall_clock_s": 30.0,
        "max_steps": None,
        "max_tokens": None,
        "max_cost_usd": None,
        "seed": 0,
        "seed_rule": SEED_RULE,
        "tool_timeouts": {},
        "stall_steps": 5,
        "task_options": {},
    }
    loaded = RunConfig.from_dict(json.loads(json.dumps(written)))
    assert runner.config_id(loaded) == "4deb12747cc7"
    assert (
        loaded.llm.temperature == 0.25 and loaded.as_dict() == written
    )  # typed, written back as it was
    # config.json as the run loop writes it: the same bytes as the file the run wrote
    assert json.dumps(loaded.as_dict(), indent=2) == json.dumps(written, indent=2)
    # written before the settings were settled: model settings in policy_args, an `extra` bag
    legacy = {
        "task": "circle-packing-26",
        "policy": "innolab.agents.aide:make",
        "agent": "aide",
        "extra": {"x": 1},
        "policy_args": {
            "settings": {"model": "smollm2", "temperature": 0.5, "seed": 1},
            "innovation_prompt": True,
            "initial_solution": "print(1)\n",
            "cache_path": "/c.sqlite",
            "num_drafts": 2,
        },
        "wall_clock_s": 120.0,
        "seed": 1,
    }
    loaded = RunConfig.from_dict(legacy)
    assert runner.config_id(loaded) == "f6357d61123e"
    assert loaded.policy_args == {"num_drafts": 2} and loaded.innovation_prompt
    assert loaded.prior_solution == {"name": "prior", "sha256": None, "code": "print(1)\n"}
    assert loaded.llm.max_tokens == 512 and loaded.as_dict()["llm"] == {
        "model": "smollm2",
        "temperature": 0.5,
        "seed": 1,
    }  # only what the file held
    with_options = RunConfig(
        task="expbench:confA/111/0",
        policy="innolab.agents.codeact:make",
        agent="codeact",
        llm={"model": "smollm2", "temperature": 0.7},
        task_options={"repo": "/r", "data": "/d"},
        wall_clock_s=600.0,  # RunConfig's default before it became the schema's 60 s
    )
    assert runner.config_id(with_options) == "e8c787a8ec5a"


# every option of innolab's own agents and its default: a default is left out of config ids (so
# that recording defaults changed no id), so a change of one gives runs that differ one id; pinned
# here, so that such a change is made knowingly (and its runs told apart, e.g. by a new option name)
BUILT_IN_DEFAULTS = {
    "aide": {"num_drafts": 2, "debug_prob": 0.5, "max_debug_depth": 3},
    "baseline": {},
    "codeact": {"native_tools": False, "persistent": True},
    "mini-swe-agent": {"tool_call_mode": "auto", "step_limit": 200},
    "mlab": {},
    "openai-agents": {"tool_call_mode": "auto", "max_turns": 200},
    "smolagents": {"tool_call_mode": "auto", "smol_agent": "tool_calling", "smol_max_steps": 200},
}


def test_the_built_ins_option_defaults_are_pinned():
    from innolab.agents import registry

    ours = {name: entry.spec for name, entry in registry.registered().items()
            if entry.distribution == "innolab"}
    assert {name: {k: f.get_default(call_default_factory=True)
                   for k, f in spec.options.model_fields.items()}
            for name, spec in ours.items()} == BUILT_IN_DEFAULTS


def test_every_option_is_recorded_and_defaults_keep_the_ids(monkeypatch):
    """config.json holds every option (the defaults too) and names the defaulted ones; the id
    is the one it had when only the options given were recorded."""
    from innolab.agents import frameworks

    config = runner.agent_config("aide", "circle-packing-26")
    assert config.policy_args == BUILT_IN_DEFAULTS["aide"]
    assert config.option_defaults == ["num_drafts", "debug_prob", "max_debug_depth"]
    assert config.as_dict()["option_defaults"] == config.option_defaults
    assert runner.config_id(config) == "0d9c5d13f903"  # as pinned above, before defaults
    again = RunConfig.from_dict(json.loads(json.dumps(config.as_dict())))
    assert again.config_id() == "0d9c5d13f903" and again.as_dict() == config.as_dict()
    # an option given counts in the id at any value, its default's too (as before)
    given = runner.agent_config("aide", "circle-packing-26", num_drafts=2)
    assert given.policy_args == config.policy_args
    assert given.option_defaults == ["debug_prob", "max_debug_depth"]
    assert runner.config_id(given) not in ("0d9c5d13f903", runner.config_id(
        runner.agent_config("aide", "circle-packing-26", num_drafts=3)))
    codeact = runner.agent_config("codeact", "circle-packing-26", persistent=False)
    assert codeact.policy_args == {"native_tools": False, "persistent": False}
    assert codeact.option_defaults == ["native_tools"]
    # the frameworks: every option, the framework's version and its libraries' (versions of our
    # own here, so that the id does not follow the installed ones); the id is the one the
    # configuration has with only what is not a default in policy_args
    versions = {"litellm": "1.0", "mcp": "1.0", "openai": "1.0"}
    monkeypatch.setattr(frameworks, "framework_version", lambda distribution: "9.9")
    monkeypatch.setattr(frameworks, "library_versions", lambda: versions)
    ids = {}
    for agent in ("smolagents", "openai-agents", "mini-swe-agent"):
        resolved = runner.resolve(runspec.schema()(agent=agent))
        resolved_args = {"framework_version": "9.9", "library_versions": versions}
        assert resolved.policy_args == {**BUILT_IN_DEFAULTS[agent], **resolved_args}
        assert resolved.option_defaults == list(BUILT_IN_DEFAULTS[agent])
        written = {k: v for k, v in resolved.as_dict().items() if k != "option_defaults"}
        as_before = RunConfig.from_dict({**written, "policy_args": resolved_args})
        assert "option_defaults" not in as_before.as_dict()
        assert resolved.config_id() == as_before.config_id()
        ids[agent] = resolved.config_id()
    # with the framework's version alone in policy_args (before the libraries' were recorded)
    # the ids were 7851bb06527a, 1c6a2cdb9795 and 0fe5ef84db51: recording the libraries'
    # versions (what the run used) changed them; recording the options' defaults did not
    assert ids == {"smolagents": "d2754dd7cbf6", "openai-agents": "9deff482db8e",
                   "mini-swe-agent": "248a55983923"}
    # an agent with no model: its resolved arguments win over an option's default
    baseline = runner.agent_config("baseline", "circle-packing-26")
    assert baseline.option_defaults == [] and baseline.policy_args == {"family": "circles",
                                                                       "seed": 0}
    assert runner.config_id(baseline) == "e8464ed50834"  # a reference sweep's baseline
