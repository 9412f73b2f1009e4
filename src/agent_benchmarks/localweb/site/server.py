"""The localweb HTTP server: one stdlib ``ThreadingHTTPServer`` per run, on 127.0.0.1.

Every task gets its own URL prefix, ``/t/<task_id>/``: all links the site renders carry the
prefix, cookies are issued with ``Path=/t/<task_id>/``, and the request log, carts and form
submissions are keyed by the task id. Several tasks can therefore share one server (and even
one browser) without seeing each other's state. Requests outside any prefix are redirected
to the ``default`` task.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import re
import secrets
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from agent_benchmarks.localweb.serving import BackgroundHTTPServer

from . import account, data, member
from .interrupt import (
    FAULT_PREFIX,
    WALL_ACCEPT,
    WALL_COOKIE,
    EpisodeInterrupts,
    Interruption,
    consent_wall,
)
from .pages import Page, cart_total_cents, money, static_file

DEFAULT_TASK = "default"
SESSION_COOKIE = "lw_sid"
CONSENT_COOKIE = "lw_consent"
_TASK_RE = re.compile(r"^/t/([A-Za-z0-9][A-Za-z0-9_.-]{0,63})(/.*)?$")
_SID_RE = re.compile(r"^[0-9a-f]{16}$")
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MAX_BODY = 64 * 1024


@dataclass(frozen=True)
class Faults:
    """Fault knobs for one site instance. All default to off.

    ``error_rate`` and ``hang_rate`` draw from a RNG seeded with ``(seed, task_id)``, so a task
    that makes the same requests in the same order sees the same faults. ``hang_paths`` are
    site paths without the task prefix and without the query (e.g. ``"/api/deal"``); a hung
    response is delayed by ``hang_seconds`` and then served normally (or cut short by stop()).
    ``task_latency_ms`` slows some tasks alone: (task id prefix, ms) pairs, each adding its
    latency to every request of a task whose id starts with the prefix, but its static files
    (the engine benchmark makes one configuration slower on purpose this way).
    """

    latency_ms: int = 0
    error_rate: float = 0.0
    error_status: int = 503
    seed: int = 0
    hang_paths: frozenset[str] = frozenset()
    hang_rate: float = 0.0
    hang_seconds: float = 0.0
    late_modal_ms: int | None = None
    task_latency_ms: tuple[tuple[str, int], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hang_paths"] = sorted(self.hang_paths)
        d["task_latency_ms"] = dict(self.task_latency_ms)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Faults:
        d = dict(d)
        if "hang_paths" in d:
            d["hang_paths"] = frozenset(d["hang_paths"])
        if "task_latency_ms" in d:
            d["task_latency_ms"] = tuple(d["task_latency_ms"].items())
        return cls(**d)

    def latency_of(self, task_id: str, site_path: str) -> int:
        """The latency (ms) added to a request of ``task_id`` for ``site_path``."""
        extra = 0
        if not site_path.startswith("/static/"):
            extra = sum(ms for prefix, ms in self.task_latency_ms if task_id.startswith(prefix))
        return self.latency_ms + extra


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it. ``path`` is the site path (query included) without
    the ``/t/<task_id>`` prefix; ``raw_path`` is what the client sent."""

    task_id: str
    method: str
    path: str
    raw_path: str
    status: int
    time: float  # epoch seconds when the request arrived
    duration_ms: float
    session: str | None  # the lw_sid the request carried, or the one the response set
    fault: str | None = None  # "error", "hang" or None
    bytes: int = 0  # the response's body as sent (none for HEAD)
    content_type: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def is_page(self) -> bool:
        """A document a browser loads as a page: HTML, answered with a 2xx."""
        html = (self.content_type or "").startswith("text/html")
        return html and self.method == "GET" and 200 <= self.status < 300


@dataclass(frozen=True)
class FormSubmission:
    task_id: str
    session: str | None
    time: float
    fields: dict[str, Any]  # name, email, topic, quantity (int), newsletter (bool)
    confirmation: str


