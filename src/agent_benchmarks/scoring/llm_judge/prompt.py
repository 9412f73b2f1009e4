"""The ``strict`` judge protocol's prompt, and how its two-line reply is parsed.

The judge is shown what a person checking the run would read, as text only (no
screenshots): the task and start URL, the URLs the agent visited in order, the last
:data:`MAX_PAGE_OUTPUTS` page-reading tool outputs (each cut to :data:`MAX_OUTPUT_CHARS`
characters and labelled with its page URL and tool name), the agent's answer and, when the
task has one, a reference answer.

Visited URLs
    Walking the trace in order, each call contributes first the URL argument of a
    navigation tool (see :func:`is_navigation_tool`; argument keys containing ``url``, or
    ``href``/``uri``/``link``), then its ``page_url``. Consecutive repeats are collapsed, so
    ``goto(url=X)`` landing on X appears once and a redirect X -> Y shows both. Only the last
    :data:`MAX_VISITED_URLS` are shown, with a count of those left out.

Page-reading calls (:func:`page_reading_calls`)
    A call is page-reading when its ``output`` is a non-blank string and its tool name is a
    read tool (:func:`is_read_tool`): the name, with any namespace prefix removed
    (``mcp__server__x``, ``server.x``, ``server/x``, ``server:x``), split into lowercase
    words at camelCase humps, digits, ``_``, ``-`` and spaces, contains one of
    :data:`READ_WORDS` (markdown, html, tree, snapshot, get, text, extract, links, read,
    structured, interactive, evaluate, fetch, ...). Actions (click, fill, goto, scroll, ...)
    are left out even when they return text: their output is an acknowledgement, and it
    would push real page content out of the window. Fallback: when no call in the trace has
    a read-tool name, every call with non-blank output counts, so a backend with unfamiliar
    tool names does not leave the judge blind.

Reply format (:func:`parse_verdict`)
    The judge must answer in exactly two lines::

        VERDICT: YES
        REASONING: one or two sentences

    Tolerated: whitespace around the reply and around each line, blank lines (they are
    dropped), ``\\r\\n`` line ends, any letter case in the labels and in YES/NO, and any
    spacing around the colon. Not tolerated (the reply is ``INVALID``): any other non-blank
    line (prose before or after, a code fence), markdown around the label (``**VERDICT:**``),
    anything after YES/NO on the verdict line (``YES.``, ``YES - because``), the lines in the
    other order, and an empty reasoning. ``INVALID`` is counted apart from ``NO``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Literal

from agent_benchmarks.records.schema import PredictionRow, ToolCall

# The strict prompt's label from before there were two protocols, kept in its hash material
# so that its prompt hash stays what earlier scores.json files recorded.
PROMPT_VARIANT = "webbench-text-only"
MAX_PAGE_OUTPUTS = 8
MAX_OUTPUT_CHARS = 2_000
MAX_VISITED_URLS = 40

# Words that make a tool a read tool (see the module docstring).
READ_WORDS: frozenset[str] = frozenset(
    {
        "markdown",
        "html",
        "tree",
        "snapshot",
        "get",
        "text",
        "extract",
        "links",
        "read",
        "structured",
        "interactive",
        "evaluate",
        "eval",
        "fetch",
        "content",
        "scrape",
        "accessibility",
    }
)
# Substrings of the compact tool name (lowercase, letters and digits only) that make a tool
# a navigation tool, whose URL argument counts as a visited URL.
NAVIGATION_MARKERS: tuple[str, ...] = ("goto", "navigate", "open", "visit", "fetch", "newtab")
_URL_ARG_KEYS = frozenset({"href", "uri", "link"})

TEMPLATE = """\
You are checking whether a web-browsing agent completed a task. You cannot open the pages \
yourself: judge only from the record below, which is what a person checking the run would \
read (text only, no screenshots).

TASK:
{task}

START URL: {start_url}

URLS THE AGENT VISITED, IN ORDER:
{visited_urls}

