"""--search on the native and chat runners: what each can honour, and the one clear
refusal for what it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_benchmarks.backends import agent_browser_chat, lightpanda
from agent_benchmarks.backends.base import BuildRequest, PreparedTask
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.localweb.tavily import TavilyStandIn
from agent_benchmarks.records.schema import TaskInput
from agent_benchmarks.search import BASE_URL_ENV
from agent_benchmarks.spec.run_spec import RunSpec
from agent_benchmarks.spec.suites import get_suite


def _native_args(**flags: object) -> BuildRequest:
    spec = RunSpec(suite="gaia", runner="native", provider="anthropic", model="claude-sonnet-4-6")
    options = lightpanda.LightpandaOptions.parse(flags)
    return BuildRequest(spec, options, get_suite("gaia"))


def _build(request: BuildRequest) -> lightpanda.LightpandaBackend:
    return lightpanda.build(request)


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
    # As the manifest keeps: the options the run stores say what it used.
    assert (args.options.search, args.options.search_engine) == ("tavily", "tavily")
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
    assert args.options.search == "native" and backend.config.search_engine is None
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
    request = BuildRequest(
        RunSpec(suite="gaia", runner="chat"),
        agent_browser_chat.ChatOptions(search=search),
        get_suite("gaia"),
    )
    with pytest.raises(InputError, match=f"--search {search}: agent-browser's chat loop"):
        agent_browser_chat.build(request)
