"""The proxy of a recorded-web run, from the runner's side: started once per run, shared
by every attempt, each attempt on a port of its own so its requests and misses are its own."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agent_benchmarks.records.schema import Fetched
from agent_benchmarks.web.archive import WaczArchive, WebArchive

# What the manifest says did the proxying, the recording and the replay matching.
WEB_PROXY_DESCRIPTION = (
    "pywb proxy mode: wsgiprox TLS interception with the archive's own CA, pywb's recorder "
    "writing WARC through warcio, pywb's replay with its fuzzy rules after the project's "
    "(agent_benchmarks/web/rules.yaml); a request the archive cannot answer is a 404 and a "
    "miss. Recording, each site's certificate is verified against the system's trust store "
    "(and the --web-trust CA files): a site it refuses gets a plain tunnel, so the stack "
    "meets its certificate and refuses it as it would live, and nothing of it is recorded"
)
RULES_FILE = Path(__file__).with_name("rules.yaml")


def rules_sha256() -> str:
    """The project's replay rules, as a manifest identifies them."""
    return hashlib.sha256(RULES_FILE.read_bytes()).hexdigest()


WebMode = Literal["record", "replay"]
_START_TIMEOUT_S = 60.0


class ProxyFailed(RuntimeError):
    """The proxy did not start, or stopped while the run needed it."""


@dataclass(frozen=True)
class AttemptWeb:
    """What one attempt's stack is given: the proxy (the attempt's own port of it) and the
    CA certificate to trust for this attempt only."""

    token: str
    proxy_url: str
    ca_cert: Path
    # An NSS database trusting the CA (web/nss.py), for Chromium stacks to copy into their
    # private HOME; None when the run's stack does not need one.
    nss_db: Path | None = None

    def install_nss_db(self, home: Path) -> None:
        """Copy the run's NSS database to ``home/.pki/nssdb``, where Chromium run with
        this HOME finds the archive's CA (the system roots it trusts anyway)."""
        assert self.nss_db is not None, "the run's proxy was started without an NSS database"
        shutil.copytree(self.nss_db, home / ".pki" / "nssdb", dirs_exist_ok=True)


