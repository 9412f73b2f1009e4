"""The recording and replaying proxy: pywb in proxy mode over one web archive.

    python -m agent_benchmarks.web.proxy record|replay ARCHIVE --port-file F --log-dir D

pywb does the HTTP and HTTPS proxying (wsgiprox, with the archive's own CA), the WARC
writing (its recorder, through warcio) and the replay with its fuzzy matching; this module
only configures it and reports. Record: every request is fetched live and written to
ARCHIVE. Replay: every request is answered from ARCHIVE alone, and what it lacks is a miss
(a 404 that says so); nothing is fetched.

Each attempt gets a port of its own: ``PUT /_attempt/TOKEN`` on the proxy's main port
opens one (its number is the reply), ``DELETE /_attempt/TOKEN`` closes it. Everything that
arrives on that port is the attempt's, HTTPS tunnels included, with nothing asked of the
stack but a proxy address: Chromium sends proxy credentials only after a 407 challenge, and
a challenge to one of its background requests opens a tab of its own that takes the agent's
place. Each request the proxy answered is a line of ``LOG_DIR/TOKEN.jsonl``: method, URL,
status, whether the archive had it, the request's cookie, content type and body, and the
response's content type and body size (written once the body is sent: closing an
attempt's port waits for those still being sent). The runner reads an attempt's file
when the attempt ends.

Run as its own process: pywb runs on gevent, which patches the standard library.
"""

from __future__ import annotations

# gevent first: pywb's server and its live fetches need the patched standard library.
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import base64  # noqa: E402
import functools  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import socket  # noqa: E402
import ssl  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from contextlib import suppress  # noqa: E402
from importlib import resources  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
import yaml  # noqa: E402
from gevent.pywsgi import WSGIServer  # noqa: E402
from pywb.apps.frontendapp import FrontEndApp  # noqa: E402
from pywb.apps.rewriterapp import RewriterApp  # noqa: E402
from pywb.warcserver.http import DefaultAdapters, PywbHttpAdapter  # noqa: E402
from urllib3.util.retry import Retry  # noqa: E402
from wsgiprox.wsgiprox import WSGIProxMiddleware  # noqa: E402

from agent_benchmarks.common.redact import redact_text  # noqa: E402
from agent_benchmarks.web.archive import CA_NAME, COLLECTION, WebArchive  # noqa: E402
from agent_benchmarks.web.service import RULES_FILE  # noqa: E402

_CONTROL = re.compile(r"^/_attempt/([0-9a-f]{8,64})$")
_ATTEMPT = "agent_benchmarks.attempt"
_URL = "agent_benchmarks.url"
_UNANSWERED = "agent_benchmarks.unanswered"
_MAX_LOGGED_BODY = 1 << 20
# How long closing an attempt's port waits for its responses still being sent to be logged
# (its processes are gone by then: their connections are closing).
_SENDING_WAIT_S = 2.0
_CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key"}
)
NOT_FOUND_PAGE = (
    "<!doctype html><html><head><title>Not in the web archive</title></head><body>"
    "<h1>404 Not Found</h1><p>This page is not in the recorded web archive this run "
    "replays.</p></body></html>\n"
)


class _MissMarkingRewriter(RewriterApp):
    """pywb's replay, marking a request it could not answer (not in the archive, or the
    live fetch failed while recording) on the request itself."""

    def handle_error(self, environ, wbe):
        environ[_UNANSWERED] = True
        return super().handle_error(environ, wbe)


def trust_context(extra_cas: list[Path]) -> ssl.SSLContext:
    """What the recording proxy trusts: the system's trust store (Python's default paths,
    Debian's ca-certificates here), and the CA files given (a local site's own test CA)."""
    context = ssl.create_default_context()
    for path in extra_cas:
        context.load_verify_locations(cafile=str(path))
    return context


class _VerifyingAdapter(PywbHttpAdapter):
    """pywb's live fetches, verifying the site's certificate against ``context`` (pywb
    verifies nothing unless told, and then only against a folder of hashed files)."""

    def __init__(self, context: ssl.SSLContext):
        self.context = context
        super().__init__(cert_reqs="CERT_REQUIRED", max_retries=Retry(3))

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        super().init_poolmanager(connections, maxsize, block, ssl_context=self.context)


