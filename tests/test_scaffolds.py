"""The scaffolds' own behaviour, driven by the scripted server: AIDE's tree search and memory."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.agents.aide_journal import Journal, Node, SearchPolicy
from innolab.runner import agent_config
from tests.fake_llm import SOLUTION_CODE, FakeLLM

BUGGY = "raise RuntimeError('not yet')\n"
BETTER = SOLUTION_CODE.replace("(1 - 1e-12)", "(1 - 1e-13)")


def scripted_config(agent: str, url: str, runtime: str = "local", image: str | None = None, **options):
    return agent_config(agent, "circle-packing-26", budget_s=300, runtime=runtime, image=image, max_steps=12,
                        settings={"base_url": url, "model": "fake", "backoff_s": 0.0, "timeout_s": 5.0}, **options)


@pytest.mark.parametrize("runtime", ["local", "docker"])
def test_aide_drafts_debugs_and_improves_with_the_journal_as_memory(runtime, tmp_path, request):
    image = request.getfixturevalue("base_image") if runtime == "docker" else None
    nodes = [{"plan": "plan A: a buggy first try", "code": BUGGY},
             {"plan": "plan B: fix it with a grid", "code": SOLUTION_CODE},
             {"plan": "plan C: shrink the margin", "code": BETTER}]
    with FakeLLM(replies={"aide_node": nodes}, in_call_order=True) as server:
        config = scripted_config("aide", server.base_url, runtime, image, num_drafts=1, debug_prob=1.0)
        config.max_steps = 9  # 3 nodes: generate/run, validate, (submit or generate)
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
        prompts = [r["messages"][-1]["content"] for r in server.requests
                   if (r.get("response_format") or {}).get("json_schema", {}).get("name") == "aide_node"]
    events = traces.read_events(Path(outcome["run_dir"]))
    tree = [(e["id"], e["parent"], e["stage"], e["valid"]) for e in events if e["type"] == "node"]
    assert tree[:3] == [(0, None, "draft", False), (1, 0, "debug", True), (2, 1, "improve", True)]
    assert outcome["valid"]
    assert "Memory" not in prompts[0]
    assert "plan A: a buggy first try -> buggy" in prompts[1] and BUGGY.strip() in prompts[1]  # debug: its code
    assert "RuntimeError" in prompts[1]  # and its output
    assert "plan A" in prompts[2] and "plan B: fix it with a grid -> valid, score 2.1666" in prompts[2]
    assert SOLUTION_CODE.strip().splitlines()[1] in prompts[2]  # improve: the best node's code
    assert all("Circle packing" in p for p in prompts)  # the task description every time


def test_search_policy_follows_aide():
    journal = Journal([Node(0, None, "a", "x", evaluated=True, valid=False)])
    rng = random.Random(0)
    assert journal.choose(SearchPolicy(num_drafts=2), "max", rng) == ("draft", None)
    stage, parent = journal.choose(SearchPolicy(num_drafts=1, debug_prob=1.0), "max", rng)
    assert stage == "debug" and parent.id == 0
    journal.nodes.append(Node(1, 0, "b", "y", evaluated=True, valid=True, metric=2.0))
    journal.nodes.append(Node(2, None, "c", "z", evaluated=True, valid=True, metric=3.0))
    stage, parent = journal.choose(SearchPolicy(num_drafts=1, debug_prob=0.0), "max", rng)
    assert (stage, parent.id) == ("improve", 2)  # greedy: the best valid node
    assert journal.choose(SearchPolicy(num_drafts=1, debug_prob=0.0), "min", rng)[1].id == 1
    assert journal.stage(journal.node(1)) == "debug" and journal.debug_depth(journal.node(1)) == 1
    chain = Journal([Node(0, None, "", "", evaluated=True), Node(1, 0, "", "", evaluated=True),
                     Node(2, 1, "", "", evaluated=True)])
    assert chain.debug_depth(chain.node(2)) == 2
    deep = SearchPolicy(num_drafts=1, debug_prob=1.0, max_debug_depth=2)
    assert chain.choose(deep, "max", rng) == ("draft", None)  # the only buggy leaf is too deep; nothing valid
    again = Journal.from_list(json.loads(json.dumps(journal.to_list())))
    assert again == journal and "stage" not in journal.to_list()[0]
