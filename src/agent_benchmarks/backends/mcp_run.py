"""The MCP runner (``<suite>-mcp-run``): an agent CLI locked down to one browser MCP server.

The agent is Claude Code (``--agent claude``, the default:
:mod:`~agent_benchmarks.backends.claude_mcp`) or Codex (``--agent codex``:
:mod:`~agent_benchmarks.backends.codex_mcp`), each imported only when a run asks for it;
the servers are :mod:`~agent_benchmarks.backends.mcp_servers`'. This module is what the
runner registry names: the options, the build that picks the agent, ``--list-tools`` and
the run folder's default place.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_benchmarks.backends.base import Backend, BackendDef, BuildRequest
from agent_benchmarks.backends.mcp_options import McpOptions
from agent_benchmarks.backends.mcp_servers import SERVER_NAME, McpServerDef
from agent_benchmarks.search import MCP_TOOL_NAME
from agent_benchmarks.spec.provenance import default_run_dir

if TYPE_CHECKING:
    from agent_benchmarks.backends.claude_mcp import McpSettings
    from agent_benchmarks.backends.codex_mcp import CodexSettings

# Upstream's MCP runner gives each task 600 s.
DEFAULT_TIMEOUT_S = 600.0
WEB_SEARCH_TOOL = MCP_TOOL_NAME  # --search tavily's one search


def build(request: BuildRequest) -> Backend:
    """The agent the options name, on the server they name."""
    options = request.options
    assert isinstance(options, McpOptions)
    if options.agent == "codex":
        from agent_benchmarks.backends.codex_mcp import build_codex

        return build_codex(request)
    from agent_benchmarks.backends.claude_mcp import build_claude

    return build_claude(request)


def list_tools(request: BuildRequest) -> int | None:
    """``--list-tools``: print the stack's tool surface, run nothing (None without it)."""
    options = request.options
    assert isinstance(options, McpOptions)
    if not options.list_tools:
        return None
    if options.agent == "codex":
        from agent_benchmarks.backends.codex_mcp import codex_surface

        codex, definition, arguments = codex_surface(request)
        print(surface_listing(codex, definition, arguments, agent="Codex"))
        return 0
    from agent_benchmarks.backends.claude_mcp import claude_surface

    settings, definition, versions, arguments = claude_surface(request)
    listing = surface_listing(settings, definition, arguments)
    print(f"{listing}\n{claude_built_ins(settings, versions['claude-code'])}")
    return 0


def claude_built_ins(settings: McpSettings, version: str) -> str:
    """What Claude Code offers the model beside the MCP tools: what its requests carry, not
    what ``--tools`` names (upstream's surface names TodoWrite and LS, which 2.1.330 lacks)."""
    from agent_benchmarks.backends.claude_mcp import PINNED_CLAUDE_CODE, SENT_BESIDE_MCP

    named = ", ".join(settings.built_in_tools)
    lines = ["built-in Claude Code tools offered: none"]
    if named:
        lines.append(f"  --tools names {named} (upstream's); {PINNED_CLAUDE_CODE} has none")
    lines.append(f"  its requests also carry {', '.join(SENT_BESIDE_MCP)} (reserved, never called)")
    if not version.startswith(f"{PINNED_CLAUDE_CODE} "):
        lines.append(f"  (as Claude Code {PINNED_CLAUDE_CODE} sends them; this one is {version})")
    return "\n".join(lines)


def surface_listing(
    settings: McpSettings | CodexSettings,
    definition: McpServerDef,
    arguments: dict[str, list[str]],
    agent: str = "Claude Code",
) -> str:
    """The surface as text: allowed tools with their argument names (required ones
    marked ``*``), excluded tools with why, and the built-in tools offered."""
    lines = [f"backend {settings.backend}, surface {settings.surface}"]
    lines.append(
        f"allowed MCP tools ({len(settings.allowed_tools)}), as mcp__{SERVER_NAME}__<tool>:"
    )
    lines += [f"  {t}({', '.join(arguments.get(t, []))})" for t in settings.allowed_tools]
    lines.append(f"search: {settings.search_setting}")
    if settings.search_setting == "tavily":
        lines.append(f"  {WEB_SEARCH_TOOL}({', '.join(arguments.get(WEB_SEARCH_TOOL, []))})")
    excluded = definition.excluded_on(settings.surface, settings.search_setting)
    lines.append(f"excluded MCP tools ({len(settings.excluded_tools)}):")
    lines += [f"  {t}: {excluded[t]}" for t in settings.excluded_tools]
    if agent != "Claude Code":
        built_ins = ", ".join(settings.built_in_tools) or "none"
        lines.append(f"built-in {agent} tools offered: {built_ins} (none can be turned off)")
    return "\n".join(lines)


def _stack_folder(options: McpOptions) -> str:
    """The run folder's stack part: the backend, with the program for --backend cli, after
    the agent when it is not Claude Code (``codex-playwright``)."""
    stack = f"cli-{Path(options.cli).name}" if options.cli else options.backend
    return f"{options.agent}-{stack}" if options.agent not in (None, "claude") else stack


DEFINITION = BackendDef(
    kind="mcp",
    title="an agent CLI (Claude Code or Codex) on a browser MCP server",
    options=McpOptions,
    build=build,
    run_dir=lambda suite, options: default_run_dir(suite.name, mcp_backend=_stack_folder(options)),
    prog_suffix="-mcp-run",
    variant="backend",
    default_timeout_s=DEFAULT_TIMEOUT_S,
    inform=list_tools,
)