class _VerifyingTunnels(WSGIProxMiddleware):
    """wsgiprox's HTTPS interception, for a site whose certificate the trust store accepts.
    For one it refuses, the tunnel goes to the site as it is: the stack meets the site's own
    certificate and refuses it as it would without the proxy, and nothing of it is
    recorded (it was never decrypted). What was refused is logged for the attempt."""

    def __init__(self, *args, context: ssl.SSLContext, on_refused, **kwargs):
        super().__init__(*args, **kwargs)
        self._context = context
        self._on_refused = on_refused
        self._verdicts: dict[tuple[str, int], str | None] = {}

    def handle_connect(self, env, start_response):
        host, _, port = env.get("PATH_INFO", "").rpartition(":")
        if not port.isdigit() or port == "80":
            return super().handle_connect(env, start_response)
        refused = self._verdict(host, int(port))
        if refused is None:
            return super().handle_connect(env, start_response)
        self._on_refused(env, f"https://{host}:{port}/", refused)
        raw = self.get_raw_socket(env)
        try:
            upstream = socket.create_connection((host, int(port)), timeout=_VERIFY_TIMEOUT_S)
        except OSError:
            start_response("502 Bad Gateway", [("Content-Length", "0")])
            return []
        raw.sendall(self._get_connect_response(env))
        back = gevent.spawn(_splice, upstream, raw)
        _splice(raw, upstream)
        back.join()
        upstream.close()
        start_response("200 OK", [])
        return []

    def _verdict(self, host: str, port: int) -> str | None:
        """Why the site's certificate is refused (None: it is trusted, or no TLS answered:
        pywb's own fetch then meets and reports what happens), asked once per site."""
        key = (host, port)
        if key not in self._verdicts:
            self._verdicts[key] = _certificate_refused(self._context, host, port)
        return self._verdicts[key]


# How long the check of a site's certificate may take (a TLS handshake).
_VERIFY_TIMEOUT_S = 15.0


def _certificate_refused(context: ssl.SSLContext, host: str, port: int) -> str | None:
    try:
        with (
            socket.create_connection((host, port), timeout=_VERIFY_TIMEOUT_S) as sock,
            context.wrap_socket(sock, server_hostname=host),
        ):
            return None
    except ssl.SSLCertVerificationError as exc:
        return f"certificate verify failed: {exc.verify_message}"
    except (OSError, ValueError):
        return None