@dataclass
class _TaskState:
    carts: dict[str, dict[str, int]] = field(default_factory=dict)  # session -> sku -> qty
    submissions: list[FormSubmission] = field(default_factory=list)
    rng: random.Random | None = None
    accounts: account.AccountState = field(default_factory=account.AccountState)
    # An episode's fault (--fault): the DOM's generation and an armed interruption.
    interrupts: EpisodeInterrupts = field(default_factory=EpisodeInterrupts)


@dataclass
class _Response:
    status: int
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)


class LocalSite(BackgroundHTTPServer):
    """The localweb site on ``host`` at an ephemeral port (``port=0``) for one run.

    >>> with LocalSite() as site:
    ...     url = site.begin_task("t1")  # http://127.0.0.1:PORT/t/t1/
    ...     ...  # drive a browser at url
    ...     site.requests_for("t1"), site.cart("t1"), site.form_submissions("t1")
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: Faults | None = None,
        tls: ssl.SSLContext | None = None,
        advertised: str | None = None,
        fault_script: bool = False,
        account_password: str = data.ACCOUNT_PASSWORD,
    ):
        super().__init__()
        # The member account's password on this instance (localweb runs give each run its
        # own, a secret: see localweb/session.py).
        self.account_password = account_password
        # Pages carry the episode's DOM generation and poll for a stale-dom fault: in every
        # run with --fault (its clean pair included, so both serve the same pages).
        self.fault_script = fault_script
        self._watchers: dict[str, Callable[[str], None]] = {}
        self.host = host
        self.port = port
        self.faults = faults or Faults()
        self.tls = tls  # serve HTTPS with this context (None: plain HTTP)
        # The base URL its pages are addressed by when that is not where it listens: a
        # replayed run's URLs are the recorded ones, and this instance only re-enacts what
        # the agent sent (:meth:`reenact`).
        self.advertised = advertised
        self._lock = threading.Lock()
        self._log: list[RequestRecord] = []
        self._tasks: dict[str, _TaskState] = {}

    # --- lifecycle (start, stop, with: BackgroundHTTPServer) ---------------------------------
    _thread_name = "localweb"
    _poll_interval_s = 0.1

    def _make_server(self) -> _Server:
        server = _Server((self.host, self.port), _Handler)
        server.site = self
        self.port = server.server_address[1]
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        return server

    # --- URLs and tasks -------------------------------------------------------------------
    @property
    def listening_url(self) -> str:
        """Where it listens: ``http(s)://HOST:PORT``; valid once started."""
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """``http(s)://HOST:PORT`` its pages are addressed by (no trailing slash)."""
        return self.advertised or self.listening_url

    def reenact(self, method: str, url: str, headers: dict[str, str], body: bytes) -> None:
        """Send this site a request the agent sent to :attr:`base_url` (answered elsewhere,
        from a web archive), so its log, carts and forms are what that request would have
        made of them. A URL off the site is ignored."""
        if not url.startswith(self.base_url + "/"):
            return
        path = url[len(self.base_url) :]
        split = urlsplit(self.listening_url)
        connection_type = http.client.HTTPSConnection if self.tls else http.client.HTTPConnection
        kwargs: dict[str, Any] = {"timeout": 30}
        if self.tls is not None:
            kwargs["context"] = ssl._create_unverified_context()  # itself, on loopback
        connection = connection_type(split.hostname, split.port, **kwargs)
        try:
            connection.request(method, path, body=body or None, headers=headers)
            connection.getresponse().read()
        finally:
            connection.close()

    def task_url(self, task_id: str = DEFAULT_TASK, path: str = "/") -> str:
        """Absolute URL of ``path`` (a site path such as ``"/products?page=2"``) for a task."""
        _check_task_id(task_id)
        if not path.startswith("/"):
            path = "/" + path
        return f"{self.base_url}/t/{task_id}{path}"

    def begin_task(self, task_id: str) -> str:
        """Forget any earlier log and state of ``task_id``; return the task's start URL."""
        _check_task_id(task_id)
        with self._lock:
            self._tasks.pop(task_id, None)
            self._watchers.pop(task_id, None)
            self._log = [r for r in self._log if r.task_id != task_id]
        return self.task_url(task_id)

    # --- an episode's fault ---------------------------------------------------------------
    def watch(self, task_id: str, seen: Callable[[str], None]) -> None:
        """Call ``seen(site path)`` for each request of ``task_id`` the site answers (a
        fault's URL trigger)."""
        with self._lock:
            self._watchers[task_id] = seen

    def interrupt(
        self,
        task_id: str,
        kind: str,
        *,
        path: str | None = None,
        count: int = 1,
        delay_s: float = 0.0,
        wait_s: float = 5.0,
    ) -> dict[str, Any]:
        """Carry out a site fault in one episode (see :mod:`.interrupt`); what it did."""
        with self._lock:
            state = self._state(task_id)
        if kind == "stale-dom":
            return state.interrupts.stale_dom(wait_s)
        if kind == "session-expiry":
            return {"done": True, "sessions_ended": state.accounts.expire_all()}
        return state.interrupts.arm(Interruption(kind, path, count, delay_s))

    def task_ids(self) -> list[str]:
        with self._lock:
            return sorted({r.task_id for r in self._log} | set(self._tasks))

    # --- observations ---------------------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        """Every request so far, all tasks, in the order their responses were ready."""
        with self._lock:
            return list(self._log)

    def requests_for(self, task_id: str) -> list[RequestRecord]:
        with self._lock:
            return [r for r in self._log if r.task_id == task_id]

    def sessions(self, task_id: str) -> list[str]:
        """Session ids (lw_sid cookie values) that hold a cart in this task."""
        with self._lock:
            st = self._tasks.get(task_id)
            return list(st.carts) if st else []

    def cart(self, task_id: str = DEFAULT_TASK, session: str | None = None) -> dict[str, int]:
        """SKU -> quantity. With ``session=None``, the carts of all sessions of the task summed."""
        with self._lock:
            st = self._tasks.get(task_id)
            if st is None:
                return {}
            if session is not None:
                return dict(st.carts.get(session, {}))
            merged: dict[str, int] = {}
            for items in st.carts.values():
                for sku, qty in items.items():
                    merged[sku] = merged.get(sku, 0) + qty
            return merged

    def member_record(self, task_id: str = DEFAULT_TASK) -> tuple[dict[str, str], list[dict]]:
        """The member account's settings and the orders it placed in this task's episode."""
        with self._lock:
            st = self._tasks.get(task_id)
        if st is None:
            return {}, []
        with st.accounts.lock:
            return dict(st.accounts.settings), [dict(o) for o in st.accounts.orders]

    def form_submissions(self, task_id: str = DEFAULT_TASK) -> list[FormSubmission]:
        with self._lock:
            st = self._tasks.get(task_id)
            return list(st.submissions) if st else []

    def describe(self) -> dict[str, Any]:
        """What a run manifest should record about this site."""
        return {"base_url": self.base_url, "faults": self.faults.as_dict()}

    # --- internals used by the handler ----------------------------------------------------
    def _state(self, task_id: str) -> _TaskState:
        st = self._tasks.get(task_id)
        if st is None:
            accounts = account.AccountState(password=self.account_password)
            st = self._tasks[task_id] = _TaskState(accounts=accounts)
        return st

    def _draw(self, task_id: str) -> tuple[float, float]:
        with self._lock:
            st = self._state(task_id)
            if st.rng is None:
                st.rng = random.Random(f"{self.faults.seed}:{task_id}")
            return st.rng.random(), st.rng.random()

    def _record(self, rec: RequestRecord) -> None:
        with self._lock:
            self._log.append(rec)

    def _seen(self, task_id: str, path: str) -> None:
        with self._lock:
            watcher = self._watchers.get(task_id)
        if watcher is not None:
            watcher(path)

    def _interruption(
        self,
        task_id: str,
        site_path: str,
        full: str,
        method: str,
        cookies: dict[str, str],
        referer: str | None = None,
    ) -> tuple[str | None, _Response | None]:
        """An armed interruption of the episode that hits this request: its name, and the
        response it gives instead of the page (None: the page, perhaps late)."""
        with self._lock:
            interrupts = self._state(task_id).interrupts
        if interrupts.interruption is None:
            return None, None
        if interrupts.take(site_path, "failing-resource") is not None:
            msg = b"Service temporarily unavailable (injected failing resource)."
            return "failing-resource", _Response(503, msg, "text/plain; charset=utf-8")
        slow = interrupts.take(site_path, "slow-resource")
        if slow is not None:
            self._sleep(slow.delay_s)
            return "slow-resource", None
        if site_path.startswith(("/static/", "/api/")):
            return None, None  # a page's own resources and calls still load
        root = f"/t/{task_id}"
        if interrupts.take(site_path, "login-wall") is not None and not (
            site_path.startswith("/account/login") or self._signed_in(task_id, cookies)
        ):
            # A form sent from behind the wall does nothing: the visitor signs in first, and
            # comes back to the page the form was on (its Referer), or to the page asked for.
            back = root + full
            if method == "POST":
                back = _same_task_path(referer, root) or root + "/"
            location = f"{root}/account/login?next={quote(back, safe='/')}"
            return "login-wall", _Response(303, headers=[("Location", location)])
        if method != "GET":
            return None, None
        if (
            cookies.get(WALL_COOKIE) == "accepted"
            or interrupts.take(site_path, "consent-wall") is None
        ):
            return None, None
        body = consent_wall(root, root + full)
        return "consent-wall", _Response(200, Page(root, 0, None).layout("Cookies", body).encode())

    def _signed_in(self, task_id: str, cookies: dict[str, str]) -> bool:
        token = cookies.get(account.ACCOUNT_COOKIE)
        with self._lock:
            accounts = self._state(task_id).accounts
        return bool(token) and accounts.find(token) is not None

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)


