"""A run's model gateway: an OpenAI-compatible endpoint in front of the run's configured model.

An agent framework that owns its loop (innolab.agents.bridge) gets the gateway's URL and a
run-scoped key, never the real API key. Every request it makes goes through the run's
`LLMClient`: numbered (`call_index`) and seeded by the run's rule, cached (a resumed run repeats
no call, a replay needs no endpoint), metered (tokens, cost, waits), paced by the endpoint's limits,
shared by a sweep's workers where the sweep states them (innolab.llm.gate), and recorded as an
`llm_call` event (handed to `record`). Before each request the gateway asks what is left of the
run's budget (`budget`): a request past its wall clock, its token budget or its cost budget is
refused with status 402 and a message naming the budget, before the model is called, so a run
goes past its token or cost budget by one request at most (those in flight at once: one each).

Endpoints: `GET /v1/models` and `POST /v1/chat/completions` (with `stream`, and with `tools`). A
request that breaks a rule (a `max_tokens` that is not a positive whole number, a message that is
not an object, a tool without `function.name`...) gets 400 naming the field and the rule.

Where the model has no native tool calls (the embedded llama.cpp server accepts `tools` and
ignores them: `/props` says `supports_tool_calls: false`), the gateway provides them
(`emulate_tools`): the tools are listed in a stable system prompt (so the server's prompt cache
keeps warm calls short), earlier tool calls and results are rendered as text, and the reply is a
schema-constrained completion of `{"name", "arguments"}` (one alternative per tool, string
arguments with `maxLength`) returned as `tool_calls` (streamed too). A request's `stop` (a
string or up to 4) is sent to the model and recorded with the call, except with an emulated tool
call, whose reply is JSON under a schema (a stop sequence inside an argument would cut it). A
`tool_choice` of "required" or a named function (`{"type": "function", "function": {"name":
...}}`) is sent on to a model with native tool calls, and an emulated call's schema requires a
call (of the named function alone); "none" emulates no call, and "auto" is as if none was given.
Every request's `max_tokens` is capped at the run's; a conversation beyond the model's context is
folded (the oldest turns after the first user message give way to a note, and where what stays
is still too long its longest texts are cut from the middle, a note saying how many characters
were cut) rather than refused; a conversation keeps its cut while it fits, so that its prompt
keeps one prefix (`_fold`). Its sizes are estimates (CHARS_PER_TOKEN), held to the model's
own counts: each reply's `prompt_tokens` against the estimate of what was sent raises the factor
the fold divides the room by (never lowers it), and a request the model still refuses for its
context (llama.cpp's "request (N tokens) exceeds the available context size (M tokens)", OpenAI's
"maximum context length is M tokens ... N tokens") raises it by what the refusal says and is folded
again and sent once more under the same number (within the context the refusal names, where
that is smaller than the one assumed); the refusal is the first of its reply's `attempts`. The
factor only rises (one outlier makes every later fold more cautious); it is learnt from cached
replies too, so a replay folds as its run did, except after such a refusal, whose first sending
was never cached.
The context is the endpoint's (its `/v1/models`), else the embedded server's
(`innolab.llm.local.N_CTX`), else ENDPOINT_CONTEXT for an endpoint that reports none;
`context_source` says which.

The model's reply is read from the endpoint as it streams (`LLMClient.chat(cancel=...)`): a client
that disconnects before its reply cancels the upstream request at the next chunk (llama.cpp stops
generating when its client goes), and the call is recorded as cancelled, with the tokens it had
produced.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from innolab.llm import local
from innolab.llm.client import (
    CHARS_PER_TOKEN,
    Completion,
    LLMClient,
    estimate_tokens,
    parse_json_object,
)
from innolab.llm.errors import LLMCancelled, LLMError
from innolab.llm.loopback import LoopbackServer
from innolab.llm.settings import LLMSettings

ARGUMENT_CHARS = 300  # the longest string argument of an emulated tool call (a small model stops)
# an endpoint's context where its /v1/models says none: today's hosted models have at least this
ENDPOINT_CONTEXT = 32_768
FOLD_NOTE = "[{n} earlier message(s) were folded to fit the model's context]"
FOLD_MARGIN = 0.97  # of the room, what a fold fills: the model's count of one text varies a little
FOLD_TO = 0.7  # of the room, what a new cut of a conversation leaves used (_fold)
# a model's refusal of a request over its context: (the request's tokens, the context), in the
# words of llama.cpp's server and of OpenAI-compatible APIs (vLLM: "... in the messages")
OVER_CONTEXT = (
    re.compile(r"request \((?P<used>\d+) tokens\) exceeds the available context size "
               r"\((?P<context>\d+) tokens\)"),
    re.compile(r"maximum context length is (?P<context>\d+) tokens(?:.*?(?:(?P<messages>\d+) "
               r"in the messages|resulted in (?P<used>\d+) tokens))?", re.S),
)
LEARN_FROM_TOKENS = 256  # a smaller prompt's count is mostly its chat template's: not learnt from
CUT_NOTE = "\n[... {n} characters were cut here to fit the model's context ...]\n"
CUT_KEEP_CHARS = 200  # the least of a text that a cut keeps (its start and its end)
TOOLS_PROMPT = (
    "You act by calling tools. Reply with one JSON object, "
    '{{"name": TOOL, "arguments": {{...}}}}, and nothing else.\nThe tools:\n{tools}'
)
# each budget a request may be refused for, as a run's end reason, and its words
BUDGETS = {"wall_clock": "the run's wall-clock budget is spent (its setting: budget)",
           "tokens": "the run's token budget is spent (its setting: token_budget)",
           "cost": "the run's cost budget is spent (its setting: cost_budget_usd)"}
MAX_STOP = 4  # the most stop sequences a request may give (as OpenAI's API)
CLOSE_WAIT_S = 30.0  # the longest `close` waits for calls in flight to be cancelled and recorded


@dataclass
class Budget:
    """What is left of a run's budget when a request arrives (None: no limit).

    Attributes:
        deadline: time.monotonic() after which no request is made.
        tokens_left: Tokens the run may still spend.
        cost_left: USD the run may still spend.
    """

    deadline: float | None = None
    tokens_left: float | None = None
    cost_left: float | None = None

    def spent(self) -> str | None:
        """The budget that is spent now, as a run's end reason (BUDGETS; None: none is)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return "wall_clock"
        if self.tokens_left is not None and self.tokens_left <= 0:
            return "tokens"
        if self.cost_left is not None and self.cost_left <= 0:
            return "cost"
        return None

    def refused(self) -> str | None:
        """Why a request is refused now, in words naming the budget (None: it may go)."""
        spent = self.spent()
        return None if spent is None else BUDGETS[spent]


