"""Command-line plumbing shared by every console script (the ``agent-benchmarks`` tool itself
is :mod:`agent_benchmarks.__main__`, the top of the package: nothing imports it).

Every command goes through :func:`entry`, which turns an :class:`InputError` into one line
on stderr and exit status 2, so bad input never ends in a traceback.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from agent_benchmarks.datasets import (
    ALL_PER_SITE,
    LoadedDataset,
    Selection,
    load_tasks,
    select_tasks,
)
from agent_benchmarks.errors import InputError
from agent_benchmarks.records import Scores, Task
from agent_benchmarks.scoring.scorecard import Grader, grade_file, print_summary
from agent_benchmarks.suite import SuiteDef, get_suite

Main = Callable[[Sequence[str] | None], int]


def entry(func: Main) -> Main:
    @functools.wraps(func)
    def wrapper(argv: Sequence[str] | None = None) -> int:
        try:
            return func(argv)
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130

    return wrapper


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected 1 or more, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {value}")
    return value


def task_id_list(text: str) -> list[str]:
    ids = [part.strip() for part in text.split(",")]
    if not ids or any(not i for i in ids):
        raise argparse.ArgumentTypeError(f"expected ID,ID,... with no empty id, got {text!r}")
    return ids


def per_site_count(text: str) -> int | str:
    """``--sample-per-site``: a whole number 0 or more (0 selects none, as upstream's), or
    ``all`` (every task, no draw)."""
    if text.strip().lower() == ALL_PER_SITE:
        return ALL_PER_SITE
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number 0 or more, or {ALL_PER_SITE}, got {text!r}"
        ) from None


def gaia_level(text: str) -> int | None:
    if text == "all":
        return None
    if text in ("1", "2", "3"):
        return int(text)
    raise argparse.ArgumentTypeError(f"expected 1, 2, 3 or all, got {text!r}")


def add_dataset_args(parser: argparse.ArgumentParser, suite: SuiteDef) -> None:
    group = parser.add_argument_group("dataset and selection")
    group.add_argument(
        "--dataset-file",
        type=Path,
        help="a local copy in the dataset's own schema (.jsonl, .parquet or .csv): no Hub access",
    )
    if suite.dataset is not None:
        group.add_argument(
            "--split",
            choices=suite.dataset.splits,
            default=suite.dataset.default_split,
            help="dataset split (default: %(default)s)",
        )
        group.add_argument("--revision", help="Hub revision (commit, tag or branch) to load")
    group.add_argument("--limit", type=positive_int, help="run at most N tasks (after selection)")
    group.add_argument("--task-ids", type=task_id_list, help="exactly these tasks: ID,ID,...")
    if "level" in suite.selection_flags:
        group.add_argument(
            "--level", type=gaia_level, default=1, help="GAIA level 1, 2, 3 or all (default: 1)"
        )
    if "skip_attachments" in suite.selection_flags:
        group.add_argument(
            "--skip-attachments", action="store_true", help="leave out tasks with attachments"
        )
    if "site" in suite.selection_flags:
        group.add_argument(
            "--site",
            help="only this site, its name exactly: the start URL's host, lowercased, "
            "without www. (e.g. allrecipes.com)",
        )
        group.add_argument(
            "--sample-per-site",
            type=per_site_count,
            default=None,
            metavar="N|all",
            help="tasks drawn per site, by upstream's draw: the same seed selects the same "
            "tasks (default: 1; 0 selects none, as upstream's, so it is refused; all: every "
            "task, no draw)",
        )
        group.add_argument(
            "--sample-seed", type=int, default=0, help="seed of the per-site draw (default: 0)"
        )


# ``--resume`` given without a folder: the run folder is ``--out-dir``'s.
RESUME_OUT_DIR = Path("<--out-dir>")


def add_run_args(parser: argparse.ArgumentParser) -> None:
    """Flags every runner shares. Flags that define a run default to None here, so a
    ``--resume`` can tell a flag the user typed from one left alone."""
    group = parser.add_argument_group("run")
    group.add_argument("--provider", help="model provider (anthropic, gemini, openai, ...)")
    group.add_argument("--model", help="model id")
    group.add_argument("--workers", type=positive_int, default=1, help="tasks at once")
    group.add_argument(
        "--timeout",
        type=positive_float,
        help="wall-clock seconds per task (default: per runner: native and chat 300, "
        "Claude Code + MCP 600, localweb its own shorter one)",
    )
    group.add_argument(
        "--repeat", type=positive_int, help="run every task K times (pass@k, variance)"
    )
    group.add_argument(
        "--memory-max-mb",
        type=non_negative_int,
        help="memory cap per task in MB, 0 for none (default: per runner, the native runner "
        "6000; a cgroup with no swap where one can be made, else RLIMIT_DATA)",
    )
    group.add_argument(
        "--user-agent",
        metavar="UA",
        help="the browser's User-Agent (native: lightpanda --user-agent; agent-browser chat: "
        'AGENT_BROWSER_USER_AGENT; Lightpanda refuses any value containing "Mozilla")',
    )
    group.add_argument("--out-dir", type=Path, help="run folder (default: results/<suite>/<UTC>)")
    group.add_argument(
        "--resume",
        nargs="?",
        type=Path,
        const=RESUME_OUT_DIR,
        metavar="RUN_DIR",
        help="continue a run folder: --resume RUN_DIR, or --resume with --out-dir RUN_DIR "
        "(the run's own flags may be given again with the same values)",
    )
    group.add_argument(
        "--no-retry-errors",
        action="store_true",
        help="on --resume, keep timeout/error rows instead of retrying them",
    )


def selection_from_args(args: argparse.Namespace) -> Selection:
    fields = {
        "task_ids": getattr(args, "task_ids", None),
        "limit": getattr(args, "limit", None),
        "level": getattr(args, "level", None),
        "skip_attachments": getattr(args, "skip_attachments", False),
        "site": getattr(args, "site", None),
        "sample_per_site": getattr(args, "sample_per_site", None),
        "sample_seed": getattr(args, "sample_seed", 0),
    }
    recorded = {k: v for k, v in fields.items() if v not in (None, False)}
    return Selection(**fields, as_dict=recorded)


def load_selected(suite: SuiteDef, args: argparse.Namespace) -> tuple[LoadedDataset, list[Task]]:
    """Load the suite's dataset as the flags say and apply the selection."""
    if suite.bundled is not None:
        if args.dataset_file is not None:
            raise InputError(f"--dataset-file: {suite.name} bundles its own tasks")
        loaded = suite.bundled()
        return loaded, select_tasks(loaded.tasks, selection_from_args(args))
    assert suite.dataset is not None
    config = None
    if "level" in suite.selection_flags:
        config = "2023_all" if args.level is None else f"2023_level{args.level}"
    loaded = load_tasks(
        suite.dataset,
        split=args.split,
        dataset_file=args.dataset_file,
        config=config,
        revision=args.revision,
    )
    selection = selection_from_args(args)
    tasks = select_tasks(loaded.tasks, selection, suite.dataset.default_per_site)
    return loaded, tasks


@dataclass(frozen=True)
class GradeCommand:
    """``<suite>-grade PREDICTIONS [--out PATH] [--json]``: write scores.json and report it.

    A suite's grade module builds one with :func:`grade_command`; it is that suite's
    console script, and the run commands use it to grade at the end of a run (its flags,
    its grader, its report).
    """

    suite_name: str
    make_grader: Callable[[argparse.Namespace, Path], Grader]
    add_args: Callable[[argparse.ArgumentParser], None] | None = None

    def add_grading_args(self, parser: argparse.ArgumentParser) -> None:
        """The flags the suite's grader takes (WebBench: the judge's), if any."""
        if self.add_args is not None:
            self.add_args(parser)

    def __call__(self, argv: Sequence[str] | None = None) -> int:
        return entry(self._main)(argv)

    def _main(self, argv: Sequence[str] | None) -> int:
        suite = get_suite(self.suite_name)
        parser = argparse.ArgumentParser(
            prog=f"{self.suite_name}-grade",
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
        self.add_grading_args(parser)
        args = parser.parse_args(argv)
        predictions = args.predictions
        if predictions.is_dir():
            predictions = predictions / "predictions.jsonl"
        self.grade(
            self.make_grader(args, predictions), predictions, out=args.out, as_json=args.json
        )
        return 0

    def grade(
        self, grader: Grader, predictions: Path, out: Path | None = None, as_json: bool = False
    ) -> Scores:
        """Grade, write scores.json, and report: the tables on stdout, or with ``as_json``
        the summary as JSON on stdout and the rest on stderr."""
        scores, written = grade_file(predictions, grader, out=out)
        if as_json:
            stderr = Console(stderr=True, soft_wrap=True)
            for warning in scores.warnings:
                stderr.print(f"[yellow]warning:[/] {warning}")
            stderr.print(f"wrote {written}")
            print(summary_json(scores))
            return scores
        console = Console(soft_wrap=True)
        print_summary(scores, written, console)
        print_details = getattr(grader, "print_details", None)
        if print_details is not None:
            print_details(scores, console)
        return scores


def summary_json(scores: Scores) -> str:
    """What ``--json`` prints: the whole scores.json record but its per-attempt lists (the
    official one and the upstream view's)."""
    return scores.model_dump_json(
        indent=2, exclude={"per_task": True, "upstream_view": {"per_task"}}
    )


def grade_command(
    suite_name: str,
    make_grader: Callable[[argparse.Namespace, Path], Grader],
    add_args: Callable[[argparse.ArgumentParser], None] | None = None,
) -> GradeCommand:
    """A suite's ``<suite>-grade`` console script."""
    return GradeCommand(suite_name, make_grader, add_args)
