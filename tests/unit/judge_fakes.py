"""A local HTTP server speaking the judge providers' real wire protocols, for the SDKs.

One :class:`FakeJudgeServer` answers all three, by path:

- Anthropic Messages: ``POST /v1/messages`` -> a ``message`` with text content blocks and
  ``usage`` (point ``anthropic.Anthropic(base_url=server.url)`` at it);
- Gemini: ``POST /v1beta/models/{model}:generateContent`` -> ``candidates`` and
  ``usageMetadata`` (``HttpOptions(base_url=server.url)``);
- OpenAI chat completions: ``POST /v1/chat/completions`` -> ``choices`` and ``usage``
  (``openai.OpenAI(base_url=server.url + "/v1")``).

What it answers is scripted: :meth:`FakeJudgeServer.script` queues :class:`Reply` objects
served in order, or ``responder`` computes one per request. Every request is recorded
(:class:`Received`) with its arrival time, so tests can assert what the SDK sent and when.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC_PATH = "/v1/messages"
OPENAI_PATH = "/v1/chat/completions"
GEMINI_PREFIX = "/v1beta/models/"
GEMINI_SUFFIX = ":generateContent"


@dataclass
class Reply:
    """One scripted answer: the model's text for a 200, or an error status."""

    text: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait this long before answering (to provoke client timeouts)
    input_tokens: int = 1000
    output_tokens: int = 50
    error_message: str = "scripted error"


def yes(reason: str = "The answer matches the page.") -> Reply:
    return Reply(text=f"VERDICT: YES\nREASONING: {reason}")


def no(reason: str = "The answer is not supported.") -> Reply:
    return Reply(text=f"VERDICT: NO\nREASONING: {reason}")


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names lowercased
    body: Any
    at: float  # time.monotonic() on arrival

    @property
    def provider(self) -> str | None:
        if self.path == ANTHROPIC_PATH:
            return "anthropic"
        if self.path == OPENAI_PATH:
            return "openai"
        if self.path.startswith(GEMINI_PREFIX) and self.path.endswith(GEMINI_SUFFIX):
            return "google"
        return None

    @property
    def model(self) -> str | None:
        if self.provider == "google":
            return self.path[len(GEMINI_PREFIX) : -len(GEMINI_SUFFIX)]
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def prompt(self) -> str:
        """The user prompt text the SDK put in the body."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.provider == "google":
            return _parts_text(body.get("contents", []))
        return "".join(
            _content_text(message.get("content"))
            for message in body.get("messages", [])
            if message.get("role") == "user"
        )

    @property
    def system(self) -> str | None:
        """The system prompt the SDK sent, where each provider's wire format puts it."""
        body = self.body if isinstance(self.body, dict) else {}
        if self.provider == "anthropic":
            return _content_text(body["system"]) if "system" in body else None
        if self.provider == "google":
            instruction = body.get("systemInstruction")
            return _parts_text([instruction]) if instruction else None
        texts = [
            _content_text(message.get("content"))
            for message in body.get("messages", [])
            if message.get("role") == "system"
        ]
        return "".join(texts) if texts else None

    @property
    def api_key(self) -> str | None:
        # Anthropic: x-api-key, or (the 2.x SDK) a bearer token, like OpenAI.
        if self.provider == "anthropic" and "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        if self.provider == "google":
            return self.headers.get("x-goog-api-key")
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth else None


def _content_text(content: Any) -> str:
    """A message's text: a plain string, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return ""


def _parts_text(contents: list[Any]) -> str:
    """Gemini's ``contents`` (or one ``systemInstruction``): the text of every part."""
    return "".join(
        part.get("text", "")
        for content in contents
        if isinstance(content, dict)
        for part in content.get("parts", [])
    )


def _success_body(provider: str, reply: Reply, model: str | None) -> dict[str, Any]:
    text = reply.text or ""
    if provider == "anthropic":
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
        }
    if provider == "google":
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": reply.input_tokens,
                "candidatesTokenCount": reply.output_tokens,
                "totalTokenCount": reply.input_tokens + reply.output_tokens,
            },
            "modelVersion": model,
        }
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
_ANTHROPIC_TYPE = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _error_body(provider: str, reply: Reply) -> dict[str, Any]:
    if provider == "anthropic":
        kind = _ANTHROPIC_TYPE.get(reply.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": reply.error_message}}
    if provider == "google":
        return {
            "error": {
                "code": reply.status,
                "message": reply.error_message,
                "status": _GOOGLE_STATUS.get(reply.status, "UNKNOWN"),
            }
        }
    return {"error": {"message": reply.error_message, "type": "server_error", "code": None}}


class FakeJudgeServer:
    """Use as a context manager; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.responder: Callable[[Received], Reply] | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    # --- lifecycle ---

    def __enter__(self) -> FakeJudgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def base_url(self, provider: str) -> str:
        """The base URL each SDK expects (OpenAI's includes the version)."""
        return self.url + "/v1" if provider == "openai" else self.url

    # --- scripting ---

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next_reply(self, received: Received) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(received)
        return Reply(status=500, error_message="fake server: script exhausted")

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    # --- HTTP ---

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except json.JSONDecodeError:
                    body = raw.decode("utf-8", "replace")
                received = Received(
                    method="POST",
                    path=self.path.split("?", 1)[0],
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    at=time.monotonic(),
                )
                with server._lock:
                    server.requests.append(received)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._answer(received)
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, received: Received) -> None:
                provider = received.provider
                if provider is None:
                    self._send(404, {"error": {"message": f"no route {received.path}"}}, {})
                    return
                reply = server._next_reply(received)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.status == 200:
                    payload = _success_body(provider, reply, received.model)
                else:
                    payload = _error_body(provider, reply)
                self._send(reply.status, payload, reply.headers)

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        return Handler


def closed_port_url() -> str:
    """A URL on 127.0.0.1 where nothing listens: connections are refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