@dataclass
class Served:
    """What the gateway did for one request (the bridge records it as an `llm_call` event).

    Attributes:
        completion: The completion (None where the call failed or was cancelled).
        error: Why it failed (None: it did not).
        sent: The sampling settings it was sent with (seed, call index...).
        emulated: Whether its tool calls were emulated.
        folded: How many messages were folded to fit the context.
        cancelled: Whether its client disconnected first (the upstream request was closed).
        partial: For a cancelled call, what it had produced (LLMCancelled.partial).
    """

    completion: Completion | None
    error: str | None = None
    sent: dict[str, Any] = field(default_factory=dict)
    emulated: bool = False
    folded: int = 0
    cancelled: bool = False
    partial: dict[str, Any] = field(default_factory=dict)


class Gateway:
    """The gateway of one run: its URL, its key, and every request served.

    Attributes:
        settings: The run's model settings.
        url: The base URL (`http://127.0.0.1:<port>/v1`) once started.
        key: The run-scoped key a client must send as `Authorization: Bearer <key>`.
        next_index: The call index of the next request (the run's numbering).
        served: How many requests were numbered and recorded (refused ones excluded).
        refusals: Requests refused for the budget, by budget (BUDGETS' keys).
        cancelled: Requests whose client disconnected before their reply.
        emulate_tools: Whether tool calls are emulated (`tool_call_mode`).
    """

    def __init__(self, settings: LLMSettings, client: LLMClient, *, first_index: int = 0,
                 record: Callable[[Served], None] | None = None,
                 budget: Callable[[], Budget] | None = None,
                 emulate_tools: bool | None = None, context_tokens: int | None = None,
                 refused: Callable[[str], None] | None = None,
                 failed: Callable[[LLMError], None] | None = None) -> None:
        """Make a gateway; `start()` serves it.

        Args:
            settings: The run's model settings (its `max_tokens` caps every request).
            client: The run's LLM client (cache, gates, retries).
            first_index: The call index of the first request (after a resume: the count so far).
            record: Called with what was served, once per request numbered (sent, failed or
                cancelled).
            budget: What is left of the run's budget, asked before each request.
            emulate_tools: Provide tool calls (None: for the embedded model, which has none).
            context_tokens: The model's context (None: the endpoint's, else a default: the
                module's docstring).
            refused: Called with the budget (BUDGETS' key) each time a request is refused for it.
            failed: Called with the error where the model failed for good (its retries spent, a
                request it refused: LLMError.model_failed), once the call is recorded and before
                its client is answered 502: the run ends as `llm_error` with its cause.
        """
        self.settings, self.client = settings, client
        self.next_index, self.served = first_index, 0
        self.record = record or (lambda served: None)
        self.budget = budget or Budget
        self.on_refused = refused or (lambda reason: None)
        self.on_failed = failed or (lambda error: None)
        self.emulate_tools = (not settings.base_url) if emulate_tools is None else emulate_tools
        self._context = context_tokens
        self.context_source = "given" if context_tokens is not None else None
        self.tokens_per_estimate = 1.0  # the model's tokens per estimated token, at most seen
        self._cuts: dict[str, int] = {}  # each conversation's last fold: the turns it dropped
        self.refusals: dict[str, int] = {}
        self.cancelled = 0
        self.key = "innolab-run-" + secrets.token_urlsafe(24)
        self.url: str | None = None
        self._server: LoopbackServer | None = None
        self._lock = threading.Lock()
        self._idle = threading.Condition()
        self._in_flight: set[threading.Event] = set()

    @property
    def tool_call_mode(self) -> str:
        """How tool calls are served: "emulated" (under a JSON schema) or "native"."""
        return "emulated" if self.emulate_tools else "native"

    # ----------------------------------------------------------------------------- serving

    def start(self) -> str:
        """Serve on loopback; return the base URL (what a client's `base_url` is)."""
        from starlette.applications import Starlette
        from starlette.routing import Route

        app = Starlette(routes=[Route("/v1/models", self._models, methods=["GET"]),
                                Route("/v1/chat/completions", self._chat, methods=["POST"])])
        self._server = LoopbackServer(app, "innolab model gateway")
        self.url = f"{self._server.url}/v1"
        return self.url

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Stop serving: the requests in flight are cancelled and recorded first.

        Each upstream request in flight is closed at its next chunk (its model stops generating),
        so this waits for no orphaned generation, only for each call to be recorded.

        Args:
            wait_s: The longest wait for requests in flight.
        """
        deadline = time.monotonic() + wait_s
        with self._idle:
            for cancel in self._in_flight:
                cancel.set()
            while self._in_flight and time.monotonic() < deadline:
                self._idle.wait(deadline - time.monotonic())
        if self._server is not None:
            self._server.close()
            self._server = None

    def context_tokens(self) -> int:
        """The model's context in tokens, found once (`context_source` says where)."""
        if self._context is None:
            reported = None if self.client.replay_only else self.client.context_tokens()
            if reported:
                self._context, self.context_source = reported, "the endpoint's /v1/models"
            elif not self.settings.base_url:
                self._context = local.N_CTX
                self.context_source = "the embedded server's context (innolab.llm.local.N_CTX)"
            else:
                self._context = ENDPOINT_CONTEXT
                self.context_source = ("innolab's default for an endpoint whose /v1/models "
                                       "reports none (gateway.ENDPOINT_CONTEXT)")
        return self._context

    def _learn(self, counted: int, estimated: int, refused: bool = False) -> None:
        """Raise `tokens_per_estimate` to the model's count of a prompt over innolab's estimate.

        Args:
            counted: The model's count of the prompt's tokens (a reply's usage, or a refusal's).
            estimated: innolab's estimate of what was sent.
            refused: The model refused it for its context: the next fold must come in under the
                count it gave, so the factor rises by at least a twentieth.
        """
        if counted <= 0 or estimated < (1 if refused else LEARN_FROM_TOKENS):
            return
        factor = counted / estimated
        with self._lock:
            if refused:
                factor = max(factor, self.tokens_per_estimate) * 1.05
            self.tokens_per_estimate = max(self.tokens_per_estimate, factor)

    # ---------------------------------------------------------------------------- endpoints

    def _authorised(self, request: Any) -> bool:
        given = request.headers.get("authorization", "")
        return secrets.compare_digest(given.encode(), f"Bearer {self.key}".encode())

    async def _models(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        if not self._authorised(request):
            return _error(401, "the run's gateway key is required (Authorization: Bearer ...)")
        return JSONResponse({"object": "list", "data": [
            {"id": self.settings.model, "object": "model", "owned_by": "innolab",
             "created": 0}]})

    async def _chat(self, request: Any) -> Any:
        from starlette.responses import JSONResponse, Response, StreamingResponse

        if not self._authorised(request):
            return _error(401, "the run's gateway key is required (Authorization: Bearer ...)")
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the request body is not JSON")
        problem = check_request(body)
        if problem:
            return _error(400, problem)
        spent = self.budget().spent()
        if spent:
            with self._lock:
                self.refusals[spent] = self.refusals.get(spent, 0) + 1
            self.on_refused(spent)
            return _error(402, f"{BUDGETS[spent]}: no more model calls in this run",
                          "budget_exhausted")
        cancel = threading.Event()
        work = asyncio.ensure_future(asyncio.to_thread(self.complete, body, cancel))
        gone = asyncio.ensure_future(_disconnected(request))
        await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not work.done():  # the client went away: the upstream request goes too
            cancel.set()
            with self._lock:
                self.cancelled += 1
            await work  # recorded, as cancelled, once the upstream request is closed
            return Response(status_code=499)  # no one reads it
        gone.cancel()
        reply = work.result()
        if isinstance(reply, tuple):
            return _error(*reply)
        if body.get("stream"):
            return StreamingResponse(_chunks(reply), media_type="text/event-stream")
        return JSONResponse(reply)

    # ---------------------------------------------------------------------------- completing

    def complete(self, body: dict[str, Any],
                 cancel: threading.Event | None = None) -> dict[str, Any] | tuple[int, str]:
        """One chat completion for a request body, as an OpenAI `chat.completion` object.

        Args:
            body: The request as the client sent it (checked: `check_request`).
            cancel: Set to cancel the call (its client went away).

        Returns:
            The completion object, or (status, message) where the model failed.
        """
        cancel = cancel or threading.Event()
        with self._idle:
            self._in_flight.add(cancel)
        try:
            return self._complete(body, cancel)
        finally:
            with self._idle:
                self._in_flight.discard(cancel)
                self._idle.notify_all()

    def _complete(self, body: dict[str, Any],
                  cancel: threading.Event) -> dict[str, Any] | tuple[int, str]:
        tools = [t for t in body.get("tools") or [] if t.get("type", "function") == "function"]
        choice = body.get("tool_choice")
        emulated = bool(tools) and self.emulate_tools and choice != "none"
        # the tools a reply may call: a named choice's alone (an emulated call's schema requires
        # one of them, whether the choice is "auto" or "required")
        callable_tools = [t for t in tools if t.get("function", t)["name"] == _chosen(choice)] \
            if _chosen(choice) else tools
        messages = _plain_messages(body["messages"]) if emulated else body["messages"]
        if emulated:  # the tools first: a stable prefix the server's prompt cache keeps
            tools_text = _tools_prompt(tools)
            if messages and messages[0]["role"] == "system":
                messages = [{"role": "system",
                             "content": tools_text + "\n\n" + messages[0]["content"]},
                            *messages[1:]]
            else:
                messages = [{"role": "system", "content": tools_text}, *messages]
        asked = body.get("max_completion_tokens") or body.get("max_tokens")
        cap = min(int(asked or self.settings.max_tokens), self.settings.max_tokens)
        response_format = (_call_schema(callable_tools, cap) if emulated
                           else body.get("response_format"))
        # what the prompt holds besides the messages: the tools' schemas, sent natively
        extra = 0 if emulated or not tools else _size(tools)
        with self._lock:
            index = self.next_index
            self.next_index += 1
        refusal: dict[str, Any] | None = None
        try:
            while True:
                room = (self.context_tokens() - cap) * FOLD_MARGIN / self.tokens_per_estimate
                conversation = _conversation(messages)
                sent, folded = _fold(messages, int(room) - extra,
                                     self._cuts.get(conversation, 0))
                if folded:
                    with self._lock:
                        self._cuts[conversation] = folded
                try:
                    completion = self.client.chat(
                        sent, response_format=response_format,
                        tools=None if emulated else (tools or None), call_index=index,
                        max_tokens=cap, cancel=cancel,
                        stop=None if emulated else (body.get("stop") or None),
                        tool_choice=None if emulated or not tools
                        or choice in ("auto", "none") else choice)
                except LLMError as error:
                    said = None if refusal or isinstance(error, LLMCancelled) \
                        else over_context(str(error))
                    if said is None:
                        raise
                    used, context = said
                    with self._lock:  # the model's own word on its context, where smaller
                        if context < self.context_tokens():
                            self._context = context
                            self.context_source = "the model's refusal of a request"
                    self._learn(used, _size(sent) + extra, refused=True)
                    refusal = {"error": str(error)[:300], "wait_s": 0.0,
                               "refolded": "refused for its context: folded again, sent again"}
                    continue
                # a cached reply carries the model's count too: a replay learns as the run did
                self._learn(completion.prompt_tokens, _size(sent) + extra)
                if refusal is not None:
                    completion.attempts = [refusal, *completion.attempts]
                break
        except LLMCancelled as error:
            self.served += 1
            self.record(Served(None, str(error), dict(getattr(error, "sent", {})), emulated,
                               folded, cancelled=True, partial=dict(error.partial)))
            return 499, "the request was cancelled: its client went away"
        except LLMError as error:
            self.served += 1
            self.record(Served(None, str(error)[:500], dict(getattr(error, "sent", {})),
                               emulated, folded))
            if error.model_failed:
                self.on_failed(error)
            return 502, f"the run's model failed: {error}"
        self.served += 1
        self.record(Served(completion, None, {}, emulated, folded))
        return _completion_object(completion, self.settings.model, index,
                                  _tool_calls(completion, callable_tools, index) if emulated
                                  else None)


async def _disconnected(request: Any) -> None:
    """Return once the request's client has disconnected (its body read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def check_request(body: Any) -> str | None:
    """What breaks a rule in a chat completion request, naming the field and the rule.

    Args:
        body: The request body, as parsed.

    Returns:
        The first problem found (None: the request may go).
    """
    if not isinstance(body, dict):
        return "the request body must be a JSON object"
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "messages: a list of chat messages is required"
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages[{i}]: a message must be an object, got {type(message).__name__}"
        if not isinstance(message.get("role"), str):
            return f"messages[{i}].role: a message needs a role (a string)"
        content = message.get("content")
        if content is not None and not isinstance(content, str | list):
            return f"messages[{i}].content: text or a list of content parts, got " \
                   f"{type(content).__name__}"
        for j, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not _name(function.get("name")):
                return (f"messages[{i}].tool_calls[{j}].function.name: a tool call needs the "
                        "name of its function")
    for name in ("max_tokens", "max_completion_tokens"):
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            return f"{name}: a positive whole number of tokens is required, got {value!r}"
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            return "tools: a list of tools is required"
        for i, tool in enumerate(tools):
            if not isinstance(tool, dict):
                return f"tools[{i}]: a tool must be an object"
            if tool.get("type", "function") != "function":
                continue  # a kind the gateway does not serve: left out
            function = tool.get("function", tool)
            if not isinstance(function, dict) or not _name(function.get("name")):
                return f"tools[{i}].function.name: a function tool needs a name"
            parameters = function.get("parameters")
            if parameters is not None and not isinstance(parameters, dict):
                return f"tools[{i}].function.parameters: a JSON schema (an object) is required"
    if "stream" in body and not isinstance(body["stream"], bool):
        return f"stream: true or false, got {body['stream']!r}"
    problem = _check_tool_choice(body.get("tool_choice"), tools)
    if problem:
        return problem
    stop = body.get("stop")
    if stop is not None and not (isinstance(stop, str) or (
            isinstance(stop, list) and len(stop) <= MAX_STOP
            and all(isinstance(s, str) for s in stop))):
        return f"stop: a string or a list of up to {MAX_STOP} strings is required, " \
               f"got {stop!r}"[:300]
    return None


def _name(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _chosen(choice: Any) -> str | None:
    """The function a named `tool_choice` names (None: it names none)."""
    return choice["function"]["name"] if isinstance(choice, dict) else None


def _check_tool_choice(choice: Any, tools: Any) -> str | None:
    """What breaks a rule in a request's `tool_choice` (None: nothing; its tools are checked)."""
    if choice is None or choice in ("auto", "none"):
        return None
    names = {t.get("function", t).get("name") for t in tools or []
             if t.get("type", "function") == "function"}
    if choice == "required":
        return None if names else 'tool_choice: "required" needs tools (none were given)'
    function = choice.get("function") if isinstance(choice, dict) else None
    if not (isinstance(choice, dict) and choice.get("type", "function") == "function"
            and isinstance(function, dict) and _name(function.get("name"))):
        return ('tool_choice: "auto", "none", "required" or {"type": "function", "function": '
                f'{{"name": ...}}}} is required, got {choice!r}'[:300])
    if function["name"] not in names:
        return (f"tool_choice: the function {function['name']!r} is not one of the request's "
                "tools")
    return None


# ------------------------------------------------------------------------------- emulation


def _tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The system prompt that lists the tools (stable: the same text for the whole run)."""
    lines = []
    for tool in tools:
        function = tool.get("function", tool)
        properties = (function.get("parameters") or {}).get("properties") or {}
        arguments = ", ".join(f"{name}: {spec.get('type', 'any')}"
                              for name, spec in properties.items())
        lines.append(f"- {function['name']}({arguments}): "
                     f"{(function.get('description') or '').strip()[:300]}")
    return TOOLS_PROMPT.format(tools="\n".join(lines))


def _plain_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """A conversation with tool calls and tool results rendered as text (no tool roles)."""
    out: list[dict[str, str]] = []
    for message in messages:
        role, content = message.get("role"), _text(message.get("content"))
        if role == "assistant" and message.get("tool_calls"):
            calls = [{"name": c["function"]["name"],
                      "arguments": _arguments(c["function"].get("arguments"))}
                     for c in message["tool_calls"]]
            text = "\n".join(json.dumps(c) for c in calls)
            out.append({"role": "assistant", "content": (content + "\n" + text).strip()})
        elif role == "tool":
            name = message.get("name") or "the tool"
            out.append({"role": "user", "content": f"Result of {name}:\n{content}"})
        elif role in ("system", "developer"):
            out.append({"role": "system", "content": content})
        else:
            out.append({"role": "user" if role != "assistant" else "assistant",
                        "content": content})
    merged: list[dict[str, str]] = []
    for message in out:  # one system message, then turns that alternate where they can
        if merged and message["role"] == merged[-1]["role"]:
            merged[-1] = {**merged[-1], "content": merged[-1]["content"] + "\n\n" +
                          message["content"]}
        else:
            merged.append(message)
    return merged


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _arguments(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text or {}


def _bounded(schema: Any, chars: int) -> Any:
    """A tool's parameters schema with a maxLength on every string (a small model stops)."""
    schema = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("type") == "string" and "enum" not in node:
            node["maxLength"] = min(int(node.get("maxLength", chars)), chars)
        for value in node.values():
            if isinstance(value, dict):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, dict))
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def _call_schema(tools: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    """The response format of an emulated tool call: one alternative per tool."""
    chars = max(40, min(ARGUMENT_CHARS, int((max_tokens - 40) * CHARS_PER_TOKEN)))
    alternatives = []
    for tool in tools:
        function = tool.get("function", tool)
        alternatives.append({
            "type": "object",
            "properties": {"name": {"type": "string", "enum": [function["name"]]},
                           "arguments": _bounded(function.get("parameters"), chars)},
            "required": ["name", "arguments"], "additionalProperties": False})
    schema = alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}
    return {"type": "json_schema",
            "json_schema": {"name": "tool_call", "strict": True, "schema": schema}}


