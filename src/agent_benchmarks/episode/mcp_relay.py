"""The project's stdio relay between an agent and its browser MCP server: where a run cuts
the connection (``--fault connection-drop``).

``python -m agent_benchmarks.episode.mcp_relay --log FILE -- SERVER ARGS...`` starts the
server and passes MCP's newline-delimited JSON-RPC messages both ways unchanged, keeping
the agent's ``initialize`` request and ``initialized`` notification. On SIGUSR1 it cuts the
connection: the server's stdin is closed and its process group killed (its browser goes
with it, or exits when its own pipe closes), and every request the server had not answered
is answered with a JSON-RPC error saying the connection was lost. On the agent's next
message the relay connects again, as a reconnecting client does: a new server, the
``initialize`` exchange replayed (its reply not passed on), then the message. The agent
keeps its session; its browser is a new one, on a blank page.

Every cut, answer and reconnection is a line of the log. Standard library only: it starts
once per attempt.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO

_LOST = "connection to the browser server was lost"


class Relay:
    def __init__(self, argv: list[str], log_path: str):
        self.argv = argv
        self.log_path = log_path
        self.lock = threading.RLock()
        self.server: subprocess.Popen[bytes] | None = None
        self.generation = 0
        self.initialize: dict[str, Any] | None = None
        self.initialized: bytes | None = None
        self.pending: dict[Any, int] = {}  # request id -> the generation it went to
        self.swallow: set[Any] = set()  # ids of the relay's own replayed requests
        self.cut_requested = threading.Event()
        self.closing = False  # the agent has closed its end: the server's exit is expected
        self.out = sys.stdout.buffer
        self.out_lock = threading.Lock()

    def log(self, event: str, **fields: Any) -> None:
        with contextlib.suppress(OSError), open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"event": event, "t": round(time.time(), 3), **fields}) + "\n")

    def send_agent(self, line: bytes) -> None:
        with self.out_lock:
            self.out.write(line if line.endswith(b"\n") else line + b"\n")
            self.out.flush()

    # --- the server side ---------------------------------------------------------------

    def start_server(self) -> subprocess.Popen[bytes]:
        server = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        self.generation += 1
        generation = self.generation
        threading.Thread(target=self._pump_server, args=(server, generation), daemon=True).start()
        self.server = server
        return server

    def _pump_server(self, server: subprocess.Popen[bytes], generation: int) -> None:
        assert server.stdout is not None
        for line in server.stdout:
            with self.lock:
                if generation != self.generation:
                    return  # a cut server's late words reach no one
                message = _parse(line)
                ident = message.get("id") if isinstance(message, dict) else None
                if ident is not None and "method" not in message:
                    self.pending.pop(ident, None)
                    if ident in self.swallow:
                        self.swallow.discard(ident)
                        continue
            self.send_agent(line)
        with self.lock:
            if generation != self.generation or self.closing:
                return  # cut (the relay connects again on the agent's next message), or done
        # The server ended by itself (it crashed, or was killed): the relay ends too, so
        # that the agent sees its server go exactly as it would without a relay.
        code = server.wait()
        self.log("server exited", returncode=code)
        with self.out_lock:
            os._exit(code if code >= 0 else 128 - code)

    def write_server(self, line: bytes) -> None:
        server = self.server
        assert server is not None and server.stdin is not None
        with contextlib.suppress(BrokenPipeError, OSError):
            server.stdin.write(line if line.endswith(b"\n") else line + b"\n")
            server.stdin.flush()

    def cut(self) -> None:
        """Close the connection: the server goes, its unanswered requests get errors."""
        with self.lock:
            server, self.server = self.server, None
            self.generation += 1  # the old server's output is dropped from now on
            unanswered = [i for i in self.pending if i not in self.swallow]
            self.pending.clear()
            self.swallow.clear()
        if server is not None:
            _stop(server)
        for ident in unanswered:
            error = {"code": -32000, "message": _LOST}
            self.send_agent(json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}).encode())
        self.log("cut", unanswered=len(unanswered), server_pid=server.pid if server else None)

    def reconnect(self) -> None:
        """A new server, initialized as the agent initialized the first."""
        self.start_server()
        if self.initialize is not None:
            request = dict(self.initialize)
            request["id"] = f"relay-{self.generation}"
            with self.lock:
                self.swallow.add(request["id"])
                self.pending[request["id"]] = self.generation
            self.write_server(json.dumps(request).encode())
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with self.lock:
                    if request["id"] not in self.swallow:
                        break
                time.sleep(0.01)
        if self.initialized is not None:
            self.write_server(self.initialized)
        self.log("reconnected", generation=self.generation)

    # --- the agent side ------------------------------------------------------------------

    def run(self, stdin: BinaryIO) -> int:
        self.start_server()
        signal.signal(signal.SIGUSR1, lambda *_: self.cut_requested.set())
        threading.Thread(target=self._watch_cuts, daemon=True).start()
        for line in stdin:
            message = _parse(line)
            if isinstance(message, dict):
                if message.get("method") == "initialize":
                    self.initialize = message
                elif message.get("method") == "notifications/initialized":
                    self.initialized = line
            with self.lock:
                needs_server = self.server is None
            if needs_server:
                self.reconnect()
            with self.lock:
                if isinstance(message, dict) and "method" in message and "id" in message:
                    self.pending[message["id"]] = self.generation
            self.write_server(line)
        with self.lock:
            self.closing = True
            server = self.server
        if server is None:
            return 0
        assert server.stdin is not None
        with contextlib.suppress(OSError):
            server.stdin.close()
        try:
            return server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _stop(server)
            return 0

    def _watch_cuts(self) -> None:
        while True:
            self.cut_requested.wait()
            self.cut_requested.clear()
            self.cut()


def _stop(server: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        if server.stdin is not None:
            server.stdin.close()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(server.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.wait(timeout=5)


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp_relay")
    parser.add_argument("--log", required=True)
    parser.add_argument("server", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.server[1:] if args.server[:1] == ["--"] else args.server
    if not command:
        parser.error("the server's command goes after --")
    return Relay(command, args.log).run(sys.stdin.buffer)


if __name__ == "__main__":
    sys.exit(main())
