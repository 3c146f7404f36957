"""A scripted OpenAI-compatible HTTP server for tests (a test double at the network boundary).

It plays a correct circle-packing-26 solution in each scaffold's reply format (`play`), or the
replies scripted per response schema (`replies`), and counts and logs what it served.

Options of `FakeLLM(...)` (all keyword-friendly; the first five keep their old positions):

- `faults`: a list consumed one per request before any other rule: "429" and "503" (with the
  `Retry-After` header when `retry_after` is set), "500", "400" (a request the model refuses: too
  long for its context, in OpenAI's words), "context" (the same in llama.cpp's server's words:
  "request (N tokens) exceeds the available context size (`context_tokens` tokens)", N the
  request's count at `chars_per_token`), "401" (the key refused), "404" (the model's name
  unknown), "timeout" (the reply comes after `slow_s` seconds), "malformed" (a cut JSON body),
  "drop" (the connection closes without a reply).
- `chars_per_token`: the model's own count of a request's tokens, its messages' JSON characters
  per token (the usage's `prompt_tokens` and a "context" refusal say it); None: every reply's
  usage says 100 prompt tokens.
- `context_tokens`: the context a "context" refusal names.
- `slow_s`: how late a "timeout" reply comes.
- `program_sleep_s`: the scripted solution sleeps this long first.
- `replies`, `in_call_order`: per response schema, the JSON object of each assistant turn (or of
  each call, with in_call_order).
- `latency_s`: seconds every answered request (200 or 500) takes: a number, or (low, high) drawn
  uniformly per request.
- `fault_rates`: after `faults` is used up, each request fails at random with these
  probabilities, by kind: {"429": p, "503": p, "500": p, "drop": p, "timeout": p, "malformed": p}.
- `seed`: the seed of the random draws (faults and latencies): the same sequence of requests
  meets the same faults. Concurrent requests draw in the order they arrive.
- `retry_after`: the `Retry-After` a 429 or 503 carries: seconds (a number) or any text sent as
  is (an HTTP-date); None for no header.
- `stream_pieces`, `stream_delay_s`, `hold`: a request with `stream` is answered as server-sent
  chunks: its text in `stream_pieces` pieces (a tool call in one), `stream_delay_s` seconds apart,
  paused after the first piece until `hold` (a threading.Event) is set, where one is given; then
  the finish, the usage where `stream_options.include_usage` asks for it, and `[DONE]`.
- `max_concurrent`: the endpoint's own cap: a request arriving while that many are in flight is
  answered 429 (with `retry_after`), as a real endpoint does; None for no cap.

What it records (read them after the requests, or under `lock`):

- `requests`: each request's body, in arrival order.
- `log`: one entry per request: `run` (the `X-Innolab-Run` header the client sends, or None),
  `seed` (the request's seed: a call's identity within its run), `schema` (the response format's
  name), `start` and `end` (time.monotonic(): the request read, its reply begun), `status` (HTTP
  status; None for a dropped connection), `fault` (the injected fault or None), `in_flight`
  (requests in flight on arrival, itself included).
- `in_flight`, `max_in_flight`: requests in flight now (read, not yet answered), and the most
  ever seen at once.
- `over_cap`: requests answered 429 because `max_concurrent` were in flight.
- `cancelled`: streamed replies whose client closed the connection before their end (their log
  entries say `cancelled` True; `pieces` counts the pieces sent of each streamed reply).
- `served()`: the log's answered (200) entries; `repeated_calls()`: each (run, seed) answered
  200 more than once (a call made twice).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

RANDOM_FAULTS = ("429", "503", "500", "drop", "timeout", "malformed")

SOLUTION_CODE = (
    "import json\n"
    "r = 1 / 12 * (1 - 1e-12)\n"
    "circles = [[(2 * c + 1) / 12, (2 * k + 1) / 12, r] for k in range(5) for c in range(6)][:26]\n"
    "json.dump({'circles': circles}, open('submission.json', 'w'))\n"
    "print('wrote', len(circles), 'circles')\n"
)


def play(request: dict[str, Any], code: str = SOLUTION_CODE) -> dict[str, Any]:
    """The assistant message that a competent agent would send next, in the scaffold's format."""
    schema = (request.get("response_format") or {}).get("json_schema", {}).get("name")
    turn = sum(m["role"] == "assistant" for m in request["messages"])
    if schema == "codeact_action":
        reply = [
            {"thought": "write the grid packing", "action": "python", "code": code},
            {"thought": "submit it", "action": "submit", "path": "submission.json", "code": ""},
        ]
        content = (
            reply[turn]
            if turn < len(reply)
            else {"thought": "done", "action": "finish", "code": ""}
        )
        return {"role": "assistant", "content": json.dumps(content)}
    if schema == "mlab_action":
        steps = [
            ("Edit Script (AI)", "solve.py", "write a program that packs the circles on a grid"),
            ("Execute Script", "solve.py", ""),
            ("Validate", "submission.json", ""),
            ("Final Answer", "submission.json", ""),
        ]
        action, file, request_text = steps[min(turn, len(steps) - 1)]
        reply = {
            "reflection": "ok",
            "research_plan_and_status": "1. grid packing",
            "fact_check": "none",
            "thought": action,
            "action": action,
            "action_input": {
                "file": file,
                "other_file": "",
                "request": request_text,
                "start_line": 1,
                "end_line": 0,
            },
        }
        return {"role": "assistant", "content": json.dumps(reply)}
    if schema == "mlab_edit":
        return {"role": "assistant", "content": json.dumps({"content": code})}
    if schema == "mlab_answer":
        return {"role": "assistant", "content": json.dumps({"answer": "a scripted answer"})}
    if schema == "dagent_scores":
        text = request["messages"][-1]["content"]
        score = (
            0
            if text.count("Method A:\n")
            and text.split("Method B:\n")[0].split("Method A:\n")[1].strip()
            == text.split("Method B:\n")[1].strip()
            else 2
        )
        reply = {f"d{i}": {"score": score, "justification": "scripted"} for i in range(1, 7)}
        return {"role": "assistant", "content": json.dumps(reply)}
    if schema == "method_card":
        return {
            "role": "assistant",
            "content": json.dumps(
                {
                    "summary": "equal circles on a grid",
                    "pseudocode": "place circles on a 6 x 5 grid",
                }
            ),
        }
    if schema == "aide_node":
        return {
            "role": "assistant",
            "content": json.dumps({"plan": "equal circles on a grid", "code": code}),
        }
    if schema == "tool_call":  # a gateway's emulated tool call: the same plan, as JSON
        alternatives = request["response_format"]["json_schema"]["schema"]
        names = [a["properties"]["name"]["enum"][0]
                 for a in alternatives.get("anyOf", [alternatives])]
        planned = _tool_plan(names, turn, code)
        name, arguments = planned or (names[0], {})
        return {"role": "assistant", "content": json.dumps({"name": name,
                                                            "arguments": arguments})}
    if request.get("tools"):
        names = [t["function"]["name"] for t in request["tools"]]
        planned = _tool_plan(names, turn, code)
        calls = [] if planned is None else [{
            "id": f"call_{turn + 1}", "type": "function",
            "function": {"name": planned[0], "arguments": json.dumps(planned[1])}}]
        return {
            "role": "assistant",
            "content": None if calls else "done",
            "tool_calls": calls or None,
        }
    return {"role": "assistant", "content": "hello"}


