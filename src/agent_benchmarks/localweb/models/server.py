"""The scripted model server: one stdlib HTTP server speaking three LLM wire protocols.

It stands in for the LLM provider only. The real agent programs (Lightpanda's agent, Claude
Code, agent-browser's ``chat``) run for real against it on 127.0.0.1, and their tool calls
hit real browsers; only the model's decisions come from a :class:`~.policy.Policy`.

Task routing
    Every task has its own URL prefix, ``/task/<task_id>``, so concurrent tasks sharing one
    server never see each other's policy, faults, request log or usage. A request without
    the prefix belongs to the task ``"default"``. :meth:`ScriptedModelServer.base_url` gives
    the base each client needs:

    ========================  ===========================================  =================
    client                    setting                                      ``protocol``
    ========================  ===========================================  =================
    Lightpanda                ``OPENAI_BASE_URL`` (openai_compatible),     ``"openai"``
                              ``--base-url`` (``--provider openai``)       (``.../v1``)
    Lightpanda                ``--provider anthropic --base-url``          ``"anthropic"``
    Claude Code               ``ANTHROPIC_BASE_URL``                       ``"anthropic"``
    agent-browser ``chat``    ``AI_GATEWAY_URL`` (it appends               ``"gateway"``
                              ``/v1/chat/completions``)
    ``openai`` SDK            ``base_url=``                                ``"openai"``
    ``anthropic`` SDK         ``base_url=``                                ``"anthropic"``
    ========================  ===========================================  =================

Endpoints (after the prefix; ``/v1`` may be omitted)
    ``GET /v1/models`` (and ``/v1/models/<id>``), ``POST /v1/chat/completions`` (JSON or SSE),
    ``POST /v1/responses`` (JSON), ``POST /v1/messages`` (JSON or SSE, any query string such
    as Claude Code's ``?beta=true``), ``POST /v1/messages/count_tokens``, and ``HEAD``/``GET``
    of anything else answered 200 (Claude Code probes ``HEAD /`` before its first request).

Shutdown
    :meth:`ScriptedModelServer.stop` wakes every handler waiting in a ``slow`` or ``hang``
    fault and shuts down every open client connection, so it returns promptly even while
    clients are connected and waiting.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from agent_benchmarks.common.loopback import LoopbackHandler, LoopbackServer
from agent_benchmarks.localweb.serving import BackgroundHTTPServer
from agent_benchmarks.records.schema import Usage

from .conversation import Action, Conversation, FinalAnswer, ToolUse, WireProtocol
from .faults import Fault, FaultKind, FaultPlan, FaultRule
from .policy import Policy, PolicyError
from .tokens import LedgerEntry, TokenCount, TokenRules, UsageLedger, args_json
from .wire import (
    Reply,
    WireError,
    anthropic_events,
    anthropic_json,
    anthropic_prompt_chars,
    error_body,
    models_body,
    named_sse,
    openai_chat_events,
    openai_chat_json,
    openai_responses_events,
    openai_responses_json,
    openai_sse,
    parse_request,
    stable_id,
)

DEFAULT_TASK = "default"
DEFAULT_MODEL = "scripted-model"
# Any key works; clients insist on having one.
API_KEY = "sk-scripted-local"
ClientProtocol = Literal["openai", "anthropic", "gateway"]

_TASK_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_PREFIX_RE = re.compile(r"^/task/([^/]+)(/.*)?$")
_MAX_BODY = 64 * 1024 * 1024
_REDACTED_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "cookie"})
_ID_PREFIX = {"openai_chat": "chatcmpl-", "openai_responses": "resp_", "anthropic": "msg_"}
_CALL_PREFIX = {"openai_chat": "call_", "openai_responses": "call_", "anthropic": "toolu_"}


class RequestRecord(BaseModel):
    """One HTTP request as the server saw and answered it (a line of the request log).

    A record enters the log just before its reply is written, so a client that has received
    a reply always finds its request in the log; ``duration_s`` (to the end of the reply)
    and ``error`` (e.g. the client dropping a stream) are filled in afterwards.
    """

    model_config = ConfigDict(extra="forbid")

    task_id: str
    request_number: int | None  # model requests only: 1-based, retries counted
    time: float  # epoch seconds at arrival
    duration_s: float
    method: str
    path: str
    route: str  # chat_completions | responses | messages | count_tokens | models | probe | ...
    protocol: WireProtocol | None = None
    model: str | None = None
    stream: bool = False
    status: int | None = None  # None when nothing was sent (hang, disconnect)
    fault: FaultKind | None = None
    summary: dict[str, Any] = Field(default_factory=dict)
    action: dict[str, Any] | None = None
    usage: TokenCount | None = None
    error: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)  # credentials redacted
    conversation: Conversation | None = Field(default=None, repr=False)


class _TaskState:
    def __init__(self) -> None:
        self.lock = threading.Lock()  # serialises the policy; guards the fields below
        self.requests = 0
        self.policy: Policy | None = None
        self.log: list[RequestRecord] = []


class ScriptedModelServer(BackgroundHTTPServer):
    """A test double for LLM providers, answering from per-task policies.

    ``policy_for_task(task_id)`` is called once per task, on its first model request (or
    use :meth:`set_policy`). ``models`` are listed by ``/v1/models`` (Lightpanda's
    ``openai_compatible`` provider exits unless ``--model`` is listed); with
    ``strict_models`` a request for another model gets a 404. ``faults`` and ``tokens``
    are described in :mod:`.faults` and :mod:`.tokens`.
    """

    def __init__(
        self,
        policy_for_task: Callable[[str], Policy] | None = None,
        models: Sequence[str] = (DEFAULT_MODEL,),
        *,
        faults: FaultPlan | None = None,
        tokens: TokenRules | None = None,
        strict_models: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__()
        self._policy_for_task = policy_for_task
        self.models = list(models)
        self.strict_models = strict_models
        self.token_rules = tokens or TokenRules()
        self._faults = faults or FaultPlan()
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._tasks: dict[str, _TaskState] = {}
        self._ledger = UsageLedger()
        self._connections: set[socket.socket] = set()

    # --- lifecycle (start, stop, with: BackgroundHTTPServer) ---------------------------------
    _thread_name = "scripted-models"

    def _make_server(self) -> _HTTPServer:
        server = _HTTPServer((self._host, self._port), _Handler)
        server.owner = self
        return server

    def _after_close(self) -> None:
        # Cut connections still held open (a hung reply, a streaming client) so stop()
        # returns at once.
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("server not started")
        return int(self._server.server_address[1])

    @property
    def root_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    # --- configuration --------------------------------------------------------------------
    def base_url(self, task_id: str = DEFAULT_TASK, protocol: ClientProtocol = "openai") -> str:
        """The base URL a client of ``protocol`` needs for ``task_id`` (see module docs).

        ``"openai"`` ends in ``/v1`` (clients append ``/chat/completions``, ``/models``,
        ``/responses``); ``"anthropic"`` and ``"gateway"`` do not (clients append
        ``/v1/messages`` and ``/v1/chat/completions``).
        """
        check_task_id(task_id)
        base = f"{self.root_url}/task/{quote(task_id, safe='')}"
        if protocol == "openai":
            return base + "/v1"
        if protocol in ("anthropic", "gateway"):
            return base
        raise ValueError(f"unknown protocol {protocol!r}")

    def set_policy(self, task_id: str, policy: Policy) -> None:
        """Give ``task_id`` this policy (replacing any it had)."""
        check_task_id(task_id)
        state = self._task(task_id)
        with state.lock:
            state.policy = policy

    def add_faults(self, rules: FaultPlan | Iterable[FaultRule]) -> None:
        """Append fault rules at run time (they apply to later requests)."""
        with self._lock:
            self._faults = self._faults.plus(rules)

    def fault_on(self, task_id: str, faults: dict[int, Fault]) -> None:
        """``server.fault_on("t1", {1: Fault.rate_limit(1)})``: faults for request numbers."""
        self.add_faults(FaultPlan.on(faults, task_id=task_id))

    # --- observations ---------------------------------------------------------------------
    def task_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._tasks)

    def requests(self, task_id: str = DEFAULT_TASK) -> list[RequestRecord]:
        """Every request of the task, in arrival order of completion."""
        state = self._task(task_id)
        with self._lock:
            return list(state.log)

    def model_requests(self, task_id: str = DEFAULT_TASK) -> list[RequestRecord]:
        """Only the model requests (chat completions, Responses, Messages)."""
        recs = [r for r in self.requests(task_id) if r.request_number is not None]
        return sorted(recs, key=lambda r: r.request_number or 0)

    def request_count(self, task_id: str = DEFAULT_TASK) -> int:
        """Model requests received so far, including any still being answered (hung ones)."""
        state = self._task(task_id)
        with self._lock:
            return state.requests

    def usage(self, task_id: str = DEFAULT_TASK) -> Usage:
        """The ledger's totals for the task (see :mod:`.tokens` for the counting rule)."""
        return self._ledger.usage(task_id)

    def ledger(self, task_id: str = DEFAULT_TASK) -> list[LedgerEntry]:
        return self._ledger.entries(task_id)

    def policy(self, task_id: str) -> Policy | None:
        return self._task(task_id).policy

    # --- internals used by the handler ----------------------------------------------------
    def _task(self, task_id: str) -> _TaskState:
        with self._lock:
            state = self._tasks.get(task_id)
            if state is None:
                state = self._tasks[task_id] = _TaskState()
            return state

    def _next_request_number(self, task_id: str) -> int:
        state = self._task(task_id)
        with self._lock:
            state.requests += 1
            return state.requests

    def _record(self, rec: RequestRecord) -> None:
        state = self._task(rec.task_id)
        with self._lock:
            state.log.append(rec)

    def _fault_for(self, task_id: str, n: int) -> Fault | None:
        with self._lock:
            plan = self._faults
        return plan.fault_for(task_id, n)

    def _decide(self, conv: Conversation) -> Action:
        state = self._task(conv.task_id)
        with state.lock:
            if state.policy is None:
                if self._policy_for_task is None:
                    raise PolicyError(f"no policy for task {conv.task_id!r}")
                state.policy = self._policy_for_task(conv.task_id)
            return state.policy.next_action(conv)

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first; True if it is stopping."""
        return self._stopping.wait(seconds)

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _build_reply(
        self, conv: Conversation, action: Action | None, text: str | None, prompt_chars: int
    ) -> Reply:
        protocol = conv.protocol
        calls: list[ToolUse] = []
        if isinstance(action, FinalAnswer):
            text = action.text
        elif action is not None:
            text = action.text or None
            calls = [
                ToolUse(
                    id=stable_id(_CALL_PREFIX[protocol], conv.task_id, conv.request_number, i),
                    name=c.name,
                    args=c.args,
                )
                for i, c in enumerate(action.calls)
            ]
        output_chars = len(text or "") + sum(len(args_json(c.args)) for c in calls)
        tokens = self.token_rules.count(
            prompt_chars, output_chars, cache_write=protocol == "anthropic"
        )
        return Reply(
            id=stable_id(_ID_PREFIX[protocol], conv.task_id, conv.request_number),
            model=conv.model,
            text=text,
            calls=calls,
            tokens=tokens,
        )


def check_task_id(task_id: str) -> None:
    if not _TASK_ID_RE.match(task_id):
        raise ValueError(
            f"task id {task_id!r} must match {_TASK_ID_RE.pattern} (it goes into URL paths)"
        )


class _HTTPServer(LoopbackServer):
    owner: ScriptedModelServer


class _Abort(Exception):
    """Stop handling this request without sending anything more."""


class _Handler(LoopbackHandler):
    server: _HTTPServer

    # --- plumbing -------------------------------------------------------------------------
    def setup(self) -> None:
        super().setup()
        # Without this, a reply written as headers then body (or as SSE chunks) waits ~40 ms
        # per write for the client's delayed ACK (Nagle), which would dominate test timings.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        self.server.owner._track(self.connection, add=False)
        with contextlib.suppress(OSError):
            super().finish()

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > _MAX_BODY:
                    raise WireError("request body too large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            raise WireError("request body too large")
        return self.rfile.read(length) if length else b""

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        extra: dict[str, str] | None = None,
    ) -> None:
        self._commit(status)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("request-id", self._request_id)
        self.send_header("x-request-id", self._request_id)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def _send_json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj, ensure_ascii=False).encode(), extra=extra)

    def _send_error(self, status: int, message: str, extra: dict[str, str] | None = None) -> None:
        self._error = message
        self._send_json(status, error_body(self._anthropic_style, status, message), extra)

    def _send_stream(self, events: Iterator[bytes]) -> None:
        """SSE over chunked transfer encoding, which keeps the connection reusable."""
        self._commit(200)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", self._request_id)
        self.send_header("x-request-id", self._request_id)
        self.end_headers()
        for data in events:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # --- dispatch -------------------------------------------------------------------------
    def _dispatch(self) -> None:
        owner = self.server.owner
        started = self._started = time.time()
        self._status: int | None = None
        self._error: str | None = None
        self._fields: dict[str, Any] = {}
        self._record: RequestRecord | None = None
        self._route = "not_found"
        path = urlsplit(self.path).path
        match = _PREFIX_RE.match(path)
        if match and _TASK_ID_RE.match(match.group(1)):
            task_id, rest = match.group(1), match.group(2) or "/"
        else:
            task_id, rest = DEFAULT_TASK, path
        route_path = rest.rstrip("/")
        if route_path == "/v1" or route_path.startswith("/v1/"):
            route_path = route_path[3:]
        self._task_id = task_id
        self._request_id = stable_id("req_", task_id, started, id(self))
        self._anthropic_style = route_path.startswith("/messages") or (
            "anthropic-version" in self.headers
        )
        try:
            body = self._read_body() if self.command in ("POST", "PUT") else b""
            if self.command == "POST" and route_path == "/chat/completions":
                self._route = "chat_completions"
                self._model_request("openai_chat", body)
            elif self.command == "POST" and route_path == "/responses":
                self._route = "responses"
                self._model_request("openai_responses", body)
            elif self.command == "POST" and route_path == "/messages":
                self._route = "messages"
                self._model_request("anthropic", body)
            elif self.command == "POST" and route_path == "/messages/count_tokens":
                self._route = "count_tokens"
                self._count_tokens(body)
            elif self.command == "GET" and route_path == "/models":
                self._route = "models"
                self._send_json(200, models_body(owner.models))
            elif self.command == "GET" and route_path.startswith("/models/"):
                self._route = "models"
                model_id = route_path[len("/models/") :]
                if model_id in owner.models:
                    self._send_json(200, models_body([model_id])["data"][0])
                else:
                    self._send_error(404, f"model {model_id!r} not found")
            elif self.command in ("HEAD", "GET"):
                self._route = "probe"
                self._send(200, b"{}")
            else:
                self._send_error(404, f"no route for {self.command} {path}")
        except WireError as e:
            self.close_connection = True  # the body may not have been read to its end
            with contextlib.suppress(OSError):
                self._send_error(400, str(e))
        except _Abort:
            self.close_connection = True
        except OSError as e:  # the client went away mid-reply
            self._error = self._error or f"connection lost: {e}"
            self.close_connection = True
        except Exception as e:  # a bug here must reach the client as an answer, not a hang
            self.close_connection = True
            if self._status is None:
                with contextlib.suppress(OSError):
                    self._send_error(500, f"scripted server error: {type(e).__name__}: {e}")
            else:
                self._error = f"scripted server error: {type(e).__name__}: {e}"
        finally:
            if self._record is None:
                self._commit(None)  # nothing was sent: hang, disconnect, abort
            rec = self._record
            assert rec is not None
            with owner._lock:
                rec.duration_s = time.time() - started
                rec.error = self._error

    def _commit(self, status: int | None) -> None:
        """Enter this request in the log, once, before its reply goes out."""
        self._status = status
        if self._record is not None:
            return
        headers = {
            k.lower(): ("<redacted>" if k.lower() in _REDACTED_HEADERS else v)
            for k, v in self.headers.items()
        }
        fields = dict(self._fields)
        self._record = RequestRecord(
            task_id=self._task_id,
            time=self._started,
            duration_s=time.time() - self._started,
            method=self.command,
            path=self.path,
            route=self._route,
            status=status,
            error=self._error,
            headers=headers,
            request_number=fields.pop("request_number", None),
            **fields,
        )
        self.server.owner._record(self._record)

    def _count_tokens(self, body: bytes) -> None:
        try:
            payload = json.loads(body or b"{}")
        except ValueError as e:
            raise WireError(f"request body is not JSON: {e}") from e
        if not isinstance(payload, dict):
            raise WireError("request body must be a JSON object")
        tokens = self.server.owner.token_rules.tokens(anthropic_prompt_chars(payload))
        self._send_json(200, {"input_tokens": tokens})

    def _model_request(self, protocol: WireProtocol, body: bytes) -> None:
        owner = self.server.owner
        task_id = self._task_id
        try:
            payload = json.loads(body)
        except ValueError as e:
            raise WireError(f"request body is not JSON: {e}") from e
        n = owner._next_request_number(task_id)
        self._fields["request_number"] = n
        self._fields["protocol"] = protocol
        parsed = parse_request(protocol, payload, task_id=task_id, request_number=n)
        conv = parsed.conversation
        self._fields.update(
            model=conv.model, stream=conv.stream, summary=conv.summary(), conversation=conv
        )
        if owner.strict_models and conv.model not in owner.models:
            self._send_error(404, f"model {conv.model!r} not found")
            return
        fault = owner._fault_for(task_id, n)
        text: str | None = None
        action: Action | None = None
        if fault is not None:
            self._fields["fault"] = fault.kind
            if self._apply_fault(fault, conv):
                return
            text = "" if fault.kind == "empty" else None
        if fault is None or fault.kind == "slow":
            try:
                action = owner._decide(conv)
            except Exception as e:  # a policy bug must surface, not kill the handler
                self._send_error(400, f"scripted policy error: {type(e).__name__}: {e}")
                return
            self._fields["action"] = action.model_dump()
        reply = owner._build_reply(conv, action, text, parsed.prompt_chars)
        self._fields["usage"] = reply.tokens
        owner._ledger.add(
            task_id,
            LedgerEntry(request_number=n, protocol=protocol, model=conv.model, tokens=reply.tokens),
        )
        self._send_reply(protocol, conv, reply, parsed.include_usage)

    def _send_reply(
        self, protocol: WireProtocol, conv: Conversation, reply: Reply, include_usage: bool
    ) -> None:
        if protocol == "anthropic":
            if conv.stream:
                self._send_stream(named_sse(anthropic_events(reply)))
            else:
                self._send_json(200, anthropic_json(reply))
        elif protocol == "openai_chat":
            if conv.stream:
                self._send_stream(openai_sse(openai_chat_events(reply, include_usage)))
            else:
                self._send_json(200, openai_chat_json(reply))
        elif conv.stream:
            self._send_stream(named_sse(openai_responses_events(reply, conv.tools)))
        else:
            self._send_json(200, openai_responses_json(reply, conv.tools))

    def _apply_fault(self, fault: Fault, conv: Conversation) -> bool:
        """Carry out ``fault``; True if the request is fully handled (nothing more to send)."""
        owner = self.server.owner
        if fault.kind in ("rate_limit", "server_error"):
            extra = {}
            if fault.kind == "rate_limit":
                secs = fault.retry_after_s
                extra["retry-after"] = str(int(secs)) if secs == int(secs) else str(secs)
            self._send_error(fault.http_status, fault.message, extra)
            return True
        if fault.kind == "slow":
            if owner._sleep(fault.delay_s):
                raise _Abort
            return False
        if fault.kind == "hang":
            self._error = "hung until the client disconnected or the server stopped"
            while not owner._sleep(0.05):
                if _peer_closed(self.connection):
                    break
            raise _Abort
        if fault.kind == "disconnect":
            self._error = "disconnected without a reply"
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            raise _Abort
        if fault.kind == "malformed":
            self._error = "sent a malformed body"
            if conv.stream:
                broken = (
                    b'event: message_start\ndata: {"type": "message_start", "message": {\n\n'
                    if conv.protocol == "anthropic"
                    else b'data: {"id": "chatcmpl-broken", "choices": [\n\n'
                )
                self._send_stream(iter([broken]))
            else:
                self._send(200, b'{"id": "broken", "choices": [{"message": ')
            return True
        return False  # empty / no_content: answered normally without asking the policy


def _peer_closed(sock: socket.socket) -> bool:
    """True once the client has closed its end (a readable socket with nothing to read)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True
