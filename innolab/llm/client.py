"""OpenAI-compatible chat client: bounded retries with backoff and jitter, usage and cost, cache, structured output."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from innolab.llm import local
from innolab.llm.cache import ResponseCache, request_key
from innolab.llm.errors import LLMError
from innolab.llm.settings import LLMSettings


@dataclass
class Completion:
    text: str
    tool_calls: list[dict[str, Any]]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cached: bool
    key: str
    attempts: list[dict[str, Any]] = field(default_factory=list)
    latency_s: float = 0.0
    temperature: float | None = None  # the sampling settings the request was sent with
    seed: int | None = None
    call_index: int | None = None

    def event(self) -> dict[str, Any]:
        """The payload of an llm_call trace event."""
        payload = asdict(self)
        payload["response"] = payload.pop("text")
        return payload


def _retryable(error: Exception) -> bool:
    import openai

    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return isinstance(error, openai.APITimeoutError | openai.APIConnectionError | json.JSONDecodeError
                      | openai.APIResponseValidationError | ValueError)


class LLMClient:
    """Chat completions through the `openai` SDK against any compatible endpoint (or the embedded model)."""

    def __init__(self, settings: LLMSettings | None = None, cache: ResponseCache | None = None,
                 replay_only: bool = False, sleep: Callable[[float], None] = time.sleep) -> None:
        self.settings = settings or LLMSettings.from_env()
        self.cache = cache
        self.replay_only = replay_only
        self.sleep = sleep
        self._client: Any = None
        self.supports_schema = True
        self.supports_lengths = True  # False once the endpoint rejected a schema's maxLength: sent without it
        self.calls = 0  # requests that reached the endpoint (cache hits excluded)
        self.deadline: float | None = None  # time.monotonic() after which no request starts or waits

    def _sdk(self) -> Any:
        if self._client is None:
            import openai

            base_url = self.settings.base_url
            if base_url is None:

                base_url = local.start()
            self._client = openai.OpenAI(base_url=base_url, api_key=self.settings.api_key or "not-needed",
                                         max_retries=0, timeout=self.settings.timeout_s)
        return self._client

    def reported_model(self) -> str | None:
        """The model id as the endpoint reports it (GET /v1/models): the configured id when it is listed, the only
        one when one is served; None when the endpoint lists none."""
        try:
            listed = [m.id for m in self._sdk().models.list(timeout=min(self.settings.timeout_s, 30.0))]
        except Exception as error:  # an endpoint without /v1/models, or none at all
            raise LLMError(f"the endpoint lists no models: {error}") from error
        if self.settings.model in listed:
            return self.settings.model
        return listed[0] if len(listed) == 1 else None

    def context_tokens(self) -> int | None:
        """The model's context length as the endpoint reports it in GET /v1/models (llama.cpp's `meta.n_ctx`,
        vLLM's `max_model_len`, or a `context_length`/`context_window` field); None when it reports none."""
        try:
            page = self._sdk().models.list(timeout=min(self.settings.timeout_s, 30.0))
        except Exception:  # an endpoint without /v1/models
            return None
        for model in page.data:
            if model.id != self.settings.model and len(page.data) > 1:
                continue
            fields = model.model_dump()
            candidates = [(fields.get("meta") or {}).get("n_ctx"), fields.get("max_model_len"),
                          fields.get("context_length"), fields.get("context_window")]
            found = next((int(v) for v in candidates if isinstance(v, int | float) and v > 0), None)
            if found:
                return found
        return None

    def request(self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None = None,
                tools: list[dict[str, Any]] | None = None, call_index: int | None = None) -> dict[str, Any]:
        s = self.settings
        seed = call_seed(s.seed, call_index)
        if response_format is not None and not self.supports_lengths:
            response_format = without_lengths(response_format)
        request: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature,
                                   "max_tokens": s.max_tokens, "seed": seed, "top_p": s.top_p,
                                   "response_format": response_format if self.supports_schema else None,
                                   "tools": tools}
        return {k: v for k, v in request.items() if v is not None}

    def chat(self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None = None,
             tools: list[dict[str, Any]] | None = None, call_index: int | None = None) -> Completion:
        """One chat completion. With `call_index` (a run's model calls are numbered), the seed derives from (the
        settings' seed, index) and the cache key includes the index: a resumed or replayed run repeats every reply,
        and an identical request made later in the run samples anew."""
        request = self.request(messages, response_format, tools, call_index)
        cache_key = {**request, "_call_index": call_index} if call_index is not None else request
        key = request_key(cache_key)
        sent = {"temperature": request.get("temperature"), "seed": request.get("seed"), "call_index": call_index}
        try:
            return self._complete(request, cache_key, key, sent, messages, response_format, tools, call_index)
        except LLMError as error:
            error.sent = sent
            raise

    def _complete(self, request: dict[str, Any], cache_key: dict[str, Any], key: str, sent: dict[str, Any],
                  messages: list[dict[str, Any]], response_format: dict[str, Any] | None,
                  tools: list[dict[str, Any]] | None, call_index: int | None) -> Completion:
        if self.cache is not None:
            hit = self.cache.get(cache_key)
            if hit is not None:
                return Completion(**{**hit, "cached": True, "attempts": [], "latency_s": 0.0, **sent})
        if self.replay_only:
            raise LLMError(f"replay: no cached response for request {key[:12]}")
        attempts: list[dict[str, Any]] = []
        start = time.monotonic()
        for attempt in range(self.settings.max_retries + 1):
            timeout = self.settings.timeout_s
            if self.deadline is not None:
                timeout = min(timeout, self.deadline - time.monotonic())
                if timeout <= 0:
                    raise LLMError("the run's time budget ran out before the model answered")
            try:
                response = self._sdk().chat.completions.create(**request, timeout=timeout)
                payload = self._payload(response, key)
                break
            except Exception as error:  # classified below; non-retryable errors propagate
                import openai

                if (isinstance(error, openai.BadRequestError) and "response_format" in request
                        and ("response_format" in str(error) or "maxLength" in str(error))):
                    if self.supports_lengths and has_lengths(request["response_format"]):
                        self.supports_lengths = False  # the schema without its length limits, before no schema
                        note = "maxLength unsupported"
                    else:
                        self.supports_schema = False  # no JSON-schema support: ask in plain text, parse robustly
                        note = "response_format unsupported"
                    request = self.request(messages, response_format, tools, call_index)
                    attempts.append({"attempt": attempt, "error": note, "wait_s": 0})
                    continue
                if not _retryable(error) or attempt == self.settings.max_retries:
                    attempts.append({"attempt": attempt, "error": f"{type(error).__name__}: {error}"[:300]})
                    raise LLMError(f"LLM call failed after {attempt + 1} attempt(s): {error}") from error
                wait = self.settings.backoff_s * 2**attempt * (0.5 + random.random())
                if self.deadline is not None:
                    wait = max(0.0, min(wait, self.deadline - time.monotonic()))
                attempts.append({"attempt": attempt, "error": f"{type(error).__name__}: {error}"[:300],
                                 "wait_s": round(wait, 3)})
                self.sleep(wait)
        self.calls += 1
        if self.cache is not None:
            self.cache.put(cache_key, payload)  # before use: a kill after this point repeats no call
        return Completion(**payload, cached=False, attempts=attempts, latency_s=time.monotonic() - start, **sent)

    def _payload(self, response: Any, key: str) -> dict[str, Any]:
        if not getattr(response, "choices", None):
            raise ValueError("response has no choices")
        message = response.choices[0].message
        usage = response.usage
        prompt = getattr(usage, "prompt_tokens", 0) or 0
        completion = getattr(usage, "completion_tokens", 0) or 0
        price_in, price_out = self.settings.prices()
        calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                 for c in (message.tool_calls or [])]
        return {"text": message.content or "", "tool_calls": calls, "prompt_tokens": prompt,
                "completion_tokens": completion, "cost_usd": (prompt * price_in + completion * price_out) / 1e6,
                "key": key}


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def call_seed(seed: int | None, call_index: int | None) -> int | None:
    """The seed of one call: derived from (run seed, call index) so that every call samples anew, reproducibly."""
    if seed is None or call_index is None:
        return seed
    import hashlib

    digest = hashlib.sha256(f"{seed}:{call_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


CHARS_PER_TOKEN = 3.5  # a stated estimate of token counts: no tokenizer is downloaded


def estimate_tokens(text: str) -> int:
    """Tokens of a text, estimated from its characters."""
    return int(len(text) / CHARS_PER_TOKEN) + 1


def json_schema(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A response_format asking for one JSON object (enforced where the endpoint supports JSON schemas)."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}


STRUCTURE_TOKENS = 48  # a reply's keys, quotes and spacing, beside its values
# Code as the embedded model's tokenizer splits it was measured at 2.1 to 3.9 characters per token; 2.0 is a
# conservative bound below that range, so a reply whose program fills its field still closes its JSON within the
# token cap (a denser program would be cut at the cap instead; either way `cut_fields` reports the cut).
PAYLOAD_CHARS_PER_TOKEN = 2.0
MIN_PAYLOAD_CHARS = 400


def text(max_chars: int, description: str | None = None) -> dict[str, Any]:
    """A string field of at most `max_chars` characters. Endpoints that turn the schema into a grammar (llama.cpp,
    the embedded model's server) enforce maxLength while sampling, so a reply cannot spend the whole token cap
    inside one field and never reach the fields after it."""
    if max_chars < 1:
        raise ValueError(f"max_chars: a string field's limit must be at least 1, not {max_chars}")
    field: dict[str, Any] = {"type": "string", "maxLength": int(max_chars)}
    if description:
        field["description"] = description
    return field


def payload_chars(max_tokens: int, bounded_chars: int) -> int:
    """The limit of the free-form field that ends a reply (a program, a file's content): what the token cap leaves
    after the reply's structure and its bounded fields (counted at CHARS_PER_TOKEN), at PAYLOAD_CHARS_PER_TOKEN.
    A reply that fills it still closes its JSON within `max_tokens` for typical code."""
    left = max_tokens - STRUCTURE_TOKENS - bounded_chars / CHARS_PER_TOKEN
    return max(MIN_PAYLOAD_CHARS, int(left * PAYLOAD_CHARS_PER_TOKEN))


def cut_fields(reply: dict[str, Any] | None, response_format: dict[str, Any] | None,
               capped: bool = False) -> dict[str, int]:
    """The reply's top-level string fields that were cut, each with the characters it kept: a field whose length
    reached its schema's maxLength (an endpoint that enforces the grammar closes the string there, as valid JSON,
    with no other sign), and, for a reply cut at the token cap (`capped`: read by `parse_json_prefix`), the string
    field it was writing when it stopped (its last). A field longer than its maxLength was not enforced, so not
    cut."""
    if not reply:
        return {}
    properties = ((response_format or {}).get("json_schema") or {}).get("schema", {}).get("properties", {})
    cut = {key: len(value) for key, value in reply.items() if isinstance(value, str)
           and len(value) == (properties.get(key) or {}).get("maxLength")}
    last = list(reply)[-1]
    if capped and isinstance(reply[last], str):
        cut[last] = len(reply[last])
    return cut


def _walk_strings(node: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    if isinstance(node, dict):
        if node.get("type") == "string":
            visit(node)
        for value in node.values():
            _walk_strings(value, visit)
    elif isinstance(node, list):
        for value in node:
            _walk_strings(value, visit)


def string_fields(response_format: dict[str, Any]) -> list[dict[str, Any]]:
    """Every string field of a response_format's schema, nested ones included."""
    found: list[dict[str, Any]] = []
    _walk_strings(response_format, found.append)
    return found


def has_lengths(response_format: dict[str, Any]) -> bool:
    return any("maxLength" in field for field in string_fields(response_format))


def without_lengths(response_format: dict[str, Any]) -> dict[str, Any]:
    """The same response_format without maxLength, for endpoints whose strict mode rejects the keyword."""
    copy = json.loads(json.dumps(response_format))
    _walk_strings(copy, lambda field: field.pop("maxLength", None))
    return copy


def parse_json_prefix(text: str) -> dict[str, Any] | None:
    """The object a reply cut at the token cap had begun: its complete fields and the string it was writing, cut
    where it stopped (pydantic-core's partial JSON reader); None when no object had begun."""
    from pydantic_core import from_json

    start = text.find("{")
    if start == -1:
        return None
    try:
        value = from_json(text[start:], allow_partial="trailing-strings")
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's text: inside a code fence or bare, tolerant of prose around it."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            depth, in_string, escape = 0, False, False
            for end in range(start, len(candidate)):
                char = candidate[end]
                if in_string:
                    if escape:
                        escape = False
                    elif char == "\\":
                        escape = True
                    elif char == '"':
                        in_string = False
                    continue
                if char == '"':
                    in_string = True
                elif char == "{":
                    depth += 1
                elif char == "}":
                    depth -= 1
                    if depth == 0:
                        try:
                            value = json.loads(candidate[start : end + 1])
                        except json.JSONDecodeError:
                            break
                        if isinstance(value, dict):
                            return value
                        break
            start = candidate.find("{", start + 1)
    raise ValueError("no JSON object found in the model's reply")
