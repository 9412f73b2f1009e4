"""``agent-benchmarks compare`` and ``agent-benchmarks leak-audit`` (also ``leak-audit``).

Bad input (a missing folder, a folder without predictions, a malformed row, bad weights)
is one message naming what and where, and exit 2. ``leak-audit`` exits 1 when it finds
something, like a linter, so a script can gate on it. Reports are written where the flags
say; the only file ever written into a run folder is ``scores.json``, when a run is graded
on the fly, and a report is never written over a run's own files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from rich.console import Console

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.storage import write_json_atomic
from agent_benchmarks.report import fmt, tables
from agent_benchmarks.report.audit import audit_run
from agent_benchmarks.report.compare import DEFAULT_WEIGHTS, compare_runs, parse_weights
from agent_benchmarks.report.html import html_pieces
from agent_benchmarks.report.load import check_inputs, load_run, load_runs
from agent_benchmarks.report.markdown import render_markdown, splice
from agent_benchmarks.report.schema import (
    SCORE_VIEWS,
    ComparisonReport,
    LeakAudit,
    SuiteComparison,
)
from agent_benchmarks.report.stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from agent_benchmarks.report.terminal import print_table
from agent_benchmarks.spec.args import entry, positive_int


def _write(path: Path, text: str | Iterable[str]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, text)  # any text: written whole via a temp file and rename
    except OSError as exc:
        raise InputError(f"{path}: cannot write: {exc.strerror}") from None


def _print_scoreboard(report: ComparisonReport, console: Console) -> None:
    more = "every column: --markdown-out, --html-out"
    for group in report.groups:
        console.print(f"\n{group.suite}: {len(group.rows)} stack(s)", markup=False)
        console.print(fmt.view_note(group.view), markup=False)
        for i, row in enumerate(group.rows, start=1):
            console.print(f"  #{i} {row.key} ({fmt.mode(row)}, {row.run_dir})", markup=False)
        print_table(console, tables.scoreboard(group), more)
        print_table(console, tables.matrix(group), more)
        if any(row.resources is not None for row in group.rows):
            print_table(console, tables.resources(group), more)
            console.print(fmt.machines(group), markup=False)
        _print_recovery(group, console, more)
        for i, row in enumerate(group.rows, start=1):
            if row.n_no_progress or row.n_budget:
                console.print(f"#{i} no progress: {fmt.no_progress(row)}", markup=False)
        for i, row in enumerate(group.rows, start=1):
            if row.n_contaminated or row.n_refused_calls:
                console.print(
                    f"#{i} lockdown audit: {row.n_contaminated} contaminated row(s); "
                    f"refused calls (nothing ran): {fmt.refused_calls(row)}",
                    markup=False,
                )
        for i, row in enumerate(group.rows, start=1):
            verdict = fmt.eligible(row.eligibility)
            console.print(f"#{i} headline eligible: {verdict}", markup=False)
            for reason in row.eligibility.reasons:
                console.print(f"    {reason.code}: {reason.message}", markup=False)
        for name, why in group.composite.left_out.items():
            console.print(f"composite: {name} left out ({why})", markup=False)
    for warning in report.warnings:
        console.print(f"warning: {warning}", style="yellow", markup=False)


def _print_recovery(group: SuiteComparison, console: Console, more: str) -> None:
    """The recovery view, its label (long: why a cell is diagnostic) on a line of its own."""
    if not group.recovery:
        return
    spec = tables.recovery(group)
    print_table(console, spec, more)
    for cell in group.recovery:
        console.print(
            f"{spec.columns[0].text(cell)} recovery: {tables.recovery_label(cell)}",
            markup=False,
        )


def compare_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="agent-benchmarks compare",
        description="Compare graded runs stack by stack: success with its interval, tokens "
        "and cost per success, time, tool calls, failures by class, contamination, leaks, "
        "headline eligibility and a composite score. Runs without scores.json are graded "
        "first (scores.json is written; nothing else in a run folder is touched).",
    )
    parser.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--markdown-out", type=Path, metavar="F", help="write Markdown here")
    parser.add_argument("--json-out", type=Path, metavar="F", help="write the JSON record here")
    parser.add_argument("--html-out", type=Path, metavar="F", help="write the HTML report here")
    parser.add_argument(
        "--update-doc",
        type=Path,
        metavar="F",
        help="replace the Markdown between the compare markers in F (agent-benchmarks.md)",
    )
    default = ",".join(f"{k}={v:g}" for k, v in DEFAULT_WEIGHTS.items())
    parser.add_argument(
        "--weights",
        default=default,
        help="composite weights, NAME=NUMBER,... over success, tokens, duration, tool_calls; "
        f"names left out weigh 0; scaled to sum 1 (default: {default})",
    )
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default: %(default)s)"
    )
    parser.add_argument(
        "--resamples",
        type=positive_int,
        default=DEFAULT_RESAMPLES,
        help="bootstrap resamples (default: %(default)s)",
    )
    parser.add_argument(
        "--view",
        choices=SCORE_VIEWS,
        default="official",
        help="whose grades count as success: the official scorers (default), or upstream's "
        "matching over the rows in each file (scores.json's upstream_view); never mixed",
    )
    args = parser.parse_args(argv)
    weights = parse_weights(args.weights)
    outputs = {
        "--markdown-out": args.markdown_out,
        "--json-out": args.json_out,
        "--html-out": args.html_out,
        "--update-doc": args.update_doc,
    }
    check_inputs(args.run_dirs, outputs)
    console = Console(stderr=True, soft_wrap=True)
    runs = load_runs(args.run_dirs, console=console, view=args.view)
    report = compare_runs(runs, weights=weights, seed=args.seed, resamples=args.resamples)
    _print_scoreboard(report, Console(soft_wrap=True))
    if args.markdown_out:
        _write(args.markdown_out, render_markdown(report))
    if args.json_out:
        _write(args.json_out, report.model_dump_json(indent=2) + "\n")
    if args.html_out:
        _write(args.html_out, html_pieces(report, runs))
    if args.update_doc:
        try:
            document = args.update_doc.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"--update-doc {args.update_doc}: {exc.strerror}") from None
        block = render_markdown(report, heading_level=3)
        _write(args.update_doc, splice(document, block, f"--update-doc {args.update_doc}"))
    for flag, out in outputs.items():
        if out is not None:
            console.print(f"wrote {out} ({flag})", markup=False)
    return 0


def _print_audit(audit: LeakAudit, console: Console) -> None:
    console.print(
        f"{audit.run_dir}: {audit.n_rows} row(s), {audit.n_calls} tool call(s) checked against "
        f"{len(audit.patterns)} pattern(s) and the task ids "
        f"({audit.task_ids_not_checked} id(s) too generic to search for)",
        markup=False,
    )
    if not audit.hits:
        console.print("no leak found", markup=False)
    else:
        hits = tables.leak_hits([("", hit) for hit in audit.hits])
        hits.title = f"{len(audit.hits)} leak hit(s) in {len(audit.flagged_tasks)} task(s)"
        print_table(console, hits)
    if audit.accuracy_strict is None:
        console.print("accuracy: not graded", markup=False)
    else:
        console.print(
            f"accuracy {fmt.pct(audit.accuracy_strict)}; with flagged attempts counted wrong "
            f"{fmt.pct(audit.accuracy_flagged_wrong)}",
            markup=False,
        )


def leak_audit_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="agent-benchmarks leak-audit",
        description="Flag attempts whose tool calls visited a benchmark mirror (Hugging Face "
        "dataset or Space pages, known copies, local dataset caches) or used the task's id "
        "in a URL or argument, and show accuracy with them counted wrong. Exit 1 when "
        "something is found.",
    )
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    parser.add_argument("--json-out", type=Path, metavar="F", help="write the JSON record here")
    args = parser.parse_args(argv)
    check_inputs([args.run_dir], {"--json-out": args.json_out})
    console = Console(stderr=True, soft_wrap=True)
    # Only the traces are needed; grades (for the accuracy line) come along when they are free.
    run = load_run(args.run_dir, grade=False, console=console)
    audit = audit_run(run)
    _print_audit(audit, Console(soft_wrap=True))
    if args.json_out:
        _write(args.json_out, audit.model_dump_json(indent=2) + "\n")
        console.print(f"wrote {args.json_out}", markup=False)
    return 1 if audit.hits else 0


@entry
def leak_audit_main(argv: Sequence[str] | None = None) -> int:
    """The ``leak-audit`` console script: the command's old name, kept as an alias of
    ``agent-benchmarks leak-audit``."""
    return leak_audit_command(list(sys.argv[1:] if argv is None else argv))