def _same_task_path(url: str | None, root: str) -> str | None:
    """The path (query included) of ``url`` when it is a page of the task at ``root``."""
    if not url:
        return None
    split = urlsplit(url)
    path = split.path + (f"?{split.query}" if split.query else "")
    return path if path.startswith(root + "/") else None


def _check_task_id(task_id: str) -> None:
    if not _TASK_RE.match(f"/t/{task_id}"):
        raise ValueError(f"invalid task id {task_id!r}: use 1-64 of [A-Za-z0-9_.-]")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    site: LocalSite


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "localweb/1"
    # HTTP/1.0: one request per connection, so stop() leaves no keep-alive stragglers.
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_POST(self) -> None:
        self._handle("POST")

    # --- plumbing -------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        site = self.server.site
        started = time.time()
        t0 = time.monotonic()
        split = urlsplit(self.path)
        m = _TASK_RE.match(split.path)
        fault: str | None = None
        cookies = _parse_cookies(self.headers.get_all("Cookie") or [])
        session = cookies.get(SESSION_COOKIE)
        if session is not None and not _SID_RE.match(session):
            session = None
        if m is None:
            task_id, site_path = DEFAULT_TASK, split.path
            target = f"/t/{DEFAULT_TASK}{split.path}" + (f"?{split.query}" if split.query else "")
            resp = _Response(307, headers=[("Location", target)])
        else:
            task_id, site_path = m.group(1), m.group(2) or "/"
            new_session = None
            if session is None:
                session = new_session = secrets.token_hex(8)
            if site_path.startswith(FAULT_PREFIX) and site_path != WALL_ACCEPT:
                self._fault_control(task_id, site_path, split.query, method)
                return
            fault, resp = self._task_response(
                method, task_id, site_path, split.query, cookies, session, m.group(2) is None
            )
            if new_session is not None:
                cookie = f"{SESSION_COOKIE}={new_session}; Path=/t/{task_id}/; SameSite=Lax"
                resp.headers.append(("Set-Cookie", cookie))
        if site._stopping.is_set():
            return
        full = site_path + (f"?{split.query}" if split.query else "")
        site._record(
            RequestRecord(
                task_id=task_id,
                method=method,
                path=full,
                raw_path=self.path,
                status=resp.status,
                time=started,
                duration_ms=round((time.monotonic() - t0) * 1000, 3),
                session=session,
                fault=fault,
                bytes=0 if method == "HEAD" else len(resp.body),
                content_type=resp.content_type if resp.body else None,
            )
        )
        site._seen(task_id, full)
        # Logged before the response goes out: once a client has a response, the log has it.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._write(resp, head_only=(method == "HEAD"))

    def _task_response(
        self,
        method: str,
        task_id: str,
        site_path: str,
        query: str,
        cookies: dict[str, str],
        session: str,
        bare: bool,
    ) -> tuple[str | None, _Response]:
        """A task's page or call after the run's faults had their say: (the fault that
        shaped it, if any; the response). ``bare``: the task's root asked for without its
        slash."""
        site = self.server.site
        faults = site.faults
        fault: str | None = None
        latency_ms = faults.latency_of(task_id, site_path)
        if latency_ms:
            site._sleep(latency_ms / 1000)
        r_err, r_hang = site._draw(task_id)
        if faults.hang_seconds > 0 and (
            site_path in faults.hang_paths or r_hang < faults.hang_rate
        ):
            fault = "hang"
            site._sleep(faults.hang_seconds)
        full = site_path + (f"?{query}" if query else "")
        referer = self.headers.get("Referer")
        interrupting, interrupted = site._interruption(
            task_id, site_path, full, method, cookies, referer
        )
        fault = interrupting or fault
        if interrupted is not None:
            return fault, interrupted
        if r_err < faults.error_rate:
            msg = "Service temporarily unavailable (injected fault)."
            return "error", _Response(
                faults.error_status, msg.encode(), "text/plain; charset=utf-8"
            )
        root = f"/t/{task_id}"
        if bare:
            return fault, _Response(308, headers=[("Location", root + "/")])
        ctx = _Ctx(self, site, task_id, root, session, query, method)
        try:
            return fault, _route(ctx, site_path)
        except Exception as exc:  # a bug in a page must still be logged and answered
            return fault, _Response(500, f"Internal error: {exc!r}".encode(), "text/plain")

    def _fault_control(self, task_id: str, site_path: str, query: str, method: str) -> None:
        """The page's side of a stale-dom fault: the generation (GET), and the page saying it
        has replaced its nodes (POST ?g=N). The harness's own traffic: not logged."""
        site = self.server.site
        with site._lock:
            interrupts = site._state(task_id).interrupts
        if site_path != f"{FAULT_PREFIX}dom":
            resp = _json(404, {"error": "not found"})
        elif method == "POST":
            raw = (parse_qs(query).get("g") or ["0"])[0]
            interrupts.confirm(int(raw) if raw.isdigit() else 0)
            resp = _json(200, {"confirmed": True})
        else:
            resp = _json(200, {"generation": interrupts.generation})
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._write(resp, head_only=(method == "HEAD"))

    def _write(self, resp: _Response, head_only: bool) -> None:
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(resp.body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in resp.headers:
            self.send_header(k, v)
        self.end_headers()
        if not head_only:
            self.wfile.write(resp.body)

    def read_body(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, _MAX_BODY)) if length > 0 else b""
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype == "application/json":
            try:
                obj = json.loads(raw or b"{}")
            except ValueError:
                return {}
            if not isinstance(obj, dict):
                return {}
            return {str(k): "" if v is None else str(v) for k, v in obj.items()}
        parsed = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in parsed.items()}

    def wants_json(self) -> bool:
        ctype = (self.headers.get("Content-Type") or "").lower()
        accept = (self.headers.get("Accept") or "").lower()
        return "application/json" in ctype or (
            "application/json" in accept and "text/html" not in accept
        )


