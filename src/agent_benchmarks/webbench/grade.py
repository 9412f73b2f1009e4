"""``webbench-grade``: the text-only LLM judge over a predictions file.

``--judge-protocol`` picks how the rows are judged (``scoring/llm_judge/protocol.py``):
``upstream`` (the default) is upstream's judge, under which every row handed to the grader
is judged, an empty answer included (it counts as NO unless the judge says YES), and a
failed call is INVALID; ``strict`` is ours, under which a row with no answer is not sent
(it cannot be right) and is counted as unanswered, and a row whose calls all fail is a
judge_error.
Verdicts are cached in the run folder per protocol, so grading again makes no call.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from agent_benchmarks.cli import grade_command, non_negative_int, positive_float, positive_int
from agent_benchmarks.errors import InputError
from agent_benchmarks.records import PredictionRow, TaskScore
from agent_benchmarks.scoring.llm_judge import (
    CACHE_FILE_NAME,
    DEFAULT_PROTOCOL,
    PROTOCOL_NAMES,
    PROTOCOLS,
    JudgeConfig,
    JudgeConfigError,
    JudgeResult,
    get_protocol,
    judge_info,
    judge_rows,
    judge_summary,
    missing_judge_key,
)
from agent_benchmarks.scoring.llm_judge.upstream_prompt import has_unshown_outputs
from agent_benchmarks.scoring.scorecard import Grade


class WebBenchGrader:
    suite = "webbench"
    needs_gold = False
    group_fields = ("difficulty", "web_name")
    pays_per_row = True  # the file is checked whole before the first judge call

    def __init__(self, config: JudgeConfig, cache_path: Path):
        self.config = config
        self.protocol = get_protocol(config.protocol)
        self.cache_path = cache_path
        self.results: list[JudgeResult] = []  # every batch's, in order
        self.unshown_outputs = 0
        self.n_judged = 0

    def readiness_problem(self) -> str | None:
        """The judge's missing API key, named, before any row is judged."""
        try:
            missing = missing_judge_key(self.config)
        except JudgeConfigError as exc:
            raise InputError(f"judge: {exc}") from None
        return None if missing is None else f"the {self.config.model} judge, which needs {missing}"

    def warnings(self) -> list[str]:
        """Once every row is judged: rows whose page text the upstream judge never saw."""
        if not self.unshown_outputs:
            return []
        return [
            f"{self.unshown_outputs} of {self.n_judged} row(s) read pages only with tools the "
            "upstream judge protocol does not show (it shows Lightpanda's markdown, extract, "
            "tree, interactiveElements and structuredData): the judge sees no page text for "
            "them; --judge-protocol strict shows every page-reading tool"
        ]

    def info(self) -> dict[str, Any]:
        info = {**judge_info(self.config), "judged": judge_summary(self.results)}
        if self.protocol.name == "upstream":
            info["n_rows_page_text_not_shown"] = self.unshown_outputs
        return info

    def grade(self, rows: Sequence[PredictionRow]) -> list[Grade]:
        """Judge one batch of rows (the scorecard hands a long run over in several)."""
        console = Console(stderr=True)
        judged = [
            r for r in rows if self.protocol.judges_empty_answers or (r.prediction or "").strip()
        ]
        if self.protocol.name == "upstream":
            self.unshown_outputs += sum(has_unshown_outputs(r.trace, r.start_url) for r in judged)
            self.n_judged += len(judged)
        done = len(self.results)
        with Progress(
            "judging",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            bar = progress.add_task("judge", total=done + len(judged), completed=done)
            try:
                results = judge_rows(
                    judged,
                    self.config,
                    self.cache_path,
                    progress=lambda result: progress.advance(bar),
                )
            except JudgeConfigError as exc:
                raise InputError(f"judge: {exc}") from None
        self.results.extend(results)
        by_row = dict(zip((id(r) for r in judged), results, strict=True))
        grades = []
        for row in rows:
            result = by_row.get(id(row))
            if result is None:
                grades.append(Grade(0.0, False, {"verdict": None, "not_judged": "no answer"}))
                continue
            details: dict[str, Any] = {
                "verdict": result.verdict,
                "reasoning": result.reasoning,
                "cached": result.cached,
            }
            if not (row.prediction or "").strip():
                details["empty_answer"] = True
            if result.verdict in ("INVALID", "judge_error"):
                details["judge_problem"] = result.error
                details["judge_raw"] = result.raw
            yes = result.verdict == "YES"
            grades.append(Grade(1.0 if yes else 0.0, yes, details))
        return grades

    def metrics(self, entries: Sequence[TaskScore]) -> dict[str, Any]:
        verdicts = [e.details.get("verdict") for e in entries]
        yes, no = verdicts.count("YES"), verdicts.count("NO")
        with_row = [e for e in entries if e.error_class != "missing_row"]
        return {
            "n_yes": yes,
            "n_no": no,
            "n_invalid": verdicts.count("INVALID"),
            "n_judge_error": verdicts.count("judge_error"),
            "n_unanswered": sum(1 for e in entries if e.details.get("not_judged")),
            "n_empty_judged": sum(1 for e in entries if e.details.get("empty_answer")),
            # Share of YES among clean verdicts: INVALID and judge errors are left out.
            "accuracy_judged": yes / (yes + no) if yes + no else 0.0,
            # Upstream's accuracy: YES over the rows in the file (tasks without a row left
            # out); INVALID, unjudged rows and failures all count against.
            "accuracy_over_rows": yes / len(with_row) if with_row else 0.0,
        }


def add_judge_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("judge")
    group.add_argument(
        "--judge-protocol",
        choices=PROTOCOL_NAMES,
        default=DEFAULT_PROTOCOL,
        help="upstream: upstream's judge (its model, prompt, tools shown, verdict reading and "
        "call settings; empty answers judged; one call per row); strict: this project's "
        "stricter judge (default: %(default)s)",
    )
    group.add_argument(
        "--judge-model",
        help="claude-* (Anthropic), gemini-* or models/gemini-* (Google) or any model of an "
        "OpenAI-compatible endpoint given with --judge-base-url (default: the protocol's, "
        + ", ".join(f"{name} {p.default_model}" for name, p in PROTOCOLS.items())
        + ")",
    )
    group.add_argument(
        "--judge-provider", choices=("anthropic", "google", "openai"), help="override inference"
    )
    group.add_argument("--judge-base-url", help="endpoint of the judge's API")
    group.add_argument(
        "--judge-workers",
        type=non_negative_int,
        default=4,
        help="concurrent calls; 0 or 1 judges one row after another (default: %(default)s)",
    )
    group.add_argument(
        "--judge-timeout",
        type=positive_float,
        help="seconds per judge request (default: the protocol's, "
        + ", ".join(f"{name} {p.call.timeout_s:g}" for name, p in PROTOCOLS.items())
        + ")",
    )
    group.add_argument(
        "--judge-max-attempts",
        type=positive_int,
        help="strict protocol: calls per row before it is a judge_error (default: 5)",
    )
    group.add_argument(
        "--judge-backoff",
        type=positive_float,
        help="strict protocol: first retry wait in seconds, doubling after; retry-after wins "
        "(default: 1)",
    )
    group.add_argument(
        "--no-cache", action="store_true", help="call the judge even for cached verdicts"
    )


_RETRY_FLAGS = (
    ("judge_max_attempts", "--judge-max-attempts"),
    ("judge_backoff", "--judge-backoff"),
)


def judge_config(args: argparse.Namespace) -> JudgeConfig:
    """The judge configuration the :func:`add_judge_args` flags describe; InputError naming
    the flag when they do not fit together."""
    protocol = get_protocol(args.judge_protocol)
    if protocol.call.max_attempts == 1:
        for attribute, flag in _RETRY_FLAGS:
            if getattr(args, attribute) is not None:
                raise InputError(
                    f"{flag}: the {protocol.name} judge protocol makes one call per row (a "
                    "failed call is INVALID, as upstream); retries belong to "
                    "--judge-protocol strict"
                )
    settings: dict[str, Any] = {}
    if args.judge_backoff is not None:
        settings["backoff_base_s"] = args.judge_backoff
    try:
        return JudgeConfig(
            model=args.judge_model or protocol.default_model,
            protocol=protocol.name,
            provider=args.judge_provider,
            base_url=args.judge_base_url,
            workers=args.judge_workers,
            timeout_s=args.judge_timeout,
            max_attempts=args.judge_max_attempts,
            no_cache=args.no_cache,
            **settings,
        )
    except ValidationError as exc:
        raise InputError(f"judge settings: {exc.errors()[0]['msg']}") from None


def make_grader(args: argparse.Namespace, predictions: Path) -> WebBenchGrader:
    return WebBenchGrader(judge_config(args), predictions.parent / CACHE_FILE_NAME)


main = grade_command("webbench", make_grader, add_judge_args)
