"""Three agent frameworks innolab did not write, as registered agents.

Their own loops, on the run's tools over MCP and the run's model through the gateway
(innolab.agents.bridge).

* `smolagents`: Hugging Face smolagents' `ToolCallingAgent` (or its `CodeAgent`) on the run's MCP
  tools, its model an `OpenAIServerModel` on the gateway; its own `final_answer_checks` keep the
  run open until a submission was accepted.
* `openai-agents`: the OpenAI Agents SDK's `Agent` with the run's MCP server, its model a
  chat-completions model on the gateway, tracing off.
* `mini-swe-agent`: mini-swe-agent's `DefaultAgent` loop, its model on the gateway, each command
  run in the run's sandbox through an innolab `Environment` (the MCP `bash` tool).

Each comes from the optional extra `innolab[agents]` (pinned in constraints.txt), used as installed
and unmodified; a missing one is a clear error naming the install command. config.json records the
framework's version and those of the libraries it speaks through (`mcp`, `openai`, `litellm`), in
its `policy_args`; framework.json what the run resolved (the tool-call mode, the gateway's context,
the confinement of its process).
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from innolab.agents.bridge import FrameworkPolicy, library_versions, unconfined_allowed
from innolab.gym.policy import AgentSpec

ToolCalls = Literal["auto", "native", "emulated"]
TOOL_CALLS_TEXT = ("frameworks: the model's tool calls, native or emulated by the gateway under a "
                   "JSON schema (auto: emulated for the embedded model, native for an endpoint)")
INSTALL = "pip install 'innolab[agents]'  (or: make install, which installs the extra)"


def framework_version(distribution: str) -> str | None:
    """The installed version of a framework's distribution (None: not installed)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def resolve_framework(distribution: str) -> Any:
    """A `resolve` hook that records the framework's version, refusing a missing extra.

    The versions of the libraries it speaks through (`mcp`, `openai`, `litellm`) are recorded
    beside it (`library_versions`); so is `allow_unconfined: true` where the environment allows
    the run to run its framework unconfined (ALLOW_UNCONFINED_VAR=1, innolab.agents.confine).
    """
    def check(options: dict[str, Any]) -> dict[str, Any]:
        version = framework_version(distribution)
        if version is None:
            raise ValueError(f"{distribution} is not installed: {INSTALL}")
        allowed = {"allow_unconfined": True} if unconfined_allowed() else {}
        return {**options, "framework_version": version, "library_versions": library_versions(),
                **allowed}
    return check


def fixed_texts(driver: str, package: str, files: tuple[str, ...]) -> dict[str, str]:
    """The fixed prompt texts a framework's run is shown.

    Its driver's strings, the gateway's (the emulated tool calls' prompt, the folding note, its
    refusals) and the prompt files of the framework's own package: what the leak scan reads, as
    for the scaffolds.
    """
    import importlib
    import importlib.util

    from innolab.gym.agent_view import source_literals
    from innolab.llm import gateway

    texts = {f"{driver} string literals": "\n".join(
        source_literals(importlib.import_module(driver))),
        "innolab.llm.gateway.TOOLS_PROMPT": gateway.TOOLS_PROMPT,
        "innolab.llm.gateway.FOLD_NOTE": gateway.FOLD_NOTE,
        "innolab.llm.gateway string literals": "\n".join(source_literals(gateway))}
    # the package's folder found, not imported: importing the three frameworks took 5 s, paid by
    # every `tasks check` (its leak scan reads these texts)
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:  # the extra is not installed: no run
        return texts                                          # of it can start either
    root = Path(next(iter(spec.submodule_search_locations)))
    for name in files:
        path = root / name
        if path.is_file():
            texts[f"{package}/{name}"] = path.read_text(encoding="utf-8")
    return texts


class SmolagentsOptions(BaseModel):
    """smolagents' options."""

    model_config = ConfigDict(extra="forbid")

    tool_call_mode: ToolCalls = Field(default="auto", description=TOOL_CALLS_TEXT)
    smol_agent: Literal["tool_calling", "code"] = Field(
        default="tool_calling", description="smolagents: ToolCallingAgent or CodeAgent")
    smol_max_steps: int = Field(default=200, ge=1, le=10_000,
                                description="smolagents: its own step limit")