def _parse_cookies(headers: list[str]) -> dict[str, str]:
    """First value wins (browsers send the most specific path first)."""
    out: dict[str, str] = {}
    for header in headers:
        for part in header.split(";"):
            name, sep, value = part.strip().partition("=")
            if sep and name and name not in out:
                out[name] = value.strip().strip('"')
    return out


@dataclass
class _Ctx:
    handler: _Handler
    site: LocalSite
    task_id: str
    root: str
    session: str
    query: str
    method: str

    def page(self) -> Page:
        with self.site._lock:
            st = self.site._tasks.get(self.task_id)
            count = sum(st.carts.get(self.session, {}).values()) if st else 0
            generation = st.interrupts.generation if st else 0
        fault_generation = generation if self.site.fault_script else None
        return Page(self.root, count, self.site.faults.late_modal_ms, fault_generation)

    def param(self, name: str) -> str | None:
        vals = parse_qs(self.query).get(name)
        return vals[0] if vals else None

    def cookie(self, name: str) -> str | None:
        return _parse_cookies(self.handler.headers.get_all("Cookie") or []).get(name)

    def form(self) -> dict[str, str]:
        return self.handler.read_body()

    def accounts(self) -> account.AccountState:
        with self.site._lock:
            return self.site._state(self.task_id).accounts

    def cart(self) -> dict[str, int]:
        return self.site.cart(self.task_id, self.session)

    def clear_cart(self) -> None:
        with self.site._lock:
            self.site._state(self.task_id).carts.pop(self.session, None)


