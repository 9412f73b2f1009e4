"""The HTTP server the harness's own local services run on (the scripted model, the model
meter): a thread per connection that never holds up shutdown, a backlog for bursts of
parallel clients, and a client that drops its connection (an agent killed mid-request, a
keep-alive connection closed) is no error."""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128  # the default backlog of 5 refuses bursts of parallel clients

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class LoopbackHandler(BaseHTTPRequestHandler):
    """A handler that sends every method to one ``_dispatch``, keeps connections alive
    (as the agents' clients expect) and logs nothing to stderr (each service keeps a log of
    its own)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _dispatch(self) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()
