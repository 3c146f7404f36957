"""A scripted OpenAI-compatible HTTP server for unit tests (a test double at the network boundary).

It plays a correct circle-packing-26 solution in each scaffold's reply format, and can inject
faults: 429, 500, a response slower than the client's timeout, a malformed JSON body, or a dropped
connection.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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
    if request.get("tools"):
        calls = (
            [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "python", "arguments": json.dumps({"code": code})},
                }
            ]
            if turn == 0
            else [
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {
                        "name": "submit",
                        "arguments": json.dumps({"path": "submission.json"}),
                    },
                }
            ]
            if turn == 1
            else []
        )
        return {
            "role": "assistant",
            "content": None if calls else "done",
            "tool_calls": calls or None,
        }
    return {"role": "assistant", "content": "hello"}


class FakeLLM:
    """Serve on 127.0.0.1; `faults` is consumed one per request before normal replies."""

    def __init__(
        self,
        faults: list[str] | None = None,
        slow_s: float = 3.0,
        program_sleep_s: float = 0.0,
        replies: dict[str, list[dict[str, Any]]] | None = None,
        in_call_order: bool = False,
    ) -> None:
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
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with owner._lock:
                    owner.requests.append(body)
                    fault = owner.faults.pop(0) if owner.faults else None
                if fault == "429":
                    return self._send(429, {"error": {"message": "rate limited"}})
                if (
                    fault == "400"
                ):  # a request the model refuses for itself (here: too long for its context)
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
                if fault == "500":
                    return self._send(500, {"error": {"message": "boom"}})
                if fault == "timeout":
                    time.sleep(owner.slow_s)
                if fault == "malformed":
                    return self._raw(200, b'{"id": "x", "choices": [')
                if fault == "drop":
                    self.connection.shutdown(2)
                    return None
                message = owner.reply(body)
                return self._send(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        "usage": {
                            "prompt_tokens": 100,
                            "completion_tokens": 50,
                            "total_tokens": 150,
                        },
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                self._raw(status, json.dumps(payload).encode())

            def _raw(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        """A scripted turn of `replies` for the request's schema, else what `play` plays."""
        schema = (request.get("response_format") or {}).get("json_schema", {}).get("name")
        script = self.replies.get(schema)
        if script:
            turn = sum(m["role"] == "assistant" for m in request["messages"])
            if self.in_call_order:
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
