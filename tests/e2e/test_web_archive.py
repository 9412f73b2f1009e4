"""Recorded web with the REAL lightpanda agent: a site served over HTTP and over HTTPS
(a certificate from trustme) is recorded through the proxy into a WARC archive, the sites
are stopped, and the same visits replay from the archive alone.

Only the model is scripted. The proxy is the real pywb over the real WARC files; the
agent is told the proxy and the archive's CA (``--http-proxy``, ``--ca-cert``) as an
attempt would be.
"""

from __future__ import annotations

import functools
import http.server
import os
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.localweb.models import (
    API_KEY,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    call,
)
from agent_benchmarks.web.archive import WebArchive
from agent_benchmarks.web.service import WebProxy, misses
from tests.e2e.offline import ConnectionCounter
from tests.support import lightpanda_binary

pytestmark = pytest.mark.e2e

PAGE = (
    "<html><head><title>Price list</title><link rel='stylesheet' href='/style.css'></head>"
    "<body><h1>Price list</h1><p>The widget costs {price} dollars.</p></body></html>"
)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site_root(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.html").write_text(PAGE.format(price=42))
    (root / "style.css").write_text("h1 { color: teal }")
    return root


def _serve(root: Path, ctx: ssl.SSLContext | None) -> tuple[http.server.HTTPServer, int]:
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if ctx is not None:
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


@pytest.fixture
def sites(site_root: Path, tmp_path: Path) -> Iterator[dict[str, object]]:
    """The same site over HTTP and over HTTPS (its test CA in the file ``ca``, which the
    recording proxy is given); ``stop()`` takes both down."""
    ca = trustme.CA()
    ca_file = tmp_path / "site-ca.pem"
    ca.cert_pem.write_to_path(ca_file)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    plain, plain_port = _serve(site_root, None)
    tls, tls_port = _serve(site_root, ctx)
    servers = [plain, tls]

    def stop() -> None:
        for server in servers:
            server.shutdown()
            server.server_close()
        servers.clear()

    yield {
        "http": f"http://127.0.0.1:{plain_port}",
        "https": f"https://127.0.0.1:{tls_port}",
        "ports": (plain_port, tls_port),
        "ca": ca_file,
        "stop": stop,
    }
    stop()


def _visit(proxy: WebProxy, url: str) -> tuple[str, list[dict[str, object]]]:
    """One agent run that opens ``url`` through the proxy and reads the page: what the
    browser read, and the requests the proxy answered for this attempt."""
    policy = ScriptedPolicy([call("goto", url=url), call("markdown"), FinalAnswer("done")])
    with ScriptedModelServer(lambda task_id: policy, models=["m"]) as server:
        web = proxy.attempt()
        argv = [
            lightpanda_binary(),
            "agent",
            "--provider",
            "openai_compatible",
            "--model",
            "m",
            "--task",
            "Read the page.",
            "--base-url",
            server.base_url(),
            "--http-proxy",
            web.proxy_url,
            "--ca-cert",
            str(web.ca_cert),
        ]
        env = {
            **os.environ,
            "OPENAI_API_KEY": API_KEY,
            "OPENAI_BASE_URL": server.base_url(),
            "LIGHTPANDA_DISABLE_TELEMETRY": "true",
        }
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        read = done.stderr[done.stderr.rfind("[result: markdown]") :]
        return read, proxy.requests_of(web)


def test_a_recorded_site_replays_offline_over_http_and_https_and_a_page_left_out_is_a_miss(
    sites: dict[str, object], tmp_path: Path
) -> None:
    archive = WebArchive(tmp_path / "archive")
    pages = [f"{sites['http']}/index.html", f"{sites['https']}/index.html"]

    recorded = {}
    with WebProxy("record", archive, trust=[sites["ca"]]) as proxy:  # type: ignore[list-item]
        for url in pages:
            read, requests = _visit(proxy, url)
            assert "The widget costs 42 dollars." in read
            assert [(r["url"], r["status"]) for r in requests] == [
                (url, 200),
                (url.replace("index.html", "style.css"), 200),
            ]
            recorded[url] = read
    described = archive.describe()
    assert described["n_warcs"] >= 1 and described["size_bytes"] > 0
    assert archive.ca_cert.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert "PRIVATE KEY" not in archive.ca_cert.read_text()

    sites["stop"]()  # type: ignore[operator]
    bypass = ConnectionCounter(sites["ports"])  # type: ignore[arg-type]
    try:
        with WebProxy("replay", archive) as proxy:
            for url in pages:
                read, requests = _visit(proxy, url)
                assert read == recorded[url]  # the same page, byte for byte as read
                assert misses(requests) == []
                assert all(r["archived"] for r in requests) and len(requests) == 2
            never = f"{sites['http']}/never-recorded.html"
            read, requests = _visit(proxy, never)
            assert misses(requests) == [never]
            assert "not in the recorded web archive" in read
    finally:
        bypass.close()
    assert bypass.count == 0  # nothing reached the sites' addresses but through the proxy
    # The archive's hash is what a replayed run records: replay wrote nothing into it.
    assert archive.describe() == described

    # The CA was given to the agent per run (--ca-cert), never installed: the system's
    # trust store does not hold it.
    cert = archive.ca_cert.read_text().strip()
    for store in ("/etc/ssl/certs/ca-certificates.crt",):
        if Path(store).exists():
            assert cert not in Path(store).read_text()


def test_replaying_an_archive_that_was_never_recorded_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no WARC files"):
        WebArchive(tmp_path).check_replayable()
    with pytest.raises(InputError, match="no such archive folder"):
        WebArchive(tmp_path / "absent").check_replayable()
