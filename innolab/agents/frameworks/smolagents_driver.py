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
        finally:
            calls, more = own_counts(agent)
            write_counts(calls, **more)


def own_counts(agent: Any) -> tuple[int, dict[str, Any]]:
    """The framework's own record of its model calls: its memory's steps, and its Monitor.

    smolagents keeps no counter of model calls; its memory keeps one step per call (an action
    step, or a planning step: off here), each holding the reply and its token usage, the step
    its max_steps adds for a last answer included; a call that raised holds neither. Its Monitor
    totals the tokens of those steps (what the gateway's usage said).

    Returns:
        (model calls, {"input_tokens", "output_tokens", "counted_from"}).
    """
    calls = [step for step in agent.memory.steps
             if getattr(step, "model_output_message", None) is not None
             or getattr(step, "token_usage", None) is not None]
    usage = agent.monitor.get_total_token_counts()
    return len(calls), {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                        "counted_from": "smolagents' memory steps (one per model call) and its "
                                        "Monitor's token totals"}


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
