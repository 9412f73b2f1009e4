"""One attempt of ``agent-browser chat``, as the attempt's own process: meter, chat, close, reap.

The run engine starts ``python -m agent_benchmarks.backends.agent_browser_chat_attempt
attempt.json`` as the attempt's leader (its process group, deadline and stray scan). It:

1. adopts orphans (``PR_SET_CHILD_SUBREAPER``). agent-browser detaches its daemon, and the
   daemon's Chromium (or ``lightpanda serve``) and crash handlers outlive their parents; as
   our children they are reaped here instead of ending as ``<defunct>`` children of PID 1,
   which in a container may never reap them;
2. serves the gateway meter on 127.0.0.1 and points agent-browser's ``AI_GATEWAY_URL`` at
   it. agent-browser prints neither token usage nor which text was its final reply, so the
   meter forwards every request to the real gateway and logs each reply (status, text, tool
   calls, usage, malformed stream lines) to ``meter.jsonl``; never a header, since
   ``Authorization`` carries the key. The one change it makes to a request is
   ``stream_options.include_usage``, so an OpenAI-compatible gateway reports usage in a
   last chunk with no choices, which agent-browser's stream reader skips. Under
   ``GEMINI_DIRECT`` (Google's OpenAI-compatible endpoint, reached at
   ``{base}/chat/completions``) it also puts back each tool call's ``extra_content`` (Gemini's
   thought signature), which Google requires on the next request and agent-browser 0.41.2
   drops (upstream patched agent-browser 0.38.2 for the same);
3. installs the answer-source blocks (``network route <pattern> --abort``) in the session
   before the chat starts;
4. runs ``agent-browser --session S chat -v [--model M] <message>`` in its own process group,
   its stdout going straight to ours and its stderr copied through line by line, each line
   also logged with its time (``stderr.jsonl``), from which tool call latencies are read;
5. closes the session (``agent-browser --session S close``), waits for the daemon and its
   browser to exit, reaps them, kills what outlives a grace period, and writes what it did
   to ``cleanup.json``. It exits with the chat's status.

On SIGTERM (the engine's deadline, followed by SIGKILL half a second later) it kills the
chat, stops the daemon without waiting for ``close`` (the daemon may be stuck in a command)
and reaps. Standard library and psutil only: it starts once per attempt.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil

from agent_benchmarks.isolation.reaping import (
    become_subreaper,
    kill_descendants,
    wait_descendants_gone,
)

METER_LOG = "meter.jsonl"
STDERR_LOG = "stderr.jsonl"
CLEANUP_LOG = "cleanup.json"

# `close` takes well under a second with either engine; a daemon that needs longer is stuck.
_CLOSE_TIMEOUT_S = 15.0
_ROUTE_TIMEOUT_S = 60.0  # the first command starts the browser
# How long the daemon and its browser get to exit after `close` before SIGKILL.
_EXIT_GRACE_S = 3.0
# After SIGTERM the engine kills the group 0.5 s later: stop the daemon within that.
_TERM_GRACE_S = 0.3
_MAX_LOGGED_TEXT = 20_000


# --- the gateway meter ------------------------------------------------------------------------


class Meter(ThreadingHTTPServer):
    """A pass-through to the real gateway that logs what it answered."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream: str, log_path: Path, endpoint_kind: str = "gateway"):
        super().__init__(("127.0.0.1", 0), _MeterHandler)
        self.upstream = upstream.rstrip("/")
        self.endpoint_kind = endpoint_kind
        # Google's OpenAI-compatible endpoint signs each tool call (extra_content, its
        # "thought signature") and refuses the next request if the signature is not sent
        # back; agent-browser 0.41.2 drops it. Under GEMINI_DIRECT the meter puts it back.
        self.echo_extra_content = endpoint_kind == "openai-base"
        self._extra: dict[Any, Any] = {}
        self._log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self._lock = threading.Lock()
        self._requests = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        # agent-browser dropping its connection is routine, and stderr is the agent's own.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def target(self, path: str) -> str:
        """Where a request for ``path`` goes. agent-browser asks for /v1/chat/completions
        under AI_GATEWAY_URL; an OpenAI base URL that already holds its version (Google's
        .../v1beta/openai, under GEMINI_DIRECT) takes /chat/completions."""
        if self.endpoint_kind == "openai-base" and path.startswith("/v1/"):
            path = path[len("/v1") :]
        return self.upstream + path

    def next_number(self) -> int:
        with self._lock:
            self._requests += 1
            return self._requests

    def remember_extra(self, calls: list[dict[str, Any]]) -> None:
        """Keep each tool call's extra_content, by id and by (name, arguments)."""
        with self._lock:
            for call in calls:
                self._extra[call["id"]] = call["extra_content"]
                self._extra[(call["name"], call["arguments"])] = call["extra_content"]

    def restore_extra(self, payload: dict[str, Any]) -> int:
        """Put the remembered extra_content back on the assistant turns' tool calls that
        lack it; returns how many were restored."""
        restored = 0
        with self._lock:
            for message in payload.get("messages") or []:
                if not isinstance(message, dict) or message.get("role") != "assistant":
                    continue
                for call in message.get("tool_calls") or []:
                    if not isinstance(call, dict) or "extra_content" in call:
                        continue
                    function = call.get("function") or {}
                    extra = self._extra.get(call.get("id")) or self._extra.get(
                        (function.get("name"), function.get("arguments"))
                    )
                    if extra is not None:
                        call["extra_content"] = extra
                        restored += 1
        return restored

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._log.write(json.dumps(entry, ensure_ascii=False) + "\n")
            self._log.flush()

    def close(self) -> None:
        self.shutdown()
        self.server_close()
        with self._lock:
            self._log.close()


