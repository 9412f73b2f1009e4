"""The MCP runner's flags (``<suite>-mcp-run``): which browser MCP server, which agent CLI
drives it, the tool surface, and each agent's own settings. Both agents
(:mod:`~agent_benchmarks.backends.claude_mcp`, :mod:`~agent_benchmarks.backends.codex_mcp`)
read them; the runner itself is :mod:`~agent_benchmarks.backends.mcp_run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_benchmarks.backends.mcp_servers import SERVERS
from agent_benchmarks.search import KEY_ENV, SEARCH_SETTINGS
from agent_benchmarks.spec.run_spec import Options, option

SURFACES = ("upstream", "strict")
DEFAULT_SURFACE = "upstream"
DEFAULT_MCP_TOOL_TIMEOUT_MS = 120_000

AGENTS = ("claude", "codex")


class McpOptions(Options):
    """The MCP runner's own flags (an agent CLI + one browser MCP server)."""

    backend: str = option(..., help="the server", choices=tuple(sorted(SERVERS)))
    agent: str | None = option(
        help="the agent CLI driving the server: claude (default; Claude Code) or codex "
        "(OpenAI's Codex, `codex exec`, on OPENAI_API_KEY)",
        choices=AGENTS,
    )
    codex: Path | None = option(help="codex binary for --agent codex (default: node_modules/.bin)")
    reasoning_effort: str | None = option(
        help="--agent codex: the model's reasoning effort (default: the model's own)",
        choices=("minimal", "low", "medium", "high", "xhigh"),
    )
    surface: str | None = option(
        help="the tools the model gets: upstream (default; lightpanda-io/agent-benchmarks' "
        "published surface: Lightpanda's search, the full agent-browser wrapper, TodoWrite "
        "and LS) or strict (no search, no built-in tool, interactive snapshots by default)",
        choices=SURFACES,
    )
    list_tools: bool | None = option(
        help="print the backend's tool surface (starting its MCP server to ask it) and exit",
        defines_run=False,
    )
    claude: Path | None = option(help="claude binary (default: node_modules/.bin)")
    lightpanda: Path | None = option(help="lightpanda binary (default: PyPI's)")
    agent_browser: Path | None = option(
        help="agent-browser binary for the agent-browser backends (default: node_modules/.bin)"
    )
    browser_use_python: Path | None = option(
        help="python of an environment with browser-use (default: competitors/browser-use)"
    )
    cli: str | None = option(
        help="--backend cli: the browser command-line program the agent's one shell tool "
        "runs (agent-browser from node_modules/.bin, ghostchrome or any program on PATH, "
        "or a path); every other command is refused",
        metavar="PROGRAM",
    )
    mcp_server: Path | None = option(
        help="the MCP server program of the playwright and chrome-devtools backends "
        "(default: node_modules/.bin)"
    )
    max_turns: int | None = option(
        help="Claude Code's cap on model turns per task (default: none, as upstream)", ge=1
    )
    auth: str | None = option(
        help="api-key keeps ANTHROPIC_API_KEY; default subscription removes it",
        choices=("subscription", "api-key"),
    )
    mcp_tool_timeout_ms: int | None = option(
        help=f"MCP tool call timeout (default {DEFAULT_MCP_TOOL_TIMEOUT_MS})", ge=1
    )
    max_budget_usd: float | None = option(
        help="Claude Code's spending cap per task, in US dollars (default: none)", gt=0
    )
    base_url: str | None = option(
        help="ANTHROPIC_BASE_URL for Claude Code (a proxy)", defines_run=False
    )
    search: str | None = option(
        help="the agent's web search: native (default; the stack's own, Lightpanda's search "
        "on the upstream surface), tavily (our web_search MCP server for every backend, the "
        f"stack's own withheld; needs {KEY_ENV}) or none (no search tool)",
        choices=SEARCH_SETTINGS,
    )

    def server_program_flags(self) -> dict[str, Any]:
        """The flags that say where the server's programs are, for find_server_programs."""
        return {
            "agent_browser": self.agent_browser,
            "browser_use_python": self.browser_use_python,
            "mcp_server": self.mcp_server,
            "cli": self.cli,
        }


def surface_and_turns(
    options: McpOptions, resumed: dict[str, Any] | None
) -> tuple[str, int | None]:
    """The run's tool surface and turn cap: as the options say, else the defaults. A
    resumed run's options come from its manifest; where they do not say (runs started
    before they were recorded), its backend settings (``resumed``) do: a run from before
    --surface existed had strict's surface, and one from before the cap's default became
    none had 60 turns."""
    if options.surface:
        surface = options.surface
    elif resumed is not None:
        surface = resumed.get("surface") or "strict"
    else:
        surface = DEFAULT_SURFACE
    return surface, options.max_turns or (resumed.get("max_turns") if resumed else None)
