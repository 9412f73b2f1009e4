"""Console scripts that run the gaia suite against a browser stack."""

from agent_benchmarks.backends import claude_mcp, lightpanda
from agent_benchmarks.cli import stub_command
from agent_benchmarks.gaia import SUITE
from agent_benchmarks.runner.command import run_command

main = run_command(SUITE, lightpanda.CLI)
mcp_main = run_command(SUITE, claude_mcp.CLI)
ab_main = stub_command("gaia", "gaia-ab-run", "agent-browser's own chat loop as a runner")
