"""What several suites' grading shares: the scorecard (scores.json), the LLM judge, the
contracts, the upstream-comparable summary, graders found through the registry, and the
``<suite>-grade`` command. Each suite's own scorer is in its package."""
