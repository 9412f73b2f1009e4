"""--search on the native and chat runners: what each can honour, and the one clear
refusal for what it cannot."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent_benchmarks.backends import agent_browser_chat, lightpanda
from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.errors import InputError
from agent_benchmarks.localweb.tavily import TavilyStandIn
from agent_benchmarks.records import TaskInput
from agent_benchmarks.search import BASE_URL_ENV
from agent_benchmarks.suite import get_suite


def _native_args(**flags: object) -> argparse.Namespace:
    defaults = {
        "lightpanda": None,
        "search": None,
        "search_engine": None,
        "provider": "anthropic",
        "model": "claude-sonnet-4-6",
        "base_url": None,
        "user_agent": None,
    }
    return argparse.Namespace(**(defaults | flags))


def _build(args: argparse.Namespace) -> lightpanda.LightpandaBackend:
    return lightpanda.build(args, get_suite("gaia"), None)


def test_tavily_pins_lightpandas_own_search_to_tavily(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-0123456789")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-unit-0123456789abcdef")
    monkeypatch.setenv("BRAVE_API_KEY", "brave-unit-0123456789abcdef")  # auto would pick it
    args = _native_args(search="tavily")
    with TavilyStandIn(lambda query: [], api_key="tvly-unit-0123456789abcdef") as tavily:
        monkeypatch.setenv(BASE_URL_ENV, tavily.base_url)  # where the key is checked
        backend = _build(args)
    assert (args.search, args.search_engine) == ("tavily", "tavily")  # as the manifest keeps
    prepared = PreparedTask(
        task=TaskInput(suite="gaia", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path,
    )
    argv = backend.command(prepared).argv
    assert argv[argv.index("--search-engine") + 1] == "tavily"
    settings = backend.settings()
    assert settings["search_setting"] == "tavily"
    assert settings["search"] == {"engine": "tavily", "chosen_by": "--search-engine tavily"}
    assert "lightpanda's search tool" in settings["search_via"]
    # The key reaches lightpanda in its environment only: never its argv or the manifest.
    spec = backend.command(prepared)
    assert "tvly-unit" not in " ".join(spec.argv) and "tvly-unit" not in str(settings)


def test_native_is_the_default_and_leaves_the_engine_to_lightpanda(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-0123456789")
    args = _native_args()
    backend = _build(args)
    assert args.search == "native" and backend.config.search_engine is None
    assert "search_via" not in backend.settings()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"search": "none"}, "--search none: lightpanda agent has no option to withhold"),
        (
            {"search": "tavily", "search_engine": "brave"},
            "--search tavily pins Lightpanda's search to Tavily; --search-engine brave",
        ),
        ({"search": "tavily"}, "--search tavily needs TAVILY_API_KEY in the environment"),
    ],
)
def test_what_the_native_runner_cannot_do_is_refused(
    monkeypatch: pytest.MonkeyPatch, flags: dict[str, str], message: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-0123456789")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(InputError, match=message):
        _build(_native_args(**flags))


def test_a_key_tavily_refuses_stops_a_native_run_before_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-unit-0123456789")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-revoked-0123456789")
    with TavilyStandIn(lambda query: [], api_key="tvly-unit-0123456789abcdef") as tavily:
        monkeypatch.setenv(BASE_URL_ENV, tavily.base_url)
        for flags in ({"search": "tavily"}, {"search_engine": "tavily"}):
            with pytest.raises(InputError) as refused:
                _build(_native_args(**flags))
            message = str(refused.value)
            assert "Tavily refused TAVILY_API_KEY (HTTP 401" in message, message
            assert "tvly-revoked" not in message
        assert tavily.requests == []  # nothing was searched


@pytest.mark.parametrize("search", ["tavily", "none"])
def test_the_chat_loop_takes_only_native(search: str) -> None:
    args = argparse.Namespace(
        engine=None,
        lightpanda=None,
        chat_answer=None,
        block_answer_sources=None,
        session=None,
        user_agent=None,
        search=search,
    )
    with pytest.raises(InputError, match=f"--search {search}: agent-browser's chat loop"):
        agent_browser_chat.build(args, get_suite("gaia"), None)
