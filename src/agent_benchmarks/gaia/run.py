"""Console scripts that run the gaia suite against a browser stack.

Each imports its own backend (and the engine) when it runs, not when this module is
imported: a command loads neither the other backends nor their dependencies.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_benchmarks.gaia import SUITE


def main(argv: Sequence[str] | None = None) -> int:
    """``gaia-run``: the Lightpanda agent."""
    from agent_benchmarks.backends import lightpanda
    from agent_benchmarks.runner.command import run_command

    return run_command(SUITE, lightpanda.CLI)(argv)


def mcp_main(argv: Sequence[str] | None = None) -> int:
    """``gaia-mcp-run``: Claude Code on a browser MCP server."""
    from agent_benchmarks.backends import claude_mcp
    from agent_benchmarks.runner.command import run_command

    return run_command(SUITE, claude_mcp.CLI)(argv)


def ab_main(argv: Sequence[str] | None = None) -> int:
    """``gaia-ab-run``: agent-browser's own chat loop."""
    from agent_benchmarks.backends import agent_browser_chat
    from agent_benchmarks.runner.command import run_command

    return run_command(SUITE, agent_browser_chat.CLI, agent_browser_chat.chat_session)(argv)
