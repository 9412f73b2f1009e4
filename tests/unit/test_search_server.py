"""The ``web_search`` server against the local Tavily stand-in: what the agent reads, what
is dropped, what a Tavily failure becomes, what the log says, and that the key is in none
of it."""

from __future__ import annotations

import json
import os
import socket
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from agent_benchmarks.localweb.tavily import TavilyStandIn
from agent_benchmarks.search import (
    BASE_URL_ENV,
    BLOCK_ENV,
    KEY_ENV,
    LOG_ENV,
    SEARCH_PARAMETERS,
    key_problem,
    summarise_log,
)
from agent_benchmarks.search.server import SearchFailed, WebSearch, format_results

KEY = f"tvly-unit-{uuid.uuid4().hex}"
PAGES = [
    {"title": "Pandas  of the\nworld", "url": "https://example.org/pandas", "content": "Red."},
    {
        "title": "GAIA validation set",
        "url": "https://huggingface.co/datasets/gaia-benchmark/GAIA/viewer",
        "content": "every answer",
    },
    {"title": "Bamboo", "url": "https://example.com/bamboo", "content": "x" * 900},
]  # fmt: skip
BLOCKED = ("*huggingface.co/datasets*", "*gaia-benchmark*")


def _pages(query: str) -> list[dict]:
    return PAGES


def test_results_are_a_numbered_list_and_the_call_is_logged(tmp_path: Path) -> None:
    log = tmp_path / "search.jsonl"
    with TavilyStandIn(_pages, api_key=KEY) as tavily:
        search = WebSearch(KEY, log, base_url=tavily.base_url)
        text = search.search("giant pandas")
        (request,) = tavily.requests
    # The fixed parameters went to Tavily as they are, with the key as its bearer token.
    assert request.key_matched
    sent = {k: request.body.get(k) for k in SEARCH_PARAMETERS if k != "timeout"}
    assert sent == {k: v for k, v in SEARCH_PARAMETERS.items() if k != "timeout"}
    assert request.body["query"] == "giant pandas"
    entries = text.split("\n\n")
    assert entries[0] == "1. Pandas of the world\n   https://example.org/pandas\n   Red."
    assert entries[1].startswith("2. GAIA validation set\n   https://huggingface.co/")
    assert entries[2].startswith("3. Bamboo\n   https://example.com/bamboo\n   xxx")
    assert entries[2].endswith("...") and len(entries[2]) < 700  # a long snippet is cut
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["query"] == "giant pandas"
    assert record["urls"] == [p["url"] for p in PAGES]
    assert (record["credits"], record["error"], record["dropped"]) == (1, None, [])
    assert record["latency_ms"] >= 0


def test_blocked_results_are_dropped_before_the_agent_sees_them(tmp_path: Path) -> None:
    log = tmp_path / "search.jsonl"
    with TavilyStandIn(_pages, api_key=KEY) as tavily:
        text = WebSearch(KEY, log, BLOCKED, base_url=tavily.base_url).search("gaia answers")
    assert "huggingface" not in text
    assert text.startswith("1. Pandas") and "\n\n2. Bamboo" in text  # renumbered
    summary = summarise_log(log)
    assert summary is not None
    (call,) = summary["calls"]
    assert call["dropped"] == [{"url": PAGES[1]["url"], "pattern": "*huggingface.co/datasets*"}]
    assert call["urls"] == [PAGES[0]["url"], PAGES[2]["url"]]
    assert (summary["n_calls"], summary["dropped"], summary["errors"]) == (1, 1, 0)


