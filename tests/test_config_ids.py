"""Config ids are known answers, computed with the code before the run schema.

A refactor never changes them; only a change of what a configuration resolves to does. The one
such change: the embedded model's reply cap, 512 -> 256 tokens (EMBEDDED_MAX_TOKENS in
innolab.llm.settings), which gave every embedded configuration a new id. A config.json written
before (512 in it) keeps its id, as do the committed offline sweep's runs
(`test_ids_of_config_files_written_before`).
"""

from __future__ import annotations

import json

import pytest

from innolab import runner
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
