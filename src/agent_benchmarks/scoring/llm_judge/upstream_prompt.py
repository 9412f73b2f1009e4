"""The ``upstream`` judge protocol's prompt and verdict reading, in this project's words.

It carries the protocol of lightpanda-io/agent-benchmarks' judge (``llm_judge.py`` there),
read for its behaviour; the wording here is ours.

System prompt (:data:`SYSTEM_PROMPT`)
    The judge is told it grades a text-only browser agent from excerpts of what its
    page-reading tools returned, in place of screenshots; what the message holds (the
    reference answer as a hint); a rule for YES (concrete facts found in excerpts read on
    fitting URLs, and confidence) and one for NO (vague, hedged or partial answers, facts no
    excerpt shows, error / cookie / access pages, giving up, unrelated URLs, a wrong
    result); and to reply ``VERDICT: YES|NO`` then one ``REASONING:`` line. The protocol is
    upstream's; the words and their order are this project's own.

User message (:func:`build_prompt`)
    The task with its site (``web_name``), the start URL, every ``goto`` URL in call order
    (repeats kept, as upstream), the last :data:`MAX_SNAPSHOTS` outputs of the tools in
    :data:`SNAPSHOT_TOOLS` (each cut at :data:`SNAPSHOT_MAX_CHARS` characters and labelled
    with its tool, its arguments and the page it was read on: the URL of the latest
    ``goto`` before it, the start URL before any), the answer (an empty answer is judged,
    marked as empty) and, when the task has one, the reference answer as a hint.

Tool names
    Only those five tools count as page reading, and only ``goto`` gives URLs, as in
    upstream's code. A Claude Code name (``mcp__<server>__<tool>``) is read as its tool
    (``mcp__lightpanda__markdown`` is Lightpanda's ``markdown``). Upstream maps no other
    stack's tools (its WebBench runs only the native agent), so agent-browser's
    ``snapshot``/``get`` and browser-use's ``browser_get_state`` are not shown: the strict
    protocol shows them.

Verdict (:func:`parse_verdict`)
    Upstream's rule: any line whose stripped text starts with ``VERDICT:`` (any case) and
    whose value starts with YES or NO sets the verdict (a later such line wins; so
    ``VERDICT: NOT SURE`` reads as NO, as upstream's prefix test does); the reasoning is
    the last ``REASONING:`` line's value, else the whole reply. No such line: INVALID.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agent_benchmarks.records.schema import PredictionRow, ToolCall
from agent_benchmarks.scoring.llm_judge.prompt import ParsedVerdict

MAX_SNAPSHOTS = 8
SNAPSHOT_MAX_CHARS = 2_000
# Lightpanda's page-reading tools whose outputs upstream shows its judge.
SNAPSHOT_TOOLS: frozenset[str] = frozenset(
    {"markdown", "extract", "tree", "interactiveElements", "structuredData"}
)
NAVIGATION_TOOL = "goto"
_MCP_PREFIX = "mcp__"

SYSTEM_PROMPT = """\
You grade the work of a browser agent. Its browser produces text only, so your evidence is \
what the agent's page-reading tools printed, not screenshots.

The message holds, in this order: the task and its site, the start URL, the URLs the agent \
opened, the most recent page excerpts it read (markdown, tree, extract, interactiveElements \
or structuredData outputs, shortened and possibly cut off), its final answer, and sometimes \
a reference answer. A reference answer is a hint towards one acceptable result; other \
results can be right too.

Rule for YES: the answer settles the task with concrete facts, and those facts can be found \
in the excerpts, read on pages whose URLs suit the task. Be confident before you say YES.

Rule for NO: anything less. That includes an answer that is vague, hedged or only partly \
done; names, numbers, prices, ratings or titles that appear in no excerpt; excerpts that are \
error pages, cookie walls or access denials; an agent that gave up; URLs that have nothing \
to do with the task; a wrong result.

Reply with two lines and nothing else:
VERDICT: YES or VERDICT: NO (there is no third choice)
REASONING: one sentence naming the excerpt or URL that decided it"""

USER_TEMPLATE = """\
TASK (site: {site}): {task}
START URL: {start_url}

URLS THE AGENT NAVIGATED TO, IN ORDER:
{urls}

PAGE EXCERPTS (the last {count} page-reading tool outputs, oldest first):
{snapshots}

