"""Console scripts that run the webbench suite against a browser stack
(:mod:`agent_benchmarks.runner.entry_points`)."""

from agent_benchmarks.runner.entry_points import run_mains
from agent_benchmarks.webbench import SUITE

main, mcp_main, ab_main = run_mains(SUITE)
