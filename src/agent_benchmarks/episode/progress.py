"""The no-progress signal of one attempt, read from its trace (the evidence policy's outcome
fields ask for it beside steps and status).

Two patterns, each with the length it reached and whether it crossed its threshold:

- ``repeated_action``: the longest run of consecutive identical calls (the same tool with
  the same arguments, on the same page where the trace says which): an agent doing the
  same thing again and again. A poll is such a run while it waits, so the threshold leaves
  room for the waits a task needs (the site's slowest content shows after 1.2 s; a model
  that polls every quarter second makes five or six identical calls);
- ``no_new_page``: the longest stretch of calls that reached no page not seen before in the
  attempt (a page is known from the call's page URL, or a navigation's URL argument).

Rows written before the signal existed get it from their trace when a report reads them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol

REPEAT_LIMIT = 8  # identical calls in a row
NO_NEW_PAGE_LIMIT = 25  # calls in a row that reach no new page
_URL_ARGS = ("url", "href")


class Call(Protocol):
    name: str
    args: dict[str, Any]
    page_url: str | None


def _page_of(call: Call) -> str | None:
    if call.page_url:
        return call.page_url
    for key in _URL_ARGS:
        value = call.args.get(key)
        if isinstance(value, str) and "://" in value:
            return value
    command = call.args.get("command")  # a CLI's `open URL`
    if isinstance(command, str):
        for word in command.split():
            if "://" in word:
                return word.strip("'\"")
    return None


def _identity(call: Call) -> str:
    return json.dumps([call.name.rsplit("__", 1)[-1], call.args, call.page_url], sort_keys=True)


def progress_signal(trace: Iterable[Call]) -> dict[str, Any]:
    """``details.progress`` of a row: the two patterns' lengths and the verdict."""
    longest_repeat = repeat = 0
    longest_stale = stale = 0
    previous: str | None = None
    pages: set[str] = set()
    n = 0
    for call in trace:
        n += 1
        identity = _identity(call)
        repeat = repeat + 1 if identity == previous else 1
        previous = identity
        longest_repeat = max(longest_repeat, repeat)
        page = _page_of(call)
        if page is not None and page not in pages:
            pages.add(page)
            stale = 0
        else:
            stale += 1
        longest_stale = max(longest_stale, stale)
    signals = []
    if longest_repeat >= REPEAT_LIMIT:
        signals.append("repeated_action")
    if longest_stale >= NO_NEW_PAGE_LIMIT:
        signals.append("no_new_page")
    return {
        "no_progress": bool(signals),
        "signals": signals,
        "repeated_action": longest_repeat,
        "no_new_page": longest_stale,
        "pages": len(pages),
        "thresholds": {"repeated_action": REPEAT_LIMIT, "no_new_page": NO_NEW_PAGE_LIMIT},
        "n_calls": n,
    }