def _splice(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends, then end ``sink``'s writing."""
    try:
        while data := source.recv(1 << 16):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


class ArchiveProxy(FrontEndApp):
    """pywb's front end, told which attempt each request belongs to and logging each."""

    REWRITER_APP_CLS = _MissMarkingRewriter

    def __init__(
        self,
        config_file: str,
        log_dir: Path,
        browser_own: list[str],
        host: str,
        trust: ssl.SSLContext | None = None,
    ):
        self.log_dir = log_dir
        self.host = host
        self.attempt_servers: dict[str, WSGIServer] = {}
        self.sending: dict[str, int] = {}  # per attempt, responses whose body is not closed
        self.browser_own = re.compile("|".join(f"(?:{p})" for p in browser_own) or "(?!)")
        self.trust = trust
        super().__init__(config_file=config_file)

    def init_proxy(self, config):
        super().init_proxy(config)
        if self.trust is not None and isinstance(self.handler, WSGIProxMiddleware):
            # Recording: every site's certificate is checked against the trust store, by
            # the tunnels and by pywb's own fetch.
            DefaultAdapters.live_adapter = _VerifyingAdapter(self.trust)
            proxy = config["proxy"]
            self.handler = _VerifyingTunnels(
                self.handle_request,
                self.proxy_route_request,
                proxy_host=proxy.get("host", "pywb.proxy"),
                proxy_options=proxy,
                context=self.trust,
                on_refused=self._log_refused,
            )

    def _log_refused(self, environ, url: str, why: str) -> None:
        self._log(environ, url, {"request": {}, "tls_refused": why})

    def init_recorder(self, recorder_config):
        super().init_recorder(recorder_config)
        if self.recorder is not None:
            self.recorder.writer.header_filter = _kept_header

    def __call__(self, environ, start_response):
        control = _CONTROL.match(environ.get("PATH_INFO", ""))
        if control is not None:
            return self._control(control.group(1), environ, start_response)
        return self.handler(environ, start_response)

    def _control(self, token: str, environ, start_response):
        """Open (PUT) or close (DELETE) the port of attempt ``token``."""
        method = environ.get("REQUEST_METHOD")
        if method == "PUT" and token not in self.attempt_servers:
            server = WSGIServer((self.host, 0), functools.partial(self._on_port, token), log=None)
            server.start()
            self.attempt_servers[token] = server
            body = str(server.server_port).encode()
        elif method == "DELETE":
            server = self.attempt_servers.pop(token, None)
            if server is not None:
                server.close()  # no new connections; those open finish their requests
            # A request is logged once its body is closed: the runner reads the log next.
            deadline = time.monotonic() + _SENDING_WAIT_S
            while self.sending.get(token) and time.monotonic() < deadline:
                gevent.sleep(0.01)
            body = b""
        else:
            start_response("400 Bad Request", [("Content-Length", "0")])
            return []
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    def _on_port(self, token: str, environ, start_response):
        # Set before wsgiprox, which copies a CONNECT's environ into its tunnel's requests.
        environ[_ATTEMPT] = token
        return self.handler(environ, start_response)

    def proxy_route_request(self, url, environ):
        environ[_URL] = url  # the browser's URL, before pywb turns it into its own route
        return super().proxy_route_request(url, environ)

    def handle_request(self, environ, start_response):
        url = environ.get(_URL)
        if url is None:  # not a proxied request (pywb's own pages)
            return super().handle_request(environ, start_response)
        seen: dict[str, object] = {"request": _request_of(environ)}
        if self.browser_own.match(url):
            start_response("403 Forbidden", [("Content-Length", "0")])
            self._log(environ, url, seen | {"status": 403, "browser_own": True})
            return []

        def recording_start_response(status, headers, exc_info=None):
            seen["status"] = int(status.split(" ", 1)[0])
            for name, value in headers:
                if name.lower() == "content-type":
                    seen["response_type"] = value
            return start_response(status, headers, exc_info)

        body = super().handle_request(environ, recording_start_response)
        # Answered from the archive (or, recording, from the live site): pywb's own error
        # path was not taken. Not its Memento-Datetime header: pywb leaves that out of a
        # fetch()'s response (Sec-Fetch-Mode: cors).
        seen["archived"] = not environ.get(_UNANSWERED)
        # Logged once the body is sent (or the client gone), with its size.
        token = environ.get(_ATTEMPT) or "unattributed"
        self.sending[token] = self.sending.get(token, 0) + 1

        def sent(size: int) -> None:
            self.sending[token] -= 1
            self._log(environ, url, seen | {"bytes": size})

        return _CountedBody(body, sent)

    def _log(self, environ, url: str, seen: dict[str, object]) -> None:
        token = environ.get(_ATTEMPT) or "unattributed"
        line = {
            "method": environ.get("REQUEST_METHOD"),
            "url": url,
            "status": seen.get("status"),
            "archived": bool(seen.get("archived")),
            **seen["request"],
        }
        if seen.get("browser_own"):
            line["browser_own"] = True
        for key in ("bytes", "response_type"):  # the response: body size, content type
            if key in seen:
                line[key] = seen[key]
        if seen.get("tls_refused"):
            line["tls_refused"] = seen["tls_refused"]
        with open(self.log_dir / f"{token}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")


class _CountedBody:
    """A response body passed on as it is, its bytes counted; ``done`` gets the count once,
    when the server closes it (WSGI servers, and wsgiprox for a tunnel, close the body
    they were given, whether it was all sent or the client went away)."""

    def __init__(self, body, done):
        self._body = body
        self._done = done
        self._sent = 0

    def __iter__(self):
        for chunk in self._body:
            self._sent += len(chunk)
            yield chunk

    def close(self):
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done(self._sent)


def _kept_header(header: tuple[str, str]) -> tuple[str, str] | None:
    """Headers the archive keeps: not credentials (an API key a stack's search call sent,
    a proxy or site login), and none whose value is a secret of this environment."""
    name, value = header
    if name.lower() in _CREDENTIAL_HEADERS:
        return None
    if redact_text(value) != value:
        return None
    return header


def _request_of(environ) -> dict[str, object]:
    """What a suite may need to re-enact the request on its own site (localweb rebuilds the
    state a replayed episode left, see localweb/session.py): its cookie, content type and
    body. Read here, the body is put back for pywb. The log is the runner's, in its private
    temp folder, read and deleted when the attempt ends; rows keep none of it."""
    request: dict[str, object] = {}
    for key, name in (("HTTP_COOKIE", "cookie"), ("CONTENT_TYPE", "content_type")):
        if environ.get(key):
            request[name] = environ[key]
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length > 0:
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        request["body"] = base64.b64encode(body[:_MAX_LOGGED_BODY]).decode("ascii")
    return request


def rules_yaml(project_rules: Path) -> str:
    """pywb's replay rules with the project's in front: its URL normalisations before
    pywb's, its per-site rules before pywb's (pywb reads a single rules file)."""
    ours = yaml.safe_load(project_rules.read_text()) or {}
    theirs = yaml.safe_load(resources.files("pywb").joinpath("rules.yaml").read_text())
    filters = theirs.setdefault("default_filters", {})
    filters["url_normalize"] = list(ours.get("url_normalize") or []) + list(
        filters.get("url_normalize") or []
    )
    theirs["rules"] = list(ours.get("rules") or []) + list(theirs.get("rules") or [])
    return yaml.safe_dump(theirs, sort_keys=False)


def configure(archive: WebArchive, recording: bool) -> Path:
    """Write the archive's pywb configuration for this mode; its path."""
    root = archive.root
    for folder in (archive.warc_dir, archive.index_dir, root / "ca", root / "templates"):
        folder.mkdir(parents=True, exist_ok=True)
    (root / "templates" / "not_found.html").write_text(NOT_FOUND_PAGE)
    (root / "rules.yaml").write_text(rules_yaml(RULES_FILE))
    config = {
        # The archive's collection is found in collections/ (pywb records only into such
        # a collection); the live web is one only while recording.
        "collections": {"live": "$live"} if recording else {},
        "rules_file": str(root / "rules.yaml"),
        "templates_dir": "templates",
        "autoindex": 1,  # seconds: records written now are replayable in the same run
        "proxy": {
            "coll": COLLECTION,
            "recording": recording,
            "ca_name": CA_NAME,
            "ca_file_cache": str(archive.ca_bundle),
            "enable_banner": False,
            "enable_wombat": False,
            "enable_content_rewrite": False,  # the stack gets the bytes the site sent
        },
    }
    if recording:
        config["recorder"] = {"source_coll": "live", "rollover_size": 100_000_000}
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent_benchmarks.web.proxy")
    parser.add_argument("mode", choices=["record", "replay"])
    parser.add_argument("archive", type=Path)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--trust", type=Path, action="append", default=[])
    args = parser.parse_args(argv)

    archive = WebArchive(args.archive.resolve())
    recording = args.mode == "record"
    config = configure(archive, recording=recording)
    trust = trust_context(args.trust) if recording else None
    os.chdir(archive.root)  # pywb finds its collections and templates from here
    project_rules = yaml.safe_load(RULES_FILE.read_text()) or {}
    browser_own = project_rules.get("browser_own") or []
    app = ArchiveProxy(str(config), args.log_dir, browser_own, args.host, trust)
    archive.write_ca_cert()  # the CA exists now (made on the archive's first start)
    server = WSGIServer((args.host, 0), app, log=None)
    server.start()
    # Written last, and whole: the runner waits for this file, then uses the proxy.
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_port))
    tmp.rename(args.port_file)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