def _html(status: int, text: str) -> _Response:
    return _Response(status, text.encode("utf-8"))


def _json(status: int, obj: Any) -> _Response:
    return _Response(status, json.dumps(obj).encode("utf-8"), "application/json")


def _redirect(location: str) -> _Response:
    return _Response(303, headers=[("Location", location)])


_GET_PAGES = {
    "/": Page.home,
    "/catalogue": Page.catalogue,
    "/deal": Page.deal,
    "/delayed": Page.delayed,
    "/offers": Page.offers,
    "/warehouse": Page.warehouse,
    "/frame/warehouse": Page.frame_warehouse,
    "/specs": Page.specs,
    "/status": Page.status,
}


def _route(ctx: _Ctx, path: str) -> _Response:
    """The site's answer at ``path`` (the task's prefix taken off)."""
    get = ctx.method in ("GET", "HEAD")
    if get:
        resp = _get_page(ctx, path)
        if resp is None:
            resp = _get_api(ctx, path)
    else:
        resp = _post(ctx, path) if ctx.method == "POST" else None
    if resp is not None:
        return resp
    if path in member.PATHS:
        reply = member.route(ctx, path)
        return _Response(reply.status, reply.html.encode("utf-8"), headers=reply.headers)
    if path == "/account" or path.startswith("/account/"):
        reply = account.route(ctx, path)
        return _Response(reply.status, reply.html.encode("utf-8"), headers=reply.headers)
    if get and path in ("/api/consent", "/cart/add", "/cart/clear"):
        return _Response(405, b"method not allowed", "text/plain", [("Allow", "POST")])
    if path.startswith("/api/"):
        return _json(404, {"error": "not found"})
    return _html(404, ctx.page().not_found())


