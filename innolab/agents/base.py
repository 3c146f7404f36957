"""What the three scaffolds share: settings, the cached LLM client, prompts, JSON actions and plain-data state."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from innolab.gym.policy import Action, Observation
from innolab.gym.tools import ToolCall, ToolResult
from innolab.llm.cache import ResponseCache
from innolab.llm.client import Completion, LLMClient, parse_json_object
from innolab.llm.settings import LLMSettings

INNOVATION_PROMPT = (
    "Innovate: propose a method that differs from the standard approaches to this problem, not only a tuned "
    "version of them, while keeping the submission valid."
)
WORKSPACE_RULES = (
    "You work in a sandboxed folder. Files there: description.md (the task), validate.py with the taskkit/ "
    "package and task.json (a copy of the task's checker: read it, or run `python3 validate.py FILE` by hand). "
    "Dev scores come only from the validate and submit actions, which check a copy of your file with a pristine "
    "checker. Write your candidate to submission.json and submit it; the submission with the best validator "
    "score is scored after the run."
)


class LLMAgent:
    """Base of the scaffolds: a Policy whose state is plain JSON (so checkpoints work) plus a lazy LLM client.

    Options shared by every scaffold: `innovation_prompt` (ask explicitly for a novel method, the paper's Table 7)
    and `initial_solution` (code of a prior solution to start from, the paper's Fig. 5).
    """

    name = "agent"
    mode = "agent"  # "agent": free tool-calling loop; "workflow": a fixed procedure

    def __init__(self, settings: dict[str, Any] | None = None, cache_path: str | None = None,
                 innovation_prompt: bool = False, initial_solution: str | None = None,
                 history_turns: int = 4, replay_only: bool = False) -> None:
        # Settled settings come from the run's config; only the key (a secret, never written) is read here.
        if settings:
            variable = settings.get("api_key_env") or "INNOLAB_LLM_API_KEY"
            self.settings = LLMSettings(**{**settings, "api_key": settings.get("api_key")
                                           or os.environ.get(variable) or None})
        else:
            self.settings = LLMSettings.from_env()
        self.cache_path = cache_path
        self.innovation_prompt = innovation_prompt
        self.initial_solution = initial_solution
        self.history_turns = history_turns
        self.replay_only = replay_only
        self._client: LLMClient | None = None
        self.memory: dict[str, Any] = {}

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            cache = ResponseCache(Path(self.cache_path)) if self.cache_path else None
            self._client = LLMClient(self.settings, cache, replay_only=self.replay_only)
        return self._client

    def system_prompt(self, role: str) -> str:
        parts = [role, WORKSPACE_RULES]
        if self.innovation_prompt:
            parts.append(INNOVATION_PROMPT)
        if self.initial_solution:
            parts.append("Start from this prior solution and improve it:\n```python\n"
                         f"{self.initial_solution}\n```")
        return "\n\n".join(parts)

    def bound(self, observation: Observation) -> None:
        """No model call outlives the run's wall-clock budget."""
        import time

        remaining = observation.remaining_s
        self.client.deadline = None if remaining is None else time.monotonic() + remaining

    def chat(self, messages: list[dict[str, Any]], **options: Any) -> Completion:
        """One model call, numbered: the index lives in the agent's state, so a resumed run asks with the same
        indices (and gets its cached replies) while every new call samples with its own seed."""
        index = int(self.memory.get("llm_calls", 0))
        self.memory["llm_calls"] = index + 1
        return self.client.chat(messages, call_index=index, **options)

    def ask(self, messages: list[dict[str, Any]], response_format: dict[str, Any],
            tools: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any] | None, Completion]:
        """One LLM call; returns the parsed JSON object (None when the reply has none) and the completion."""
        completion = self.chat(messages, response_format=response_format, tools=tools)
        try:
            return parse_json_object(completion.text), completion
        except ValueError:
            return None, completion

    @staticmethod
    def llm_event(completion: Completion, purpose: str) -> dict[str, Any]:
        return {"type": "llm_call", "purpose": purpose, **completion.event()}

    @staticmethod
    def action(calls: list[ToolCall], completion: Completion | None, events: list[dict[str, Any]],
               done: bool = False) -> Action:
        tokens = (completion.prompt_tokens + completion.completion_tokens) if completion else 0
        cost = completion.cost_usd if completion else 0.0
        return Action(tool_calls=calls, done=done, tokens=tokens, cost_usd=cost, events=events)

    @staticmethod
    def describe_results(results: list[ToolResult], limit: int = 2500) -> str:
        if not results:
            return "(no observation)"
        parts = [f"[{r.name}] {'ok' if r.ok else 'failed'}\n{r.output[-limit:]}" for r in results]
        return "\n\n".join(parts)

    def trimmed(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The system and task messages plus the last turns: small models have small context windows."""
        head, tail = messages[:2], messages[2:]
        return head + tail[-2 * self.history_turns :]

    # Policy state: plain JSON only.
    def state(self) -> dict[str, Any]:
        return json.loads(json.dumps(self.memory))

    def load_state(self, state: dict[str, Any]) -> None:
        self.memory = json.loads(json.dumps(state))

    def step(self, observation: Observation) -> Action:  # pragma: no cover - each scaffold implements it
        raise NotImplementedError
