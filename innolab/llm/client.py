"""OpenAI-compatible chat client: limits, retries (Retry-After, jitter), cost, a cache, JSON."""

from __future__ import annotations

import contextlib
import email.utils
import json
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from innolab.llm import gate as gates
from innolab.llm import local
from innolab.llm.cache import ResponseCache, request_key
from innolab.llm.errors import LLMCancelled, LLMError
from innolab.llm.settings import LLMSettings


@dataclass
class Completion:
    """One chat completion, as returned and as cached.

    Attributes:
        text: The reply's text.
        tool_calls: The reply's tool calls ({"id", "name", "arguments"}).
        prompt_tokens: The prompt's tokens as the endpoint counted them.
        completion_tokens: The reply's tokens as the endpoint counted them.
        cost_usd: The call's cost at the settings' prices.
        cached: Whether the reply came from the cache.
        key: The request's cache key.
        attempts: The failed attempts before the reply (error, wait).
        latency_s: The call's wall time, retries and waits included (0 when cached).
        wait_s: Of latency_s, the seconds spent waiting: for the endpoint's limits (a request
            slot, the pace), for a Retry-After, or backing off before a retry.
        temperature: The temperature the request was sent with.
        seed: The seed the request was sent with.
        call_index: The call's index in the run, where numbered.
        sampling: The sampling settings added to the run schema, as sent (innolab.runspec).
        stop: The stop sequence(s) the request was sent with (None: none).
    """

    text: str
    tool_calls: list[dict[str, Any]]
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cached: bool
    key: str
    attempts: list[dict[str, Any]] = field(default_factory=list)
    latency_s: float = 0.0
    wait_s: float = 0.0
    temperature: float | None = None  # the sampling settings the request was sent with
    seed: int | None = None
    call_index: int | None = None
    sampling: dict[str, Any] = field(default_factory=dict)  # added sampling settings, as sent
    stop: str | list[str] | None = None  # the stop sequence(s), as sent

    def event(self) -> dict[str, Any]:
        """Return the payload of an llm_call trace event (the fields, `text` named `response`).

        `stop` is left out where none was sent (a call's event is as it was without one).
        """
        payload = asdict(self)
        payload["response"] = payload.pop("text")
        if payload.get("stop") is None:
            payload.pop("stop", None)
        return payload


MAX_RETRY_AFTER_S = 600.0  # a longer Retry-After is waited this long (or to the run's deadline)
RUN_HEADER = "X-Innolab-Run"  # the run id a request carries (innolab.llm.gate.labelled)


def retry_after_s(error: Exception, now: datetime | None = None) -> float | None:
    """Read how long a 429 or 503 reply asks the client to wait.

    Args:
        error: The error the SDK raised.
        now: The current time (for an HTTP-date), or None for the clock's.

    Returns:
        The seconds from `retry-after-ms`, or from `Retry-After` (seconds or an HTTP-date), at
        most MAX_RETRY_AFTER_S; None for another error or a reply that states none.
    """
    import openai

    if not isinstance(error, openai.APIStatusError) or error.status_code not in (429, 503):
        return None
    headers = error.response.headers
    value = headers.get("retry-after-ms")
    seconds: float | None = None
    if value is not None:
        with contextlib.suppress(ValueError):
            seconds = float(value) / 1000.0
    value = headers.get("retry-after")
    if seconds is None and value is not None:
        try:
            seconds = float(value)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds is None or seconds != seconds:  # absent, or NaN
        return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def endpoint_name(settings: LLMSettings) -> str:
    """Where a request goes, in words that hold no secret: the endpoint's host, or "embedded".

    Args:
        settings: The model settings.

    Returns:
        The host (and port) of the base URL, or "the embedded model" without one.
    """
    if not settings.base_url:
        return "the embedded model"
    from urllib.parse import urlparse

    return urlparse(settings.base_url).netloc or settings.base_url