def _get_page(ctx: _Ctx, path: str) -> _Response | None:
    """A page (or a file of one) at ``path``; None: no page is there."""
    if path in _GET_PAGES:
        return _html(200, _GET_PAGES[path](ctx.page()))
    if path == "/lab/allocate":
        mb, hold_ms = _count(ctx.param("mb"), 4096), _count(ctx.param("hold_ms"), 60_000)
        return _html(200, ctx.page().allocate(mb, hold_ms))
    if path == "/lab/hold.js":
        ctx.site._sleep(_count(ctx.param("ms"), 60_000) / 1000)
        return _Response(200, b"/* held */\n", "text/javascript; charset=utf-8")
    if path.startswith("/static/"):
        found = static_file(path[len("/static/") :])
        if found is None:
            return _Response(404, b"not found", "text/plain")
        return _Response(200, found[0], found[1])
    if path == "/products":
        raw = ctx.param("page") or "1"
        if not raw.isdigit() or not 1 <= int(raw) <= data.PAGE_COUNT:
            return _html(404, ctx.page().not_found(f"There is no products page {raw}."))
        return _html(200, ctx.page().products(int(raw)))
    if path.startswith("/products/"):
        p = data.PRODUCTS_BY_SLUG.get(path[len("/products/") :].lower())
        if p is None:
            return _html(404, ctx.page().not_found("No such product."))
        return _html(200, ctx.page().product(p, added=ctx.param("added") == "1"))
    if path == "/docs" or path.startswith("/docs/"):
        slug = path[len("/docs") :].strip("/")
        return _html(200 if slug in data.DOCS_PAGES else 404, ctx.page().docs())
    if path == "/cart":
        return _html(200, ctx.page().cart(ctx.site.cart(ctx.task_id, ctx.session)))
    if path == "/enquiry":
        return _html(200, ctx.page().enquiry())
    if path == "/enquiry/thanks":
        code = ctx.param("c") or ""
        for sub in ctx.site.form_submissions(ctx.task_id):
            if sub.confirmation == code:
                return _html(200, ctx.page().enquiry_thanks(sub.fields, sub.confirmation))
        return _html(404, ctx.page().not_found("No enquiry with that confirmation number."))
    return None


