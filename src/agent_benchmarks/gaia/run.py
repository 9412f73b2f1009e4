"""Console scripts that run the gaia suite against a browser stack."""

from agent_benchmarks.backends import agent_browser_chat, claude_mcp, lightpanda
from agent_benchmarks.gaia import SUITE
from agent_benchmarks.runner.command import run_command

main = run_command(SUITE, lightpanda.CLI)
mcp_main = run_command(SUITE, claude_mcp.CLI)
ab_main = run_command(SUITE, agent_browser_chat.CLI, agent_browser_chat.chat_session)