def _tool_calls(completion: Completion, tools: list[dict[str, Any]],
                index: int) -> list[dict[str, Any]] | None:
    """The tool call a constrained reply names (None: the reply is not one)."""
    try:
        reply = parse_json_object(completion.text)
    except ValueError:
        return None
    names = {t.get("function", t)["name"] for t in tools}
    if not isinstance(reply, dict) or reply.get("name") not in names:
        return None
    arguments = reply.get("arguments")
    return [{"id": f"call_{index}_0", "type": "function",
             "function": {"name": reply["name"],
                          "arguments": json.dumps(arguments if isinstance(arguments, dict)
                                                  else {})}}]


def over_context(message: str) -> tuple[int, int] | None:
    """What a model's error says where it refuses a request for its context (OVER_CONTEXT).

    Args:
        message: The error's text.

    Returns:
        The tokens the model counted in the request (its messages where it says; where it names
        the context alone, a tenth more than it) and its context; None where the error is not
        such a refusal.
    """
    for pattern in OVER_CONTEXT:
        found = pattern.search(message)
        if found:
            groups = {k: v for k, v in found.groupdict().items() if v}
            context = int(groups["context"])
            used = groups.get("messages") or groups.get("used")
            return (int(used) if used else int(context * 1.1)), context
    return None


