"""What the three scaffolds share: settings, LLM client, prompts, JSON actions and typed state."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Self

from innolab.gym.policy import Action, Observation
from innolab.gym.tools import ToolCall, ToolResult
from innolab.llm.cache import ResponseCache
from innolab.llm.client import (
    CHARS_PER_TOKEN,
    Completion,
    LLMClient,
    cut_fields,
    estimate_tokens,
    json_schema,
    parse_json_object,
    parse_json_prefix,
    payload_chars,
    text,
)
from innolab.llm.settings import LLMSettings
from innolab.traces import Event, LLMCall

INNOVATION_PROMPT = (
    "Innovate: propose a method that differs from the standard approaches to this problem, not "
    "only a tuned version of them, while keeping the submission valid."
)
WORKSPACE_RULES = (
    "Your folder holds description.md (the task) and validate.py, a copy of the task's checker "
    "(run `python3 validate.py FILE` by hand if you like). Dev scores come only from the validate "
    "and submit actions, which check a copy of your file with a pristine checker. Write your "
    "answer to submission.json and submit it; the submission with the best validator score is "
    "scored after the run."
)


REPEAT_LIMIT = 3  # identical replies in a row before the loop is broken
REPEAT_NOTE = ("Your last replies were identical and gave the same observation each time. Do "
               "something different: a new action, new code, another approach.")
SUMMARY_ROLE = ("Summarise an agent's earlier work on a task for its own later use: what it tried, "
                "what happened, what is known. Be brief.")
DEFAULT_CONTEXT_TOKENS = 8192  # when the endpoint reports no context length
CONTEXT_MARGIN_TOKENS = 256
OBSERVATION_CHARS = 2500  # of one tool result's output shown to the model, at most
OBSERVATION_SHARE = 8  # and at most this fraction of the model's context


@dataclass
class HistorySummary:
    """The older turns of a conversation folded into one text.

    How many turns it covers, and the text.
    """

    turns: int = 0
    text: str = ""


@dataclass
class AgentState:
    """The bookkeeping every scaffold keeps, typed.

    Serialised as plain JSON (flat: a scaffold's own state adds its fields beside these, as a
    dataclass that extends this one).

    `llm_calls`: the model calls made so far (the next call's index); `last_reply` and `repeat_run`:
    the last reply and how many times in a row it came; `summary`: the folded history, where the
    history outgrew the context; `context_tokens`: the model's context length, read once from the
    endpoint.
    """

    llm_calls: int = 0
    last_reply: str | None = None
    repeat_run: int = 0
    summary: HistorySummary | None = None
    context_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The state as plain JSON data (a copy): nested dataclasses become objects."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """The state `to_json` wrote, or one saved before the state was typed.

        A state saved before the state was typed has the same keys, any of them absent.

        Raises:
            ValueError: `data` is not an object, holds a key that is no field of this state, or a
                nested field (the summary, a scaffold's own) that does not read as its type.
        """
        if not isinstance(data, Mapping):
            raise ValueError(f"{cls.__name__}: a policy state is a JSON object, got "
                             f"{type(data).__name__}")
        values = json.loads(json.dumps(dict(data)))
        unknown = sorted(set(values) - {f.name for f in fields(cls)})
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown field(s) {unknown} in the policy state")
        try:
            return cls(**cls.decode(values))
        except (TypeError, KeyError, AttributeError) as error:
            message = f"{cls.__name__}: a field of the policy state is malformed ({error})"
            raise ValueError(message) from None

    @classmethod
    def decode(cls, values: dict[str, Any]) -> dict[str, Any]:
        """The nested fields of `values` (JSON data) as their types.

        A scaffold's state adds its own.
        """
        if values.get("summary") is not None:
            values["summary"] = HistorySummary(**values["summary"])
        return values


def conversation_tokens(messages: list[dict[str, Any]]) -> int:
    """Tokens of a conversation: its texts' estimate plus a few per message."""
    return sum(estimate_tokens(m.get("content") or "") + 3 for m in messages)


class LLMAgent:
    """Base of the scaffolds.

    A Policy whose state is a typed dataclass serialised as plain JSON (so checkpoints work) plus a
    lazy LLM client.

    Options shared by every scaffold: `innovation_prompt` (ask explicitly for a novel method, the
    paper's Table 7) and `initial_solution` (code of a prior solution to start from, the paper's
    Fig. 5).
    """

    name = "agent"
    mode = "agent"  # "agent": free tool-calling loop; "workflow": a fixed procedure
    # the scaffold's state: AgentState and its own fields
    State: ClassVar[type[AgentState]] = AgentState

    def __init__(self, settings: LLMSettings | dict[str, Any] | None = None,
                 cache_path: str | None = None, innovation_prompt: bool = False,
                 initial_solution: str | None = None, replay_only: bool = False) -> None:
        # Settled settings come from the run's config; only the key (a secret, never written) is
        # read here.
        if isinstance(settings, LLMSettings):  # the run's typed settings, as its config holds them
            variable = settings.api_key_env or "INNOLAB_LLM_API_KEY"
            self.settings = settings.model_copy(
                update={"api_key": settings.api_key or os.environ.get(variable) or None})
        elif settings:
            variable = settings.get("api_key_env") or "INNOLAB_LLM_API_KEY"
            self.settings = LLMSettings(**{**settings, "api_key": settings.get("api_key")
                                           or os.environ.get(variable) or None})
        else:
            self.settings = LLMSettings.from_env()
        self.cache_path = cache_path
        self.innovation_prompt = innovation_prompt
        self.initial_solution = initial_solution
        self.replay_only = replay_only
        # the task's, from the observation (None: WORKSPACE_RULES)
        self.workspace_rules: str | None = None
        self._client: LLMClient | None = None
        self.memory = self.State()
        # llm_call events of helper calls, emitted with the action
        self.side_events: list[Event] = []
        self.side_usage, self.side_cost = 0, 0.0
        # the last ask's cut fields (`cut_fields`): field -> characters kept
        self.cut: dict[str, int] = {}

    @property
    def client(self) -> LLMClient:
        """The LLM client, made on first use with the run's response cache."""
        if self._client is None:
            cache = ResponseCache(Path(self.cache_path)) if self.cache_path else None
            self._client = LLMClient(self.settings, cache, replay_only=self.replay_only)
        return self._client

    def system_prompt(self, role: str) -> str:
        """The system message.

        The scaffold's role, the workspace rules (the task's, else WORKSPACE_RULES), the innovation
        prompt and the prior solution where asked for.

        Args:
            role: what the scaffold's model is and how it replies.

        Returns:
            The message's text.
        """
        parts = [role, self.workspace_rules or WORKSPACE_RULES]
        if self.innovation_prompt:
            parts.append(INNOVATION_PROMPT)
        if self.initial_solution:
            parts.append("Start from this prior solution and improve it:\n```python\n"
                         f"{self.initial_solution}\n```")
        return "\n\n".join(parts)

    def bound(self, observation: Observation) -> None:
        """Take the task's workspace rules and bound the model calls by the remaining budget.

        The task's workspace rules are taken where it has some; every model call is bounded by the
        run's remaining wall-clock budget.

        Args:
            observation: the step's observation (its `remaining_s` and `workspace_rules`).
        """
        import time

        self.workspace_rules = observation.workspace_rules

        remaining = observation.remaining_s
        self.client.deadline = None if remaining is None else time.monotonic() + remaining

    def chat(self, messages: list[dict[str, Any]], **options: Any) -> Completion:
        """One model call, numbered.

        The index lives in the agent's state, so a resumed run asks with the same indices (and gets
        its cached replies) while every new call samples with its own seed.

        Args:
            messages: the conversation to send.
            **options: the client's options (response_format, tools).

        Returns:
            The completion.

        Raises:
            innolab.llm.client.LLMError: the model stayed unreachable after its retries.
        """
        index = self.memory.llm_calls
        self.memory.llm_calls = index + 1
        return self.client.chat(messages, call_index=index, **options)

    def ask(self, messages: list[dict[str, Any]], response_format: dict[str, Any],
            tools: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any] | None, Completion]:
        """One model call for a JSON reply.

        A reply cut at the token cap counts with what it holds: its complete fields and the one it
        was writing, cut. The fields that were cut (at their maxLength or at the token cap) are left
        in `self.cut`: a scaffold never writes or runs a cut program (`cut_note` tells the model
        instead).

        Args:
            messages: the conversation to send.
            response_format: the reply's JSON schema (OpenAI's response_format).
            tools: tool specs offered with it, if any.

        Returns:
            The parsed JSON object (None when the reply holds none) and the completion.

        Raises:
            innolab.llm.client.LLMError: the model stayed unreachable after its retries.
        """
        completion = self.chat(messages, response_format=response_format, tools=tools)
        self.cut = {}
        try:
            reply = parse_json_object(completion.text)
        except ValueError:
            if completion.completion_tokens < self.settings.max_tokens:
                return None, completion
            reply = parse_json_prefix(completion.text)
            self.cut = cut_fields(reply, response_format, capped=True)
            return reply, completion
        self.cut = cut_fields(reply, response_format)
        return reply, completion

    @staticmethod
    def cut_note(what: str, chars: int, advice: str) -> str:
        """What the model is told when its `what` was cut at `chars` characters and so not used.

        Followed by `advice`.
        """
        return (f"Your {what} was cut at {chars} characters (the longest a reply can hold) and was "
                f"not used. {advice}")

    @staticmethod
    def llm_event(completion: Completion, purpose: str) -> LLMCall:
        """The trace event of one model call (its step is stamped by the run loop)."""
        return LLMCall(purpose=purpose, **completion.event())

    def action(self, calls: list[ToolCall], completion: Completion | None, events: list[Event],
               done: bool = False) -> Action:
        """The step's action.

        Its usage and events include the step's helper calls (history summaries).

        Args:
            calls: the tool calls to run (none: the step only thought).
            completion: the step's main model call, if it made one.
            events: the step's trace events (without their step: the run loop stamps it).
            done: the agent has finished.

        Returns:
            The action, with the tokens and cost of every model call of the step.
        """
        tokens = (completion.prompt_tokens + completion.completion_tokens) if completion else 0
        cost = completion.cost_usd if completion else 0.0
        side, self.side_events = self.side_events, []
        tokens, cost = tokens + self.side_usage, cost + self.side_cost
        self.side_usage, self.side_cost = 0, 0.0
        return Action(tool_calls=calls, done=done, tokens=tokens, cost_usd=cost,
                      events=[*side, *events])

    def describe_results(self, results: list[ToolResult]) -> str:
        """Tool results as the model reads them.

        Each output's tail, at most 1/OBSERVATION_SHARE of the model's context (OBSERVATION_CHARS at
        most), so a small model's prompt is not filled by one long output.

        Args:
            results: the last step's tool results.

        Returns:
            One text, a block per result ("(no observation)" for none).
        """
        if not results:
            return "(no observation)"
        share = int(self.context_tokens() / OBSERVATION_SHARE * CHARS_PER_TOKEN)
        limit = min(OBSERVATION_CHARS, share)
        parts = [f"[{r.name}] {'ok' if r.ok else 'failed'}\n{r.output[-limit:]}" for r in results]
        return "\n\n".join(parts)

    def repeats(self, text: str) -> bool:
        """Whether this reply makes REPEAT_LIMIT identical replies in a row.

        Small models copy their own turns; the count is kept in the state.

        Args:
            text: the reply.

        Returns:
            True when the loop should be broken (`break_repetition`).
        """
        run = self.memory.repeat_run + 1 if text == self.memory.last_reply else 1
        self.memory.last_reply, self.memory.repeat_run = text, run
        return run >= REPEAT_LIMIT

    def break_repetition(self, messages: list[dict[str, Any]]) -> None:
        """Drop the repeated turns and say so.

        The repeated turns are each identical reply after the first, and the observation that
        followed it: the next request no longer shows the loop the model was copying.

        Args:
            messages: the conversation, changed in place.
        """
        last = self.memory.last_reply
        kept, seen, skip = [], False, False
        for message in messages:
            if skip and message["role"] == "user":
                skip = False
                continue
            skip = False
            if message["role"] == "assistant" and message.get("content") == last:
                if seen:
                    skip = True
                    continue
                seen = True
            kept.append(message)
        kept.append({"role": "user", "content": REPEAT_NOTE})
        messages[:] = kept
        # still armed: one more identical reply is answered again
        self.memory.repeat_run = REPEAT_LIMIT - 1

    def context_tokens(self) -> int:
        """The model's context length.

        Read from the endpoint once and kept in the agent's state (a resumed run uses the recorded
        value); DEFAULT_CONTEXT_TOKENS when the endpoint reports none.
        """
        if self.memory.context_tokens is None:
            reported = None if self.replay_only else self.client.context_tokens()
            self.memory.context_tokens = reported or DEFAULT_CONTEXT_TOKENS
        return int(self.memory.context_tokens)

    def context(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The conversation as sent.

        Everything while it fits the model's context; when the history outgrows it, the older turns
        are folded into a summary (a model call, numbered and cached like any other) and only the
        newest turns are sent verbatim. The summary is kept in the state and extended as more turns
        fold in.

        Args:
            messages: the whole conversation (system message and task first).

        Returns:
            The messages to send.
        """
        head, turns = messages[:2], messages[2:]
        budget = self.context_tokens() - (self.settings.max_tokens or 1024) - CONTEXT_MARGIN_TOKENS
        if conversation_tokens(messages) <= budget:
            return messages
        room = max(budget - conversation_tokens(head), 0) // 2
        keep: list[dict[str, Any]] = []
        for message in reversed(turns):
            if keep and conversation_tokens([message, *keep]) > room:
                break
            keep.insert(0, message)
        folded = len(turns) - len(keep)
        summary = self.memory.summary or HistorySummary()
        if folded > summary.turns:
            brief = self._summarise(summary.text, turns[summary.turns:folded], room)
            summary = self.memory.summary = HistorySummary(folded, brief)
        note = {"role": "user", "content": "Summary of the earlier turns (older ones are not "
                                           f"shown):\n{summary.text}"}
        return [*head, note, *keep]

    def _summarise(self, previous: str, turns: list[dict[str, Any]], room_tokens: int) -> str:
        limit = int(room_tokens * CHARS_PER_TOKEN)
        shown = "\n\n".join(f"[{m['role']}] {m.get('content') or ''}" for m in turns)[-limit:]
        so_far = f"Summary so far:\n{previous}\n\n" if previous else ""
        messages = [{"role": "system", "content": SUMMARY_ROLE},
                    {"role": "user", "content": so_far + f"Newer turns to add:\n{shown}"}]
        # one reply within the token cap
        brief = min(max(limit, 200), payload_chars(self.settings.max_tokens, 0))
        schema = json_schema("history_summary", {"summary": text(brief)}, ["summary"])
        reply, completion = self.ask(messages, schema)
        self.side_events.append(self.llm_event(completion, "summarise history"))
        self.side_usage += completion.prompt_tokens + completion.completion_tokens
        self.side_cost += completion.cost_usd
        summary = str(reply.get("summary", "")) if reply else completion.text
        return (summary or "").strip()[: limit or 2000]

    # Policy state: the typed state as plain JSON, and back.
    def state(self) -> dict[str, Any]:
        """The scaffold's state as plain JSON data (what a checkpoint keeps)."""
        return self.memory.to_json()

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from `state()` of an earlier run.

        The untyped state that innolab saved before is read as well.

        Args:
            state: the policy state a checkpoint kept.

        Raises:
            ValueError: the state holds a key that is no field of this scaffold's state, or a
                field that does not read as its type.
        """
        self.memory = self.State.from_json(state)

    def step(self, observation: Observation) -> Action:  # pragma: no cover - each scaffold's own
        """One step of the scaffold; each scaffold writes its own.

        Args:
            observation: the last step's results.

        Returns:
            The step's action.

        Raises:
            NotImplementedError: always, on the base class.
        """
        raise NotImplementedError
