"""The ``web_search`` MCP server (stdio): one Tavily search per call, the same for every stack.

Run by the harness as ``python -m agent_benchmarks.search.server``, a second MCP server in
Claude Code's ``--mcp-config`` beside the browser's. Its environment says everything:
``TAVILY_API_KEY`` (read by the client, never logged or echoed), the search log's path
(:data:`~agent_benchmarks.search.LOG_ENV`), the URL patterns to block
(:data:`~agent_benchmarks.search.BLOCK_ENV`) and, for a local stand-in, Tavily's base URL
(:data:`~agent_benchmarks.search.BASE_URL_ENV`).

A call returns a numbered list of title, URL and snippet. Results whose URL matches a
blocked pattern are dropped before the agent sees them. Tavily's refusals (429, 5xx, a
timeout, a bad key) go back to the agent as a tool error, which it may retry or work around;
every call, failed or not, is one line of the log.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import anyio
import requests
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from tavily import TavilyClient
from tavily import errors as tavily_errors

from agent_benchmarks.common.redact import add_secret, redact_text
from agent_benchmarks.search import (
    BASE_URL_ENV,
    BLOCK_ENV,
    CREDITS_PER_DEPTH,
    KEY_ENV,
    LOG_ENV,
    SEARCH_PARAMETERS,
    TOOL_NAME,
    blocking_pattern,
)

SNIPPET_CHARS = 600  # Tavily's basic snippets run to about 500 characters


class SearchFailed(Exception):
    """Tavily did not answer this call; the message is what the agent reads."""


class WebSearch:
    """Tavily search with the fixed parameters, answer-source blocking and a call log."""

    def __init__(
        self,
        api_key: str,
        log_path: Path | None,
        blocked: Sequence[str] = (),
        base_url: str | None = None,
    ) -> None:
        # Without a key, tavily-python would fall back to its keyless mode, a different
        # service: every call fails instead (the harness checks the key before a run).
        self.client = None
        if api_key:
            add_secret(api_key)  # masked in anything this process writes, whatever the text
            self.client = TavilyClient(api_key=api_key, api_base_url=base_url)
        self.log_path = log_path
        self.blocked = tuple(pattern.lower() for pattern in blocked)
        self._lock = threading.Lock()

    def search(self, query: str) -> str:
        """The results as the agent reads them; :class:`SearchFailed` when Tavily fails."""
        started = time.monotonic()
        record: dict[str, Any] = {"time": datetime.now(UTC).isoformat(), "query": query}
        try:
            if self.client is None:
                raise SearchFailed(f"{KEY_ENV} is not set")
            reply = self.client.search(query, **SEARCH_PARAMETERS)
        except Exception as exc:
            kind, message = _failure(exc)
            record |= {"urls": [], "dropped": [], "credits": 0, "error_kind": kind}
            record["error"] = message
            self._log(record, started)
            raise SearchFailed(f"web search failed ({kind}): {message}") from None
        kept, dropped = [], []
        for result in reply.get("results") or []:
            if not isinstance(result, dict):
                continue
            url = str(result.get("url") or "")
            pattern = self._blocking(url)
            if pattern is None:
                kept.append(result)
            else:
                dropped.append({"url": url, "pattern": pattern})
        record |= {
            "urls": [str(r.get("url") or "") for r in kept],
            "dropped": dropped,
            "credits": _credits(reply),
            "error": None,
        }
        self._log(record, started)
        return format_results(kept)

    def _blocking(self, url: str) -> str | None:
        return blocking_pattern(url, self.blocked)

    def _log(self, record: dict[str, Any], started: float) -> None:
        record["latency_ms"] = round((time.monotonic() - started) * 1000, 1)
        if self.log_path is None:
            return
        line = redact_text(json.dumps(record, ensure_ascii=False))
        with self._lock, self.log_path.open("a", encoding="utf-8") as log:
            log.write(line + "\n")


def _failure(exc: Exception) -> tuple[str, str]:
    """(kind, message) of a failed Tavily call, the key masked out of the message."""
    if isinstance(exc, SearchFailed):
        return "no_key", str(exc)
    if isinstance(exc, tavily_errors.UsageLimitExceededError):
        kind = "rate_limit"  # HTTP 429
    elif isinstance(exc, tavily_errors.TimeoutError):  # tavily-python wraps requests.Timeout
        kind = "timeout"
    elif isinstance(exc, tavily_errors.InvalidAPIKeyError | tavily_errors.ForbiddenError):
        kind = "refused"  # 401; 403/432/433: the key, the plan or its credits
    elif isinstance(exc, requests.HTTPError) and exc.response is not None:
        kind = "server_error" if exc.response.status_code >= 500 else "http_error"
    elif isinstance(exc, requests.ConnectionError):
        kind = "unreachable"
    else:
        kind = "error"
    detail = str(exc) or type(exc).__name__
    return kind, redact_text(f"{type(exc).__name__}: {detail}")[:500]


def _credits(reply: dict[str, Any]) -> int:
    """The credits Tavily says the call cost (include_usage), else its published rule."""
    usage = reply.get("usage")
    credits = usage.get("credits") if isinstance(usage, dict) else None
    if isinstance(credits, int) and not isinstance(credits, bool):
        return credits
    return CREDITS_PER_DEPTH[SEARCH_PARAMETERS["search_depth"]]


def format_results(results: list[dict[str, Any]]) -> str:
    """A numbered list: title, then URL, then the snippet, one blank line between results."""
    if not results:
        return "No results."
    blocks = []
    for number, result in enumerate(results, start=1):
        title = " ".join(str(result.get("title") or "(no title)").split())
        snippet = " ".join(str(result.get("content") or "").split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[:SNIPPET_CHARS].rstrip() + "..."
        blocks.append(f"{number}. {title}\n   {result.get('url') or ''}\n   {snippet}".rstrip())
    return "\n\n".join(blocks)


def build_server(search: WebSearch) -> MCPServer:
    server = MCPServer(
        "agent-benchmarks-search",
        instructions="Web search: a query in, a numbered list of title, URL and snippet out.",
        log_level="WARNING",
    )

    async def web_search(
        query: Annotated[str, Field(description="what to search the web for")],
    ) -> str:
        """Search the web. Returns up to five results, each with its title, URL and a
        snippet of the page; open a URL with the browser to read the page itself."""
        try:
            return await anyio.to_thread.run_sync(search.search, query)
        except SearchFailed as exc:
            raise ToolError(str(exc)) from None

    server.add_tool(
        web_search,
        name=TOOL_NAME,
        description=" ".join((web_search.__doc__ or "").split()),
        structured_output=False,
    )
    return server


def from_environment(environ: dict[str, str] | os._Environ[str]) -> WebSearch:
    blocked = json.loads(environ.get(BLOCK_ENV) or "[]")
    log = environ.get(LOG_ENV)
    return WebSearch(
        api_key=environ.get(KEY_ENV, ""),
        log_path=Path(log) if log else None,
        blocked=[str(p) for p in blocked],
        base_url=environ.get(BASE_URL_ENV) or None,
    )


def main() -> None:
    build_server(from_environment(os.environ)).run("stdio")


if __name__ == "__main__":
    main()