@pytest.mark.parametrize(("status", "kind"), [(429, "rate_limit"), (502, "server_error")])
def test_a_tavily_failure_is_a_search_error_logged_and_counted(
    tmp_path: Path, status: int, kind: str
) -> None:
    log = tmp_path / "search.jsonl"
    with TavilyStandIn(_pages, api_key=KEY, fail_with=[status]) as tavily:
        search = WebSearch(KEY, log, base_url=tavily.base_url)
        with pytest.raises(SearchFailed, match=f"web search failed \\({kind}\\)"):
            search.search("q1")
        assert search.search("q2").startswith("1. Pandas")  # the next call goes through
    summary = summarise_log(log)
    assert summary is not None
    failed, answered = summary["calls"]
    assert (failed["error_kind"], failed["credits"], failed["urls"]) == (kind, 0, [])
    assert answered["error"] is None
    assert (summary["errors"], summary["credits"]) == (1, 1)


def test_a_wrong_key_or_no_key_fails_each_call_and_the_key_is_in_no_log(tmp_path: Path) -> None:
    log = tmp_path / "search.jsonl"
    wrong = f"tvly-wrong-{uuid.uuid4().hex}"
    with TavilyStandIn(_pages, api_key=KEY) as tavily:
        with pytest.raises(SearchFailed, match="refused"):
            WebSearch(wrong, log, base_url=tavily.base_url).search(f"is {wrong} valid")
        with pytest.raises(SearchFailed, match=f"{KEY_ENV} is not set"):
            WebSearch("", log, base_url=tavily.base_url).search("q")
        assert len(tavily.requests) == 1  # no key: no request at all (not keyless mode)
    text = log.read_text()
    assert wrong not in text and "[REDACTED]" in text  # even where the query held it
    assert [json.loads(line)["error_kind"] for line in text.splitlines()] == ["refused", "no_key"]


def test_no_results_and_an_empty_log() -> None:
    assert format_results([]) == "No results."
    assert summarise_log(Path("/nonexistent/search.jsonl")) is None


async def _call_over_mcp(env: dict[str, str], query: str) -> list[tuple[bool, str]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agent_benchmarks.search.server"], env=env
    )
    replies = []
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == ["web_search"]
            for _ in range(2):
                result = await session.call_tool("web_search", {"query": query})
                replies.append((result.is_error, result.content[0].text))
    return replies


def test_over_mcp_a_429_is_a_tool_error_and_the_next_call_answers(tmp_path: Path) -> None:
    log = tmp_path / "search.jsonl"
    with TavilyStandIn(_pages, api_key=KEY, fail_with=[429]) as tavily:
        env = {
            **os.environ,
            KEY_ENV: KEY,
            BASE_URL_ENV: tavily.base_url,
            LOG_ENV: str(log),
            BLOCK_ENV: json.dumps(list(BLOCKED)),
        }
        # The model put the key in its query: the server's log must not keep it.
        (first, second) = anyio.run(_call_over_mcp, env, f"pandas {KEY}")
    assert first[0] is True and "rate_limit" in first[1]
    assert (
        second[0] is False and second[1].startswith("1. Pandas") and "huggingface" not in second[1]
    )
    summary = summarise_log(log)
    assert summary is not None
    assert (summary["n_calls"], summary["errors"], summary["dropped"]) == (2, 1, 1)
    assert KEY not in log.read_text() and "[REDACTED]" in log.read_text()


def test_the_key_is_checked_once_with_tavily_s_usage_call_before_a_run() -> None:
    """GET /usage authenticates the key and spends no credit: a refused key and an
    endpoint out of reach are named; the key itself never is."""
    with TavilyStandIn(_pages, api_key=KEY) as tavily:
        assert key_problem(KEY, tavily.base_url) is None
        refused = key_problem("tvly-wrong-key-0000", tavily.base_url)
        assert refused is not None
        assert refused.startswith("Tavily refused TAVILY_API_KEY (HTTP 401")
        assert "tvly-wrong" not in refused
        assert tavily.requests == []  # no search was made, no credit spent
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    unreachable = key_problem(KEY, closed)
    assert unreachable is not None
    assert unreachable.startswith("could not reach Tavily to check TAVILY_API_KEY")
