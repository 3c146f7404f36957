"""MLAB (MLAgentBench's research agent): reflection, research plan and status, fact check, thought, action."""

from __future__ import annotations

from innolab.agents.base import LLMAgent
from innolab.gym.policy import Action, Observation
from innolab.gym.tools import ToolCall
from innolab.llm.client import json_schema

ACTIONS = ["Reflection", "Understand File", "Edit Script", "Execute Script", "Validate", "Final Answer"]
ROLE = ("You are a research agent. Each turn, answer in the research format: Reflection, Research Plan and "
        "Status, Fact Check, Thought, then one Action with its Action Input. Actions: Reflection (think about "
        "the last observation), Understand File (read a file: input file), Edit Script (write a script: input "
        "file and content), Execute Script (run a python script: input file), Validate (check a candidate "
        "submission: input file), Final Answer (submit a candidate: input file; ends the research).")
SCHEMA = json_schema("mlab_action", {
    "reflection": {"type": "string"},
    "research_plan_and_status": {"type": "string"},
    "fact_check": {"type": "string"},
    "thought": {"type": "string"},
    "action": {"type": "string", "enum": ACTIONS},
    "action_input": {"type": "object", "properties": {"file": {"type": "string"}, "content": {"type": "string"}},
                     "required": ["file", "content"], "additionalProperties": False},
}, ["reflection", "research_plan_and_status", "fact_check", "thought", "action", "action_input"])


class MlabAgent(LLMAgent):
    name = "mlab"
    mode = "agent"

    def step(self, observation: Observation) -> Action:
        self.bound(observation)
        memory = self.memory
        if not memory:
            memory.update(messages=[{"role": "system", "content": self.system_prompt(ROLE)},
                                    {"role": "user", "content": observation.task_description}],
                          turn=0, final=False, plan="")
        elif observation.results:
            memory["messages"].append({"role": "user",
                                       "content": "Observation:\n" + self.describe_results(observation.results)})
        if memory["final"]:
            return self.action([], None, [], done=True)
        turn = memory["turn"]
        memory["turn"] += 1
        reply, completion = self.ask(self.trimmed(memory["messages"]), SCHEMA)
        memory["messages"].append({"role": "assistant", "content": completion.text})
        events = [self.llm_event(completion, "research step")]
        if reply is None or reply.get("action") not in ACTIONS:
            memory["messages"].append({"role": "user", "content": "Answer with one JSON object in the research "
                                       f"format; Action must be one of {ACTIONS}."})
            return self.action([], completion, events)
        memory["plan"] = str(reply.get("research_plan_and_status", ""))[:2000]
        given = reply.get("action_input") or {}
        file = str(given.get("file", "")).strip() or "submission.json"
        content = str(given.get("content", ""))
        action = reply["action"]
        if action == "Reflection":
            memory["messages"].append({"role": "user", "content": f"Reflection noted: {reply.get('reflection')}"})
            return self.action([], completion, events)
        calls = {
            "Understand File": [ToolCall(f"m{turn}", "read_file", {"path": file})],
            "Edit Script": [ToolCall(f"m{turn}", "write_file", {"path": file, "content": content})],
            "Execute Script": [ToolCall(f"m{turn}", "bash", {"command": f"python3 {file}"})],
            "Validate": [ToolCall(f"m{turn}", "validate", {"path": file})],
            "Final Answer": [ToolCall(f"m{turn}", "submit", {"path": file})],
        }[action]
        memory["final"] = action == "Final Answer"
        return self.action(calls, completion, events)
