"""The OpenAI Agents SDK in a run: an Agent with the run's MCP server, its model on the gateway."""

from __future__ import annotations

import asyncio

from innolab.agents.frameworks._driver import run_from_environment, write_counts

INSTRUCTIONS = ("Work on the task with the tools. Write a candidate, validate it, submit it, then "
                "improve it.")


async def work() -> None:
    """One Runner.run of an Agent on the task, with the run's tools and model.

    Its own count of model calls is written however the run ends (in `finally`): normally, at
    its max_turns, or stopped by innolab (SIGTERM at the run's end: the task is cancelled).
    """
    from agents import Agent, OpenAIChatCompletionsModel, RunHooks, Runner, set_tracing_disabled
    from agents.exceptions import MaxTurnsExceeded
    from agents.mcp import MCPServerStreamableHttp
    from openai import AsyncOpenAI

    class Counted(RunHooks):  # type: ignore[misc]
        """The SDK's own notice of each model response (on_llm_end: one per model call)."""

        calls = 0

        async def on_llm_end(self, context: object, agent: object, response: object) -> None:
            self.calls += 1

    set_tracing_disabled(True)
    run = run_from_environment()
    client = AsyncOpenAI(base_url=run.base_url, api_key=run.key, max_retries=0)
    model = OpenAIChatCompletionsModel(model=run.model, openai_client=client)
    params = {"url": run.mcp_url, "headers": run.headers, "timeout": 600,
              "sse_read_timeout": 3600}
    hooks = Counted()
    async with MCPServerStreamableHttp(params=params, cache_tools_list=True,
                                       client_session_timeout_seconds=3600) as server:
        agent = Agent(name="innolab", instructions=INSTRUCTIONS, mcp_servers=[server],
                      model=model)
        try:
            await Runner.run(agent, run.task, hooks=hooks,
                             max_turns=int(run.options.get("max_turns", 200)))
        except MaxTurnsExceeded:  # the framework's own limit: a normal end of its run
            print(f"max_turns ({run.options.get('max_turns', 200)}) reached", flush=True)
        finally:  # a call cancelled at the end never answered: the SDK does not count it
            write_counts(hooks.calls, counted_from="the SDK's RunHooks.on_llm_end")


def main() -> None:
    """Run the agent (its run ends when it answers without a tool call, or at max_turns)."""
    asyncio.run(work())


if __name__ == "__main__":
    main()
