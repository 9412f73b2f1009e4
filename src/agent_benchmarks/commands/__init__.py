"""The command layer: every console script and ``agent-benchmarks`` subcommand.

The top of the package: it turns command lines into specs (:mod:`.args`) and hands them to
the runner, the graders and the report. Nothing below imports it.
"""
