"""The suites' graders, found through the registry (:mod:`agent_benchmarks.spec.suites`): nothing
here or in the reports names a suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_benchmarks.scoring.grades import Grader
from agent_benchmarks.spec.suites import SuiteDef, get_suite, grading_options, load_ref


def make_grader(suite: SuiteDef, values: dict[str, Any], predictions: Path) -> Grader:
    """The suite's grader with its options (WebBench: the judge's)."""
    options = grading_options(suite).parse(values, "grading")
    return load_ref(suite.grader)(options, predictions)


def free_grader(suite_name: str, predictions: Path) -> Grader | None:
    """The suite's grader when grading is free and asks no choice of the user: its grader
    takes no options. None for a suite whose grader does (WebBench's judge costs money and
    needs a judge model) or a suite no longer registered."""
    try:
        suite = get_suite(suite_name)
    except KeyError:
        return None
    if suite.grading_options is not None:
        return None
    return make_grader(suite, {}, predictions)
