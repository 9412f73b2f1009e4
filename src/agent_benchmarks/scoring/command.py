"""``<suite>-grade PREDICTIONS [--out PATH] [--json]``: write scores.json and report it.

Grading never re-runs an agent: the predictions file is only read. The suite's grader is
the one its run commands end with, with the same options (WebBench: the judge's).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agent_benchmarks.scoring.graders import make_grader
from agent_benchmarks.spec.args import Main, add_options_args, entry, options_values
from agent_benchmarks.spec.suites import grading_options, suite_def


def grade_main(suite_name: str) -> Main:
    """The console script grading ``suite_name``'s predictions."""

    @entry
    def main(argv: Sequence[str] | None = None) -> int:
        argv = list(sys.argv[1:] if argv is None else argv)
        suite = suite_def(suite_name)
        parser = argparse.ArgumentParser(
            prog=f"{suite.name}-grade",
            description=f"Grade a {suite.title} predictions.jsonl into scores.json "
            "(never re-runs an agent; the predictions file is only read).",
        )
        parser.add_argument("predictions", type=Path, help="a run's predictions.jsonl")
        parser.add_argument(
            "--out", type=Path, help="where to write scores.json (default: beside predictions)"
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the summary as JSON on stdout (scores.json without per_task); "
            "everything else goes to stderr",
        )
        options = grading_options(suite)
        add_options_args(parser, options, "grading")
        args = parser.parse_args(argv)
        predictions = args.predictions
        if predictions.is_dir():
            predictions = predictions / "predictions.jsonl"
        grader = make_grader(suite, options_values(options, args), predictions)
        # Imported once the arguments are read: scores.json's writer and its tables (rich)
        # are most of the command's start-up, and --help needs neither.
        from agent_benchmarks.scoring.scorecard import grade_and_report

        grade_and_report(grader, predictions, out=args.out, as_json=args.json)
        return 0

    main.__name__ = f"{suite_name}_grade"
    return main
