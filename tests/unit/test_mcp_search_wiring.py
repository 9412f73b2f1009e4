"""``--search`` on the MCP runners, without running Claude Code: what each setting puts in
Claude Code's command line, what it withholds, what the row and the manifest say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.claude_mcp import (
    SEARCH_LOG,
    WEB_SEARCH_TOOL,
    ClaudeMcpBackend,
    McpSettings,
)
from agent_benchmarks.backends.mcp_run import surface_listing
from agent_benchmarks.backends.mcp_servers import SERVERS
from agent_benchmarks.isolation.process import ProcessResult
from agent_benchmarks.records.schema import TaskInput
from agent_benchmarks.search import BLOCK_ENV, LOG_ENV, SEARCH_PARAMETERS

BLOCKED = ("*://huggingface.co/datasets/*", "*t-42*")


def _backend(search: str, backend: str = "lightpanda") -> ClaudeMcpBackend:
    definition = SERVERS[backend]
    excluded = definition.excluded_on("upstream", search)
    settings = McpSettings(
        backend=backend,
        claude="claude",
        model="claude-sonnet-4-6",
        auth="api-key",
        mcp_tool_timeout_ms=1000,
        lightpanda="lightpanda",
        allowed_tools=[t for t in ("goto", "markdown", "search") if t not in excluded],
        excluded_tools=sorted({"screenshot", "search"} & set(excluded)),
        search_setting=search,
        search_base_url="http://127.0.0.1:9" if search == "tavily" else None,
    )
    return ClaudeMcpBackend(settings, definition, {})


def _prepared(tmp_path: Path) -> PreparedTask:
    return PreparedTask(
        task=TaskInput(suite="gaia", id="t-42", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        block_urls=BLOCKED,
        workdir=tmp_path,
        tmpdir=tmp_path / "tmp",
    )


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_tavily_adds_the_web_search_server_and_withholds_lightpandas_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-never-on-the-command-line-0123456789")
    argv = _backend("tavily").command(_prepared(tmp_path)).argv
    servers = json.loads(_flag(argv, "--mcp-config"))["mcpServers"]
    assert set(servers) == {"browser", "search"}
    search = servers["search"]
    assert search["args"] == ["-m", "agent_benchmarks.search.server"]
    assert search["env"][LOG_ENV] == str(tmp_path / SEARCH_LOG)
    assert json.loads(search["env"][BLOCK_ENV]) == list(BLOCKED)  # the runner's patterns
    allowed = _flag(argv, "--allowed-tools").split(",")
    assert WEB_SEARCH_TOOL in allowed and "mcp__browser__search" not in allowed
    assert "mcp__browser__search" in _flag(argv, "--disallowed-tools").split(",")
    assert not any("tvly-never" in arg for arg in argv)  # inherited, never on argv


@pytest.mark.parametrize("search", ["native", "none"])
def test_native_and_none_add_no_server(tmp_path: Path, search: str) -> None:
    argv = _backend(search).command(_prepared(tmp_path)).argv
    assert set(json.loads(_flag(argv, "--mcp-config"))["mcpServers"]) == {"browser"}
    allowed = _flag(argv, "--allowed-tools").split(",")
    assert WEB_SEARCH_TOOL not in allowed
    assert ("mcp__browser__search" in allowed) == (search == "native")


def test_only_lightpanda_has_a_search_of_its_own_to_withhold() -> None:
    for name, definition in SERVERS.items():
        withheld = set(definition.excluded_on("upstream", "none")) - set(
            definition.excluded_on("upstream", "native")
        )
        assert withheld == ({"search"} if name == "lightpanda" else set()), name


def test_the_row_joins_the_search_log_and_web_search_is_not_foreign(tmp_path: Path) -> None:
    backend = _backend("tavily")
    log = [
        {"query": "a", "urls": ["https://x/1"], "dropped": [], "credits": 1, "error": None},
        {"query": "b", "urls": [], "dropped": [], "credits": 0, "error": "rate_limit: 429"},
        {"query": "c", "urls": [], "dropped": [{"url": "u", "pattern": "p"}], "credits": 1},
    ]
    (tmp_path / SEARCH_LOG).write_text("".join(json.dumps(r) + "\n" for r in log))
    stream = [
        {"type": "system", "subtype": "init", "model": "m", "mcp_servers": []},
        {
            "type": "assistant",
            "message": {
                "id": "r1",
                "content": [{"type": "tool_use", "id": "u1", "name": WEB_SEARCH_TOOL, "input": {}}],
            },
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "u1", "content": "1."}]},
        },
        {"type": "result", "subtype": "success", "is_error": False, "result": "42", "usage": {}},
    ]
    stdout = "".join(json.dumps(e) + "\n" for e in stream)
    outcome = backend.outcome(
        _prepared(tmp_path), ProcessResult(returncode=0, stdout=stdout, stderr="", duration_s=1.0)
    )
    assert outcome.status == "ok"
    assert not outcome.details["contaminated"]
    search = outcome.details["search"]
    assert (search["n_calls"], search["credits"], search["dropped"], search["errors"]) == (
        3,
        2,
        1,
        1,
    )
    assert [c["query"] for c in search["calls"]] == ["a", "b", "c"]
    settings = backend.settings()
    assert settings["search_setting"] == "tavily"
    assert settings["search_parameters"] == SEARCH_PARAMETERS
    assert settings["search_credits_per_call"] == 1


def test_the_listing_names_the_search() -> None:
    backend = _backend("tavily")
    listing = surface_listing(backend.config, backend.definition, {WEB_SEARCH_TOOL: ["query*"]})
    assert "search: tavily\n  mcp__search__web_search(query*)" in listing
    assert "search: --search tavily: the one search is web_search" in listing
