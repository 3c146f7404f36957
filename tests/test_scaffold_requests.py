"""The scaffolds' model requests are pinned: a run asks the recorded requests (its cache keys)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.runner import agent_config
from tests.fake_llm import FakeLLM

# The cache keys of every model call of these runs, recorded before the run loop's and the
# scaffolds' state was typed (a key hashes the whole request: messages, response format, sampling
# settings and the call's index). A change of a prompt, a schema or a setting changes them: record
# them anew then (the llm_call events' `key`, in order), knowing that recorded runs no longer
# replay. codeact_native's were recorded anew after the scripted server began to call the tools a
# run offers (eea20fe: CodeAct's persistent `python_session`, no longer an unoffered `python`);
# with the server before it, CodeAct asks the keys recorded first.
KEYS = json.loads((Path(__file__).parent / "data" / "scaffold_request_keys.json").read_text())
CASES = {
    "aide": ("aide", {}),
    "mlab": ("mlab", {}),
    "codeact": ("codeact", {}),
    "codeact_native": ("codeact", {"native_tools": True}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_scaffold_run_asks_the_recorded_requests(case, tmp_path):
    agent, options = CASES[case]
    with FakeLLM() as server:
        config = agent_config(
            agent,
            "circle-packing-26",
            budget_s=300,
            runtime="local",
            max_steps=12,
            settings={
                "base_url": server.base_url,
                "model": "fake",
                "backoff_s": 0.0,
                "timeout_s": 2.0,
                "max_retries": 6,
            },
            **options,
        )
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
    calls = [e for e in traces.read_events(Path(outcome["run_dir"])) if e.type == "llm_call"]
    assert [e.key for e in calls] == KEYS[case]
