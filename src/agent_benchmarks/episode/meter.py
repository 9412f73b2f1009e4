"""The model meter: a pass-through between each agent and its model API, one per run.

Every attempt of a metered run gets its own address on it (``/m/<token>``), given to the
agent as its model's base URL; the meter forwards each request to the attempt's real
endpoint (the provider, a gateway, or the scripted model) and reads what passes
(:mod:`.wire`): the tool calls the agent made so far, the calls and tokens each reply
brings. With that it

- enforces the run's budget (:mod:`.budget`) for every agent alike: a reply that would take
  the attempt past it is withheld, and the agent is answered, in its protocol's error
  shape, that its budget is spent (HTTP 400: no client retries it);
- sets the run's temperature on every model request;
- calls the attempt's hook before forwarding a model request, with the number of tool calls
  made so far: that is where an episode's fault fires (after the k-th call, just before the
  agent's next decision);
- logs each exchange in the attempt folder (``model-meter.jsonl``: numbers, tool names,
  status; never a header, a key or a body).

Replies are read whole before they are passed on (a streamed one arrives at once), since a
reply that goes past the budget must not reach the agent at all.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import httpx

from agent_benchmarks.common.loopback import LoopbackHandler, LoopbackServer
from agent_benchmarks.episode.budget import Budget
from agent_benchmarks.episode.wire import (
    adjust_request,
    calls_in_request,
    error_body,
    protocol_of,
    read_reply,
)
from agent_benchmarks.records.pricing import PriceTable
from agent_benchmarks.records.schema import Usage

LOG_NAME = "model-meter.jsonl"
# Headers that belong to one connection, not to the message (RFC 9110 7.6.1), and those the
# meter sets itself (the body is re-sent whole, decoded).
_HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "content-length",
        "content-encoding", "accept-encoding",
    }
)  # fmt: skip
_TIMEOUT = httpx.Timeout(connect=30.0, read=900.0, write=60.0, pool=30.0)
_MAX_BODY = 64 * 1024 * 1024
# How long a closing account waits for a request still being answered.
_SETTLE_S = 5.0

# (tool calls the agent made so far) -> None, before a model request is forwarded; it may
# take a moment (a fault that waits for the page to go stale).
RequestHook = Callable[[int], None]


@dataclass
class MeteredAttempt:
    """One attempt's account at the meter."""

    token: str
    url: str  # the base URL the agent is given
    upstream: str  # where its requests go
    log_path: Path
    budget: Budget
    before_request: RequestHook | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    idle: threading.Condition = field(init=False)
    in_flight: int = 0  # requests being answered
    requests: int = 0  # model requests
    calls: int = 0  # tool calls given to the agent so far
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0  # None once a reply came from a model with no price
    unpriced_models: set[str] = field(default_factory=set)
    unread_replies: int = 0
    exhausted: str | None = None  # which budget ended the attempt
    withheld: dict[str, Any] | None = None  # the reply that was not given to the agent
    upstream_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.idle = threading.Condition(self.lock)

    def summary(self) -> dict[str, Any]:
        """``details.meter`` of the attempt's row."""
        out: dict[str, Any] = {
            "model_requests": self.requests,
            "tool_calls": self.calls,
            "tokens": self.usage.total_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "budget_exhausted": self.exhausted,
        }
        if self.withheld is not None:
            out["withheld"] = self.withheld
        if self.unpriced_models:
            out["unpriced_models"] = sorted(self.unpriced_models)
        if self.unread_replies:
            out["unread_replies"] = self.unread_replies
        if self.upstream_errors:
            out["upstream_errors"] = self.upstream_errors[-5:]
        return out

    def log(self, entry: dict[str, Any]) -> None:
        with contextlib.suppress(OSError), open(self.log_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")


class ModelMeter:
    """The run's meter (a context manager): :meth:`attempt` opens an account for an
    attempt, :meth:`finish` closes it and says what it saw."""

    def __init__(self, budget: Budget, prices: PriceTable | None, host: str = "127.0.0.1"):
        self.budget = budget
        self.prices = prices
        self.host = host
        self._attempts: dict[str, MeteredAttempt] = {}
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._client = httpx.Client(timeout=_TIMEOUT, follow_redirects=False)

    def __enter__(self) -> Self:
        server = _Server((self.host, 0), _Handler)
        server.meter = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True,
            name=f"model-meter:{server.server_address[1]}",
        )  # fmt: skip
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._client.close()

    @property
    def port(self) -> int:
        assert self._server is not None, "the meter is not running"
        return int(self._server.server_address[1])

    def attempt(
        self, upstream: str, workdir: Path, before_request: RequestHook | None = None
    ) -> MeteredAttempt:
        token = secrets.token_hex(8)
        metered = MeteredAttempt(
            token=token,
            url=f"http://{self.host}:{self.port}/m/{token}",
            upstream=upstream.rstrip("/"),
            log_path=workdir / LOG_NAME,
            budget=self.budget,
            before_request=before_request,
        )
        with self._lock:
            self._attempts[token] = metered
        return metered

    def finish(self, metered: MeteredAttempt) -> dict[str, Any]:
        """Close the attempt's account (its agent has ended) and say what it saw, once a
        request still being answered (the agent died waiting for it) has been counted."""
        with self._lock:
            self._attempts.pop(metered.token, None)
        with metered.idle:
            metered.idle.wait_for(lambda: metered.in_flight == 0, timeout=_SETTLE_S)
            summary = metered.summary()
        if self.budget.max_cost_usd is not None and metered.unpriced_models:
            # Dollars of a model the price table does not know cannot be counted: said, since
            # the budget the manifest records was not held for this attempt (--prices adds it).
            models = ", ".join(sorted(metered.unpriced_models))
            summary["cost_budget"] = f"not enforced: no price for {models} (--prices)"
        return summary

    def lookup(self, token: str) -> MeteredAttempt | None:
        with self._lock:
            return self._attempts.get(token)

    # --- one exchange ----------------------------------------------------------------------

    def forward(
        self, method: str, url: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        with self._client.stream(method, url, headers=headers, content=body or None) as reply:
            content = reply.read()
            kept = [(k, v) for k, v in reply.headers.multi_items() if k.lower() not in _HOP_BY_HOP]
            return reply.status_code, kept, content

    def cost(self, usage: Usage, model: str | None) -> float | None:
        return self.prices.cost(usage, model) if self.prices is not None else None


class _Server(LoopbackServer):
    meter: ModelMeter


class _Handler(LoopbackHandler):
    server: _Server

    def _dispatch(self) -> None:
        meter = self.server.meter
        parts = self.path.split("/", 3)  # "", "m", token, rest
        metered = meter.lookup(parts[2]) if len(parts) >= 3 and parts[1] == "m" else None
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self.close_connection = True
            self._send(413, [], b"request body too large")
            return
        body = self.rfile.read(length) if length else b""
        if metered is None:
            self._send(404, [("Content-Type", "text/plain")], b"no such metered attempt")
            return
        rest = "/" + (parts[3] if len(parts) > 3 else "")
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        protocol = protocol_of(rest) if self.command == "POST" else None
        with metered.idle:
            metered.in_flight += 1
        try:
            if protocol is None:
                status, reply_headers, content = meter.forward(
                    self.command, metered.upstream + rest, headers, body
                )
                self._send(status, reply_headers, content)
                return
            self._model_request(meter, metered, protocol, rest, headers, body)
        except httpx.HTTPError as exc:
            with metered.lock:
                metered.upstream_errors.append(f"{type(exc).__name__}: {exc}"[:300])
            message = f"model meter: {metered.upstream} did not answer: {type(exc).__name__}"
            self._send_json(502, error_body(protocol or "openai_chat", message))
        except OSError:
            self.close_connection = True  # the agent went away mid-reply
        finally:
            with metered.idle:
                metered.in_flight -= 1
                metered.idle.notify_all()

    def _model_request(
        self,
        meter: ModelMeter,
        metered: MeteredAttempt,
        protocol: Any,
        rest: str,
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        started = time.time()
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        with metered.lock:
            metered.requests += 1
            number = metered.requests
            made = max(metered.calls, calls_in_request(protocol, payload) if payload else 0)
            exhausted = metered.exhausted
        entry: dict[str, Any] = {"n": number, "t": round(started, 3), "path": rest.split("?")[0]}
        entry["calls_before"] = made
        if exhausted is not None:
            entry["refused"] = f"budget {exhausted} already spent"
            metered.log(entry)
            self._refuse(protocol, metered)
            return
        if metered.before_request is not None:
            try:
                metered.before_request(made)
            except Exception as exc:  # a fault's failure is recorded by the fault, not here
                entry["hook_error"] = f"{type(exc).__name__}: {exc}"[:300]
        if isinstance(payload, dict) and adjust_request(
            protocol, payload, meter.budget.temperature
        ):
            body = json.dumps(payload, ensure_ascii=False).encode()
        status, reply_headers, content = meter.forward(
            "POST", metered.upstream + rest, headers, body
        )
        entry["status"] = status
        if not 200 <= status < 300:
            metered.log(entry)
            self._send(status, reply_headers, content)
            return
        content_type = next((v for k, v in reply_headers if k.lower() == "content-type"), "")
        facts = read_reply(protocol, content_type, content)
        with metered.lock:
            if not facts.readable:
                metered.unread_replies += 1
            steps = made + facts.n_calls
            if facts.usage is not None:
                metered.usage = _added(metered.usage, facts.usage)
                cost = meter.cost(facts.usage, facts.model)
                if cost is None:
                    metered.cost_usd = None
                    metered.unpriced_models.add(str(facts.model))
                elif metered.cost_usd is not None:
                    metered.cost_usd += cost
            ended = meter.budget.exhausted(steps, metered.usage.total_tokens, metered.cost_usd)
            if ended is not None:
                metered.exhausted = ended
                metered.withheld = {"model_request": number, "tool_calls_asked": facts.calls}
            else:
                metered.calls = steps
        entry |= {"calls": facts.calls, "model": facts.model}
        if facts.usage is not None:
            entry["usage"] = facts.usage.model_dump(exclude={"cost_usd", "estimated"})
        if not facts.readable:
            entry["unreadable"] = True
        if ended is not None:
            entry["withheld"] = f"budget {ended} exhausted"
            metered.log(entry)
            self._refuse(protocol, metered)
            return
        metered.log(entry)
        self._send(status, reply_headers, content)

    def _refuse(self, protocol: Any, metered: MeteredAttempt) -> None:
        budget = metered.budget.as_dict()
        shown = ", ".join(
            f"{k} {v}" for k, v in budget.items() if v is not None and k != "temperature"
        )
        message = (
            f"budget exhausted ({metered.exhausted}): this task's budget is {shown}; "
            "no further model turn is given"
        )
        self._send_json(400, error_body(protocol, message))

    def _send_json(self, status: int, obj: Any) -> None:
        self._send(status, [("Content-Type", "application/json")], json.dumps(obj).encode())

    def _send(self, status: int, headers: list[tuple[str, str]], content: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(content)
        self.wfile.flush()


def _added(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        turns=a.turns + b.turns,
    )
