"""``agent-benchmarks`` (also ``python -m agent_benchmarks``): the tool around the suites'
own commands: list a selection's tasks, compare graded runs, audit a run for leaks, run a
sweep, browse the runs, export them for Inspect's viewer, and the engine benchmark.

The top of the package, with :mod:`agent_benchmarks.commands`; nothing imports this module.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.spec.args import add_dataset_args, entry, selection_of
from agent_benchmarks.spec.suites import get_suite, suite_names


def _tasks_command(argv: Sequence[str]) -> int:
    from agent_benchmarks.runner.launch import load_selected
    from agent_benchmarks.spec.run_spec import RunSpec

    names = suite_names()
    if not argv or argv[0] not in names:
        raise InputError(f"usage: agent-benchmarks tasks {{{','.join(names)}}} [flags]")
    suite = get_suite(argv[0])
    parser = argparse.ArgumentParser(
        prog=f"agent-benchmarks tasks {suite.name}",
        description="List the tasks a run with these flags would select, and where they come from.",
    )
    add_dataset_args(parser, suite)
    parser.add_argument("--json", action="store_true", help="one JSON object per task")
    args = parser.parse_args(argv[1:])
    spec = RunSpec(
        suite=suite.name,
        runner="",
        dataset_file=args.dataset_file,
        split=getattr(args, "split", None),
        revision=getattr(args, "revision", None),
        selection=selection_of(args),
    )
    loaded, tasks = load_selected(suite, spec)
    if args.json:
        for task in tasks:
            print(task.to_input().model_dump_json())
        return 0
    console = Console()
    table = Table(title=f"{suite.title}: {len(tasks)} of {len(loaded.tasks)} tasks")
    for column in ("id", "question", "details"):
        table.add_column(column, overflow="fold")
    for task in tasks:
        details = {k: v for k, v in task.suite_fields().items() if v is not None}
        question = task.question if len(task.question) <= 90 else task.question[:87] + "..."
        table.add_row(task.id, question, json.dumps(details))
    console.print(table)
    console.print(f"source: {loaded.source.model_dump_json(exclude_none=True)}")
    return 0


def _compare_command(argv: Sequence[str]) -> int:
    # Imported on use: the report pulls in numpy and every suite's grader.
    from agent_benchmarks.commands.report import compare_command

    return compare_command(argv)


def _sweep_command(argv: Sequence[str]) -> int:
    from agent_benchmarks.commands.sweep import sweep_command

    return sweep_command(argv)


def _view_command(argv: Sequence[str]) -> int:
    from agent_benchmarks.commands.view import view_command

    return view_command(argv)


def _export_command(argv: Sequence[str]) -> int:
    from agent_benchmarks.commands.view import export_command

    return export_command(argv)


def _engine_command(argv: Sequence[str]) -> int:
    from agent_benchmarks.commands.engine import engine_command

    return engine_command(argv)


def _leak_audit_command(argv: Sequence[str]) -> int:
    from agent_benchmarks.commands.report import leak_audit_command

    return leak_audit_command(argv)


@entry
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = {
        "tasks": _tasks_command,
        "compare": _compare_command,
        "leak-audit": _leak_audit_command,
        "sweep": _sweep_command,
        "view": _view_command,
        "export": _export_command,
        "engine": _engine_command,
    }
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in commands:
        print(
            "usage: agent-benchmarks COMMAND ...\n\n"
            "commands:\n"
            "  tasks SUITE [flags]   list the tasks a run would select (suites: "
            f"{', '.join(suite_names())})\n"
            "  compare RUN_DIR...    compare graded runs: scoreboard, evidence, eligibility\n"
            "  leak-audit RUN_DIR    flag tool calls that reached benchmark answers\n"
            "  sweep FILE            run a grid of runs (suite x stack x model x prompt) "
            "through one executor, then compare them\n"
            "  view [RESULTS]        every run in one table, and pages for each run and "
            "attempt (--serve: live on 127.0.0.1)\n"
            "  export --inspect RUN...  each run as an Inspect eval log, for `inspect view`\n"
            "  engine run|report|list   the engine benchmark: browser stacks timed on "
            "scripted tasks, no model",
            file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout,
        )
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main())