def _fold(messages: list[dict[str, Any]], room: int,
          before: int = 0) -> tuple[list[dict[str, Any]], int]:
    """The conversation folded to fit `room` tokens.

    System messages and the first user message stay; the oldest turns after it give way to a note.
    The fold keeps the cut of the conversation's last fold (`before` turns dropped) while that
    fits, so that what is sent keeps one prefix from request to request (the server's prompt
    cache stays warm); where it no longer fits, the oldest turns go until FOLD_TO of the room is
    used, which leaves room for the next turns under the same cut. Where what stays is still over
    the room, the longest texts (the last message's included) are cut from the middle, each with
    a note saying how many characters were cut (`_cut`).

    Returns:
        The messages to send, and how many were dropped.
    """
    if _size(messages) <= room:
        return messages, 0
    head, first, tail = _parts(messages)
    note = 30  # the fold's note
    if 0 < before < len(tail) and _size([*head, *first, *tail[before:]]) + note <= room:
        tail, dropped = tail[before:], before
    else:
        dropped = 0
        while tail and _size([*head, *first, *tail]) + note > room * FOLD_TO and len(tail) > 1:
            tail = tail[1:]
            dropped += 1
    while tail and tail[0].get("role") == "tool":  # a result without its call goes with it
        tail, dropped = tail[1:], dropped + 1
    note = [{"role": "user", "content": FOLD_NOTE.format(n=dropped)}] if dropped else []
    return _cut([*head, *first, *note, *tail], room), dropped


