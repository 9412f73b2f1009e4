"""The proxy of a recorded-web run, from the runner's side: started once per run, shared
by every attempt, each attempt naming itself so its requests and misses are its own."""

from __future__ import annotations

import hashlib
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

from agent_benchmarks.web.archive import WebArchive

# What the manifest says did the proxying, the recording and the replay matching.
WEB_PROXY_DESCRIPTION = (
    "pywb proxy mode: wsgiprox TLS interception with the archive's own CA, pywb's recorder "
    "writing WARC through warcio, pywb's replay with its fuzzy rules after the project's "
    "(agent_benchmarks/web/rules.yaml); a request the archive cannot answer is a 404 and a miss"
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
    """What one attempt's stack is given: the proxy (with the attempt's name in it) and
    the CA certificate to trust for this attempt only."""

    token: str
    proxy_url: str
    ca_cert: Path


class WebProxy:
    """``python -m agent_benchmarks.web.proxy`` over ``archive``, for the life of a run."""

    def __init__(self, mode: WebMode, archive: WebArchive, host: str = "127.0.0.1"):
        self.mode = mode
        self.archive = archive
        self.host = host
        self.port: int | None = None
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> WebProxy:
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
                    str(self.archive.root),
                    "--host",
                    self.host,
                    "--port-file",
                    str(port_file),
                    "--log-dir",
                    str(log_dir),
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
        return self

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

    def attempt(self) -> AttemptWeb:
        token = uuid.uuid4().hex
        return AttemptWeb(
            token=token,
            proxy_url=f"http://{token}:x@{self.host}:{self.port}",
            ca_cert=self.archive.ca_cert,
        )

    def requests_of(self, web: AttemptWeb) -> list[dict[str, Any]]:
        """The requests the proxy answered for this attempt, in order (read once)."""
        assert self._dir is not None, "the proxy is not running"
        if self._proc is not None and self._proc.poll() is not None:
            raise ProxyFailed(f"the web archive proxy stopped: {self._stderr_tail()}")
        path = self._dir / "requests" / f"{web.token}.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        path.unlink()
        return [json.loads(line) for line in lines if line.strip()]

    def _stderr_tail(self) -> str:
        assert self._dir is not None
        try:
            text = (self._dir / "stderr.log").read_text(errors="replace").strip()
        except OSError:
            text = ""
        return text[-800:] or "no output"


def misses(requests: list[dict[str, Any]]) -> list[str]:
    """The URLs a replay could not answer from the archive (each once, in order)."""
    return list(dict.fromkeys(r["url"] for r in requests if not r.get("archived")))


# A row lists at most this many missed URLs (n_misses counts them all).
MAX_LISTED_MISSES = 50


def web_details(mode: WebMode, requests: list[dict[str, Any]]) -> dict[str, Any]:
    """``details.web`` of a row: how many requests went through the proxy and, replaying,
    those the archive could not answer (a miss: the stack was shown a 404 instead)."""
    details: dict[str, Any] = {"mode": mode, "n_requests": len(requests)}
    if mode == "replay":
        missed = [r for r in requests if not r.get("archived")]
        details["n_misses"] = len(missed)
        details["misses"] = misses(missed)[:MAX_LISTED_MISSES]
    else:
        # Recording: what the live web refused or failed (the archive keeps it as it came).
        details["n_failed"] = sum(1 for r in requests if (r.get("status") or 0) >= 500)
    return details