def report_retry(settings: LLMSettings, attempt: int, entry: dict[str, Any],
                 limited: bool) -> None:
    """Say on stderr, as it happens, that a model call failed and when it is tried again.

    Args:
        settings: The model settings (the endpoint and the retries allowed).
        attempt: The attempt that failed (1 for the first).
        entry: Its record: the error, the wait and any Retry-After.
        limited: Whether the endpoint said when to come back (such waits do not count against
            max_retries).
    """
    import sys

    from tqdm import tqdm

    of = "" if limited else f" of {settings.max_retries + 1}"
    why = (f"the endpoint asked to wait {entry['retry_after_s']:g} s"
           if "retry_after_s" in entry else "backing off")
    tqdm.write(f"model call to {endpoint_name(settings)}: attempt {attempt}{of} failed "
               f"({entry['error'][:200]}); {why}, trying again in {entry['wait_s']:.1f} s",
               file=sys.stderr)


REPORTED_WAIT_S = 2.0  # a wait for the endpoint's limits this long or longer is said on stderr


def report_wait(settings: LLMSettings, seconds: float, shared: bool = False) -> None:
    """Say on stderr that a model call waited for the endpoint's limits before it was sent.

    Args:
        settings: The model settings (the endpoint and its limits).
        seconds: How long it waited.
        shared: Whether the limits are shared with other runs (a sweep's, through its cluster),
            not this process's own.
    """
    import sys

    from tqdm import tqdm

    limits = ", ".join(f"{k} {v}" for k, v in settings.limits().items()) or "its limits"
    whose = "shared by the sweep's runs" if shared else "this run's own"
    tqdm.write(f"model call to {endpoint_name(settings)}: waited {seconds:.1f} s for the "
               f"endpoint's limits ({limits}, {whose})", file=sys.stderr)


def request_tokens(request: dict[str, Any]) -> int:
    """Estimate the tokens a request may use, for a tokens-per-minute limit.

    Args:
        request: The request body.

    Returns:
        The messages' (and tools') estimated tokens plus the reply's cap: an upper bound.
    """
    sent = json.dumps([request.get("messages"), request.get("tools")])
    return estimate_tokens(sent) + int(request.get("max_tokens") or 0)


def _cancelled(request: dict[str, Any], text: str, chunks: int, reached: bool,
               prompt_tokens: int | None = None) -> LLMCancelled:
    """The error of a cancelled call, with what it had produced."""
    error = LLMCancelled("cancelled: the caller went away (the upstream request was closed)")
    error.partial = {"response": text, "completion_tokens": chunks, "reached": reached,
                     "prompt_tokens": prompt_tokens if prompt_tokens is not None else
                     (estimate_tokens(json.dumps([request.get("messages"), request.get("tools")]))
                      if reached else 0)}
    return error


def _read_stream(sdk: Any, request: dict[str, Any], timeout: float,
                 headers: dict[str, str] | None, cancel: threading.Event) -> Any:
    """One request sent with `stream`, read chunk by chunk until its end or a cancel.

    Returns:
        The reply as a chat completion reads (`choices[0].message`, `usage`): content and tool
        calls put together from the chunks, the usage the endpoint sent with its last chunk (else
        innolab's estimate: the prompt's, and a token per chunk).

    Raises:
        LLMCancelled: `cancel` was set; the response is closed (the server stops generating).
    """
    from types import SimpleNamespace

    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    usage: Any = None
    chunks = 0
    stream = sdk.chat.completions.create(**request, stream=True,
                                         stream_options={"include_usage": True},
                                         timeout=timeout, extra_headers=headers)
    try:
        for chunk in stream:
            if cancel.is_set():
                raise _cancelled(request, "".join(text), chunks, reached=True,
                                 prompt_tokens=getattr(usage, "prompt_tokens", None))
            usage = getattr(chunk, "usage", None) or usage
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is None:
                    continue
                if delta.content:
                    text.append(delta.content)
                    chunks += 1
                for call in delta.tool_calls or []:
                    entry = calls.setdefault(call.index or 0, {"id": "", "name": "",
                                                               "arguments": ""})
                    entry["id"] = call.id or entry["id"]
                    if call.function is not None:
                        entry["name"] += call.function.name or ""
                        entry["arguments"] += call.function.arguments or ""
                    chunks += 1
        if cancel.is_set():
            raise _cancelled(request, "".join(text), chunks, reached=True,
                             prompt_tokens=getattr(usage, "prompt_tokens", None))
    finally:
        stream.close()  # at the end, or cancelled: the connection goes, and the generation
    tool_calls = [SimpleNamespace(id=c["id"], function=SimpleNamespace(
        name=c["name"], arguments=c["arguments"])) for _, c in sorted(calls.items())]
    if usage is None:
        usage = SimpleNamespace(prompt_tokens=estimate_tokens(json.dumps(
            [request.get("messages"), request.get("tools")])), completion_tokens=chunks)
    message = SimpleNamespace(content="".join(text) or None, tool_calls=tool_calls or None)
    return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