THE AGENT'S ANSWER:
{answer}
{reference_block}"""
REFERENCE_TEMPLATE = """
REFERENCE ANSWER (a hint: one acceptable outcome among possibly several, not a string to \
match):
{reference}
"""
SNAPSHOT_LABEL = "[excerpt {index}] {tool}{args} on {page}"
CUT_NOTE = " [... cut]"
NO_URLS = "(no goto call was recorded)"
NO_SNAPSHOTS = (
    "(no page-reading tool output was recorded: the agent may have answered without reading "
    "any page)"
)
EMPTY_ANSWER = "(empty: the agent gave no answer)"
UNKNOWN = "(unknown)"


def hash_material() -> dict[str, Any]:
    """Everything besides the row that shapes what the judge is sent."""
    return {
        "protocol": "upstream",
        "system_prompt": SYSTEM_PROMPT,
        "user_template": USER_TEMPLATE,
        "reference_template": REFERENCE_TEMPLATE,
        "snapshot_label": SNAPSHOT_LABEL,
        "cut_note": CUT_NOTE,
        "no_urls": NO_URLS,
        "no_snapshots": NO_SNAPSHOTS,
        "empty_answer": EMPTY_ANSWER,
        "max_snapshots": MAX_SNAPSHOTS,
        "snapshot_max_chars": SNAPSHOT_MAX_CHARS,
        "snapshot_tools": sorted(SNAPSHOT_TOOLS),
        "navigation_tool": NAVIGATION_TOOL,
    }


def prompt_hash() -> str:
    material = json.dumps(hash_material(), sort_keys=True)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def tool_name(name: str) -> str:
    """The tool a trace entry names: Claude Code's ``mcp__<server>__<tool>`` is ``<tool>``."""
    if name.startswith(_MCP_PREFIX):
        server_and_tool = name[len(_MCP_PREFIX) :]
        if "__" in server_and_tool:
            return server_and_tool.split("__", 1)[1]
    return name


def _goto_url(call: ToolCall) -> str:
    url = call.args.get("url")
    return url.strip() if isinstance(url, str) else ""


def goto_urls(trace: list[ToolCall]) -> list[str]:
    """The URL argument of every ``goto`` call, in order, repeats kept."""
    urls = [_goto_url(c) for c in trace if tool_name(c.name) == NAVIGATION_TOOL]
    return [url for url in urls if url]


def snapshots(trace: list[ToolCall], start_url: str | None) -> list[tuple[ToolCall, str]]:
    """Every call whose output the judge may see, with the page it was read on."""
    page = start_url or ""
    shown: list[tuple[ToolCall, str]] = []
    for call in trace:
        name = tool_name(call.name)
        if name == NAVIGATION_TOOL:
            page = _goto_url(call) or page
        elif name in SNAPSHOT_TOOLS and call.output:
            shown.append((call, page))
    return shown


def has_unshown_outputs(trace: list[ToolCall], start_url: str | None) -> bool:
    """True when the agent read pages with tools this protocol does not show, and nothing
    else: the judge sees no page text for a row it could have checked."""
    read_something = any(c.output and c.output.strip() for c in trace)
    return read_something and not snapshots(trace, start_url)


def _render_snapshots(shown: list[tuple[ToolCall, str]]) -> str:
    if not shown:
        return NO_SNAPSHOTS
    blocks = []
    for index, (call, page) in enumerate(shown, start=1):
        args = f" {json.dumps(call.args, ensure_ascii=False)}" if call.args else ""
        label = SNAPSHOT_LABEL.format(
            index=index, tool=tool_name(call.name), args=args, page=page or UNKNOWN
        )
        body = call.output or ""
        if len(body) > SNAPSHOT_MAX_CHARS:
            body = body[:SNAPSHOT_MAX_CHARS] + CUT_NOTE
        blocks.append(f"{label}\n{body}")
    return "\n\n".join(blocks)


def build_prompt(row: PredictionRow, reference: str | None = None) -> str:
    """The user message for one row (the system prompt is :data:`SYSTEM_PROMPT`)."""
    urls = goto_urls(row.trace)
    shown = snapshots(row.trace, row.start_url)[-MAX_SNAPSHOTS:]
    answer = (row.prediction or "").strip()
    return USER_TEMPLATE.format(
        site=row.web_name or UNKNOWN,
        task=row.task.strip(),
        start_url=row.start_url or UNKNOWN,
        urls="\n".join(f"- {url}" for url in urls) if urls else NO_URLS,
        count=len(shown),
        snapshots=_render_snapshots(shown),
        answer=answer or EMPTY_ANSWER,
        reference_block=(
            REFERENCE_TEMPLATE.format(reference=reference.strip())
            if reference and reference.strip()
            else ""
        ),
    )


_VERDICT_LABEL = "VERDICT:"
_REASONING_LABEL = "REASONING:"


def parse_verdict(text: str | None) -> ParsedVerdict:
    """Read a reply by upstream's rule (see the module docstring)."""
    text = text or ""
    verdict: str | None = None
    reasoning = text.strip()
    for line in text.splitlines():
        stripped = line.strip()
        label = stripped.upper()
        if label.startswith(_VERDICT_LABEL):
            value = stripped[len(_VERDICT_LABEL) :].strip().upper()
            if value.startswith("YES"):
                verdict = "YES"
            elif value.startswith("NO"):
                verdict = "NO"
        elif label.startswith(_REASONING_LABEL):
            reasoning = stripped[len(_REASONING_LABEL) :].strip()
    if verdict == "YES":
        return ParsedVerdict("YES", reasoning)
    if verdict == "NO":
        return ParsedVerdict("NO", reasoning)
    problem = "empty reply" if not text.strip() else "no 'VERDICT:' line starting YES or NO"
    return ParsedVerdict("INVALID", reasoning, problem)