class WebProxy:
    """``python -m agent_benchmarks.web.proxy`` over ``archive``, for the life of a run (a
    WACZ's records worked on in a folder, and packed when the proxy has stopped)."""

    def __init__(
        self,
        mode: WebMode,
        archive: WebArchive | WaczArchive,
        host: str = "127.0.0.1",
        nss_db: bool = False,
        trust: list[Path] | None = None,
    ):
        self.mode = mode
        self.archive = archive
        self.host = host
        self.trust = list(trust or [])  # CA files trusted beside the system's, recording
        self.nss_db: Path | None = None
        self._wants_nss_db = nss_db
        self.port: int | None = None
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._working = contextlib.ExitStack()
        self.folder: WebArchive | None = None  # what the proxy runs on

    def __enter__(self) -> WebProxy:
        self.folder = self._working.enter_context(self.archive.working(self.mode))
        self._dir = Path(tempfile.mkdtemp(prefix="agent-benchmarks-web-"))
        log_dir = self._dir / "requests"
        log_dir.mkdir()
        port_file = self._dir / "port"
        with open(self._dir / "stderr.log", "wb") as stderr:  # the child keeps its own copy
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "agent_benchmarks.web.proxy",
                    self.mode,
                    str(self.folder.root),
                    "--host",
                    self.host,
                    "--port-file",
                    str(port_file),
                    "--log-dir",
                    str(log_dir),
                    *(arg for path in self.trust for arg in ("--trust", str(path))),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not port_file.exists():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                problem = self._stderr_tail()
                self.__exit__()
                raise ProxyFailed(f"the web archive proxy did not start: {problem}")
            time.sleep(0.05)
        self.port = int(port_file.read_text())
        if self._wants_nss_db:
            self._make_nss_db()
        return self

    def _make_nss_db(self) -> None:
        assert self._dir is not None and self.folder is not None
        db = self._dir / "nssdb"
        made = subprocess.run(
            [sys.executable, "-m", "agent_benchmarks.web.nss", str(db), str(self.folder.ca_cert)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            self.__exit__()
            raise ProxyFailed(f"no NSS database for Chromium: {made.stderr.strip()[-800:]}")
        self.nss_db = db

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        try:
            self._working.close()  # a WACZ being recorded is packed now
        except (OSError, RuntimeError) as exc:
            raise ProxyFailed(f"the archive was not written: {exc}") from None

    def attempt(self) -> AttemptWeb:
        """A new attempt's proxy: a port the proxy opens for it alone."""
        assert self.folder is not None, "the proxy is not running"
        token = uuid.uuid4().hex
        port = int(self._control("PUT", token))
        return AttemptWeb(
            token=token,
            proxy_url=f"http://{self.host}:{port}",
            ca_cert=self.folder.ca_cert,
            nss_db=self.nss_db,
        )

    def requests_of(self, web: AttemptWeb) -> list[dict[str, Any]]:
        """The requests the proxy answered for this attempt, in order (read once); its
        port is closed."""
        assert self._dir is not None, "the proxy is not running"
        self._control("DELETE", web.token)
        path = self._dir / "requests" / f"{web.token}.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        path.unlink()
        return [json.loads(line) for line in lines if line.strip()]

    def requests_so_far(self, web: AttemptWeb) -> list[dict[str, Any]]:
        """The requests the proxy has answered for this attempt so far, in order, its port
        left open (a browser held for several executions keeps one port; the engine
        benchmark reads each execution's part of its log)."""
        assert self._dir is not None, "the proxy is not running"
        path = self._dir / "requests" / f"{web.token}.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def release(self, web: AttemptWeb) -> None:
        """Close the attempt's port without reading its requests (it ended in an error)."""
        with contextlib.suppress(ProxyFailed):  # the proxy is gone, and its ports with it
            self._control("DELETE", web.token)

    def _control(self, method: str, token: str) -> str:
        if self._proc is None or self._proc.poll() is not None:
            raise ProxyFailed(f"the web archive proxy stopped: {self._stderr_tail()}")
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.request(method, f"/_attempt/{token}")
            reply = connection.getresponse()
            body = reply.read().decode()
        except OSError as exc:
            raise ProxyFailed(f"the web archive proxy did not answer: {exc}") from None
        finally:
            connection.close()
        if reply.status != 200:
            raise ProxyFailed(f"the web archive proxy refused {method} for an attempt: {body}")
        return body

    def _stderr_tail(self) -> str:
        assert self._dir is not None
        try:
            text = (self._dir / "stderr.log").read_text(errors="replace").strip()
        except OSError:
            text = ""
        return text[-800:] or "no output"


def misses(requests: list[dict[str, Any]]) -> list[str]:
    """The URLs a replay could not answer from the archive (each once, in order)."""
    return list(
        dict.fromkeys(
            r["url"] for r in requests if not r.get("archived") and not r.get("browser_own")
        )
    )


# A row lists at most this many missed URLs (n_misses counts them all).
MAX_LISTED_MISSES = 50


def web_fetched(requests: list[dict[str, Any]]) -> Fetched:
    """What the browser fetched through the proxy (its own background requests, which the
    proxy refused, left out): requests, response body bytes and HTML pages answered."""
    requests = [r for r in requests if not r.get("browser_own")]
    return Fetched(
        source="the web archive's proxy",
        requests=len(requests),
        bytes=sum(r.get("bytes") or 0 for r in requests),
        pages=sum(
            1
            for r in requests
            if str(r.get("response_type") or "").startswith("text/html")
            and r.get("method") == "GET"
            and 200 <= (r.get("status") or 0) < 300
        ),
    )


def web_details(mode: WebMode, requests: list[dict[str, Any]]) -> dict[str, Any]:
    """``details.web`` of a row: how many requests went through the proxy and, replaying,
    those the archive could not answer (a miss: the stack was shown a 404 instead)."""
    own = [r for r in requests if r.get("browser_own")]
    refused = [r for r in requests if r.get("tls_refused")]
    requests = [r for r in requests if not r.get("browser_own") and not r.get("tls_refused")]
    details: dict[str, Any] = {"mode": mode, "n_requests": len(requests)}
    if own:
        # The browser's own background requests, refused by the proxy (rules.yaml
        # browser_own): neither browsing nor misses.
        details["n_browser_own"] = len(own)
    if refused:
        # Sites whose certificate the trust store refused, recording: the stack met the
        # certificate itself (and refused it, or not, as it would live); nothing recorded.
        details["refused_certificates"] = [
            {"url": r["url"], "why": r["tls_refused"]} for r in refused
        ][:MAX_LISTED_MISSES]
    if mode == "replay":
        missed = [r for r in requests if not r.get("archived")]
        details["n_misses"] = len(missed)
        details["misses"] = misses(missed)[:MAX_LISTED_MISSES]
    else:
        # Recording: what the live web refused or failed (the archive keeps it as it came).
        details["n_failed"] = sum(1 for r in requests if (r.get("status") or 0) >= 500)
    return details
