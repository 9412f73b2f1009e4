"""A local stand-in for Tavily's search API: ``POST /search`` and the key check ``GET
/usage`` on 127.0.0.1.

A test double, like the scripted model servers beside it (``localweb/models``), and kept in
the package for the same reason: offline runs of the harness, not only its tests, need a
search that answers without a key or the network. The ``web_search`` server reaches it
through tavily-python's ``api_base_url`` (``AGENT_BENCHMARKS_TAVILY_BASE_URL``).

It speaks the wire shape tavily-python 0.8 sends and reads: a JSON body (``query``,
``search_depth``, ``max_results``, ...) with ``Authorization: Bearer <key>``; a reply with
``query``, ``answer``, ``images``, ``results`` (``title``, ``url``, ``content``,
``score``, ``raw_content``), ``response_time`` and, when asked with ``include_usage``,
``usage.credits``; errors as ``{"detail": {"error": ...}}`` with the HTTP status (401 for
a wrong key, 429 over the rate limit, 5xx).

Lightpanda's own ``search`` tool has no base-URL setting (1.0.2 asks https://api.tavily.com
itself, ignoring proxies), so for it the stand-in can serve TLS on 127.0.0.1:443 with a
certificate for api.tavily.com (``port``, ``tls``); the test then runs lightpanda where that
name resolves to 127.0.0.1 and its CA is trusted (tests/e2e/test_native_search_runs.py).
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent_benchmarks.search import CREDITS_PER_DEPTH

# query -> results (dicts with title, url, content)
Results = Callable[[str], list[dict[str, Any]]]


@dataclass
class SearchRequest:
    """One request the stand-in received; the key only as whether it matched."""

    body: dict[str, Any]
    key_matched: bool


@dataclass
class TavilyStandIn:
    """``with TavilyStandIn(results, api_key=K) as tavily:`` serves on ``tavily.base_url``.

    ``fail_with`` queues HTTP statuses for the next requests (429, 500, ...), one each;
    ``delay_s`` holds every reply that long (for timeouts). ``tls`` (certificate chain and
    key files) serves HTTPS instead, on ``port`` (0: any free one)."""

    results: Results
    api_key: str
    fail_with: list[int] = field(default_factory=list)
    delay_s: float = 0.0
    requests: list[SearchRequest] = field(default_factory=list)
    port: int = 0
    tls: tuple[Path, Path] | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self._server.daemon_threads = True
        if self.tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self.tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> TavilyStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reply(self, authorization: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        key_matched = authorization == f"Bearer {self.api_key}"
        with self._lock:
            self.requests.append(SearchRequest(body=body, key_matched=key_matched))
            failure = self.fail_with.pop(0) if self.fail_with else None
        if self.delay_s:
            time.sleep(self.delay_s)
        if not key_matched:
            return 401, {"detail": {"error": "Unauthorized: missing or invalid API key."}}
        if failure is not None:
            return failure, {"detail": {"error": f"stand-in failure {failure}"}}
        query = str(body.get("query") or "")
        limit = int(body.get("max_results") or 5)
        results = [
            {
                "title": r["title"],
                "url": r["url"],
                "content": r.get("content", ""),
                "score": round(0.9 - 0.1 * i, 2),
                "raw_content": None,
            }
            for i, r in enumerate(self.results(query)[:limit])
        ]
        reply: dict[str, Any] = {
            "query": query,
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": results,
            "response_time": 0.01,
        }
        if body.get("include_usage"):
            reply["usage"] = {"credits": CREDITS_PER_DEPTH.get(body.get("search_depth"), 1)}
        return 200, reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                # GET /usage: Tavily's key check, answered for the key alone.
                if self.path != "/usage":
                    self._send(404, {"detail": {"error": f"no route {self.path}"}})
                    return
                if self.headers.get("Authorization", "") != f"Bearer {stand_in.api_key}":
                    self._send(401, {"detail": {"error": "Unauthorized: invalid API key."}})
                    return
                with stand_in._lock:
                    used = sum(1 for r in stand_in.requests if r.key_matched)
                self._send(200, {"key": {"usage": used, "limit": None}})

            def do_POST(self) -> None:
                if self.path != "/search":
                    self._send(404, {"detail": {"error": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"detail": {"error": "body is not JSON"}})
                    return
                status, reply = stand_in.reply(self.headers.get("Authorization", ""), body)
                self._send(status, reply)

            def _send(self, status: int, reply: dict[str, Any]) -> None:
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: tests read stand_in.requests instead

        return Handler