def _retryable(error: Exception) -> bool:
    import openai

    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return isinstance(error, openai.APITimeoutError | openai.APIConnectionError
                      | json.JSONDecodeError | openai.APIResponseValidationError | ValueError)


class LLMClient:
    """Chat completions via the `openai` SDK against a compatible endpoint or the embedded model.

    Attributes:
        settings: The model, sampling, retry and price settings.
        cache: The response cache, or None.
        replay_only: Answer from the cache only; a miss raises LLMError.
        sleep: The function that waits between retries.
        supports_schema: False once the endpoint rejected response_format: asked in plain text.
        supports_lengths: False once the endpoint rejected a schema's maxLength: sent without it.
        calls: Requests that reached the endpoint (cache hits excluded).
        deadline: time.monotonic() after which no request starts or waits; None for none.
    """

    def __init__(self, settings: LLMSettings | None = None, cache: ResponseCache | None = None,
                 replay_only: bool = False, sleep: Callable[[float], None] = time.sleep) -> None:
        """Make a client; the endpoint is reached only on the first call.

        Args:
            settings: The settings; None reads them from the environment (LLMSettings.from_env).
            cache: The response cache, or None.
            replay_only: Answer from the cache only.
            sleep: The function that waits between retries (tests pass a fake).
        """
        self.settings = settings or LLMSettings.from_env()
        self.cache = cache
        self.replay_only = replay_only
        self.sleep = sleep
        self._client: Any = None
        self.supports_schema = True
        # False once the endpoint rejected a schema's maxLength: sent without it
        self.supports_lengths = True
        self.calls = 0  # requests that reached the endpoint (cache hits excluded)
        # time.monotonic() after which no request starts or waits
        self.deadline: float | None = None

    def _sdk(self) -> Any:
        if self._client is None:
            import openai

            base_url, key = self.settings.base_url, self.settings.api_key
            if base_url is None:  # the embedded model, behind a key only innolab holds
                base_url, key = local.start(), local.api_key()
            self._client = openai.OpenAI(base_url=base_url, api_key=key or "not-needed",
                                         max_retries=0, timeout=self.settings.timeout_s)
        return self._client

    def reported_model(self) -> str | None:
        """Return the model id as the endpoint reports it (GET /v1/models).

        Returns:
            The configured id when it is listed, the only one when one is served; None when the
            endpoint lists several and not the configured one.

        Raises:
            LLMError: The endpoint lists no models (no /v1/models, or no endpoint at all).
        """
        try:
            listed = [m.id for m in
                      self._sdk().models.list(timeout=min(self.settings.timeout_s, 30.0))]
        except Exception as error:  # an endpoint without /v1/models, or none at all
            raise LLMError(f"the endpoint lists no models: {error}") from error
        if self.settings.model in listed:
            return self.settings.model
        return listed[0] if len(listed) == 1 else None

    def context_tokens(self) -> int | None:
        """Return the model's context length as the endpoint reports it in GET /v1/models.

        Read from llama.cpp's `meta.n_ctx`, vLLM's `max_model_len`, or a
        `context_length`/`context_window` field.

        Returns:
            The context length in tokens; None when the endpoint reports none.
        """
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
                tools: list[dict[str, Any]] | None = None, call_index: int | None = None,
                max_tokens: int | None = None, stop: str | list[str] | None = None,
                tool_choice: str | dict[str, Any] | None = None) -> dict[str, Any]:
        """Build the body of a chat completion request as it will be sent.

        Args:
            messages: The chat messages.
            response_format: The reply's JSON schema (see `json_schema`), or None; left out or
                stripped of maxLength where the endpoint rejected them.
            tools: The tools' specifications, or None.
            call_index: The call's index in the run (its seed derives from it), or None.
            max_tokens: The reply's cap, below the settings' (None: the settings').
            stop: The stop sequence(s) (a string or up to 4), or None.
            tool_choice: Whether (or which) tool the reply must call, as OpenAI's API, or None.

        Returns:
            The request, without the fields that are None.
        """
        s = self.settings
        seed = call_seed(s.seed, call_index)
        if response_format is not None and not self.supports_lengths:
            response_format = without_lengths(response_format)
        request: dict[str, Any] = {
            "model": s.model, "messages": messages, "temperature": s.temperature,
            "max_tokens": min(max_tokens or s.max_tokens, s.max_tokens), "seed": seed,
            "top_p": s.top_p,
            "response_format": response_format if self.supports_schema else None,
            "tools": tools, "tool_choice": tool_choice, "stop": stop,
            "extra_body": dict(s.sampling) or None}
        return {k: v for k, v in request.items() if v is not None}

    def chat(self, messages: list[dict[str, Any]], response_format: dict[str, Any] | None = None,
             tools: list[dict[str, Any]] | None = None, call_index: int | None = None,
             max_tokens: int | None = None, cancel: threading.Event | None = None,
             stop: str | list[str] | None = None,
             tool_choice: str | dict[str, Any] | None = None) -> Completion:
        """Make one chat completion (or take it from the cache).

        With `call_index` (a run's model calls are numbered), the seed derives from (the settings'
        seed, index) and the cache key includes the index: a resumed or replayed run repeats every
        reply, and an identical request made later in the run samples anew.

        Args:
            messages: The chat messages.
            response_format: The reply's JSON schema, or None.
            tools: The tools' specifications, or None.
            call_index: The call's index in the run, or None.
            max_tokens: The reply's cap, below the settings' (None: the settings').
            cancel: Set by another thread to cancel the call (None: it cannot be). With one, the
                reply is read from the endpoint as it streams, and a cancel closes the request
                at the next chunk (an OpenAI-compatible server such as llama.cpp then stops
                generating): LLMCancelled.
            stop: The stop sequence(s) (a string or up to 4), or None; sent, part of the cache
                key, and recorded with the call.
            tool_choice: Whether (or which) tool the reply must call (OpenAI's `tool_choice`),
                or None; sent with `tools`, and part of the cache key.

        Returns:
            The completion.

        Raises:
            LLMError: The endpoint failed after the retries, the run's deadline passed, or a
                replay found no cached response; its `sent` holds the sampling settings, and for
                a call that reached the endpoint its attempts, latency_s and wait_s.
            LLMCancelled: `cancel` was set (what the call had produced in its `partial`).
        """
        request = self.request(messages, response_format, tools, call_index, max_tokens, stop,
                               tool_choice)
        cache_key = {**request, "_call_index": call_index} if call_index is not None else request
        key = request_key(cache_key)
        sent = {"temperature": request.get("temperature"), "seed": request.get("seed"),
                "call_index": call_index, "sampling": dict(request.get("extra_body") or {})}
        if stop is not None:
            sent["stop"] = stop
        try:
            return self._complete(request, cache_key, key, sent, messages, response_format, tools,
                                  call_index, cancel)
        except LLMError as error:
            error.sent = {**sent, **getattr(error, "spent", {})}
            raise

    def _complete(self, request: dict[str, Any], cache_key: dict[str, Any], key: str,
                  sent: dict[str, Any], messages: list[dict[str, Any]],
                  response_format: dict[str, Any] | None, tools: list[dict[str, Any]] | None,
                  call_index: int | None, cancel: threading.Event | None = None) -> Completion:
        if self.cache is not None:
            hit = self.cache.get(cache_key)
            if hit is not None:
                return Completion(**{**hit, "cached": True, "attempts": [], "latency_s": 0.0,
                                     **sent})
        if self.replay_only:
            raise LLMError(f"replay: no cached response for request {key[:12]}")
        attempts: list[dict[str, Any]] = []
        start = time.monotonic()
        gate = gates.gate_for(self.settings)
        tokens = request_tokens(request)
        run = gates.current_run()
        headers = {RUN_HEADER: run} if run else None
        waited = 0.0

        def failed(message: str, cause: Exception | None = None,
                   by_model: bool = True) -> LLMError:
            error = LLMError(message)
            error.spent = {"attempts": attempts, "latency_s": time.monotonic() - start,
                           "wait_s": waited}
            error.model_failed = by_model
            error.__cause__ = cause
            return error

        attempt = failures = 0  # every attempt; those that count against max_retries
        # whether the endpoint's last attempt failed by itself (LLMError.model_failed): not a
        # request cut by the run's clock, nor a 429 that said when to come back
        down = False
        while True:
            attempt += 1
            if cancel is not None and cancel.is_set():  # before (another) attempt is sent
                raise _cancelled(request, "", 0, reached=attempt > 1)
            timeout = self.settings.timeout_s
            try:
                sdk = self._sdk()  # made before the slot is held
                entered = time.monotonic()
                with self._slot(gate, tokens) as slot_wait:
                    waited += slot_wait
                    if slot_wait >= REPORTED_WAIT_S:  # said, not silent: the endpoint's limits
                        report_wait(self.settings, slot_wait,
                                    shared=not isinstance(gate, gates.LocalGate))
                    timeout = self.settings.timeout_s
                    if self.deadline is not None:
                        timeout = min(timeout, self.deadline - time.monotonic())
                        if timeout <= 0:
                            raise failed("the run's time budget ran out before the model answered",
                                         by_model=down)
                    if cancel is None:
                        response = sdk.chat.completions.create(
                            **request, timeout=timeout, extra_headers=headers)
                    else:  # read as it streams: a cancel closes it at the next chunk
                        response = _read_stream(sdk, request, timeout, headers, cancel)
                payload = self._payload(response, key)
                break
            except LLMError:
                raise
            except gates.GateTimeout as error:
                waited += time.monotonic() - entered
                raise failed("the run's time budget ran out waiting for the endpoint's limits "
                             f"({error})", error, by_model=down) from error
            except Exception as error:  # classified below; non-retryable errors propagate
                import openai

                if (isinstance(error, openai.BadRequestError) and "response_format" in request
                        and ("response_format" in str(error) or "maxLength" in str(error))):
                    if self.supports_lengths and has_lengths(request["response_format"]):
                        # the schema without its length limits, before no schema
                        self.supports_lengths = False
                        note = "maxLength unsupported"
                    else:
                        # no JSON-schema support: ask in plain text, parse robustly
                        self.supports_schema = False
                        note = "response_format unsupported"
                    request = self.request(messages, response_format, tools, call_index,
                                           request.get("max_tokens"), request.get("stop"),
                                           request.get("tool_choice"))
                    attempts.append({"attempt": attempt - 1, "error": note, "wait_s": 0})
                    continue
                retryable = _retryable(error)
                asked = retry_after_s(error) if retryable else None
                # an endpoint that says when to come back is waited for, not failed: such an
                # answer does not count against max_retries while the run's deadline bounds it
                limited = asked is not None and self.deadline is not None
                status = getattr(error, "status_code", None)  # an HTTP answer's status
                # a request the run's clock cut short failed by the clock, not by the model
                clipped = (isinstance(error, openai.APITimeoutError)
                           and timeout < self.settings.timeout_s)
                down = not clipped and not (limited and status == 429)
                if not retryable or (not limited and failures == self.settings.max_retries):
                    attempts.append({"attempt": attempt - 1,
                                     "error": f"{type(error).__name__}: {error}"[:300],
                                     **({"status": status} if status else {})})
                    raise failed(f"LLM call failed after {attempt} attempt(s): {error}",
                                 error, by_model=not clipped) from error
                if not limited:
                    failures += 1
                if asked is not None:
                    # as asked, and a little later (never earlier): workers do not all return
                    # at once; every request through the gate holds as long
                    wait = asked * (1.0 + 0.1 * random.random())
                    if gate is not None:
                        gate.hold(asked)
                else:  # exponential back-off with jitter
                    wait = self.settings.backoff_s * 2**(failures - 1) * (0.5 + random.random())
                if self.deadline is not None:
                    wait = max(0.0, min(wait, self.deadline - time.monotonic()))
                entry = {"attempt": attempt - 1, "error": f"{type(error).__name__}: {error}"[:300],
                         "wait_s": round(wait, 3), **({"status": status} if status else {})}
                if asked is not None:
                    entry["retry_after_s"] = round(asked, 3)
                attempts.append(entry)
                waited += wait
                report_retry(self.settings, attempt, entry, limited)
                self.sleep(wait)
        self.calls += 1
        if self.cache is not None:
            # before use: a kill after this point repeats no call
            self.cache.put(cache_key, payload)
        return Completion(**payload, cached=False, attempts=attempts,
                          latency_s=time.monotonic() - start, wait_s=waited, **sent)

    def _slot(self, gate: gates.Gate | None, tokens: int) -> contextlib.AbstractContextManager:
        """The gate's slot for one request (held while it is in flight), or none without limits."""
        if gate is None:
            return contextlib.nullcontext(0.0)
        return gate.slot(tokens, self.deadline)

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
                "completion_tokens": completion,
                "cost_usd": (prompt * price_in + completion * price_out) / 1e6, "key": key}


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def call_seed(seed: int | None, call_index: int | None) -> int | None:
    """Derive one call's seed from (run seed, call index): each call samples anew, reproducibly.

    Args:
        seed: The run's seed, or None.
        call_index: The call's index in the run, or None.

    Returns:
        The first 31 bits of sha256("<seed>:<call index>"); `seed` itself when either is None.
    """
    if seed is None or call_index is None:
        return seed
    import hashlib

    digest = hashlib.sha256(f"{seed}:{call_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


CHARS_PER_TOKEN = 3.5  # a stated estimate of token counts: no tokenizer is downloaded


def estimate_tokens(text: str) -> int:
    """Estimate the tokens of a text from its characters (CHARS_PER_TOKEN).

    Args:
        text: The text.

    Returns:
        The estimated number of tokens, at least 1.
    """
    return int(len(text) / CHARS_PER_TOKEN) + 1


def json_schema(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """Build a response_format asking for one JSON object.

    It is enforced where the endpoint supports JSON schemas.

    Args:
        name: The schema's name.
        properties: The object's fields' schemas, by name.
        required: The names of the fields that must be present.

    Returns:
        The response_format (strict, no additional properties).
    """
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": {
        "type": "object", "properties": properties, "required": required,
        "additionalProperties": False}}}