def _get_api(ctx: _Ctx, path: str) -> _Response | None:
    """A page's JSON call at ``path``; None: no call is there."""
    if path == "/api/cart":
        return _json(200, _cart_json(ctx.site.cart(ctx.task_id, ctx.session)))
    if path == "/api/deal":
        p = data.PRODUCTS_BY_SKU[data.DEAL_SKU]
        return _json(
            200,
            {
                "sku": p.sku,
                "name": p.name,
                "regular_price": p.price,
                "deal_price": data.DEAL_PRICE,
                "code": data.DEAL_CODE,
            },
        )
    if path.startswith("/api/stock/"):
        p = data.PRODUCTS_BY_SKU.get(path[len("/api/stock/") :].upper())
        if p is None:
            return _json(404, {"error": "unknown sku"})
        return _json(200, {"sku": p.sku, "stock": p.stock})
    if path == "/api/restock":
        return _json(200, {"text": data.DELAYED_TEXT})
    if path == "/api/offer":
        if ctx.cookie(CONSENT_COOKIE) != "accepted":
            return _json(200, {"consent": False, "text": None})
        return _json(200, {"consent": True, "text": data.OFFER_TEXT, "code": data.OFFER_CODE})
    if path == data.FAILING_PATH_500:
        return _json(500, {"error": "inventory backend offline"})
    return None


def _post(ctx: _Ctx, path: str) -> _Response | None:
    """What a form or call sent to ``path`` does; None: nothing takes it here."""
    if path == WALL_ACCEPT:
        return _accept_wall(ctx)
    if path == "/api/consent":
        cookie = f"{CONSENT_COOKIE}=accepted; Path={ctx.root}/; SameSite=Lax"
        return _Response(
            200, b'{"consent": "accepted"}', "application/json", [("Set-Cookie", cookie)]
        )
    if path == "/cart/add":
        return _cart_add(ctx)
    if path == "/cart/clear":
        with ctx.site._lock:
            ctx.site._state(ctx.task_id).carts.pop(ctx.session, None)
        if ctx.handler.wants_json():
            return _json(200, _cart_json({}))
        return _redirect(f"{ctx.root}/cart")
    if path == "/enquiry":
        return _enquiry_post(ctx)
    return None


def _accept_wall(ctx: _Ctx) -> _Response:
    """The consent wall accepted: a cookie, and on to the page asked for."""
    nxt = ctx.handler.read_body().get("next") or ""
    if not nxt.startswith(ctx.root + "/") or "//" in nxt or "\\" in nxt:
        nxt = f"{ctx.root}/"
    cookie = f"{WALL_COOKIE}=accepted; Path={ctx.root}/; SameSite=Lax"
    return _Response(
        303, headers=[("Location", quote(nxt, safe="/?=&:%-._~")), ("Set-Cookie", cookie)]
    )


def _count(raw: str | None, most: int) -> int:
    """A query parameter as a count from 0 to ``most`` (anything else: 0)."""
    return min(int(raw), most) if raw is not None and raw.isdigit() else 0


def _cart_json(items: dict[str, int]) -> dict[str, Any]:
    return {
        "items": [
            {
                "sku": sku,
                "name": data.PRODUCTS_BY_SKU[sku].name,
                "qty": qty,
                "price": data.PRODUCTS_BY_SKU[sku].price,
                "line_total": money(data.PRODUCTS_BY_SKU[sku].price_cents * qty),
            }
            for sku, qty in items.items()
        ],
        "count": sum(items.values()),
        "total": money(cart_total_cents(items)),
    }


