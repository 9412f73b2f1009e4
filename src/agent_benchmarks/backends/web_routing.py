"""How each stack's browser is sent through a recorded-web run's proxy (``--web
record|replay``), trusting the archive's CA for that attempt only. Measured per stack on
this machine; the manifest records each stack's routing text.

- Lightpanda (native agent, ``lightpanda mcp``): ``--http-proxy`` and ``--ca-cert``.
- Chromium (agent-browser, browser-use, Playwright's and Chrome DevTools' MCP servers): the
  attempt's proxy address (its own port of the proxy: no credentials, which Chromium sends
  only when challenged, and a challenge to one of its background requests opens a tab that
  takes the agent's place); ``<-loopback>`` as
  the bypass list, removing Chromium's implicit bypass of loopback addresses (where the
  local sites the tests record listen); and the CA in the NSS database Chromium on Linux
  reads, ``$HOME/.pki/nssdb``: the attempt's HOME, in its temp folder (removed with it),
  gets a copy of the run's database (web/nss.py).
- agent-browser on Lightpanda: agent-browser passes its proxy on, but refuses both its CA
  option and extra browser arguments with Lightpanda; it starts the attempt's own launcher
  instead, which runs Lightpanda with the same ``--ca-cert`` flags.

Nothing is installed system-wide.
"""

from __future__ import annotations

import shlex
import ssl
from pathlib import Path

from agent_benchmarks.web.service import AttemptWeb

# Chromium's bypass-list rule that sends loopback addresses through the proxy too.
PROXY_LOOPBACK = "<-loopback>"

LIGHTPANDA_WEB_ROUTING = (
    "lightpanda --http-proxy (the attempt's proxy URL) and --ca-cert twice: the archive's CA "
    "and the system roots (a --ca-cert replaces the system roots; the model API is not "
    "proxied and needs them)"
)
_NSS = (
    "HOME (in the attempt's temp folder) holding a copy of the run's NSS database that "
    "trusts the archive's CA, in .pki/nssdb"
)
AGENT_BROWSER_WEB_ROUTING = (
    "agent-browser on Chromium: AGENT_BROWSER_PROXY, the attempt's proxy URL; "
    f"AGENT_BROWSER_PROXY_BYPASS='{PROXY_LOOPBACK}'; " + _NSS
)
AGENT_BROWSER_LIGHTPANDA_WEB_ROUTING = (
    "agent-browser on Lightpanda: AGENT_BROWSER_PROXY, the attempt's proxy URL (agent-browser "
    "passes it to lightpanda as --http-proxy); AGENT_BROWSER_EXECUTABLE_PATH the attempt's "
    "launcher, running lightpanda with --ca-cert twice: the archive's CA and the system roots"
)
# Playwright's and Chrome DevTools' MCP servers on Chromium: their own proxy flags.
CHROMIUM_MCP_WEB_ROUTING = (
    "Chromium through the server's flags ({flags}): the attempt's proxy URL and "
    f"'{PROXY_LOOPBACK}'; " + _NSS
)
BROWSER_USE_WEB_ROUTING = (
    "browser-use on Chromium: BROWSER_USE_PROXY_URL, the attempt's proxy URL; "
    f"BROWSER_USE_NO_PROXY='{PROXY_LOOPBACK}'; " + _NSS
)


def _lightpanda_ca_args(web: AttemptWeb) -> list[str]:
    # A --ca-cert replaces the system roots, which the model API (not proxied) needs.
    args = ["--ca-cert", str(web.ca_cert)]
    system_roots = ssl.get_default_verify_paths().cafile
    if system_roots is not None and Path(system_roots).is_file():
        args += ["--ca-cert", system_roots]
    return args


def lightpanda_web_args(web: AttemptWeb | None) -> list[str]:
    """Lightpanda's flags for sending all its page traffic (search included) through the
    proxy of ``web``, trusting the archive's CA for this process only."""
    if web is None:
        return []
    return ["--http-proxy", web.proxy_url, *_lightpanda_ca_args(web)]


def agent_browser_web_env(
    web: AttemptWeb, tmpdir: Path, lightpanda: str | None = None
) -> dict[str, str]:
    """agent-browser's environment for sending its browser through ``web``'s proxy: its
    Chromium, or with ``lightpanda`` (the binary) Lightpanda. Files go in ``tmpdir``."""
    env = {"AGENT_BROWSER_PROXY": web.proxy_url}
    if lightpanda is None:
        home = tmpdir / "browser-home"
        web.install_nss_db(home)
        return env | {"AGENT_BROWSER_PROXY_BYPASS": PROXY_LOOPBACK, "HOME": str(home)}
    launcher = tmpdir / "lightpanda-web"
    command = shlex.join([lightpanda]) + ' "$@" ' + shlex.join(_lightpanda_ca_args(web))
    launcher.write_text(f"#!/bin/sh\nexec {command}\n")
    launcher.chmod(0o700)
    return env | {"AGENT_BROWSER_EXECUTABLE_PATH": str(launcher)}


def browser_use_web_env(web: AttemptWeb, home: Path) -> dict[str, str]:
    """browser-use's environment for sending its Chromium through ``web``'s proxy, its
    HOME ``home`` (in the attempt's temp folder)."""
    web.install_nss_db(home)
    return {
        "BROWSER_USE_PROXY_URL": web.proxy_url,
        "BROWSER_USE_NO_PROXY": PROXY_LOOPBACK,
        "HOME": str(home),
    }