def _tool_plan(names: list[str], turn: int, code: str) -> tuple[str, dict[str, Any]] | None:
    """The tool call a competent agent makes at a turn, among the tools it is offered.

    Write the grid packing (with python, the persistent session, or bash), submit it, then end:
    with `final_answer` where offered (smolagents), else with no tool call (a text reply).
    """
    if "python" in names or "python_session" in names:
        tool = "python" if "python" in names else "python_session"
        plan = [(tool, {"code": code}), ("submit", {"path": "submission.json"})]
    elif "bash" in names:  # mini-swe-agent: only bash, and its own end-of-task command
        plan = [("bash", {"command": f"cat > solve.py <<'EOF'\n{code}EOF\npython3 solve.py"}),
                ("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})]
    else:
        plan = []
    if turn < len(plan):
        return plan[turn]
    if "final_answer" in names:
        return "final_answer", {"answer": "submitted submission.json"}
    return None


class FakeLLM:
    """Serve on 127.0.0.1 (see the module's docstring for the options and the records)."""

    def __init__(
        self,
        faults: list[str] | None = None,
        slow_s: float = 3.0,
        program_sleep_s: float = 0.0,
        replies: dict[str, list[dict[str, Any]]] | None = None,
        in_call_order: bool = False,
        latency_s: float | tuple[float, float] = 0.0,
        fault_rates: dict[str, float] | None = None,
        seed: int = 0,
        retry_after: float | str | None = None,
        max_concurrent: int | None = None,
        stream_pieces: int = 1,
        stream_delay_s: float = 0.0,
        hold: threading.Event | None = None,
        chars_per_token: float | None = None,
        context_tokens: int = 4096,
    ) -> None:
        unknown = sorted(set(fault_rates or {}) - set(RANDOM_FAULTS))
        if unknown:
            raise ValueError(f"fault_rates: unknown fault(s) {unknown}; known: {RANDOM_FAULTS}")
        if sum((fault_rates or {}).values()) > 1.0:
            raise ValueError("fault_rates: the probabilities add up to more than 1")
        self.faults = list(faults or [])
        # per response schema: the JSON object of each assistant turn (or of each call, with
        # in_call_order)
        self.replies = replies or {}
        self.in_call_order = in_call_order
        self.calls: dict[str, int] = {}
        self.code = (
            f"import time\ntime.sleep({program_sleep_s})\n" if program_sleep_s else ""
        ) + SOLUTION_CODE
        self.slow_s = slow_s
        self.latency_s = latency_s
        self.fault_rates = dict(fault_rates or {})
        self.retry_after = retry_after
        self.max_concurrent = max_concurrent
        self.stream_pieces, self.stream_delay_s, self.hold = stream_pieces, stream_delay_s, hold
        self.chars_per_token, self.context_tokens = chars_per_token, context_tokens
        self.cancelled = 0
        self.random = random.Random(seed)
        self.requests: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.over_cap = 0
        self.lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            entry: dict[str, Any] | None = None  # the POST being answered

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                entry = self.entry = owner._arrive(body, self.headers.get("X-Innolab-Run"))
                try:
                    self._answer(body, entry["fault"])
                except BaseException:
                    entry["status"] = None  # the reply never reached the client
                    raise
                finally:
                    owner._leave(entry)

            def _answer(self, body: dict[str, Any], fault: str | None) -> int | None:
                if fault in ("429", "503", "over_cap"):
                    status = 503 if fault == "503" else 429
                    headers = {}
                    if owner.retry_after is not None:
                        headers["Retry-After"] = str(owner.retry_after)
                    message = "unavailable" if status == 503 else "rate limited"
                    return self._send(status, {"error": {"message": message}}, headers)
                if fault == "400":  # a request the model refuses for itself (too long)
                    return self._send(
                        400,
                        {
                            "error": {
                                "message": "This model's maximum context length is 4096 "
                                "tokens; the messages take 5120 tokens",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                if fault == "context":  # the same, as llama.cpp's server words it
                    return self._send(400, {"error": {
                        "code": 400, "type": "exceed_context_size_error",
                        "message": f"request ({owner.prompt_tokens(body)} tokens) exceeds the "
                                   f"available context size ({owner.context_tokens} tokens), "
                                   "try increasing it"}})
                if fault == "401":  # the key refused, as OpenAI's API words it
                    return self._send(401, {"error": {
                        "message": "Incorrect API key provided.",
                        "type": "invalid_request_error", "code": "invalid_api_key"}})
                if fault == "404":  # a model the endpoint does not serve
                    return self._send(404, {"error": {
                        "message": f"The model `{body.get('model')}` does not exist.",
                        "type": "invalid_request_error", "code": "model_not_found"}})
                if fault == "drop":
                    if self.entry is not None:
                        owner._leave(self.entry)
                    self.connection.shutdown(2)
                    return None
                owner._delay()
                if fault == "500":
                    return self._send(500, {"error": {"message": "boom"}})
                if fault == "timeout":
                    time.sleep(owner.slow_s)
                if fault == "malformed":
                    return self._raw(200, b'{"id": "x", "choices": [')
                message = owner.reply(body)
                if body.get("stream"):
                    return self._stream(body, message)
                return self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": {
                            "prompt_tokens": owner.prompt_tokens(body),
                            "completion_tokens": 50,
                            "total_tokens": owner.prompt_tokens(body) + 50,
                        },
                    },
                )

            def _stream(self, body: dict[str, Any], message: dict[str, Any]) -> int:
                """The reply as server-sent chunks (the module's docstring: `stream_pieces`)."""
                entry = self.entry
                if entry is not None:
                    owner._leave(entry, 200)
                    entry["pieces"] = 0
                base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                        "model": body["model"]}
                text = message.get("content") or ""
                size = max(1, -(-len(text) // max(1, owner.stream_pieces)))
                deltas: list[dict[str, Any]] = [
                    {"content": text[i:i + size]} for i in range(0, len(text), size)]
                calls = message.get("tool_calls") or []
                if calls:
                    deltas.append({"tool_calls": [{**c, "index": i} for i, c in enumerate(calls)]})
                deltas = deltas or [{"content": ""}]
                deltas[0] = {"role": "assistant", **deltas[0]}
                events = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                          for d in deltas]
                events.append({**base, "choices": [{"index": 0, "delta": {},
                               "finish_reason": "tool_calls" if calls else "stop"}]})
                if (body.get("stream_options") or {}).get("include_usage"):
                    prompt = owner.prompt_tokens(body)
                    events.append({**base, "choices": [], "usage": {
                        "prompt_tokens": prompt, "completion_tokens": 50,
                        "total_tokens": prompt + 50}})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()  # no length: the body ends when the connection closes
                try:
                    for number, event in enumerate(events):
                        if number and owner.stream_delay_s:
                            time.sleep(owner.stream_delay_s)
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                        if entry is not None and number < len(deltas):
                            entry["pieces"] = number + 1
                        if number == 0 and owner.hold is not None:
                            owner.hold.wait()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client closed it
                    with owner.lock:
                        owner.cancelled += 1
                        if entry is not None:
                            entry["cancelled"] = True
                return 200

            def _send(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> int:
                return self._raw(status, json.dumps(payload).encode(), headers)

            def _raw(
                self, status: int, data: bytes, headers: dict[str, str] | None = None
            ) -> int:
                # out of flight, its status logged, before the client can read the reply (and
                # send its next request, or read the log)
                if self.entry is not None:
                    owner._leave(self.entry, status)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                return status

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # many clients connect at once in the scale benchmark
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """The request's prompt tokens as this model counts them (`chars_per_token`; else 100)."""
        if self.chars_per_token is None:
            return 100
        return int(len(json.dumps(body.get("messages") or [])) / self.chars_per_token)

    def _arrive(self, body: dict[str, Any], run: str | None) -> dict[str, Any]:
        """Count a request in, choose its fault, and log it."""
        with self.lock:
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            fault = self.faults.pop(0) if self.faults else self._draw_fault()
            if fault is None and self.max_concurrent and self.in_flight > self.max_concurrent:
                fault = "over_cap"
                self.over_cap += 1
            entry = {
                "run": run,
                "seed": body.get("seed"),
                "schema": (body.get("response_format") or {}).get("json_schema", {}).get("name"),
                "start": time.monotonic(),
                "end": None,
                "status": None,
                "fault": fault,
                "in_flight": self.in_flight,
            }
            self.log.append(entry)
            return entry

    def _leave(self, entry: dict[str, Any], status: int | None = None) -> None:
        """Count a request out (once), as its reply begins, with the status it is answered."""
        with self.lock:
            if entry["end"] is None:
                self.in_flight -= 1
                entry["end"] = time.monotonic()
                entry["status"] = status

    def _draw_fault(self) -> str | None:
        if not self.fault_rates:
            return None
        draw, edge = self.random.random(), 0.0
        for kind in RANDOM_FAULTS:
            edge += self.fault_rates.get(kind, 0.0)
            if draw < edge:
                return kind
        return None

    def _delay(self) -> None:
        if isinstance(self.latency_s, tuple):
            with self.lock:
                seconds = self.random.uniform(*self.latency_s)
        else:
            seconds = self.latency_s
        if seconds > 0:
            time.sleep(seconds)

    def served(self) -> list[dict[str, Any]]:
        """The log's entries answered 200 (a reply the client could use, or a malformed one)."""
        with self.lock:
            return [e for e in self.log if e["status"] == 200 and e["fault"] != "malformed"]

    def repeated_calls(self) -> list[tuple[str | None, int | None]]:
        """Each (run, seed) answered 200 more than once: a model call made twice."""
        seen = Counter((e["run"], e["seed"]) for e in self.served())
        return sorted((k for k, n in seen.items() if n > 1), key=str)

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        """A scripted turn of `replies` for the request's schema, else what `play` plays."""
        schema = (request.get("response_format") or {}).get("json_schema", {}).get("name")
        script = self.replies.get(schema)
        if script:
            turn = sum(m["role"] == "assistant" for m in request["messages"])
            if self.in_call_order:
                with self.lock:
                    turn = self.calls.get(schema, 0)
                    self.calls[schema] = turn + 1
            return {"role": "assistant", "content": json.dumps(script[min(turn, len(script) - 1)])}
        return play(request, self.code)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
