"""The leak audit: did an agent reach the benchmark's answers instead of finding them?

Every tool call of every row is checked, the page it was on (``page_url``) and every string
in its arguments (a URL to open, a script, a path), against:

- mirrors: the suite's answer sources (Hugging Face dataset and Space pages, the dataset
  server, the suite's known copies and leaderboards; ``SuiteDef.answer_sources``, the
  patterns ``--block-answer-sources`` blocks);
- local dataset caches: the Hugging Face cache on disk (``~/.cache/huggingface``, a
  ``datasets--<owner>--<name>`` snapshot folder);
- the task's id, which has no business in a URL or an argument: a search for it finds the
  dataset. Only distinctive ids are searched for (at least 12 characters, letters and
  digits both, like GAIA's UUIDs): WebBench's numeric ids and localweb's word ids would
  match ordinary pages (localweb's own site even puts the id in its paths). The task's
  attachment name is removed first, since GAIA names attachments after the task.

A blocked visit is still flagged: the audit reports what the agent tried, and the reader
sees the call's status. Accuracy is then recomputed with flagged attempts counted wrong.
Tool outputs are not searched: a page of search results may mention a mirror without the
agent using it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from functools import cache
from typing import Any

from agent_benchmarks.records.schema import PredictionRow
from agent_benchmarks.report.schema import LeakHit
from agent_benchmarks.spec.suites import get_suite, suite_names

LOCAL_CACHE_PATTERNS = (
    "*/.cache/huggingface/*",
    "*/huggingface/hub/*",
    "*/huggingface/datasets/*",
    "*datasets--*--*",
)
MIN_DISTINCTIVE_ID = 12
MAX_VALUE_CHARS = 200
_HAS_LETTER = re.compile(r"[a-z]", re.IGNORECASE)
_HAS_DIGIT = re.compile(r"\d")


def mirror_patterns(suite: str) -> tuple[str, ...]:
    return get_suite(suite).answer_sources if suite in suite_names() else ()


def distinctive(task_id: str) -> bool:
    return (
        len(task_id) >= MIN_DISTINCTIVE_ID
        and bool(_HAS_LETTER.search(task_id))
        and bool(_HAS_DIGIT.search(task_id))
    )


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside an argument value, with where it sits (args.url, args.steps.0)."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}.{index}")


def _short(text: str) -> str:
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def _required_piece(pattern: str) -> str:
    """A piece of text every match of ``pattern`` contains: its longest literal run (none,
    so always tried, for a pattern with a character class)."""
    return "" if "[" in pattern else max(re.split(r"[*?]", pattern), key=len)


@cache
def _checks(mirrors: tuple[str, ...]) -> tuple[list[tuple[str, str]], re.Pattern[str]]:
    """The (kind, pattern) pairs, in the order a hit names its pattern, and a search for
    the pieces a value must contain to match any of them: a run's calls number in the
    millions and almost none match, so a value without any piece is not matched pattern by
    pattern."""
    checks = [("mirror", p.lower()) for p in mirrors]
    checks += [("local_cache", p.lower()) for p in LOCAL_CACHE_PATTERNS]
    pieces = [_required_piece(p) for _, p in checks]
    # No pattern: nothing can match ("(?!)"); an empty piece: everything may.
    return checks, re.compile("|".join(map(re.escape, pieces)) if pieces else "(?!)")


def row_hits(row: PredictionRow, mirrors: tuple[str, ...]) -> list[LeakHit]:
    hits: list[LeakHit] = []
    task_id = row.id.lower() if distinctive(row.id) else None
    attachment = (row.file_name or "").lower()
    checks, may_match = _checks(mirrors)
    for index, call in enumerate(row.trace):
        fields = [("page_url", call.page_url)] if call.page_url else []
        fields += list(_strings(call.args, "args"))
        for field, value in fields:
            lowered = value.lower()
            matched = (
                next(((k, p) for k, p in checks if fnmatchcase(lowered, p)), None)
                if may_match.search(lowered)
                else None
            )
            if matched is not None:
                hits.append(_hit(row, index, call.name, field, value, *matched))
            elif task_id and task_id in (
                lowered.replace(attachment, "") if attachment else lowered
            ):
                hits.append(_hit(row, index, call.name, field, value, "task_id", row.id))
    return hits


def _hit(
    row: PredictionRow, index: int, tool: str, field: str, value: str, kind: str, pattern: str
) -> LeakHit:
    return LeakHit(
        task_id=row.id,
        attempt=row.attempt,
        call_index=index,
        tool=tool,
        field=field,
        value=_short(value),
        kind=kind,  # type: ignore[arg-type]
        pattern=pattern,
    )
