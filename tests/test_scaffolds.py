"""The scaffolds' own behaviour, driven by the scripted server: AIDE's tree search and memory."""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from innolab import runner, traces
from innolab.agents.aide_journal import Journal, Node, SearchPolicy
from innolab.gym.policy import Observation
from innolab.gym.tools import ToolResult
from innolab.llm.client import string_fields
from innolab.runner import agent_config
from tests.fake_llm import SOLUTION_CODE, FakeLLM
from tests.test_expbench import dataset  # noqa: F401 (fixture)

BUGGY = "raise RuntimeError('not yet')\n"
BETTER = SOLUTION_CODE.replace("(1 - 1e-12)", "(1 - 1e-13)")


def scripted_config(
    agent: str, url: str, runtime: str = "local", image: str | None = None, **options
):
    return agent_config(
        agent,
        "circle-packing-26",
        budget_s=300,
        runtime=runtime,
        image=image,
        max_steps=12,
        settings={"base_url": url, "model": "fake", "backoff_s": 0.0, "timeout_s": 5.0},
        **options,
    )


@pytest.mark.parametrize("runtime", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_aide_drafts_debugs_and_improves_with_the_journal_as_memory(runtime, tmp_path, request):
    image = request.getfixturevalue("base_image") if runtime == "docker" else None
    nodes = [
        {"plan": "plan A: a buggy first try", "code": BUGGY},
        {"plan": "plan B: fix it with a grid", "code": SOLUTION_CODE},
        {"plan": "plan C: shrink the margin", "code": BETTER},
    ]
    with FakeLLM(replies={"aide_node": nodes}, in_call_order=True) as server:
        config = scripted_config(
            "aide", server.base_url, runtime, image, num_drafts=1, debug_prob=1.0
        )
        config.max_steps = 9  # 3 nodes: generate/run, validate, (submit or generate)
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
        prompts = [
            r["messages"][-1]["content"]
            for r in server.requests
            if (r.get("response_format") or {}).get("json_schema", {}).get("name") == "aide_node"
        ]
    events = traces.read_events(Path(outcome["run_dir"]))
    tree = [(e.id, e.parent, e.stage, e.valid) for e in events if e.type == "node"]
    assert tree[:3] == [(0, None, "draft", False), (1, 0, "debug", True), (2, 1, "improve", True)]
    assert outcome["valid"]
    assert "Memory" not in prompts[0]
    assert (
        "plan A: a buggy first try -> buggy" in prompts[1] and BUGGY.strip() in prompts[1]
    )  # debug: its code
    assert "RuntimeError" in prompts[1]  # and its output
    assert (
        "plan A" in prompts[2] and "plan B: fix it with a grid -> valid, score 2.1666" in prompts[2]
    )
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
    chain = Journal(
        [
            Node(0, None, "", "", evaluated=True),
            Node(1, 0, "", "", evaluated=True),
            Node(2, 1, "", "", evaluated=True),
        ]
    )
    assert chain.debug_depth(chain.node(2)) == 2
    deep = SearchPolicy(num_drafts=1, debug_prob=1.0, max_debug_depth=2)
    assert chain.choose(deep, "max", rng) == (
        "draft",
        None,
    )  # the only buggy leaf is too deep; nothing valid
    again = Journal.from_list(json.loads(json.dumps(journal.to_list())))
    assert again == journal and "stage" not in journal.to_list()[0]


def mlab_step(
    action: str, file: str = "", request: str = "", other: str = "", start: int = 1, end: int = 0
):
    return {
        "reflection": f"reflecting before {action}",
        "research_plan_and_status": f"PLAN: next {action}",
        "fact_check": "checked",
        "thought": f"do {action}",
        "action": action,
        "action_input": {
            "file": file,
            "other_file": other,
            "request": request,
            "start_line": start,
            "end_line": end,
        },
    }


@pytest.mark.parametrize("runtime", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_mlab_drives_every_action_and_keeps_a_research_log(runtime, tmp_path, request):
    image = request.getfixturevalue("base_image") if runtime == "docker" else None
    steps = [
        mlab_step("List Files", "."),
        mlab_step("Edit Script (AI)", "solve.py", "write a grid packing"),
        mlab_step("Inspect Script Lines", "solve.py", start=2, end=3),
        mlab_step("Understand File", "solve.py", "what file does it write?"),
        mlab_step("Copy File", "solve.py", other="copy.py"),
        mlab_step("Reflection", request="what next?"),
        mlab_step("Execute Script", "solve.py"),
        mlab_step("Validate", "submission.json"),
        mlab_step("Edit Script (AI)", "solve.py", "break it"),
        mlab_step("Undo Edit Script", "solve.py"),
        mlab_step("Execute Script", "solve.py"),
        mlab_step("Final Answer", "submission.json"),
    ]
    replies = {
        "mlab_action": steps,
        "mlab_edit": [{"content": SOLUTION_CODE}, {"content": BUGGY}],
        "mlab_answer": [{"answer": "it writes submission.json"}, {"answer": "REFLECTED: run it"}],
    }
    with FakeLLM(replies=replies, in_call_order=True) as server:
        config = scripted_config("mlab", server.base_url, runtime, image)
        config.max_steps = 30
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
        requests = list(server.requests)
    run_dir = Path(outcome["run_dir"])
    events = traces.read_events(run_dir)
    tools = [e.tool for e in events if e.type == "tool_call"]
    assert tools == [
        "list_files",
        "read_file",
        "write_file",
        "read_file",
        "read_file",
        "bash",
        "bash",
        "validate",
        "read_file",
        "write_file",
        "write_file",
        "bash",
        "submit",
    ]
    assert outcome["valid"] and outcome["reason"] == "agent_finished"

    def schema(r):
        return (r.get("response_format") or {}).get("json_schema", {}).get("name")

    research = [r["messages"][-1]["content"] for r in requests if schema(r) == "mlab_action"]
    assert "Lines 2-3 of solve.py" in research[3] and "2: " in research[3]  # Inspect Script Lines
    assert (
        "it writes submission.json" in research[4]
    )  # Understand File: the model's answer is the observation
    assert "+++ solve.py (after)" in research[2]  # Edit Script (AI): the diff
    assert "REFLECTED: run it" in research[6]  # Reflection: a model call, its answer observed
    assert "PLAN: next Copy File" in research[5]  # the research plan and status carried forward
    reflection = [r for r in requests if schema(r) == "mlab_answer"][1]["messages"][-1]["content"]
    assert "Research log" in reflection and "Action: Copy File" in reflection
    edits = [r["messages"][-1]["content"] for r in requests if schema(r) == "mlab_edit"]
    assert "write a grid packing" in edits[0] and "break it" in edits[1]
    log = (run_dir / "research_log.md").read_text()
    assert log.count("## Step") == len(steps) and log.count("Observation:") >= len(steps) - 1
    assert "Action: Undo Edit Script" in log and "REFLECTED" in log
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    undo = [e for e in events if e.type == "tool_call" and e.tool == "write_file"][-1]
    assert undo.arguments["content"] == SOLUTION_CODE and results[undo.call_id].ok


def test_history_outgrowing_the_context_is_summarised_not_dropped(tmp_path):
    from innolab.agents.codeact import CodeActAgent

    with FakeLLM() as server:
        agent = CodeActAgent(
            settings={
                "base_url": server.base_url,
                "model": "fake",
                "max_tokens": 100,
                "backoff_s": 0.0,
            },
            cache_path=str(tmp_path / "cache.sqlite"),
        )
        agent.memory.context_tokens = 600  # as if the endpoint reported a small context
        messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
        messages += [
            {"role": "assistant" if i % 2 else "user", "content": f"turn {i} " + "x" * 300}
            for i in range(12)
        ]
        sent = agent.context(messages)
        assert sent[:2] == messages[:2] and sent[2]["content"].startswith(
            "Summary of the earlier turns"
        )
        assert sent[-1] == messages[-1] and len(sent) < len(messages)
        assert agent.memory.summary.turns == len(messages) - 2 - (len(sent) - 3)
        calls = len(server.requests)
        assert (
            agent.context(messages) == sent and len(server.requests) == calls
        )  # the summary is kept
        assert agent.context(messages[:3]) == messages[:3]  # what fits goes as it is
        action = agent.action([], None, [])
        assert [e.purpose for e in action.events] == ["summarise history"] and action.tokens > 0


def test_a_loop_of_identical_replies_is_broken(tmp_path):
    same = {"thought": "again", "action": "python", "code": "print(undefined)"}
    other = {"thought": "new", "action": "python", "code": "print('something else')"}
    replies = {"codeact_action": [same, same, same, other, other, same, same, same, other]}
    with FakeLLM(replies=replies, in_call_order=True) as server:
        config = scripted_config("codeact", server.base_url)
        config.max_steps = 5
        outcome = runner.start(config, tmp_path / "run", novelty=None, show_progress=False)
        requests = [r["messages"] for r in server.requests]
    responses = [
        e.response for e in traces.read_events(Path(outcome["run_dir"])) if e.type == "llm_call"
    ]
    longest = max(sum(1 for _ in group) for _, group in itertools.groupby(responses))
    assert longest <= 3
    fourth = requests[3]
    assert fourth[-1]["content"].startswith("Your last replies were identical")
    assert (
        sum(m["role"] == "assistant" and "undefined" in m["content"] for m in fourth) == 1
    )  # the loop is gone


# ----------------------------------------------------------------------------- task-neutral prompts

# Words that belong to one problem family; no scaffold text may hold them, so a run reads only its
# own task's.
FAMILY_WORDS = {
    "circle-packing-26": ("circle", "radius", "radii", "packing"),
    "job-shop-taillard-41-50": ("job", "machine", "schedul", "makespan"),
    "kissing-number-11": ("kissing", "sphere", "vector"),
    "expbench": ("experiment", "conclusion", "reproduce_exp_bench"),
}
AGENT_MODULES = ["base", "aide", "aide_journal", "mlab", "codeact"]


def words_in(text: str) -> dict[str, list[str]]:
    lower = text.lower()
    return {
        family: hits
        for family, words in FAMILY_WORDS.items()
        if (hits := [w for w in words if w in lower])
    }


def observations(data: Path) -> dict[str, Observation]:
    """The first observation of a run on each family: built-in tasks as the run loop makes it, and
    an EXP-Bench task (its description and its workspace rules) from the small test data set."""
    from innolab.expbench.data import get, load
    from innolab.expbench.gym_task import ExpBenchGymTask
    from innolab.tasks import get_task

    found = {}
    for family in FAMILY_WORDS:
        task = (
            ExpBenchGymTask(get(load(data), "confA/111/0"), Path("unused"))
            if family == "expbench"
            else get_task(family)
        )
        found[family] = Observation(
            0, task.description, [], 300.0, task.direction, task.workspace_rules
        )
    return found


def drive(agent_name: str, observation: Observation, url: str, tmp_path: Path) -> None:
    """Steps that reach each fixed text of the scaffold: its role, its notes and its helper
    prompts."""
    from innolab.agents.aide import AideAgent
    from innolab.agents.codeact import CodeActAgent
    from innolab.agents.mlab import MlabAgent

    settings = {"base_url": url, "model": "fake", "backoff_s": 0.0, "timeout_s": 5.0}
    options = {
        "settings": settings,
        "cache_path": str(tmp_path / f"{agent_name}.sqlite"),
        "innovation_prompt": True,
    }
    if agent_name == "codeact":
        agent = CodeActAgent(**options)
        agent.step(observation)  # finish before any submission, then a malformed reply
        agent.step(replace(observation, step=1))  # which is answered
        return
    if agent_name == "mlab":
        agent = MlabAgent(**options)
        agent.step(observation)  # Reflection, a malformed reply, then Edit Script (AI): a read_file
        read = ToolResult("m3", "read_file", "print('hello')\n", True)
        agent.step(replace(observation, step=1, results=[read]))  # the edit prompt
        return
    agent = AideAgent(num_drafts=1, debug_prob=1.0, **options)
    agent.step(observation)  # draft
    agent.step(
        replace(observation, step=1, results=[ToolResult("n0", "python", "Traceback: boom", False)])
    )
    verdict = ToolResult(
        "n0-v", "validate", "invalid", False, extra={"verdict": {"valid": False, "errors": ["x"]}}
    )
    agent.step(
        replace(observation, step=2, results=[verdict])
    )  # debug: its code, output and the instruction


@pytest.mark.parametrize("agent_name", ["aide", "mlab", "codeact"])
def test_every_scaffold_message_comes_from_the_task_it_runs(agent_name, dataset, tmp_path):  # noqa: F811
    seen = observations(dataset)
    for (
        family,
        observation,
    ) in seen.items():  # the test can tell: each description holds its own words only
        assert set(words_in(observation.task_description)) == {family}, family
    replies = {
        "codeact_action": [{"thought": "stop", "action": "finish", "code": ""}, {"thought": "?"}],
        "mlab_action": [
            mlab_step("Reflection", request="what next?"),
            {"thought": "?"},
            mlab_step("Edit Script (AI)", "solve.py", "print more"),
        ],
        "mlab_answer": [{"answer": "try a program"}],
        "mlab_edit": [{"content": "print('more')\n"}],
        "aide_node": [{"plan": "a first program", "code": "print(1)\n"}],
    }
    for family, observation in seen.items():
        with FakeLLM(replies=replies, in_call_order=True) as server:
            drive(agent_name, observation, server.base_url, tmp_path / family)
            requests = list(server.requests)
        shown = "\n".join(m.get("content") or "" for r in requests for m in r["messages"])
        assert set(words_in(shown)) == {family}, (family, words_in(shown))
        reached = {
            "codeact": [
                "Nothing has been submitted yet",
                "Reply with one JSON object",
            ],  # a refused finish
            "mlab": ["Research log", "Answer with one JSON object", "Edit instruction: print more"],
            "aide": ["Write a first complete program", "This program failed", "Traceback: boom"],
        }
        assert all(text in shown for text in reached[agent_name]), (agent_name, shown[-2000:])
        for request in requests:  # every free-text field the model fills is bounded
            assert all(
                "maxLength" in f or "enum" in f
                for f in string_fields(request.get("response_format") or {})
            )


def test_no_scaffold_text_names_a_problem_family():
    """Every string literal of the scaffolds' modules (roles, notes, instructions, schemas,
    docstrings)."""
    import ast

    import innolab.agents

    folder = Path(innolab.agents.__file__).parent
    for name in AGENT_MODULES:
        tree = ast.parse((folder / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not words_in(node.value), (name, node.lineno, node.value[:120])


@pytest.mark.parametrize("max_tokens", [256, 512, 4096])
def test_a_reply_that_fills_every_field_fits_the_token_cap(max_tokens):
    """Each scaffold's reply formats: every free-text field bounded, the short ones small, and a
    reply that fills them all (text at CHARS_PER_TOKEN, the program at PAYLOAD_CHARS_PER_TOKEN)
    within `max_tokens`."""
    from innolab.agents import aide, codeact, mlab
    from innolab.llm.client import CHARS_PER_TOKEN, PAYLOAD_CHARS_PER_TOKEN, STRUCTURE_TOKENS

    formats = {
        "codeact": codeact.action_schema(codeact.ACTIONS, max_tokens),
        "aide": aide.node_schema(max_tokens),
        "mlab": mlab.action_schema(mlab.ACTIONS, max_tokens),
        "mlab edit": mlab.edit_schema(max_tokens),
        "mlab answer": mlab.ANSWER_SCHEMA,
    }
    for name, response_format in formats.items():
        properties = response_format["json_schema"]["schema"]["properties"]
        payload = [properties[key]["maxLength"] for key in ("code", "content") if key in properties]
        fields = [f for f in string_fields(response_format) if "enum" not in f]
        assert all("maxLength" in f for f in fields), name
        short = [f["maxLength"] for f in fields][
            : len(fields) - len(payload)
        ]  # the program comes last
        assert all(limit <= 600 for limit in short), name
        tokens = (
            STRUCTURE_TOKENS + sum(short) / CHARS_PER_TOKEN + sum(payload) / PAYLOAD_CHARS_PER_TOKEN
        )
        assert tokens <= max_tokens, (name, tokens)
    assert (
        codeact.action_schema(codeact.ACTIONS, 4096)["json_schema"]["schema"]["properties"]["code"][
            "maxLength"
        ]
        > 4
        * codeact.action_schema(codeact.ACTIONS, 512)["json_schema"]["schema"]["properties"][
            "code"
        ]["maxLength"]
    )  # a model with room for long programs may write them


def test_mlab_acts_after_a_reflection(tmp_path):
    """A small model may choose Reflection (no tool) forever: after one in a step, the reply format
    offers only the actions that use a tool, and a Reflection given anyway is answered as a
    malformed step."""
    from innolab.agents.mlab import MlabAgent
    from innolab.tasks import get_task

    task = get_task("circle-packing-26")
    replies = {
        "mlab_action": [
            mlab_step("Reflection", request="why?"),
            mlab_step("Reflection", request="again?"),
            mlab_step("List Files", "."),
        ],
        "mlab_answer": [{"answer": "act now"}],
    }
    with FakeLLM(replies=replies, in_call_order=True) as server:
        agent = MlabAgent(
            settings={"base_url": server.base_url, "model": "fake", "backoff_s": 0.0},
            cache_path=str(tmp_path / "cache.sqlite"),
        )
        action = agent.step(Observation(0, task.description, [], 60.0, task.direction))
        requests = [
            r
            for r in server.requests
            if r["response_format"]["json_schema"]["name"] == "mlab_action"
        ]
    offered = [
        r["response_format"]["json_schema"]["schema"]["properties"]["action"]["enum"]
        for r in requests
    ]
    assert ["Reflection" in actions for actions in offered] == [True, False, False]
    assert "must be one of" in requests[2]["messages"][-1]["content"]
    assert [c.name for c in action.tool_calls] == ["list_files"]


@pytest.mark.parametrize("max_tokens", [50, 512])
def test_a_reply_cut_at_the_token_cap_acts_on_what_it_holds(max_tokens, tmp_path, monkeypatch):
    """The scripted server reports 50 completion tokens: with a cap of 50 the cut reply is read as
    far as it goes (the program it was writing is known to be cut: it runs as cut, and the model is
    told); below the
    cap, a reply that is not JSON is answered as malformed."""
    import tests.fake_llm as fake_llm
    from innolab.agents.codeact import CodeActAgent
    from innolab.tasks import get_task

    cut = '{\n  "thought": "count",\n  "action": "python",\n  "code": "print(1011111111111'
    monkeypatch.setattr(
        fake_llm, "play", lambda request, code="": {"role": "assistant", "content": cut}
    )
    task = get_task("circle-packing-26")
    with FakeLLM() as server:
        agent = CodeActAgent(
            settings={
                "base_url": server.base_url,
                "model": "fake",
                "backoff_s": 0.0,
                "max_tokens": max_tokens,
            },
            cache_path=str(tmp_path / "cache.sqlite"),
        )
        action = agent.step(Observation(0, task.description, [], 60.0, task.direction))
    if max_tokens == 50:  # the program it was writing is cut: run as cut, and the model is told
        assert [(c.name, c.arguments) for c in action.tool_calls] == [
            ("python_session", {"code": "print(1011111111111"})]
        assert "Your code was cut at 19 characters" in agent.memory.messages[-1]["content"]
    else:
        assert (
            not action.tool_calls
            and "Reply with one JSON object" in agent.memory.messages[-1]["content"]
        )


@pytest.mark.parametrize("max_tokens", [128, 256, 512, 4096])
def test_an_aide_plan_leaves_room_for_its_program(max_tokens):
    """Even at one token per character, AIDE's plan leaves PROGRAM_TOKENS of the cap to the program:
    as written from 512 tokens up, shrunk below (104 characters at 256), no further than needed."""
    from innolab.agents import aide
    from innolab.llm.client import STRUCTURE_TOKENS

    properties = aide.node_schema(max_tokens)["json_schema"]["schema"]["properties"]
    assert list(properties) == ["plan", "code"]
    plan = properties["plan"]["maxLength"]
    room = max_tokens - STRUCTURE_TOKENS - aide.PROGRAM_TOKENS
    if max_tokens >= 512:
        assert plan == aide.PLAN_CHARS <= room
    else:
        assert plan == max(8, room)
    if max_tokens == 256:  # the embedded model's cap
        assert plan == 104


@pytest.mark.parametrize("max_tokens", [128, 256, 512, 4096])
def test_an_mlab_step_reaches_its_action_within_the_token_cap(max_tokens):
    """Even at one token per character, the fields before MLAB's action fit the token cap with its
    structure: as written from 512 tokens up, in proportion below (the embedded model's 256)."""
    from innolab.agents import mlab
    from innolab.llm.client import STRUCTURE_TOKENS

    properties = mlab.action_schema(mlab.ACTIONS, max_tokens)["json_schema"]["schema"]["properties"]
    before = list(properties)[: list(properties).index("action")]
    assert before == list(mlab.BEFORE_ACTION)
    held = [properties[key]["maxLength"] for key in before]
    assert STRUCTURE_TOKENS + sum(held) + 16 <= max_tokens
    if max_tokens >= 512:
        assert held == [mlab.LIMITS[key] for key in before]
    else:  # shrunk, in proportion, and no further than needed
        assert STRUCTURE_TOKENS + sum(held) + 16 > max_tokens - len(held)


# ------------------------------------------------------------------------------------- cut programs


def test_cut_fields_names_a_field_at_its_limit_or_cut_at_the_token_cap():
    from innolab.llm.client import cut_fields, json_schema, text

    schema = json_schema("s", {"plan": text(5), "code": text(10)}, ["plan", "code"])
    assert cut_fields({"plan": "ab", "code": "x" * 10}, schema) == {"code": 10}
    assert cut_fields({"plan": "abcde", "code": "x" * 9}, schema) == {"plan": 5}
    assert (
        cut_fields({"plan": "ab", "code": "x" * 11}, schema) == {}
    )  # not enforced: longer, and whole
    assert cut_fields({"plan": "ab", "code": "x = 1"}, schema, capped=True) == {"code": 5}
    assert cut_fields({"plan": "ab"}, schema, capped=True) == {"plan": 2}
    assert cut_fields(None, schema, capped=True) == {}


def full(schema: dict, field: str) -> str:
    """A program that fills `field` of `schema` to its maxLength, as an endpoint enforcing the
    grammar cuts it."""
    limit = schema["json_schema"]["schema"]["properties"][field]["maxLength"]
    return ("print(1)\n" * limit)[:limit]


def test_codeact_runs_code_cut_at_its_limit_and_says_it_was_cut(tmp_path):
    """As CodeAct's reference implementation closes an unclosed code block and runs it: the cut
    code runs, its error comes back, and the model reads that it was cut."""
    from innolab.agents.codeact import ACTIONS, CodeActAgent, action_schema
    from innolab.tasks import get_task

    code = full(action_schema(ACTIONS, 512), "code")
    replies = {"codeact_action": [{"thought": "t", "action": "python", "code": code}]}
    task = get_task("circle-packing-26")
    with FakeLLM(replies=replies, in_call_order=True) as server:
        agent = CodeActAgent(
            settings={
                "base_url": server.base_url,
                "model": "fake",
                "backoff_s": 0.0,
                "max_tokens": 512,
            },
            cache_path=str(tmp_path / "cache.sqlite"),
        )
        first = agent.step(Observation(0, task.description, [], 60.0, task.direction))
        note = agent.memory.messages[-1]["content"]
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("python_session", {"code": code})]
    assert f"Your code was cut at {len(code)} characters" in note and "ran as it was cut" in note
    assert "Write shorter code" in note


def test_codeact_submits_by_its_short_path_field_whatever_its_code_holds(tmp_path):
    """Seed 4 of the stepping measurement: the embedded model filled a submit action's code with
    digits up to the token cap, and the submit never ran. The path to submit has its own short
    field; code is not read for it."""
    from innolab.agents.codeact import ACTIONS, PATH_CHARS, CodeActAgent, action_schema
    from innolab.tasks import get_task

    schema = action_schema(ACTIONS, 512)["json_schema"]["schema"]
    assert schema["properties"]["path"]["maxLength"] == PATH_CHARS <= 80
    assert list(schema["properties"]) == ["thought", "action", "path", "code"]
    digits = full(action_schema(ACTIONS, 512), "code").replace("print(1)", "0.1, 0.1")
    replies = {
        "codeact_action": [{"thought": "t", "action": "submit", "path": "out.json", "code": digits}]
    }
    task = get_task("circle-packing-26")
    with FakeLLM(replies=replies, in_call_order=True) as server:
        agent = CodeActAgent(
            settings={
                "base_url": server.base_url,
                "model": "fake",
                "backoff_s": 0.0,
                "max_tokens": 512,
            },
            cache_path=str(tmp_path / "cache.sqlite"),
        )
        action = agent.step(Observation(0, task.description, [], 60.0, task.direction))
    assert [(c.name, c.arguments) for c in action.tool_calls] == [("submit", {"path": "out.json"})]


def test_aide_runs_a_cut_program_as_a_node_and_tells_the_model_it_was_cut(tmp_path):
    """As AIDE runs what its code extraction returned once its retries are spent: a cut program is
    run and validated (a buggy node with its error), and the debug stage reads that it was cut."""
    from innolab.agents.aide import AideAgent, node_schema
    from innolab.gym.tools import ToolResult
    from innolab.tasks import get_task

    code = full(node_schema(512), "code")
    replies = {"aide_node": [{"plan": "long", "code": code}]}
    task = get_task("circle-packing-26")
    with FakeLLM(replies=replies, in_call_order=True) as server:
        agent = AideAgent(
            settings={
                "base_url": server.base_url,
                "model": "fake",
                "backoff_s": 0.0,
                "max_tokens": 512,
            },
            cache_path=str(tmp_path / "cache.sqlite"),
        )
        first = agent.step(Observation(0, task.description, [], 60.0, task.direction))
        ran = ToolResult("n0", "python", "SyntaxError: unterminated string literal", False)
        second = agent.step(Observation(1, task.description, [ran], 59.0, task.direction))
        verdict = ToolResult("n0-v", "validate", "", True, extra={"verdict": {
            "valid": False, "errors": ["no submission.json"]}})
        agent.step(Observation(2, task.description, [verdict], 58.0, task.direction))
    assert [c.name for c in first.tool_calls] == ["python"]
    assert first.tool_calls[0].arguments["code"].endswith(code)
    assert [c.name for c in second.tool_calls] == ["validate"]
    node = agent.journal.nodes[0]
    assert node.buggy and not node.ran
    assert f"Your program was cut at {len(code)} characters" in node.output
    assert "SyntaxError" in node.output and "no submission.json" in node.output


def test_mlab_does_not_save_an_edit_cut_at_its_limit(tmp_path):
    from innolab.agents.mlab import MlabAgent, edit_schema
    from innolab.tasks import get_task

    content = full(edit_schema(512), "content")
    replies = {
        "mlab_action": [
            mlab_step("Edit Script (AI)", "solve.py", "rewrite it"),
            mlab_step("List Files", "."),
        ],
        "mlab_edit": [{"content": content}],
    }
    task = get_task("circle-packing-26")
    with FakeLLM(replies=replies, in_call_order=True) as server:
        agent = MlabAgent(
            settings={
                "base_url": server.base_url,
                "model": "fake",
                "backoff_s": 0.0,
                "max_tokens": 512,
            },
            cache_path=str(tmp_path / "cache.sqlite"),
        )
        read = agent.step(Observation(0, task.description, [], 60.0, task.direction))
        assert [c.name for c in read.tool_calls] == ["read_file"]
        source = ToolResult(read.tool_calls[0].id, "read_file", "print(1)\n", True)
        action = agent.step(Observation(1, task.description, [source], 60.0, task.direction))
        last = [
            r
            for r in server.requests
            if r["response_format"]["json_schema"]["name"] == "mlab_action"
        ][-1]
    assert [c.name for c in action.tool_calls] == [
        "list_files"
    ]  # no write_file: the cut script is not saved
    observed = last["messages"][-1]["content"]
    assert f"edited script for solve.py was cut at {len(content)} characters" in observed
    assert "The file is unchanged" in observed and not agent.memory.backups