def _parts(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], ...]:
    """A conversation's system messages, first user message and later turns.

    The first two are what a fold keeps (the first user message where it opens with one), the
    turns what it may drop.
    """
    head = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    first = rest[:1] if rest and rest[0].get("role") == "user" else []
    return head, first, rest[len(first):]


def _conversation(messages: list[dict[str, Any]]) -> str:
    """A conversation's identity: what a fold keeps of it (its system and first user message)."""
    head, first, _ = _parts(messages)
    return hashlib.sha256(json.dumps([*head, *first], sort_keys=True).encode()).hexdigest()


def _size(messages: list[dict[str, Any]]) -> int:
    return sum(estimate_tokens(json.dumps(m)) for m in messages)


def _cut(messages: list[dict[str, Any]], room: int) -> list[dict[str, Any]]:
    """Messages whose longest texts are cut from the middle (CUT_NOTE) until they fit `room`.

    The longest texts are cut to one length, the longest that fits (the shorter ones stay whole);
    a text keeps at least CUT_KEEP_CHARS (its start and its end), so where even that is over, the
    messages are as short as that allows.
    """
    texts = {i: _text(m["content"]) for i, m in enumerate(messages)
             if isinstance(m.get("content"), str) or (
                 isinstance(m.get("content"), list)
                 and all(isinstance(p, dict) and p.get("type") == "text" for p in m["content"]))}
    kept = {i: len(text) for i, text in texts.items()}
    # JSON characters per character of each text (its escapes: a newline is two)
    escaped = {i: len(json.dumps(text)) / max(1, len(text)) for i, text in texts.items()}
    out = list(messages)
    for _ in range(8):  # the sizes are estimates of escaped JSON: a few rounds at most
        over = _size(out) - room
        if over <= 0:
            break
        need = int(over * CHARS_PER_TOKEN) + 16

        def freed(level: int) -> float:  # the JSON characters a cut of every text to `level` frees
            return sum((n - level) * escaped[i] - (len(CUT_NOTE) + 8) * (n == len(texts[i]))
                       for i, n in kept.items() if n > level)

        low, high = CUT_KEEP_CHARS, max(kept.values(), default=0)
        if high <= low:
            break
        if freed(low) >= need:  # the longest level that frees enough
            while low < high:
                middle = (low + high + 1) // 2
                low, high = (middle, high) if freed(middle) >= need else (low, middle - 1)
        level = low
        for i in [i for i, n in kept.items() if n > level]:
            kept[i], text = level, texts[i]
            half = level // 2
            out[i] = {**out[i], "content": text[:half] + CUT_NOTE.format(n=len(text) - level) +
                      text[len(text) - (level - half):]}
    return out


