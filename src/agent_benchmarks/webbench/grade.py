"""``webbench-grade``: the text-only LLM judge over a predictions file.

``--judge-protocol`` picks how the rows are judged (``scoring/llm_judge/protocol.py``):
``upstream`` (the default) is upstream's judge, under which every row handed to the grader
is judged, an empty answer included (it counts as NO unless the judge says YES), and a
failed call is INVALID; ``strict`` is ours, under which a row with no answer is not sent
(it cannot be right) and is counted as unanswered, and a row whose calls all fail is a
judge_error.
Verdicts are cached in the run folder per protocol, so grading again makes no call.

The upstream-comparable view: WebBench has no matching upstream (an LLM judge decides),
so its view takes the official judge's verdicts as they are, counted as upstream's summary
counts them (:func:`_webbench_metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import PredictionRow, TaskScore
from agent_benchmarks.scoring.command import grade_main
from agent_benchmarks.scoring.grades import Grade
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
from agent_benchmarks.scoring.upstream_view import Graded, UpstreamLayout
from agent_benchmarks.spec.run_spec import Options, option

# The official WebBench grader's verdicts that upstream's judge would count as invalid: a
# reply it cannot read, and (upstream retries nothing) a judge call that failed.
_INVALID_VERDICTS = frozenset({"INVALID", "judge_error"})


def _webbench_metrics(items: Sequence[Graded]) -> dict[str, Any]:
    yes = sum(1 for i in items if i.grade.correct)
    invalid = sum(1 for i in items if i.entry.details.get("verdict") in _INVALID_VERDICTS)
    return {
        "accuracy": yes / len(items) if items else 0.0,
        "yes": yes,
        # Upstream judges every row, an empty answer included, and such a row is a no.
        "no": len(items) - yes - invalid,
        "invalid": invalid,
    }


class WebBenchGrader:
    suite = "webbench"
    needs_gold = False
    group_fields = ("difficulty", "web_name")
    pays_per_row = True  # the file is checked whole before the first judge call
    upstream = UpstreamLayout("web_name", "by_site", "?", _webbench_metrics, False)

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


class JudgeOptions(Options):
    """The judge's settings: ``webbench-grade``'s flags, and ``webbench-run``'s for the grade
    it ends with."""

    judge_protocol: Literal["upstream", "strict"] = option(
        DEFAULT_PROTOCOL,
        help="upstream: upstream's judge (its model, prompt, tools shown, verdict reading and "
        "call settings; empty answers judged; one call per row); strict: this project's "
        f"stricter judge (default: {DEFAULT_PROTOCOL})",
        choices=PROTOCOL_NAMES,
    )
    judge_model: str | None = option(
        help="claude-* (Anthropic), gemini-* or models/gemini-* (Google) or any model of an "
        "OpenAI-compatible endpoint given with --judge-base-url (default: the protocol's, "
        + ", ".join(f"{name} {p.default_model}" for name, p in PROTOCOLS.items())
        + ")",
    )
    judge_provider: Literal["anthropic", "google", "openai"] | None = option(
        help="override inference"
    )
    judge_base_url: str | None = option(help="endpoint of the judge's API")
    judge_workers: int = option(
        4,
        help="concurrent calls; 0 or 1 judges one row after another (default: 4)",
        ge=0,
    )
    judge_timeout: float | None = option(
        help="seconds per judge request (default: the protocol's, "
        + ", ".join(f"{name} {p.call.timeout_s:g}" for name, p in PROTOCOLS.items())
        + ")",
        gt=0,
    )
    judge_max_attempts: int | None = option(
        help="strict protocol: calls per row before it is a judge_error (default: 5)", ge=1
    )
    judge_backoff: float | None = option(
        help="strict protocol: first retry wait in seconds, doubling after; retry-after wins "
        "(default: 1)",
        gt=0,
    )
    no_cache: bool = option(False, help="call the judge even for cached verdicts")


_RETRY_FIELDS = ("judge_max_attempts", "judge_backoff")


def judge_config(options: JudgeOptions) -> JudgeConfig:
    """The judge configuration the options describe; InputError naming the flag when they
    do not fit together."""
    protocol = get_protocol(options.judge_protocol)
    if protocol.call.max_attempts == 1:
        for name in _RETRY_FIELDS:
            if getattr(options, name) is not None:
                raise InputError(
                    f"{JudgeOptions.flag_of(name)}: the {protocol.name} judge protocol makes "
                    "one call per row (a failed call is INVALID, as upstream); retries belong "
                    "to --judge-protocol strict"
                )
    settings: dict[str, Any] = {}
    if options.judge_backoff is not None:
        settings["backoff_base_s"] = options.judge_backoff
    try:
        return JudgeConfig(
            model=options.judge_model or protocol.default_model,
            protocol=protocol.name,
            provider=options.judge_provider,
            base_url=options.judge_base_url,
            workers=options.judge_workers,
            timeout_s=options.judge_timeout,
            max_attempts=options.judge_max_attempts,
            no_cache=options.no_cache,
            **settings,
        )
    except ValidationError as exc:
        raise InputError(f"judge settings: {exc.errors()[0]['msg']}") from None


def make_grader(options: JudgeOptions, predictions: Path) -> WebBenchGrader:
    return WebBenchGrader(judge_config(options), predictions.parent / CACHE_FILE_NAME)


# The suite's -grade console script (pyproject.toml's [project.scripts]).
main = grade_main("webbench")