def _cart_add(ctx: _Ctx) -> _Response:
    form = ctx.handler.read_body()
    as_json = ctx.handler.wants_json()
    sku = (form.get("sku") or "").strip().upper()
    qty_raw = (form.get("qty") or "1").strip()
    p = data.PRODUCTS_BY_SKU.get(sku)
    error: tuple[int, str] | None = None
    if p is None:
        error = (400, f"Unknown SKU {sku!r}.")
    elif not qty_raw.isdigit() or not 1 <= int(qty_raw) <= 99:
        error = (400, "Quantity must be between 1 and 99.")
    elif p.stock == 0:
        error = (409, f"{p.name} is out of stock.")
    if error is not None:
        status, message = error
        if as_json:
            return _json(status, {"error": message})
        return _html(status, ctx.page().error(status, message))
    assert p is not None
    with ctx.site._lock:
        cart = ctx.site._state(ctx.task_id).carts.setdefault(ctx.session, {})
        cart[p.sku] = cart.get(p.sku, 0) + int(qty_raw)
        snapshot = dict(cart)
    if as_json:
        return _json(200, _cart_json(snapshot))
    nxt = form.get("next") or ""
    if not nxt.startswith(ctx.root + "/") or "//" in nxt or "\\" in nxt:
        nxt = f"{ctx.root}/cart"
    return _redirect(quote(nxt, safe="/?=&:%-._~"))


def validate_enquiry(form: dict[str, str]) -> tuple[dict[str, Any], list[str]]:
    """Server-side rules of the enquiry form: (clean fields, error messages)."""
    errors: list[str] = []
    name = form.get("name", "").strip()
    email = form.get("email", "").strip()
    topic = form.get("topic", "")
    qty_raw = form.get("quantity", "").strip()
    if not name or len(name) > 100:
        errors.append(data.FORM_ERRORS["name"])
    if not _EMAIL_RE.match(email):
        errors.append(data.FORM_ERRORS["email"])
    if topic not in data.ENQUIRY_TOPICS:
        errors.append(data.FORM_ERRORS["topic"])
    if not qty_raw.isdigit() or not data.QUANTITY_MIN <= int(qty_raw) <= data.QUANTITY_MAX:
        errors.append(data.FORM_ERRORS["quantity"])
    if not form.get("terms"):
        errors.append(data.FORM_ERRORS["terms"])
    fields = {
        "name": name,
        "email": email,
        "topic": topic,
        "quantity": int(qty_raw) if qty_raw.isdigit() else qty_raw,
        "newsletter": bool(form.get("newsletter")),
    }
    return fields, errors


def _enquiry_post(ctx: _Ctx) -> _Response:
    form = ctx.handler.read_body()
    fields, errors = validate_enquiry(form)
    if errors:
        if ctx.handler.wants_json():
            return _json(422, {"errors": errors})
        return _html(422, ctx.page().enquiry(form, errors))
    conf = data.confirmation_number(
        fields["name"], fields["email"], fields["topic"], fields["quantity"], fields["newsletter"]
    )
    sub = FormSubmission(ctx.task_id, ctx.session, time.time(), fields, conf)
    with ctx.site._lock:
        ctx.site._state(ctx.task_id).submissions.append(sub)
    if ctx.handler.wants_json():
        return _json(200, {"confirmation": conf})
    return _redirect(f"{ctx.root}/enquiry/thanks?c={conf}")


def serve_forever(host: str = "127.0.0.1", port: int = 0, faults: Faults | None = None) -> None:
    """Serve the site until interrupted; prints the base URL and the default task's URL."""
    site = LocalSite(host, port, faults).start()
    print(f"localweb serving at {site.base_url}", flush=True)
    print(f"default task: {site.task_url(DEFAULT_TASK)}", flush=True)
    print(f"faults: {json.dumps(site.faults.as_dict())}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        site.stop()


__all__ = [
    "CONSENT_COOKIE",
    "DEFAULT_TASK",
    "SESSION_COOKIE",
    "Faults",
    "FormSubmission",
    "LocalSite",
    "RequestRecord",
    "serve_forever",
    "validate_enquiry",
]
