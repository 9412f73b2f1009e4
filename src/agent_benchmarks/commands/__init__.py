"""The command layer: the ``agent-benchmarks`` tool's subcommands and ``leak-audit``.

The top of the package: it turns command lines into specs (:mod:`agent_benchmarks.spec.args`)
and hands them to the runner, the graders and the reports. Nothing below imports it. The
suites' own scripts (``<suite>-run``, ``-mcp-run``, ``-ab-run``, ``-grade``) are made by each
suite's ``run.py`` and ``grade.py`` from :mod:`agent_benchmarks.runner.command` and
:mod:`agent_benchmarks.scoring.command`.
"""
