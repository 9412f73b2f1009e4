"""A suite's three run commands (``<suite>-run``, ``-mcp-run``, ``-ab-run``), made once.

Each command imports its backend (and the engine) when it runs, not when the suite's run
module is imported: a command loads neither the other backends nor their dependencies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_benchmarks.suite import SuiteDef

RunMain = Callable[[Sequence[str] | None], int]


def run_mains(suite: SuiteDef) -> tuple[RunMain, RunMain, RunMain]:
    """The suite's commands for the Lightpanda agent, Claude Code on a browser MCP server,
    and agent-browser's own chat loop."""

    def main(argv: Sequence[str] | None = None) -> int:
        from agent_benchmarks.backends import lightpanda
        from agent_benchmarks.runner.command import run_command

        return run_command(suite, lightpanda.CLI)(argv)

    def mcp_main(argv: Sequence[str] | None = None) -> int:
        from agent_benchmarks.backends import claude_mcp
        from agent_benchmarks.runner.command import run_command

        return run_command(suite, claude_mcp.CLI)(argv)

    def ab_main(argv: Sequence[str] | None = None) -> int:
        from agent_benchmarks.backends import agent_browser_chat
        from agent_benchmarks.runner.command import run_command

        return run_command(suite, agent_browser_chat.CLI, agent_browser_chat.chat_session)(argv)

    main.__doc__ = f"``{suite.name}-run``: the Lightpanda agent."
    mcp_main.__doc__ = f"``{suite.name}-mcp-run``: Claude Code on a browser MCP server."
    ab_main.__doc__ = f"``{suite.name}-ab-run``: agent-browser's own chat loop."
    return main, mcp_main, ab_main
