"""The two engines a CDP driver connects to: ``lightpanda serve`` and Debian's Chromium, each
on 127.0.0.1 at a port the OS picks, launched as upstream's ``browsers.py`` launches them
and ready when upstream calls them ready (Lightpanda: its port accepts a connection;
Chromium: ``/json/version`` answers).

A launch is a process of a :class:`~agent_benchmarks.enginebench.measure.Meter`, made ready
before a cold timer starts (:class:`~agent_benchmarks.enginebench.processes.Prepared`):
:meth:`Launch.start` is where the timer starts.
Chromium gets the flags upstream gives Chrome, plus ``--no-sandbox`` (it refuses its
sandbox as root, as in every container here), and a profile folder made once, untimed, and
reused by every cold launch of its configuration (upstream's choice, slightly generous to
Chromium's cold time: its first launch's profile writing is not timed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from agent_benchmarks.backends.web_routing import PROXY_LOOPBACK, lightpanda_web_args
from agent_benchmarks.enginebench.measure import Meter
from agent_benchmarks.enginebench.processes import Prepared
from agent_benchmarks.web.service import AttemptWeb

LIGHTPANDA = "lightpanda"
CHROMIUM = "chromium"
ENGINES = (LIGHTPANDA, CHROMIUM)
READY_TIMEOUT_S = 30.0

CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-extensions",
    "--no-sandbox",
]
_LIGHTPANDA_ADDRESS = re.compile(rb'msg="server running" address=([0-9.]+):(\d+)')


class EngineFailed(RuntimeError):
    """The engine did not start or did not become ready."""


def chromium_path() -> str:
    return shutil.which("chromium") or "/usr/bin/chromium"


def lightpanda_env() -> dict[str, str]:
    return {**os.environ, "LIGHTPANDA_DISABLE_TELEMETRY": "true"}


@dataclass
class Launch:
    """One engine, made ready to start (:class:`Prepared`), then started."""

    engine: str
    process: Prepared
    folder: Path  # its log, and Chromium's HOME (and profile, unless one is given)
    profile: Path | None  # Chromium's
    tmpdir: Path  # its TMPDIR: short (Chromium's singleton socket path must be)
    endpoint: str = ""
    ready_ms: float = 0.0

    def start(self) -> str:
        """Start it and wait until it is ready; its CDP endpoint."""
        began = time.perf_counter()
        self.process.go()
        self.endpoint = _wait_ready(self)
        self.ready_ms = (time.perf_counter() - began) * 1000
        return self.endpoint

    def stop(self) -> None:
        self.process.kill()
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def prepare(
    engine: str,
    meter: Meter,
    folder: Path,
    lightpanda: str,
    temp: Path,
    web: AttemptWeb | None = None,
    profile: Path | None = None,
) -> Launch:
    """``engine`` made ready to start as a member of ``meter``, its files in ``folder``, its
    TMPDIR a new folder in ``temp`` (short: the run's scratch); Chromium's profile
    ``profile`` (default: one in ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ}
    if engine == LIGHTPANDA:
        argv = [lightpanda, "serve", "--host", "127.0.0.1", "--port", "0"]
        argv += lightpanda_web_args(web)
        env = lightpanda_env()
    else:
        home = folder / "home"
        home.mkdir(exist_ok=True)
        if web is not None and web.nss_db is not None:
            web.install_nss_db(home)
        profile = profile or folder / "profile"
        # A reused profile keeps the last launch's port file: ready means a new one.
        (profile / "DevToolsActivePort").unlink(missing_ok=True)
        argv = [
            chromium_path(),
            *CHROMIUM_FLAGS,
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
        ]
        if web is not None:
            argv += [f"--proxy-server={web.proxy_url}", f"--proxy-bypass-list={PROXY_LOOPBACK}"]
        env["HOME"] = str(home)
    tmpdir = Path(tempfile.mkdtemp(prefix="t-", dir=temp))
    process = Prepared(argv, {**env, "TMPDIR": str(tmpdir)}, meter, folder, "engine")
    return Launch(engine, process, folder, profile, tmpdir)


def _wait_ready(launch: Launch) -> str:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if not launch.process.running():
            tail = launch.process.stderr.read_bytes()[-600:].decode(errors="replace")
            raise EngineFailed(f"{launch.engine} exited before it was ready: {tail}")
        endpoint = _endpoint(launch)
        if endpoint is not None:
            return endpoint
        time.sleep(0.005)
    raise EngineFailed(f"{launch.engine} was not ready after {READY_TIMEOUT_S:.0f} s")


def _endpoint(launch: Launch) -> str | None:
    if launch.engine == LIGHTPANDA:
        found = _LIGHTPANDA_ADDRESS.search(launch.process.stderr.read_bytes())
        if found is None:
            return None
        host, port = found.group(1).decode(), int(found.group(2))
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return f"ws://{host}:{port}"
        except OSError:
            return None
    assert launch.profile is not None
    try:
        port = int((launch.profile / "DevToolsActivePort").read_text().split()[0])
        url = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(url + "/json/version", timeout=0.5) as reply:
            json.load(reply)
        return url
    except (OSError, ValueError, IndexError):
        return None


def prepare_profile(folder: Path, meter: Meter, temp: Path) -> Path:
    """A Chromium profile made by one untimed launch, for the cold launches to reuse."""
    profile = folder / "profile"
    launch = prepare(CHROMIUM, meter, folder, lightpanda="", temp=temp, profile=profile)
    try:
        launch.start()
    finally:
        launch.stop()
        meter.kill()
    return profile
