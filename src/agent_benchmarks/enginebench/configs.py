"""The configurations: a driver on an engine.

- ``pandascript/lightpanda``: ``lightpanda run SCRIPT``, the task as the PandaScript
  ``lightpanda agent --save`` writes, replayed with no model (one process: no held browser,
  so its warm time is its cold time, as upstream's).
- ``puppeteer``, ``playwright`` (Node, pinned in package-lock.json) and ``playwright-py``
  (Python, uv.lock), each on ``lightpanda`` (``serve``) and ``chromium``, over CDP.
- ``mcp:<server>`` on the engine its browser is: each browser MCP server the agent runners
  drive, played by the scripted MCP client (``mcp:agent-browser`` on both engines).

``--slow CONFIG=MS`` adds a variant of a configuration whose pages the site serves ``MS``
later (its episodes' task ids carry the variant's name, which the site's task latency knob
matches): a configuration made slower on purpose, to see the report say so.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.enginebench.engines import CHROMIUM, LIGHTPANDA
from agent_benchmarks.enginebench.mcp_client import MCP_ENGINES

PANDASCRIPT = "pandascript"
CDP_DRIVERS = ("puppeteer", "playwright", "playwright-py")
MCP_PREFIX = "mcp:"


@dataclass(frozen=True)
class Configuration:
    driver: str  # pandascript, puppeteer, playwright, playwright-py, mcp:<server family>
    engine: str  # lightpanda, chromium
    slow_ms: int = 0  # a variant made slower on purpose

    @property
    def base(self) -> str:
        return f"{self.driver}/{self.engine}"

    @property
    def name(self) -> str:
        return self.base + (f"+slow{self.slow_ms}ms" if self.slow_ms else "")

    @property
    def slug(self) -> str:
        """The name as a site task id's first part (letters, digits and dashes)."""
        return re.sub(r"[^A-Za-z0-9]+", "-", self.name).strip("-")

    @property
    def kind(self) -> str:
        """``pandascript``, ``cdp`` or ``mcp``."""
        if self.driver == PANDASCRIPT:
            return PANDASCRIPT
        return "mcp" if self.driver.startswith(MCP_PREFIX) else "cdp"

    @property
    def server(self) -> str:
        """An MCP configuration's server (backends/mcp_servers.py's name)."""
        family = self.driver[len(MCP_PREFIX) :]
        if family == "agent-browser" and self.engine == LIGHTPANDA:
            return "agent-browser-lightpanda"
        return family


def _mcp(server: str, engine: str) -> Configuration:
    family = server.removesuffix("-lightpanda") if server.startswith("agent-browser") else server
    return Configuration(MCP_PREFIX + family, engine)


ALL: tuple[Configuration, ...] = (
    Configuration(PANDASCRIPT, LIGHTPANDA),
    *(Configuration(driver, engine) for driver in CDP_DRIVERS for engine in (LIGHTPANDA, CHROMIUM)),
    *(_mcp(server, engine) for server, engine in MCP_ENGINES.items()),
)
BY_NAME = {c.name: c for c in ALL}


def select(patterns: list[str], slow: dict[str, int]) -> list[Configuration]:
    """The configurations ``patterns`` name (names or shell patterns: ``puppeteer/*``,
    ``*/lightpanda``, ``mcp:*``), in the catalogue's order, then a slowed variant for each
    of ``slow`` (name -> ms), which need not be selected itself."""
    chosen = []
    for pattern in patterns:
        found = [c for c in ALL if fnmatch.fnmatchcase(c.name, pattern)]
        if not found:
            raise InputError(
                f"--configs: {pattern!r} names no configuration (they are: "
                + ", ".join(BY_NAME)
                + ")"
            )
        chosen += [c for c in found if c not in chosen]
    chosen.sort(key=ALL.index)
    for name, ms in slow.items():
        if name not in BY_NAME:
            raise InputError(f"--slow {name}={ms}: no configuration {name!r}")
        if ms <= 0:
            raise InputError(f"--slow {name}={ms}: the added latency must be above 0 ms")
        base = BY_NAME[name]
        chosen.append(Configuration(base.driver, base.engine, ms))
    return chosen