WHAT THE AGENT READ (its last page-reading tool outputs, oldest first, each cut to \
{max_output_chars} characters):
{page_outputs}

THE AGENT'S FINAL ANSWER:
{answer}
{reference_block}
Decide whether the agent completed the task. The final answer must respond to what the task \
asks and be supported by what the agent read; for a task that asks it to do something on the \
site, the record must show that it was done. If the answer is missing, unsupported by the \
record, contradicted by the pages, or does only part of the task, the verdict is NO.

Reply in exactly two lines and nothing else:
VERDICT: YES or NO
REASONING: one or two sentences saying why"""

REFERENCE_TEMPLATE = """
REFERENCE ANSWER (from the benchmark; the agent's answer need not use its wording, but must \
agree with it):
{reference}
"""

OUTPUT_LABEL = "--- [{index}/{count}] {tool} on {page} ---"
TRUNCATION_NOTE = "[... cut: {total} characters in all]"
NOTHING = "(none)"
NO_ANSWER = "(the agent gave no answer)"


def _hash_material() -> str:
    # Everything that shapes the prompt besides the row itself, so changing any of it
    # (the wording, the limits, the tool rules) changes the hash.
    return json.dumps(
        {
            "variant": PROMPT_VARIANT,
            "template": TEMPLATE,
            "reference_template": REFERENCE_TEMPLATE,
            "output_label": OUTPUT_LABEL,
            "truncation_note": TRUNCATION_NOTE,
            "nothing": NOTHING,
            "no_answer": NO_ANSWER,
            "max_page_outputs": MAX_PAGE_OUTPUTS,
            "max_output_chars": MAX_OUTPUT_CHARS,
            "max_visited_urls": MAX_VISITED_URLS,
            "read_words": sorted(READ_WORDS),
            "navigation_markers": list(NAVIGATION_MARKERS),
        },
        sort_keys=True,
    )


def prompt_hash() -> str:
    """sha256 (hex) of the template text and the limits and tool rules that fill it."""
    return hashlib.sha256(_hash_material().encode("utf-8")).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- tool names -----------------------------------------------------------------------------

_PREFIX_SPLIT = re.compile(r"__|[./:]")
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _base_name(name: str) -> str:
    parts = [p for p in _PREFIX_SPLIT.split(name.strip()) if p.strip()]
    return parts[-1] if parts else ""


def tool_words(name: str) -> list[str]:
    """The lowercase words of a tool name without its namespace prefix.

    ``mcp__lightpanda__structuredData`` -> ``["structured", "data"]``,
    ``browser.get_text`` -> ``["get", "text"]``, ``WebFetch`` -> ``["web", "fetch"]``.
    """
    return [w.lower() for w in _WORD.findall(_base_name(name))]


def is_read_tool(name: str) -> bool:
    return any(word in READ_WORDS for word in tool_words(name))


def is_navigation_tool(name: str) -> bool:
    compact = re.sub(r"[^a-z0-9]", "", _base_name(name).lower())
    return any(marker in compact for marker in NAVIGATION_MARKERS)


def _has_output(call: ToolCall) -> bool:
    return isinstance(call.output, str) and bool(call.output.strip())


def page_reading_calls(trace: list[ToolCall]) -> list[ToolCall]:
    """Every page-reading call of a trace, in order (the rule is in the module docstring)."""
    with_output = [call for call in trace if _has_output(call)]
    named = [call for call in with_output if is_read_tool(call.name)]
    return named if named else with_output


def _url_args(call: ToolCall) -> list[str]:
    urls = []
    for key, value in call.args.items():
        lowered = key.lower()
        is_url_key = "url" in lowered or lowered in _URL_ARG_KEYS
        if is_url_key and isinstance(value, str) and value.strip():
            urls.append(value.strip())
    return urls


def visited_urls(trace: list[ToolCall]) -> list[str]:
    """The URLs the agent went to, in order, consecutive repeats collapsed."""
    urls: list[str] = []

    def add(url: str | None) -> None:
        if url and url.strip() and (not urls or urls[-1] != url.strip()):
            urls.append(url.strip())

    for call in trace:
        if is_navigation_tool(call.name):
            for url in _url_args(call):
                add(url)
        add(call.page_url)
    return urls


# --- rendering ------------------------------------------------------------------------------


def _render_urls(urls: list[str]) -> str:
    if not urls:
        return NOTHING
    shown = urls[-MAX_VISITED_URLS:]
    lines = [f"{i}. {url}" for i, url in enumerate(shown, start=len(urls) - len(shown) + 1)]
    if len(shown) < len(urls):
        lines.insert(0, f"({len(urls) - len(shown)} earlier URLs left out)")
    return "\n".join(lines)


def _cut(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + "\n" + TRUNCATION_NOTE.format(total=len(text))


def _render_outputs(trace: list[ToolCall]) -> str:
    calls = page_reading_calls(trace)
    if not calls:
        return NOTHING
    shown = calls[-MAX_PAGE_OUTPUTS:]
    blocks = []
    if len(shown) < len(calls):
        blocks.append(f"({len(calls) - len(shown)} earlier page outputs left out)")
    for index, call in enumerate(shown, start=1):
        label = OUTPUT_LABEL.format(
            index=index,
            count=len(shown),
            tool=call.name,
            page=call.page_url or "an unknown page",
        )
        blocks.append(f"{label}\n{_cut(call.output or '')}")
    return "\n\n".join(blocks)


def build_prompt(row: PredictionRow, reference: str | None = None) -> str:
    """The full judge prompt for one prediction row.

    ``reference`` is the task's reference answer; blank or None leaves the reference section
    out entirely.
    """
    answer = row.prediction if row.prediction and row.prediction.strip() else NO_ANSWER
    reference_block = (
        REFERENCE_TEMPLATE.format(reference=reference.strip())
        if reference and reference.strip()
        else ""
    )
    return TEMPLATE.format(
        task=row.task.strip(),
        start_url=row.start_url or NOTHING,
        visited_urls=_render_urls(visited_urls(row.trace)),
        max_output_chars=MAX_OUTPUT_CHARS,
        page_outputs=_render_outputs(row.trace),
        answer=answer.strip(),
        reference_block=reference_block,
    )


# --- the reply ------------------------------------------------------------------------------

ParsedVerdictValue = Literal["YES", "NO", "INVALID"]
_VERDICT_LINE = re.compile(r"verdict\s*:\s*(yes|no)", re.IGNORECASE)
_REASONING_LINE = re.compile(r"reasoning\s*:\s*(.*)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class ParsedVerdict:
    verdict: ParsedVerdictValue
    reasoning: str
    problem: str | None = None  # why the reply is INVALID


def parse_verdict(text: str | None) -> ParsedVerdict:
    """Parse the judge's reply by the rule in the module docstring."""
    if text is None or not text.strip():
        return ParsedVerdict("INVALID", "", "empty reply")
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    lines = [line for line in lines if line]
    if len(lines) != 2:
        return ParsedVerdict("INVALID", "", f"expected 2 non-blank lines, got {len(lines)}")
    verdict_match = _VERDICT_LINE.fullmatch(lines[0])
    if verdict_match is None:
        return ParsedVerdict("INVALID", "", "first line is not 'VERDICT: YES' or 'VERDICT: NO'")
    reasoning_match = _REASONING_LINE.fullmatch(lines[1])
    if reasoning_match is None:
        return ParsedVerdict("INVALID", "", "second line does not start with 'REASONING:'")
    reasoning = reasoning_match.group(1).strip()
    if not reasoning:
        return ParsedVerdict("INVALID", "", "empty reasoning")
    verdict: ParsedVerdictValue = "YES" if verdict_match.group(1).upper() == "YES" else "NO"
    return ParsedVerdict(verdict, reasoning)
