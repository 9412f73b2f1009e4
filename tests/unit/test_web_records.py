"""The recorded web's bookkeeping: the --web flag, a row's details.web, the run's totals,
the headers the archive keeps, and a logged request as localweb re-enacts it."""

from __future__ import annotations

import base64
import re

import pytest
import yaml

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.localweb.session import reenacted
from agent_benchmarks.records.schema import Manifest
from agent_benchmarks.scoring.scorecard import WebTotals
from agent_benchmarks.spec.args import web_of
from agent_benchmarks.web.service import MAX_LISTED_MISSES, RULES_FILE, web_details


def test_the_web_flag_takes_a_mode_and_for_record_or_replay_one_archive(tmp_path) -> None:
    assert web_of(None) == (None, None)
    assert web_of(["live"]) == ("live", None)
    mode, archive = web_of(["replay", "rel/archive"])
    assert mode == "replay" and archive is not None and archive.endswith("/rel/archive")
    assert archive.startswith("/")  # absolute: attempts run in their own folders
    with pytest.raises(InputError, match="--web record needs one archive"):
        web_of(["record"])
    with pytest.raises(InputError, match="--web replay needs one archive"):
        web_of(["replay", "a", "b"])
    with pytest.raises(InputError, match="--web live takes no archive"):
        web_of(["live", "a"])
    with pytest.raises(InputError, match="--web mirror: the modes are live, record"):
        web_of(["mirror", "a"])


def _request(url: str, archived: bool, status: int = 200) -> dict[str, object]:
    return {"method": "GET", "url": url, "status": status, "archived": archived}


def test_a_replayed_rows_details_list_its_misses_each_once_and_at_most_fifty() -> None:
    requests = [_request("http://a/1", True), _request("http://a/x", False)] + [
        _request(f"http://a/m{i}", False, 404) for i in range(60)
    ]
    requests.append(_request("http://a/x", False))
    details = web_details("replay", requests)
    assert details["n_requests"] == 63 and details["n_misses"] == 62
    assert len(details["misses"]) == MAX_LISTED_MISSES
    assert details["misses"][:2] == ["http://a/x", "http://a/m0"]
    recorded = web_details("record", [_request("http://a/1", True, 503), requests[0]])
    assert recorded == {"mode": "record", "n_requests": 2, "n_failed": 1}


def test_the_browsers_own_requests_are_counted_apart_never_as_browsing_or_misses() -> None:
    own = _request("https://accounts.google.com/ListAccounts?gpsia=1", False, 403)
    own["browser_own"] = True
    requests = [own, _request("http://a/1", True), _request("http://a/x", False), own]
    details = web_details("replay", requests)
    assert details == {
        "mode": "replay",
        "n_requests": 2,
        "n_browser_own": 2,
        "n_misses": 1,
        "misses": ["http://a/x"],
    }
    assert web_details("record", [own])["n_requests"] == 0


def test_the_project_rules_name_chromiums_background_requests_and_no_search() -> None:
    rules = yaml.safe_load(RULES_FILE.read_text())
    own = re.compile("|".join(f"(?:{p})" for p in rules["browser_own"]))
    for url in (
        "https://accounts.google.com/ListAccounts?gpsia=1&source=ChromiumBrowser",
        "https://update.googleapis.com/service/update2/json?cup2key=x",
        "http://clients2.google.com/time/1/current?cup2key=x",
        "https://start.duckduckgo.com/",
    ):
        assert own.match(url), url
    for url in (
        "https://accounts.google.com/signin",
        "https://start.duckduckgo.com/?q=lightpanda",
        "https://duckduckgo.com/html/?q=x",
        "http://127.0.0.1:8931/t/home-links.a1/",
    ):
        assert not own.match(url), url


def _manifest(web: dict[str, object]) -> Manifest:
    return Manifest.model_validate(
        {
            "suite": "localweb",
            "split": "bundled",
            "dataset": {"kind": "bundled"},
            "backend": "lightpanda-native",
            "started_at": "2026-11-24T00:00:00Z",
            "harness_version": "0",
            "mode": "scaffold",
            "settings": {"web": web},
        }
    )


def test_the_run_totals_misses_over_every_request_and_names_the_archive() -> None:
    totals = WebTotals()
    for n_requests, n_misses in ((10, 0), (5, 2), (5, 0)):
        totals.add({"mode": "replay", "n_requests": n_requests, "n_misses": n_misses})
    archive = {"path": "/a", "sha256": "f" * 64, "n_warcs": 1, "size_bytes": 9}
    summary = totals.summary(_manifest({"mode": "replay", "archive": archive}))
    assert summary == {
        "mode": "replay",
        "n_rows": 3,
        "n_requests": 20,
        "n_misses": 2,
        "miss_rate": 0.1,
        "rows_with_misses": 1,
        "archive": archive,
    }
    # The live web has no web block; a recording has no misses.
    assert WebTotals().summary(_manifest({"mode": "live"})) is None
    assert WebTotals().summary(None) is None
    recording = WebTotals()
    recording.add({"mode": "record", "n_requests": 4})
    assert recording.summary(None) == {"mode": "record", "n_rows": 1, "n_requests": 4}


def test_the_archive_keeps_no_credential_header_and_no_secret_value(monkeypatch) -> None:
    # The proxy module patches the standard library with gevent on import: read its
    # filter in a child process, as the proxy runs.
    import subprocess
    import sys

    code = (
        "from agent_benchmarks.web.proxy import _kept_header as k;"
        "print([k(h) for h in [('Authorization','Bearer abc'),('X-Api-Key','k'),"
        "('Accept','text/html'),('X-Custom','tok-SECRET-1234567890'),('Cookie','a=b')]])"
    )
    env = {"PATH": "/usr/bin:/bin", "SOME_API_KEY": "tok-SECRET-1234567890"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out.strip() == "[None, None, ('Accept', 'text/html'), None, ('Cookie', 'a=b')]"


def test_a_logged_request_is_re_enacted_with_its_cookie_type_and_body() -> None:
    body = b"sku=LW-1&qty=2"
    request = {
        "method": "POST",
        "url": "http://127.0.0.1:8931/t/x.a1/cart/add",
        "cookie": "lw_sid=0123456789abcdef",
        "content_type": "application/x-www-form-urlencoded",
        "body": base64.b64encode(body).decode(),
        "status": 303,
        "archived": True,
    }
    method, url, headers, sent = reenacted(request)
    assert (method, url, sent) == ("POST", request["url"], body)
    assert headers == {
        "Cookie": "lw_sid=0123456789abcdef",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    assert reenacted({"method": "GET", "url": "http://h/"}) == ("GET", "http://h/", {}, b"")


def test_a_stack_that_cannot_route_its_browser_is_refused_before_the_proxy_starts(
    tmp_path,
) -> None:
    from types import SimpleNamespace

    from agent_benchmarks.runner.launch import web_proxy
    from agent_benchmarks.web.archive import WebArchive

    prepared = SimpleNamespace(
        web_archive=WebArchive(tmp_path / "archive"),
        spec=SimpleNamespace(web="record"),
        backend=SimpleNamespace(name="some-stack"),  # no web_routing: cannot be routed
        prog="localweb-some-run",
    )
    refused = pytest.raises(InputError, match=r"localweb-some-run \(some-stack\) cannot send")
    with refused, web_proxy(prepared):  # type: ignore[arg-type]
        pass
    assert not (tmp_path / "archive").exists()
