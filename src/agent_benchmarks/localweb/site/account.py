"""The site's account area, ``/account/`` under a task's prefix: a sign-in form with a CSRF
token, a session cookie, a wrong-password message, and pages only a signed-in visitor sees.

    GET  /account/login    the form: #username, #password, #login-button, and hidden
                           ``csrf`` (bound to the visitor's lw_sid) and ``next`` fields
    POST /account/login    right token and credentials: a new account session (cookie
                           lw_account, HttpOnly, Path the task's prefix), 303 to ``next`` or
                           /account; wrong credentials: 401, the form again with
                           #login-error; a missing or stale token: 403, nothing signed in
    GET  /account          signed in: #signed-in-as, #profile-link, #logout; else 303 to
                           the form with ``next`` set
    GET  /account/profile  signed in: the #profile table (#points, #member-since); else 303
    GET  /account/logout   ends the session; 303 to the form

The one account's facts are in :mod:`.data` (``ACCOUNT_*``). Sessions live in the task's
state, like its carts, so episodes never share a sign-in. :func:`signed_in` is the one
place that decides whether a request is signed in: a session that expires, or is revoked,
is a check added there against :attr:`AccountSession.issued_at`.

Both tokens are derived from the task, the visitor's lw_sid (and the account) with a fixed
key, not drawn at random: a replayed episode (``--web replay``) is re-enacted on a new
site instance from the requests the browser sent, recorded tokens included, and those must
still be the right ones there. The key is no secret (this is a fictional site); a token
still proves that the form was loaded, or the sign-in made, in that visitor's session.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from dataclasses import dataclass, field
from html import escape
from typing import Protocol
from urllib.parse import quote

from . import data
from .pages import Page

ACCOUNT_COOKIE = "lw_account"
_TOKEN_KEY = b"localweb-account-area"


@dataclass(frozen=True)
class AccountSession:
    username: str
    issued_at: float  # epoch seconds of the sign-in


@dataclass
class AccountState:
    """A task's account sessions, by the value of their cookie."""

    sessions: dict[str, AccountSession] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def find(self, token: str) -> AccountSession | None:
        with self.lock:
            return self.sessions.get(token)

    def begin(self, token: str, session: AccountSession) -> None:
        with self.lock:
            self.sessions[token] = session

    def end(self, token: str) -> None:
        with self.lock:
            self.sessions.pop(token, None)


@dataclass
class Reply:
    status: int
    html: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)


class AccountRequest(Protocol):
    """What the account area needs of a request (the server's per-request context)."""

    method: str
    task_id: str
    root: str  # the task's prefix, /t/<task>
    session: str  # the visitor's lw_sid

    def page(self) -> Page: ...

    def param(self, name: str) -> str | None: ...

    def cookie(self, name: str) -> str | None: ...

    def form(self) -> dict[str, str]: ...

    def accounts(self) -> AccountState: ...


def _token(*parts: str) -> str:
    return hmac.new(_TOKEN_KEY, ":".join(parts).encode(), hashlib.sha256).hexdigest()[:32]


def csrf_token(task_id: str, visitor: str) -> str:
    """The sign-in form's token for one visitor (lw_sid) of one task."""
    return _token("csrf", task_id, visitor)


def signed_in(request: AccountRequest) -> AccountSession | None:
    """The account session the request carries, if it is a live one."""
    token = request.cookie(ACCOUNT_COOKIE)
    return request.accounts().find(token) if token else None


def route(request: AccountRequest, path: str) -> Reply:
    """The reply to a request for ``path`` (``/account`` or below it)."""
    get = request.method in ("GET", "HEAD")
    if path == "/account/login":
        if get:
            return _login_form(request, 200)
        if request.method == "POST":
            return _sign_in(request)
    elif get and path in ("/account", "/account/"):
        return _members_only(request, "/account", _account_page)
    elif get and path == "/account/profile":
        return _members_only(request, path, _profile_page)
    elif get and path == "/account/logout":
        token = request.cookie(ACCOUNT_COOKIE)
        if token:
            request.accounts().end(token)
        expired = f"{ACCOUNT_COOKIE}=; Max-Age=0; Path={request.root}/; HttpOnly; SameSite=Lax"
        login = f"{request.root}/account/login"
        return Reply(303, headers=[("Location", login), ("Set-Cookie", expired)])
    if path == "/account/login":
        return Reply(405, "<p>Method not allowed.</p>", [("Allow", "GET, POST")])
    return Reply(404, request.page().not_found("No such account page."))


