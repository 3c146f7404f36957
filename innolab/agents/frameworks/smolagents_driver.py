"""smolagents in a run: its ToolCallingAgent (or CodeAgent) on the run's MCP tools and gateway."""

from __future__ import annotations

from typing import Any

from innolab.agents.frameworks._driver import accepted, run_from_environment, write_counts


def submitted(final_answer: Any, memory: Any, agent: Any = None) -> bool:
    """Smolagents' final-answer check: a submission was accepted in this run.

    The run stays open (the agent keeps working) until the run's `submit` tool said accepted.
    """
    for step in getattr(memory, "steps", []):
        names = [getattr(call, "name", "") for call in getattr(step, "tool_calls", None) or []]
        if "submit" in names and accepted(str(getattr(step, "observations", "") or "")):
            return True
    raise ValueError("no submission was accepted yet: write a valid candidate and call submit "
                     "on it before the final answer")


def main() -> None:
    """Run the agent on the task until it gives a final answer the check accepts."""
    from smolagents import CodeAgent, MCPClient, OpenAIServerModel, ToolCallingAgent

    run = run_from_environment()
    model = OpenAIServerModel(model_id=run.model, api_base=run.base_url, api_key=run.key)
    kind = CodeAgent if run.options.get("smol_agent") == "code" else ToolCallingAgent
    steps = int(run.options.get("smol_max_steps", 200))
    server = {"url": run.mcp_url, "transport": "streamable-http", "headers": run.headers}
    with MCPClient(server, structured_output=False) as tools:
        optional_inputs(tools)
        agent = kind(tools=list(tools), model=model, max_steps=steps,
                     final_answer_checks=[submitted])
        try:
            agent.run(run.task)
        finally:  # its own count: a model call per step (planning steps are off)
            write_counts(len([s for s in agent.memory.steps
                              if getattr(s, "model_output_message", None) is not None]))


def optional_inputs(tools: Any) -> None:
    """Mark each tool's optional arguments nullable, as smolagents reads its tools' inputs.

    smolagents takes an MCP tool's input properties as its inputs and requires every one that is
    not `nullable`; a JSON schema says optional by leaving it out of `required` instead.
    """
    from innolab.agents.mcp_tools import tool_specs

    required = {spec["name"]: set(spec["parameters"].get("required", []))
                for spec in tool_specs()}
    for tool in tools:
        for key, schema in tool.inputs.items():
            if key not in required.get(tool.name, {key}):
                schema["nullable"] = True


if __name__ == "__main__":
    main()