class OpenAIAgentsOptions(BaseModel):
    """The OpenAI Agents SDK's options."""

    model_config = ConfigDict(extra="forbid")

    tool_call_mode: ToolCalls = Field(default="auto", description=TOOL_CALLS_TEXT)
    max_turns: int = Field(default=200, ge=1, le=10_000,
                           description="openai-agents: Runner.run's max_turns")


class MiniSweOptions(BaseModel):
    """mini-swe-agent's options."""

    model_config = ConfigDict(extra="forbid")

    tool_call_mode: ToolCalls = Field(default="auto", description=TOOL_CALLS_TEXT)
    step_limit: int = Field(default=200, ge=1, le=10_000,
                            description="mini-swe-agent: its own step limit")


class SmolagentsAgent(FrameworkPolicy):
    """smolagents in the gym (innolab.agents.frameworks.smolagents_driver)."""

    name = "smolagents"

    def __init__(self, framework_version: str | None = None,
                 library_versions: dict[str, str | None] | None = None,
                 allow_unconfined: bool = False, **kwargs: Any) -> None:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in SmolagentsOptions.model_fields}
        options["allow_unconfined"] = allow_unconfined
        super().__init__("innolab.agents.frameworks.smolagents_driver", options, **kwargs)

    @staticmethod
    def fixed_texts(options: dict[str, Any]) -> dict[str, str]:
        """The driver's strings and the prompt template of the smolagents agent it runs."""
        template = ("prompts/code_agent.yaml" if options.get("smol_agent") == "code"
                    else "prompts/toolcalling_agent.yaml")
        return fixed_texts("innolab.agents.frameworks.smolagents_driver", "smolagents",
                           (template,))


class OpenAIAgentsAgent(FrameworkPolicy):
    """The OpenAI Agents SDK in the gym (innolab.agents.frameworks.openai_agents_driver)."""

    name = "openai-agents"

    def __init__(self, framework_version: str | None = None,
                 library_versions: dict[str, str | None] | None = None,
                 allow_unconfined: bool = False, **kwargs: Any) -> None:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in OpenAIAgentsOptions.model_fields}
        options["allow_unconfined"] = allow_unconfined
        super().__init__("innolab.agents.frameworks.openai_agents_driver", options, **kwargs)

    @staticmethod
    def fixed_texts(options: dict[str, Any]) -> dict[str, str]:
        """The driver's strings (the agent's instructions: the SDK ships no prompt of its own)."""
        return fixed_texts("innolab.agents.frameworks.openai_agents_driver", "agents", ())


class MiniSweAgent(FrameworkPolicy):
    """mini-swe-agent in the gym (innolab.agents.frameworks.miniswe_driver)."""

    name = "mini-swe-agent"

    def __init__(self, framework_version: str | None = None,
                 library_versions: dict[str, str | None] | None = None,
                 allow_unconfined: bool = False, **kwargs: Any) -> None:
        options = {k: kwargs.pop(k) for k in list(kwargs) if k in MiniSweOptions.model_fields}
        options["allow_unconfined"] = allow_unconfined
        super().__init__("innolab.agents.frameworks.miniswe_driver", options, **kwargs)

    @staticmethod
    def fixed_texts(options: dict[str, Any]) -> dict[str, str]:
        """The driver's strings and mini-swe-agent's default configuration (its templates)."""
        return fixed_texts("innolab.agents.frameworks.miniswe_driver", "minisweagent",
                           ("config/mini.yaml",))


SMOLAGENTS = AgentSpec(
    name="smolagents", factory=SmolagentsAgent, mode="framework", options=SmolagentsOptions,
    prepare=resolve_framework("smolagents"),
    description="Hugging Face smolagents (ToolCallingAgent) on the run's MCP tools and gateway")
OPENAI_AGENTS = AgentSpec(
    name="openai-agents", factory=OpenAIAgentsAgent, mode="framework",
    options=OpenAIAgentsOptions, prepare=resolve_framework("openai-agents"),
    description="the OpenAI Agents SDK: an Agent with the run's MCP server, model on the gateway")
MINI_SWE_AGENT = AgentSpec(
    name="mini-swe-agent", factory=MiniSweAgent, mode="framework", options=MiniSweOptions,
    prepare=resolve_framework("mini-swe-agent"),
    description="mini-swe-agent's loop, its commands run in the run's sandbox")