def _next_target(request: AccountRequest, given: str | None) -> str:
    """Where a sign-in goes on to: ``given`` when it is a page of this task, else /account."""
    if given and given.startswith(request.root + "/") and "//" not in given and "\\" not in given:
        return given
    return f"{request.root}/account"


def _login_form(request: AccountRequest, status: int, error: str | None = None) -> Reply:
    token = csrf_token(request.task_id, request.session)
    target = escape(_next_target(request, request.param("next")), quote=True)
    message = ""
    if error:
        message = f'<p id="login-error" class="errors" role="alert">{escape(error)}</p>\n'
    body = (
        "<h1>Sign in</h1>\n"
        f"{message}"
        f'<form id="login-form" method="post" action="{request.root}/account/login">\n'
        f'<input type="hidden" name="csrf" value="{token}">\n'
        f'<input type="hidden" name="next" value="{target}">\n'
        '<p><label for="username">Username</label> '
        '<input id="username" name="username" type="text" autocomplete="username"></p>\n'
        '<p><label for="password">Password</label> '
        '<input id="password" name="password" type="password" '
        'autocomplete="current-password"></p>\n'
        '<p><button type="submit" id="login-button">Sign in</button></p>\n'
        "</form>"
    )
    return Reply(status, request.page().layout("Sign in", body))


def _sign_in(request: AccountRequest) -> Reply:
    form = request.form()
    expected = csrf_token(request.task_id, request.session)
    if not hmac.compare_digest(form.get("csrf", ""), expected):
        body = (
            '<h1>Sign-in form expired</h1>\n<p id="login-error" class="errors" role="alert">'
            f'Load the <a href="{request.root}/account/login">sign-in form</a> again.</p>'
        )
        return Reply(403, request.page().layout("Sign-in form expired", body))
    username = form.get("username", "").strip()
    if username != data.ACCOUNT_USERNAME or form.get("password", "") != data.ACCOUNT_PASSWORD:
        return _login_form(request, 401, data.WRONG_LOGIN)
    token = _token("session", request.task_id, request.session, username)
    request.accounts().begin(token, AccountSession(username, time.time()))
    cookie = f"{ACCOUNT_COOKIE}={token}; Path={request.root}/; HttpOnly; SameSite=Lax"
    target = quote(_next_target(request, form.get("next")), safe="/?=&:%-._~")
    return Reply(303, headers=[("Location", target), ("Set-Cookie", cookie)])


class _Render(Protocol):
    def __call__(self, page: Page, root: str, session: AccountSession) -> str: ...


def _members_only(request: AccountRequest, path: str, render: _Render) -> Reply:
    """``render``'s page for a signed-in visitor; the sign-in form, coming back here after,
    for anyone else."""
    session = signed_in(request)
    if session is None:
        back = quote(f"{request.root}{path}", safe="/")
        return Reply(303, headers=[("Location", f"{request.root}/account/login?next={back}")])
    return Reply(200, render(request.page(), request.root, session))


def _account_page(page: Page, root: str, session: AccountSession) -> str:
    body = (
        "<h1>Your account</h1>\n"
        f'<p id="signed-in-as">Signed in as {escape(data.ACCOUNT_NAME)} '
        f"({escape(session.username)}).</p>\n"
        f'<p><a id="profile-link" href="{root}/account/profile">Profile</a> | '
        f'<a id="logout" href="{root}/account/logout">Sign out</a></p>'
    )
    return page.layout("Your account", body)


def _profile_page(page: Page, root: str, session: AccountSession) -> str:
    body = (
        "<h1>Profile</h1>\n"
        '<table id="profile">\n'
        f"<tr><th>Name</th><td id='member-name'>{escape(data.ACCOUNT_NAME)}</td></tr>\n"
        f"<tr><th>Username</th><td id='username'>{escape(session.username)}</td></tr>\n"
        f"<tr><th>Member since</th><td id='member-since'>{data.ACCOUNT_MEMBER_SINCE}</td></tr>\n"
        f"<tr><th>Points</th><td id='points'>{data.ACCOUNT_POINTS}</td></tr>\n"
        "</table>\n"
        f'<p><a id="logout" href="{root}/account/logout">Sign out</a></p>'
    )
    return page.layout("Profile", body)
