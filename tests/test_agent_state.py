"""The scaffolds' typed state: exact JSON round trips; states saved before the typing load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innolab.agents.aide import AideAgent, AideState
from innolab.agents.aide_journal import Journal
from innolab.agents.base import AgentState, HistorySummary
from innolab.agents.codeact import CodeActAgent, CodeActState
from innolab.agents.mlab import MlabAgent, MlabState, Pending
from innolab.gym.policy import Observation
from innolab.gym.tools import ToolResult

DATA = Path(__file__).parent / "data"
LEGACY = json.loads((DATA / "legacy_checkpoints.json").read_text(encoding="utf-8"))
AGENTS = {
    "aide": AideAgent,
    "mlab": MlabAgent,
    "codeact": CodeActAgent,
    "codeact_native": CodeActAgent,
}
SETTINGS = {"base_url": "http://127.0.0.1:9/v1", "model": "fake", "backoff_s": 0.0}
DEFAULTS = (None, 0, False, "", [], {})


def legacy_states() -> list[tuple[str, int, dict]]:
    return [
        (name, i, checkpoint["policy"])
        for name, checkpoints in LEGACY.items()
        for i, checkpoint in enumerate(checkpoints)
    ]


@pytest.mark.parametrize(("name", "index", "saved"), legacy_states(), ids=lambda v: str(v)[:20])
def test_a_state_saved_before_the_typing_loads_with_the_same_values(name, index, saved):
    agent = AGENTS[name](settings=SETTINGS)
    agent.load_state(saved)
    state = agent.state()
    for key, value in saved.items():  # every saved value is kept as it was
        if key == "pending" and value:  # a pending step now names all its fields
            assert {k: state[key][k] for k in value} == value
            assert Pending(**value) == agent.memory.pending
        else:
            assert state[key] == value, key
    # the keys it lacked take their defaults
    assert all(state[key] in DEFAULTS for key in set(state) - set(saved))
    again = AGENTS[name](settings=SETTINGS)
    again.load_state(json.loads(json.dumps(state)))
    # and the new form round-trips exactly
    assert again.state() == state and again.memory == agent.memory


def test_typed_fields_are_read_from_the_saved_keys():
    aide = AideAgent(settings=SETTINGS)
    saved = LEGACY["aide"][-1]["policy"]
    aide.load_state(saved)
    assert isinstance(aide.memory, AideState) and isinstance(aide.memory.journal, Journal)
    assert aide.memory.phase == saved["phase"] and aide.memory.llm_calls == saved["llm_calls"]
    assert [n.code for n in aide.journal.nodes] == [n["code"] for n in saved["journal"]]
    mlab = MlabAgent(settings=SETTINGS)
    saved = LEGACY["mlab"][0]["policy"]
    mlab.load_state(saved)
    assert isinstance(mlab.memory, MlabState) and mlab.memory.pending.kind == "edit"
    assert mlab.memory.turn == saved["turn"]
    assert mlab.memory.context_tokens == saved["context_tokens"]
    codeact = CodeActAgent(settings=SETTINGS)
    codeact.load_state(LEGACY["codeact"][0]["policy"])
    assert isinstance(codeact.memory, CodeActState)
    assert codeact.memory.messages[0]["role"] == "system"


def test_aide_nodes_of_an_older_journal_drop_the_fields_now_derived():
    node = {
        "id": 0,
        "parent": None,
        "stage": "draft",
        "plan": "p",
        "code": "c",
        "output": "",
        "ran": True,
        "valid": True,
        "metric": 3,
        "buggy": False,
        "debug_depth": 0,
    }
    saved = {"phase": "generate", "journal": [node]}
    agent = AideAgent(settings=SETTINGS)
    agent.load_state(saved)
    node = agent.journal.nodes[0]
    # an integer score stays an integer (the prompts show it)
    assert node.metric == 3 and isinstance(node.metric, int)
    assert "stage" not in agent.state()["journal"][0]


def test_the_summary_is_typed_and_round_trips():
    state = AgentState(llm_calls=4, summary=HistorySummary(3, "tried a grid"), context_tokens=600)
    data = state.to_json()
    assert data["summary"] == {"turns": 3, "text": "tried a grid"}
    assert AgentState.from_json(data) == state


@pytest.mark.parametrize("agent_class", [AideAgent, MlabAgent, CodeActAgent])
def test_an_unknown_key_or_a_non_object_is_a_clear_error(agent_class):
    agent = agent_class(settings=SETTINGS)
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['colour'\]"):
        agent.load_state({"llm_calls": 1, "colour": "red"})
    with pytest.raises(ValueError, match="a policy state is a JSON object"):
        agent.load_state(["llm_calls"])
    with pytest.raises(ValueError, match="a field of the policy state is malformed"):
        agent.load_state({"summary": {"turns": 1, "words": "?"}})


def test_a_resumed_aide_continues_where_the_saved_state_left_it():
    """A state saved in the evaluate phase: the resumed agent reads the verdict and submits the
    node's program, with no model call (the saved call count is where the next call's index
    continues)."""
    saved = LEGACY["aide"][1]["policy"]
    agent = AideAgent(settings=SETTINGS)
    agent.load_state(saved)
    verdict = {"valid": True, "score": 2.0, "errors": []}
    result = ToolResult("n0-v", "validate", "valid", True, extra={"verdict": verdict})
    action = agent.step(Observation(2, "the task", [result], 60.0, "max"))
    assert [c.name for c in action.tool_calls] == ["submit"]
    assert action.tool_calls[0].source == saved["journal"][-1]["code"]
    assert agent.memory.phase == "generate" and agent.memory.llm_calls == saved["llm_calls"]
    assert agent.journal.nodes[-1].valid and agent.journal.nodes[-1].metric == 2.0