class _MeterHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Meter

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the meter log replaces stderr chatter, which is the agent's own

    def do_POST(self) -> None:
        meter = self.server
        self._replied = False
        number = meter.next_number()
        started = time.time()
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        request = _metered_request(body, meter.restore_extra if meter.echo_extra_content else None)
        self._extra_content: list[dict[str, Any]] = []
        entry: dict[str, Any] = {"n": number, "path": self.path, **request.pop("facts")}
        # Logged on arrival as well, so a request the gateway never answers still shows.
        meter.record({"event": "request", "n": number, "t": started})
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() in ("authorization", "content-type", "accept", "user-agent")
        }
        forward = urllib.request.Request(
            meter.target(self.path), data=request["body"], headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(forward) as response:
                entry["status"] = response.status
                if "text/event-stream" in (response.headers.get("Content-Type") or ""):
                    entry |= self._relay_stream(response)
                else:
                    payload = response.read()
                    self._reply(response.status, payload, response.headers.get("Content-Type"))
                    entry |= _json_reply(payload)
                    self._extra_content = _json_extra_content(payload)
        except urllib.error.HTTPError as error:
            payload = error.read()
            entry |= {"status": error.code, "error": payload.decode("utf-8", "replace")[:2000]}
            self._reply(error.code, payload, error.headers.get("Content-Type"))
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            if self._replied:
                # Cut mid-stream: the gateway dropped it (or agent-browser went away).
                entry["error"] = f"gateway meter: the reply was cut: {reason}"
                self.close_connection = True
            else:
                entry["error"] = f"gateway meter: upstream {meter.upstream} failed: {reason}"
                # Never reached: told to agent-browser as a 502 in the OpenAI error shape,
                # which it prints before exiting.
                entry["status"] = 502
                body = {"error": {"message": entry["error"], "type": "upstream_error"}}
                with contextlib.suppress(OSError):
                    self._reply(502, json.dumps(body).encode(), "application/json")
        entry |= {"event": "reply", "t": started, "duration_s": round(time.time() - started, 3)}
        if meter.echo_extra_content and self._extra_content:
            meter.remember_extra(self._extra_content)
            entry["extra_content_calls"] = len(self._extra_content)
        meter.record(entry)

    def _reply(self, status: int, payload: bytes, content_type: str | None) -> None:
        self._replied = True
        self.send_response(status)
        self.send_header("Content-Type", content_type or "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()

    def _relay_stream(self, response: Any) -> dict[str, Any]:
        """Pass the SSE stream on line by line as it arrives, reading it on the way."""
        self._replied = True
        self.send_response(response.status)
        self.send_header("Content-Type", response.headers.get("Content-Type"))
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        reader = StreamReader()
        listening = True
        while line := response.readline():
            reader.feed(line)
            if listening:
                listening = self._relay(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self._extra_content = reader.extra_content()
        if listening:
            self._relay(b"0\r\n\r\n")
        else:
            # agent-browser stops reading at [DONE] and drops the connection: routine. The
            # stream was read to its end all the same, so the reply's usage is counted.
            self.close_connection = True
        return reader.summary()

    def _relay(self, data: bytes) -> bool:
        """Write to agent-browser; False once it has gone."""
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            return False
        return True


def _metered_request(
    body: bytes, restore_extra: Callable[[dict[str, Any]], int] | None = None
) -> dict[str, Any]:
    """The body to forward and what the log keeps of the request: its size (prompt
    characters, for estimates when a reply carries no usage) and the model. With
    ``restore_extra`` (GEMINI_DIRECT), the tool calls' extra_content is put back."""
    try:
        payload = json.loads(body)
    except ValueError:
        return {"body": body, "facts": {"request_chars": len(body)}}
    if not isinstance(payload, dict):
        return {"body": body, "facts": {"request_chars": len(body)}}
    prompt = json.dumps(
        {"messages": payload.get("messages"), "tools": payload.get("tools")},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    facts = {
        "model": payload.get("model"),
        "stream": bool(payload.get("stream")),
        "prompt_chars": len(prompt),
        "messages": len(payload.get("messages") or []),
    }
    changed = False
    if restore_extra is not None:
        restored = restore_extra(payload)
        if restored:
            facts["extra_content_restored"] = restored
            changed = True
    if payload.get("stream"):
        options = payload.get("stream_options") or {}
        payload["stream_options"] = {**options, "include_usage": True}
        changed = True
    if changed:
        body = json.dumps(payload, ensure_ascii=False).encode()
    return {"body": body, "facts": facts}


class StreamReader:
    """Reads an OpenAI chat-completions SSE stream the way agent-browser does (text deltas,
    tool call deltas by index), and also what agent-browser ignores: usage, the finish
    reason, lines that are not JSON, and whether ``[DONE]`` arrived."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage: dict[str, Any] | None = None
        self.finish: str | None = None
        self.malformed = 0
        self.done = False
        self.extra: dict[int, Any] = {}  # tool call index -> its extra_content (Gemini)

    def feed(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            return
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            self.malformed += 1
            return
        if not isinstance(chunk, dict):
            self.malformed += 1
            return
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                self.text.append(delta["content"])
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(
                    int(call.get("index") or 0), {"id": "", "name": "", "arguments": ""}
                )
                function = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] = function.get("name") or slot["name"]
                slot["arguments"] += function.get("arguments") or ""
                if call.get("extra_content") is not None:
                    self.extra[int(call.get("index") or 0)] = call["extra_content"]
            self.finish = choice.get("finish_reason") or self.finish

    def extra_content(self) -> list[dict[str, Any]]:
        """The tool calls that carried extra_content, with it."""
        return [{**self.calls[i], "extra_content": self.extra[i]} for i in sorted(self.extra)]

    def summary(self) -> dict[str, Any]:
        return {
            "text": "".join(self.text)[:_MAX_LOGGED_TEXT],
            "tool_calls": [self.calls[i] for i in sorted(self.calls)],
            "usage": self.usage,
            "finish_reason": self.finish,
            "malformed_lines": self.malformed,
            "done": self.done,
        }


def _json_extra_content(payload: bytes) -> list[dict[str, Any]]:
    """The tool calls of a non-streamed reply that carry extra_content, with it."""
    try:
        calls = json.loads(payload)["choices"][0]["message"].get("tool_calls") or []
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return []
    return [
        {
            "id": c.get("id", ""),
            "name": (c.get("function") or {}).get("name", ""),
            "arguments": (c.get("function") or {}).get("arguments", ""),
            "extra_content": c["extra_content"],
        }
        for c in calls
        if isinstance(c, dict) and c.get("extra_content") is not None
    ]


def _json_reply(payload: bytes) -> dict[str, Any]:
    """A non-streamed completion (agent-browser's interactive compaction call)."""
    try:
        reply = json.loads(payload)
        message = reply["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        return {"malformed_lines": 1, "text": "", "tool_calls": [], "usage": None}
    calls = [
        {
            "id": c.get("id", ""),
            "name": (c.get("function") or {}).get("name", ""),
            "arguments": (c.get("function") or {}).get("arguments", ""),
        }
        for c in message.get("tool_calls") or []
    ]
    return {
        "text": (message.get("content") or "")[:_MAX_LOGGED_TEXT],
        "tool_calls": calls,
        "usage": reply.get("usage"),
        "finish_reason": reply["choices"][0].get("finish_reason"),
        "malformed_lines": 0,
        "done": True,
    }


# --- the attempt ------------------------------------------------------------------------------


class Attempt:
    def __init__(self, config: dict[str, Any]):
        self.binary: str = config["binary"]
        self.session: str = config["session"]
        self.model: str | None = config["model"]  # None: chat picks (AI_GATEWAY_MODEL, its own)
        self.message: str = config["message"]
        self.upstream: str = config["upstream"]
        self.endpoint_kind: str = config.get("endpoint_kind", "gateway")
        self.routes: list[str] = config.get("routes") or []
        self.folder = Path(config["workdir"])
        self.socket_dir = Path(config["socket_dir"])
        self.chat: subprocess.Popen[bytes] | None = None
        self.cleanup: dict[str, Any] = {"session": self.session}
        self.terminating = False

    def env(self, meter_url: str) -> dict[str, str]:
        env = dict(os.environ)
        env["AI_GATEWAY_URL"] = meter_url
        proxies = [k for k in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy") if env.get(k)]
        if proxies:
            # agent-browser's HTTP client honours proxy variables; the meter is local.
            for key in ("NO_PROXY", "no_proxy"):
                env[key] = ",".join(filter(None, [env.get(key), "127.0.0.1", "localhost"]))
        return env

    def run(self) -> int:
        become_subreaper()
        signal.signal(signal.SIGTERM, self._on_sigterm)
        meter = Meter(self.upstream, self.folder / METER_LOG, self.endpoint_kind)
        threading.Thread(target=meter.serve_forever, name="meter", daemon=True).start()
        env = self.env(meter.url)
        returncode = 1
        try:
            if self._install_routes(env):
                returncode = self._chat(env)
        finally:
            if not self.terminating:
                self._close(env)
                self._finish()
            meter.close()
        return returncode

    def _install_routes(self, env: dict[str, str]) -> bool:
        for pattern in self.routes:
            argv = [self.binary, "--session", self.session, "network", "route", pattern, "--abort"]
            try:
                done = subprocess.run(
                    argv, env=env, capture_output=True, text=True, timeout=_ROUTE_TIMEOUT_S
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                failure = str(exc)
            else:
                if done.returncode == 0:
                    continue
                failure = (done.stderr or done.stdout).strip()[-500:]
            self.cleanup["routes_failed"] = {"pattern": pattern, "error": failure}
            print(f"agent-benchmarks: blocking {pattern!r} failed: {failure}", file=sys.stderr)
            return False
        self.cleanup["routes"] = len(self.routes)
        return True

    def _chat(self, env: dict[str, str]) -> int:
        argv = [self.binary, "--session", self.session, "chat", "-v"]
        if self.model is not None:
            argv += ["--model", self.model]
        # Own process group: the engine's SIGTERM reaches only us, and we end the chat.
        self.chat = subprocess.Popen(
            [*argv, self.message],
            env=env,
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert self.chat.stderr is not None
        started = time.monotonic()
        with open(self.folder / STDERR_LOG, "a", encoding="utf-8") as log:
            for raw in self.chat.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                entry = {"t": round(time.monotonic() - started, 3), "line": line}
                log.write(json.dumps(entry, ensure_ascii=False) + "\n")
                log.flush()
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
        return self.chat.wait()

    def _close(self, env: dict[str, str]) -> None:
        """``close`` the session, then wait for everything it ran to exit and reap it."""
        argv = [self.binary, "--session", self.session, "close"]
        try:
            done = subprocess.run(
                argv, env=env, capture_output=True, text=True, timeout=_CLOSE_TIMEOUT_S
            )
            self.cleanup["closed"] = done.returncode == 0
            self.cleanup["close_output"] = (done.stdout + done.stderr).strip()[-500:]
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.cleanup["closed"] = False
            self.cleanup["close_output"] = str(exc)
        self.cleanup["left_after_close"] = wait_descendants_gone(_EXIT_GRACE_S)

    def _finish(self) -> None:
        """Kill and reap whatever is still there; remove what a killed daemon left."""
        self.cleanup["killed"] = kill_descendants(_EXIT_GRACE_S)
        shutil.rmtree(self.socket_dir, ignore_errors=True)
        self.cleanup["reaped"] = True
        with contextlib.suppress(OSError):
            (self.folder / CLEANUP_LOG).write_text(json.dumps(self.cleanup, indent=2) + "\n")

    def _on_sigterm(self, signum: int, frame: object) -> None:
        """The deadline: end the chat and the daemon now, without waiting for ``close``."""
        if self.terminating:
            return
        self.terminating = True
        self.cleanup["terminated"] = True
        if self.chat is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.chat.pid, signal.SIGKILL)
        me = psutil.Process()
        for proc in me.children():
            with contextlib.suppress(psutil.Error):
                proc.terminate()  # the daemon shuts its browser down on SIGTERM
        wait_descendants_gone(_TERM_GRACE_S)
        self._finish()
        os._exit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m agent_benchmarks.backends.agent_browser_chat_attempt CONFIG")
        return 2
    config = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    return Attempt(config).run()


if __name__ == "__main__":
    sys.exit(main())
