"""Console scripts that run the webbench suite against a browser stack."""

from agent_benchmarks.backends import lightpanda
from agent_benchmarks.cli import stub_command
from agent_benchmarks.runner.command import run_command
from agent_benchmarks.webbench import SUITE

main = run_command(SUITE, lightpanda.CLI)
mcp_main = stub_command(
    "webbench",
    "webbench-mcp-run",
    "Claude Code locked to one browser MCP server",
    with_backend=True,
)
