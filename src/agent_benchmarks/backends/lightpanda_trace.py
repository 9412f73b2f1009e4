"""Reading what ``lightpanda agent`` leaves behind: its ``--trace`` JSONL and its stderr.

The trace (``--trace FILE``, 1.0.2) holds one JSON object a line:

``run``    first: ``provider``, ``model``, ``task`` (the user turn), ``t`` (ms since start).
``model``  one per model reply the agent could parse: ``step``, ``phase`` (``turn``;
           ``synthesis``, the tool-less call after 100 turns; ``save``, for ``--save``),
           ``ms``, ``tokens{input,cached,cache_creation,output}``, ``finish``
           (``tool_call`` | ``stop``), ``tool_calls``.
``tool``   one per tool call: ``step`` (counts tool calls, not model calls), ``name``,
           ``args``, ``ms``, ``result_bytes``, ``error`` (bool), ``navigated``,
           ``page{url,httpStatus,title}`` (absent while no page is loaded) and, with
           ``--trace-results`` only, ``result``: the text the model received.
``end``    last: ``model_calls``, ``tool_calls``, ``tokens`` (same four counts, totals).

Facts checked against the real binary and the scripted model server's ledger, on which
this reader's choices rest:

* ``tokens.input`` is the whole prompt, cache reads and writes included, whatever the
  provider: ``openai_compatible`` passes ``prompt_tokens`` through, and ``anthropic``
  adds ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` to its
  ``input_tokens``. :class:`Usage` keeps them apart, so they are subtracted here.
* When a model call fails (HTTP 500 after retries, a reply that is not JSON) the agent
  exits 1 and still writes ``end``, but with every token total 0, even for the calls that
  succeeded and were billed; the ``$usage`` line on stderr is zeroed the same way. Usage is
  therefore summed from the ``model`` records, never taken from ``end`` or stderr.
* ``--url`` writes a ``goto`` tool record before the first ``model`` record: a navigation
  the harness asked for, not the model. It stays in ``calls`` (the browser did it) and is
  counted in :attr:`TraceSummary.preloaded_calls`.
* A killed agent leaves no ``end`` and possibly a torn last line; both are noted in
  :attr:`TraceSummary.problems`, never raised, so the row keeps what was recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.base import json_records
from agent_benchmarks.records.schema import ToolCall, Usage

# CSI sequences (colours, cursor moves) and the two-byte escapes; the agent only colours.
_ANSI_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")
_USAGE_LINE_RE = re.compile(r"^\s*\$usage\s+(.*)$", re.MULTILINE)
_PAIR_RE = re.compile(r"(\w+)=(\d+)")
_TOKEN_KEYS = ("input", "cached", "cache_creation", "output")
_USAGE_FIELDS = (
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "turns",
)


@dataclass
class TraceSummary:
    """One agent run as its trace recorded it."""

    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    run: dict[str, Any] | None = None  # the run record without the task text
    end: dict[str, Any] | None = None  # None when the agent was killed before finishing
    phases: dict[str, int] = field(default_factory=dict)  # model records per phase
    preloaded_calls: int = 0  # tool records before the first model record (--url)
    problems: list[str] = field(default_factory=list)


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def _int(value: Any) -> int | None:
    # bool is an int subclass; a true/false where a count belongs is a malformed record.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage_from_counts(counts: dict[str, int], turns: int) -> Usage:
    """The trace's convention (input includes both cache counts) into :class:`Usage`'s."""
    cached, creation = counts["cached"], counts["cache_creation"]
    return Usage(
        input_tokens=max(0, counts["input"] - cached - creation),
        cache_read_tokens=cached,
        cache_write_tokens=creation,
        output_tokens=counts["output"],
        turns=turns,
    )


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... truncated {len(text) - limit} chars]"


def _tool_call(rec: dict[str, Any], max_output_chars: int) -> ToolCall:
    page = rec.get("page") if isinstance(rec.get("page"), dict) else {}
    result = rec.get("result")
    output = _truncate(result, max_output_chars) if isinstance(result, str) else None
    ms = rec.get("ms")
    url = page.get("url")
    return ToolCall(
        name=rec["name"],
        args=rec["args"] if isinstance(rec.get("args"), dict) else {},
        latency_ms=float(ms) if isinstance(ms, int | float) and not isinstance(ms, bool) else None,
        page_url=url if isinstance(url, str) else None,
        http_status=_int(page.get("httpStatus")),
        error=(output or "error") if rec.get("error") is True else None,
        result_bytes=_int(rec.get("result_bytes")),
        output=output,
        output_chars=len(result) if isinstance(result, str) else None,
    )


def read_trace(path: Path, max_output_chars: int = 8000) -> TraceSummary:
    """Summarise a ``--trace`` file; problems are collected, never raised."""
    summary = TraceSummary()
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        summary.problems.append("no trace file")
        return summary
    # A process killed mid-write can cut a multi-byte character in half.
    lines = raw.decode("utf-8", errors="replace").splitlines()
    # Summed in Usage's convention record by record, so that one record reporting less input
    # than cache (never seen, but nothing forbids it) cannot eat into the others' input.
    totals = dict.fromkeys(_USAGE_FIELDS, 0)
    replies = _ReplyTokens(summary.calls)
    for number, rec in json_records(lines, summary.problems):
        kind = rec.get("type")
        if kind == "run":
            summary.run = {k: v for k, v in rec.items() if k != "task"}
        elif kind == "end":
            summary.end = rec
        elif kind == "model":
            phase = str(rec.get("phase", "unknown"))
            summary.phases[phase] = summary.phases.get(phase, 0) + 1
            tokens = rec.get("tokens") if isinstance(rec.get("tokens"), dict) else {}
            counts = {}
            for key in _TOKEN_KEYS:
                count = _int(tokens.get(key))
                if count is None:
                    summary.problems.append(f"line {number}: model record without tokens.{key}")
                counts[key] = count or 0
            usage = _usage_from_counts(counts, turns=1)
            for name in _USAGE_FIELDS:
                totals[name] += getattr(usage, name)
            replies.model_call(counts["input"], counts["output"])
        elif kind == "tool":
            if not isinstance(rec.get("name"), str):
                summary.problems.append(f"line {number}: tool record without a name")
                continue
            summary.calls.append(_tool_call(rec, max_output_chars))
            replies.tool_call()
            if totals["turns"] == 0:
                summary.preloaded_calls += 1
        else:
            summary.problems.append(f"line {number}: unknown record type {kind!r}")
    if summary.run is None:
        summary.problems.append("no run record")
    if summary.end is None:
        summary.problems.append("no end record (agent killed before finishing?)")
    summary.usage = Usage(**totals)
    return summary


class _ReplyTokens:
    """Each tool reply's tokens by the model's own count: the prompt of the model call
    after a turn's tool calls holds the prompt before it, the model's reply (its output)
    and the tool replies, so their tokens are the growth of the prompt less that output
    (with the few tokens framing each message). Several replies of one turn share it by
    their characters. Replies no later call read (the last, before a kill) are left to the
    estimate."""

    def __init__(self, calls: list[ToolCall]):
        self._calls = calls
        self._pending: list[int] = []  # calls since the last model call
        self._last: tuple[int, int] | None = None  # its (prompt, output) tokens

    def tool_call(self) -> None:
        self._pending.append(len(self._calls) - 1)

    def model_call(self, prompt: int, output: int) -> None:
        pending, last = self._pending, self._last
        self._pending, self._last = [], (prompt, output)
        sizes = [self._calls[i].output_chars for i in pending]
        if last is None or not pending or None in sizes:
            return  # before the first model call (--url's goto): no prompt to grow from
        grown = prompt - last[0] - last[1]
        chars = sum(s or 0 for s in sizes)
        if grown <= 0 or chars <= 0:
            return
        for index, size in zip(pending, sizes, strict=True):
            share = round(grown * (size or 0) / chars)
            self._calls[index] = self._calls[index].model_copy(
                update={"output_tokens": share, "output_tokens_estimated": False}
            )


def parse_usage_line(stderr: str) -> Usage | None:
    """The last ``$usage input=… cached=… cache_creation=… output=…`` line of stderr.

    Same convention as the trace (input includes both cache counts). The line carries no
    call count, so ``turns`` is 0; and it reads all zeros when a model call failed (see the
    module docstring), which is why the trace is the source of truth for usage.
    """
    matches = _USAGE_LINE_RE.findall(strip_ansi(stderr))
    if not matches:
        return None
    pairs = {k: int(v) for k, v in _PAIR_RE.findall(matches[-1])}
    if not all(k in pairs for k in _TOKEN_KEYS):
        return None
    return _usage_from_counts(pairs, turns=0)
