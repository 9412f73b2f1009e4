"""Console scripts that run the assistantbench suite against a browser stack
(:mod:`agent_benchmarks.runner.entry_points`)."""

from agent_benchmarks.assistantbench import SUITE
from agent_benchmarks.runner.entry_points import run_mains

main, mcp_main, ab_main = run_mains(SUITE)