STRUCTURE_TOKENS = 48  # a reply's keys, quotes and spacing, beside its values
# Code as the embedded model's tokenizer splits it was measured at 2.1 to 3.9 characters per token;
# 2.0 is a conservative bound below that range, so a reply whose program fills its field still
# closes its JSON within the token cap (a denser program would be cut at the cap instead; either
# way `cut_fields` reports the cut).
PAYLOAD_CHARS_PER_TOKEN = 2.0
MIN_PAYLOAD_CHARS = 200  # a few lines of code, under the smallest cap


def text(max_chars: int, description: str | None = None) -> dict[str, Any]:
    """Build the schema of a string field of at most `max_chars` characters.

    Endpoints that turn the schema into a grammar (llama.cpp, the embedded model's server) enforce
    maxLength while sampling, so a reply cannot spend the whole token cap inside one field and never
    reach the fields after it.

    Args:
        max_chars: The field's maxLength.
        description: The field's description, or None.

    Returns:
        The field's schema.

    Raises:
        ValueError: `max_chars` is below 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars: a string field's limit must be at least 1, not {max_chars}")
    field: dict[str, Any] = {"type": "string", "maxLength": int(max_chars)}
    if description:
        field["description"] = description
    return field


def payload_chars(max_tokens: int, bounded_chars: int) -> int:
    """Size the free-form field that ends a reply (a program, a file's content).

    It gets what the token cap leaves after the reply's structure and its bounded fields (counted at
    CHARS_PER_TOKEN), at PAYLOAD_CHARS_PER_TOKEN. A reply that fills it still closes its JSON within
    `max_tokens` for typical code.

    Args:
        max_tokens: The reply's token cap.
        bounded_chars: The total maxLength of the reply's other fields.

    Returns:
        The field's maxLength, at least MIN_PAYLOAD_CHARS.
    """
    left = max_tokens - STRUCTURE_TOKENS - bounded_chars / CHARS_PER_TOKEN
    return max(MIN_PAYLOAD_CHARS, int(left * PAYLOAD_CHARS_PER_TOKEN))


def lead_chars(limits: dict[str, int], max_tokens: int, reserve_tokens: int) -> dict[str, int]:
    """Size the fields that come before a reply's action or program under a token cap.

    Even at one token per character (a small model writing digits), those fields and the reply's
    structure leave `reserve_tokens` of the cap to what follows them. They keep `limits` where that
    already holds and shrink in proportion where it does not (to at least 8 characters each).

    Args:
        limits: Each leading field's maxLength as written.
        max_tokens: The reply's token cap.
        reserve_tokens: What must be left for the part that follows them.

    Returns:
        Each field's maxLength under this cap.
    """
    room = max(max_tokens - STRUCTURE_TOKENS - reserve_tokens, 0)
    scale = min(1.0, room / sum(limits.values()))
    return {key: max(8, int(chars * scale)) for key, chars in limits.items()}


def cut_fields(reply: dict[str, Any] | None, response_format: dict[str, Any] | None,
               capped: bool = False) -> dict[str, int]:
    """Find the reply's top-level string fields that were cut.

    A field is cut when its length reached its schema's maxLength (an endpoint that enforces the
    grammar closes the string there, as valid JSON, with no other sign) and, for a reply cut at the
    token cap, when it is the string field the reply was writing when it stopped (its last). A field
    longer than its maxLength was not enforced, so not cut.

    Args:
        reply: The parsed reply, or None.
        response_format: The schema the reply was asked for, or None.
        capped: Whether the reply was cut at the token cap (and read by `parse_json_prefix`).

    Returns:
        Each cut field's name with the characters it kept.
    """
    if not reply:
        return {}
    properties = (((response_format or {}).get("json_schema") or {}).get("schema", {})
                  .get("properties", {}))
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
    """List every string field of a response_format's schema, nested ones included.

    Args:
        response_format: The response_format.

    Returns:
        The string fields' schemas (the objects themselves, not copies).
    """
    found: list[dict[str, Any]] = []
    _walk_strings(response_format, found.append)
    return found


def has_lengths(response_format: dict[str, Any]) -> bool:
    """Test whether any string field of a response_format has a maxLength.

    Args:
        response_format: The response_format.

    Returns:
        True when one has.
    """
    return any("maxLength" in field for field in string_fields(response_format))


def without_lengths(response_format: dict[str, Any]) -> dict[str, Any]:
    """Copy a response_format without maxLength, for endpoints whose strict mode rejects it.

    Args:
        response_format: The response_format (left unchanged).

    Returns:
        A deep copy without any maxLength.
    """
    copy = json.loads(json.dumps(response_format))
    _walk_strings(copy, lambda field: field.pop("maxLength", None))
    return copy


def parse_json_prefix(text: str) -> dict[str, Any] | None:
    """Read the object a reply cut at the token cap had begun.

    Uses pydantic-core's partial JSON reader.

    Args:
        text: The model's reply.

    Returns:
        Its complete fields and the string it was writing, cut where it stopped; None when no
        object had begun.
    """
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
    """Find the first JSON object in a model's text: in a code fence or bare, amid prose.

    Args:
        text: The model's reply.

    Returns:
        The first complete JSON object found.

    Raises:
        ValueError: The text holds no JSON object.
    """
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
