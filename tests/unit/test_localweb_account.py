"""The site's account area over HTTP: the sign-in form's CSRF token, the session cookie, the
wrong-password message, the pages only a signed-in visitor sees, sign-out; and the task
latency knob that slows one task's pages alone."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest

from agent_benchmarks.localweb.site import Faults, LocalSite, data
from agent_benchmarks.localweb.site.account import ACCOUNT_COOKIE, csrf_token


@pytest.fixture
def site() -> Iterator[LocalSite]:
    with LocalSite() as running:
        yield running


def _form(client: httpx.Client, base: str) -> str:
    page = client.get(f"{base}/account/login")
    assert page.status_code == 200
    found = re.search(r'name="csrf" value="([0-9a-f]{32})"', page.text)
    assert found is not None
    return found.group(1)


def _sign_in(client: httpx.Client, base: str, password: str, token: str) -> httpx.Response:
    fields = {"csrf": token, "username": data.ACCOUNT_USERNAME, "password": password}
    return client.post(f"{base}/account/login", data=fields)


def test_signing_in_gives_a_session_cookie_for_the_tasks_pages_only(site: LocalSite) -> None:
    base = site.begin_task("a1").rstrip("/")
    with httpx.Client() as client:
        reply = _sign_in(client, base, data.ACCOUNT_PASSWORD, _form(client, base))
        assert reply.status_code == 303
        assert reply.headers["location"] == "/t/a1/account"
        cookie = reply.headers["set-cookie"]
        assert cookie.startswith(f"{ACCOUNT_COOKIE}=") and "Path=/t/a1/;" in cookie
        assert "HttpOnly" in cookie
        profile = client.get(f"{base}/account/profile")
        assert profile.status_code == 200
        assert f"<td id='points'>{data.ACCOUNT_POINTS}</td>" in profile.text
        assert 'id="logout"' in client.get(f"{base}/account").text
        # Another task's pages do not see the sign-in.
        other = site.begin_task("a2").rstrip("/")
        assert client.get(f"{other}/account/profile").status_code == 303


def test_a_wrong_password_is_refused_with_a_message_and_nothing_signed_in(site) -> None:
    base = site.begin_task("a1").rstrip("/")
    with httpx.Client() as client:
        reply = _sign_in(client, base, "not-it", _form(client, base))
        assert reply.status_code == 401
        assert f'<p id="login-error" class="errors" role="alert">{data.WRONG_LOGIN}</p>' in (
            reply.text
        )
        assert ACCOUNT_COOKIE not in reply.headers.get("set-cookie", "")
        assert client.get(f"{base}/account/profile").status_code == 303


def test_a_missing_or_foreign_csrf_token_is_refused(site: LocalSite) -> None:
    base = site.begin_task("a1").rstrip("/")
    with httpx.Client() as client:
        _form(client, base)  # a visitor's session exists
        assert _sign_in(client, base, data.ACCOUNT_PASSWORD, "").status_code == 403
        # Another visitor's token (another lw_sid) is not this visitor's.
        with httpx.Client() as stranger:
            theirs = _form(stranger, base)
        assert _sign_in(client, base, data.ACCOUNT_PASSWORD, theirs).status_code == 403
        assert client.get(f"{base}/account/profile").status_code == 303


def test_a_token_is_derived_so_a_replayed_episode_re_enacts(site: LocalSite) -> None:
    assert csrf_token("a1", "0123456789abcdef") == csrf_token("a1", "0123456789abcdef")
    assert csrf_token("a1", "0123456789abcdef") != csrf_token("a2", "0123456789abcdef")


def test_members_pages_send_a_visitor_to_the_form_and_back_after(site: LocalSite) -> None:
    base = site.begin_task("a1").rstrip("/")
    with httpx.Client() as client:
        reply = client.get(f"{base}/account/profile")
        assert reply.headers["location"] == "/t/a1/account/login?next=/t/a1/account/profile"
        form = client.get(f"{base}/account/login", params={"next": "/t/a1/account/profile"})
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', form.text).group(1)
        fields = {
            "csrf": token,
            "username": data.ACCOUNT_USERNAME,
            "password": data.ACCOUNT_PASSWORD,
            "next": "/t/a1/account/profile",
        }
        assert client.post(f"{base}/account/login", data=fields).headers["location"] == (
            "/t/a1/account/profile"
        )
        # A next outside the task's pages is not followed.
        fields["next"] = "https://elsewhere.example/"
        assert client.post(f"{base}/account/login", data=fields).headers["location"] == (
            "/t/a1/account"
        )


def test_signing_out_ends_the_session(site: LocalSite) -> None:
    base = site.begin_task("a1").rstrip("/")
    with httpx.Client() as client:
        _sign_in(client, base, data.ACCOUNT_PASSWORD, _form(client, base))
        token = client.cookies.get(ACCOUNT_COOKIE)
        out = client.get(f"{base}/account/logout")
        assert out.status_code == 303 and "Max-Age=0" in out.headers["set-cookie"]
        # The old cookie, sent again, is no session any more.
        client.cookies.set(ACCOUNT_COOKIE, token, path="/t/a1/")
        assert client.get(f"{base}/account/profile").status_code == 303


def test_the_task_latency_knob_slows_one_tasks_pages_but_not_its_static_files() -> None:
    faults = Faults(task_latency_ms=(("slow.", 300),))
    assert Faults.from_dict(faults.as_dict()) == faults
    assert faults.as_dict()["task_latency_ms"] == {"slow.": 300}
    with LocalSite(faults=faults) as site, httpx.Client() as client:

        def seconds(url: str) -> float:
            began = time.monotonic()
            assert client.get(url).status_code == 200
            return time.monotonic() - began

        assert seconds(site.task_url("slow.a1", "/catalogue")) >= 0.3
        assert seconds(site.task_url("slow.a1", "/static/site.css")) < 0.3
        assert seconds(site.task_url("fast.a1", "/catalogue")) < 0.3
