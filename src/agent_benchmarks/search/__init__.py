"""One web search for every stack: the ``web_search`` MCP server backed by Tavily.

Upstream's head-to-head gave only the Lightpanda stack a search tool, so "browser" and
"search" changed together. ``--search`` makes search a controlled variable:

``native``  each stack's own search, as upstream ran it (Lightpanda's ``search``; none for
            agent-browser or browser-use).
``tavily``  one search for all: on the MCP runners this package's server
            (:mod:`agent_benchmarks.search.server`), a second MCP server beside the browser's,
            the stack's own search withheld; on the native runner Lightpanda's ``search``
            pinned to Tavily.
``none``    no search tool at all (the stack's own withheld).

The server asks Tavily with :data:`SEARCH_PARAMETERS`, the same for every stack and recorded
in the manifest, and appends one JSON line per call to the file its environment names
(:data:`LOG_ENV`); :func:`summarise_log` turns that file into a row's ``details.search``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

SEARCH_SETTINGS = ("native", "tavily", "none")
DEFAULT_SEARCH = "native"
KEY_ENV = "TAVILY_API_KEY"
# The Tavily endpoint's base URL, for a local stand-in (tavily-python's api_base_url);
# unset: https://api.tavily.com.
BASE_URL_ENV = "AGENT_BENCHMARKS_TAVILY_BASE_URL"
LOG_ENV = "AGENT_BENCHMARKS_SEARCH_LOG"  # the JSONL file the server appends each call to
BLOCK_ENV = "AGENT_BENCHMARKS_SEARCH_BLOCK"  # a JSON list of shell-style URL patterns
SERVER_NAME = "search"  # Claude Code names the tool mcp__search__web_search
TOOL_NAME = "web_search"
# The tool as an MCP agent names it (Claude Code and Codex alike).
MCP_TOOL_NAME = f"mcp__{SERVER_NAME}__{TOOL_NAME}"

# What every web_search call asks Tavily, whatever the stack: a plain web search with
# snippets, no generated answer (that would be a second model answering), no page bodies
# and no images. include_usage asks Tavily to report the call's credits in its reply.
SEARCH_PARAMETERS: dict[str, Any] = {
    "search_depth": "basic",
    "topic": "general",
    "max_results": 5,
    "include_answer": False,
    "include_raw_content": False,
    "include_images": False,
    "include_usage": True,
    "timeout": 30,
}
# Credits per request by search depth, for replies that do not report usage. Tavily's
# credit page (https://docs.tavily.com/documentation/api-credits, "Tavily Search": the
# search depth determines the cost) prices basic, fast and ultra-fast at 1, advanced at 2.
CREDITS_PER_DEPTH = {"basic": 1, "fast": 1, "ultra-fast": 1, "advanced": 2}


DEFAULT_BASE_URL = "https://api.tavily.com"
KEY_CHECK_TIMEOUT_S = 15.0


def key_problem(api_key: str, base_url: str | None = None) -> str | None:
    """Why a run's Tavily key cannot search, asked once before the first task; None when
    Tavily takes it. Tavily's ``GET /usage`` (its API reference, "Usage") authenticates the
    key like a search and costs no credit; tavily-python 0.8 has no call for it, so it is
    asked with httpx. Only a refused key or an endpoint out of reach stops a run: a busy
    Tavily (429, 5xx) now says nothing of the key, and each search call reports its own
    failure to the agent."""
    import httpx  # on use: only runs with --search tavily ask

    url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/usage"
    try:
        reply = httpx.get(
            url, headers={"Authorization": f"Bearer {api_key}"}, timeout=KEY_CHECK_TIMEOUT_S
        )
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return f"could not reach Tavily to check {KEY_ENV} ({url}: {type(exc).__name__})"
    if reply.status_code in (401, 403):
        return f"Tavily refused {KEY_ENV} (HTTP {reply.status_code} from {url}): check the key"
    return None


def search_settings(search: str, base_url: str | None = None) -> dict[str, Any]:
    """What a manifest's backend settings record of a run's search."""
    if search != "tavily":
        return {"search_setting": search}
    return {
        "search_setting": search,
        "search_engine": "tavily",
        "search_parameters": SEARCH_PARAMETERS,
        "search_credits_per_call": CREDITS_PER_DEPTH[SEARCH_PARAMETERS["search_depth"]],
        "search_base_url": base_url or DEFAULT_BASE_URL,
    }


def summarise_log(path: Path) -> dict[str, Any] | None:
    """A row's ``details.search`` from one attempt's search log: every call as logged, the
    credits spent, results dropped by blocking and calls that failed. None when the server
    logged nothing (no call made)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return None
    calls: list[dict[str, Any]] = []
    problems = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            problems.append(f"line {number}: not JSON")
            continue
        if isinstance(record, dict):
            calls.append(record)
    summary = summarise_calls(calls)
    if problems:
        summary["log_problems"] = problems
    return summary


def blocking_pattern(url: str, patterns: Sequence[str]) -> str | None:
    """The first shell-style pattern that blocks ``url`` (matched case-insensitively against
    the whole URL, as the browsers' ``--block-urls`` do), None if none does."""
    lowered = url.lower()
    return next((p for p in patterns if fnmatchcase(lowered, p.lower())), None)


def summarise_calls(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """``details.search`` from call records (``credits``, ``dropped``, ``error`` each), as
    the web_search server logs them and as the native runner reads them from its trace."""
    return {
        "calls": calls,
        "n_calls": len(calls),
        "credits": sum(int(c.get("credits") or 0) for c in calls),
        "dropped": sum(len(c.get("dropped") or ()) for c in calls),
        "errors": sum(1 for c in calls if c.get("error")),
    }
