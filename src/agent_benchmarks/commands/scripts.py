"""The console scripts, by name: ``<suite>__<runner>`` runs the suite on that registered
runner (``gaia__native`` is ``gaia-run``, ``gaia__mcp`` is ``gaia-mcp-run``) and
``<suite>__grade`` grades it. They are made on first use for whatever suites and backends
are registered; pyproject.toml points each console script at one of these names, so a
suite or backend added later needs no edit here."""

from __future__ import annotations

from typing import Any

from agent_benchmarks.commands.args import Main


def script(name: str) -> Main:
    """The command a script name (``gaia__mcp``) stands for; loads no backend."""
    from agent_benchmarks.suite import backend_kinds, suite_names

    suite, _, what = name.partition("__")
    if suite in suite_names():
        if what == "grade":
            from agent_benchmarks.commands.grade import grade_main

            return grade_main(suite)
        if what in backend_kinds():
            from agent_benchmarks.commands.run import run_main

            return run_main(suite, what)
    raise AttributeError(name)


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return script(name)