def _completion_object(completion: Completion, model: str, index: int,
                       tool_calls: list[dict[str, Any]] | None) -> dict[str, Any]:
    native = [{"id": c.get("id") or f"call_{index}_{i}", "type": "function",
               "function": {"name": c["name"], "arguments": c.get("arguments") or "{}"}}
              for i, c in enumerate(completion.tool_calls or [])]  # the client's flat form
    calls = tool_calls if tool_calls is not None else (native or None)
    message: dict[str, Any] = {"role": "assistant",
                               "content": None if calls else completion.text}
    if calls:
        message["tool_calls"] = calls
    return {"id": f"chatcmpl-innolab-{index}", "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": completion.prompt_tokens,
                      "completion_tokens": completion.completion_tokens,
                      "total_tokens": completion.prompt_tokens + completion.completion_tokens}}


async def _chunks(reply: dict[str, Any]) -> Any:
    """A completion as server-sent `chat.completion.chunk` events, then `[DONE]`."""
    choice = reply["choices"][0]
    message = choice["message"]
    base = {"id": reply["id"], "object": "chat.completion.chunk", "created": 0,
            "model": reply["model"]}
    delta: dict[str, Any] = {"role": "assistant"}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{**call, "index": i}
                               for i, call in enumerate(message["tool_calls"])]
    else:
        delta["content"] = message.get("content") or ""
    events = [{**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**base, "choices": [{"index": 0, "delta": {},
                                    "finish_reason": choice["finish_reason"]}],
               "usage": reply["usage"]}]
    for event in events:
        yield f"data: {json.dumps(event)}\n\n"
    yield "data: [DONE]\n\n"


def _error(status: int, message: str, kind: str = "invalid_request_error") -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "code": status}},
                        status_code=status)
