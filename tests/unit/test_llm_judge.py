"""The WebBench LLM judge, end to end through the real SDKs against a local fake server.

Most tests before the "upstream protocol" section run the strict protocol (``config_for``),
the one that retries; that section covers the default, upstream's."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from agent_benchmarks.records.schema import PredictionRow, ToolCall
from agent_benchmarks.scoring.llm_judge import (
    CACHE_FILE_NAME,
    STRICT,
    UPSTREAM,
    JudgeConfig,
    JudgeConfigError,
    JudgeResult,
    build_prompt,
    cost_usd,
    infer_provider,
    judge_info,
    judge_rows,
    judge_summary,
    missing_judge_key,
    page_reading_calls,
    parse_verdict,
    prompt_hash,
    upstream_prompt,
    visited_urls,
)
from agent_benchmarks.scoring.llm_judge import judge as judge_module
from agent_benchmarks.scoring.llm_judge import prompt as prompt_module
from agent_benchmarks.scoring.llm_judge.judge import retry_delay

try:
    from judge_fakes import FakeJudgeServer, Received, Reply, closed_port_url, no, yes
except ImportError:  # tests/unit imported as a package
    from tests.unit.judge_fakes import FakeJudgeServer, Received, Reply, closed_port_url, no, yes

KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-test-SECRET-anthropic-0123456789",
    "GEMINI_API_KEY": "AIzaTEST-SECRET-gemini-0123456789abcdefgh",
    "OPENAI_API_KEY": "sk-test-SECRET-openai-0123456789",
}
KEY_OF = {
    "anthropic": KEYS["ANTHROPIC_API_KEY"],
    "google": KEYS["GEMINI_API_KEY"],
    "openai": KEYS["OPENAI_API_KEY"],
}
MODELS = {"anthropic": "claude-haiku-4-5", "google": "gemini-2.5-flash", "openai": "gpt-4.1-mini"}
PROVIDERS = list(MODELS)
_CLEARED = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_PROFILE",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_API_VERSION",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_CUSTOM_HEADERS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
]


@pytest.fixture(autouse=True)
def judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def server():
    with FakeJudgeServer() as fake:
        yield fake


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every wait the retry loop asks for (the waits still happen)."""
    recorded: list[float] = []

    def sleep(seconds: float) -> None:
        recorded.append(seconds)
        time.sleep(seconds)

    monkeypatch.setattr(judge_module, "_sleep", sleep)
    return recorded


def config_for(server: FakeJudgeServer, provider: str, **overrides) -> JudgeConfig:
    """A strict-protocol judge (the protocol that retries) on the fake server."""
    settings = {
        "model": MODELS[provider],
        "protocol": "strict",
        "base_url": server.base_url(provider),
        "workers": 2,
        "timeout_s": 5.0,
        "max_attempts": 3,
        "backoff_base_s": 0.001,
        "max_backoff_s": 2.0,
    }
    settings.update(overrides)
    return JudgeConfig(**settings)


def make_row(row_id: str = "wb-1", **fields) -> PredictionRow:
    values = {
        "id": row_id,
        "suite": "webbench",
        "task": f"Find the opening hours listed on the site ({row_id}).",
        "prediction": "Mon-Fri 9:00-17:00",
        "status": "ok",
        "backend": "fake",
        "start_url": "https://shop.example.com/",
        "trace": [
            ToolCall(
                name="goto",
                args={"url": "https://shop.example.com/"},
                page_url="https://shop.example.com/",
            ),
            ToolCall(
                name="markdown",
                page_url="https://shop.example.com/",
                output="# Shop\nOpening hours: Mon-Fri 9:00-17:00",
            ),
        ],
    }
    values.update(fields)
    return PredictionRow(**values)


# --- verdicts through each provider's SDK ---------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_yes_verdict_and_what_the_server_received(server: FakeJudgeServer, provider: str) -> None:
    server.script(Reply(text="VERDICT: YES\nREASONING: The hours match.", input_tokens=2000))
    row = make_row()
    [result] = judge_rows([row], config_for(server, provider), None)

    assert result.verdict == "YES"
    assert result.reasoning == "The hours match."
    assert result.raw == "VERDICT: YES\nREASONING: The hours match."
    assert (result.id, result.attempt, result.cached, result.calls) == ("wb-1", 1, False, 1)
    assert (result.input_tokens, result.output_tokens) == (2000, 50)
    assert result.cost_usd == pytest.approx(cost_usd(MODELS[provider], 2000, 50))
    assert result.cost_usd is not None and result.cost_usd > 0
    assert result.error is None

    [received] = server.requests
    assert received.provider == provider
    assert received.model == MODELS[provider]
    assert received.api_key == KEY_OF[provider]
    assert received.prompt == build_prompt(row)
    if provider == "google":
        assert received.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    if provider == "anthropic":
        assert received.body["max_tokens"] > 0
        assert received.headers.get("x-stainless-retry-count", "0") == "0"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_no_verdict(server: FakeJudgeServer, provider: str) -> None:
    server.script(no("The page shows different hours."))
    [result] = judge_rows([make_row()], config_for(server, provider), None)
    assert result.verdict == "NO"
    assert result.reasoning == "The page shows different hours."
    assert len(server.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_garbage_reply_is_invalid_not_no(server: FakeJudgeServer, provider: str) -> None:
    garbage = "I think the agent probably did fine, overall.\nVERDICT: YES\nREASONING: ok"
    server.script(Reply(text=garbage))
    [result] = judge_rows([make_row()], config_for(server, provider), None)
    assert result.verdict == "INVALID"
    assert result.raw == garbage
    assert result.reasoning == ""
    assert result.error is not None and "unparseable" in result.error
    assert result.input_tokens == 1000  # the call still cost tokens
    summary = judge_summary([result])
    assert summary["verdicts"] == {"YES": 0, "NO": 0, "INVALID": 1, "judge_error": 0}


# --- retries --------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_honours_retry_after_then_succeeds(
    server: FakeJudgeServer, provider: str, sleeps: list[float]
) -> None:
    server.script(Reply(status=429, headers={"retry-after": "0.15"}), yes())
    config = config_for(server, provider, backoff_base_s=0.001)
    [result] = judge_rows([make_row()], config, None)

    assert result.verdict == "YES"
    assert result.calls == 2
    assert len(server.requests) == 2
    assert sleeps == [0.15]  # the server's value, not the (tiny) backoff
    gap = server.requests[1].at - server.requests[0].at
    assert gap >= 0.14


@pytest.mark.parametrize("provider", PROVIDERS)
def test_500_forever_is_a_judge_error_after_max_attempts(
    server: FakeJudgeServer, provider: str, sleeps: list[float]
) -> None:
    server.responder = lambda _r: Reply(status=500, error_message="boom")
    config = config_for(server, provider, max_attempts=4, backoff_base_s=0.01)
    [result] = judge_rows([make_row()], config, None)

    assert result.verdict == "judge_error"
    assert result.verdict != "NO"
    assert len(server.requests) == 4
    assert result.calls == 4
    assert result.error is not None
    assert "500" in result.error and "gave up after 4 attempts" in result.error
    assert KEY_OF[provider] not in result.error
    assert (result.input_tokens, result.output_tokens, result.cost_usd) == (0, 0, None)
    # Exponential backoff: 3 waits between 4 calls, each about double the one before.
    assert len(sleeps) == 3
    for n, seconds in enumerate(sleeps, start=1):
        base = 0.01 * 2 ** (n - 1)
        assert base <= seconds <= base * 1.25


@pytest.mark.parametrize("status", [400, 401, 403, 404])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_non_retryable_4xx_fails_at_once(
    server: FakeJudgeServer, provider: str, status: int
) -> None:
    # The error echoes the key, as some gateways do: it must be masked in the result.
    server.script(Reply(status=status, error_message=f"bad key {KEY_OF[provider]}"))
    [result] = judge_rows([make_row()], config_for(server, provider), None)
    assert result.verdict == "judge_error"
    assert len(server.requests) == 1
    assert str(status) in (result.error or "")
    assert KEY_OF[provider] not in (result.error or "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_retried(server: FakeJudgeServer, provider: str) -> None:
    server.script(Reply(text="VERDICT: YES\nREASONING: late", delay_s=1.0), yes())
    config = config_for(server, provider, timeout_s=0.2)
    [result] = judge_rows([make_row()], config, None)
    assert result.verdict == "YES"
    assert result.calls == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_connection_refused_is_retried_then_judge_error(provider: str) -> None:
    base = closed_port_url() + ("/v1" if provider == "openai" else "")
    config = JudgeConfig(
        model=MODELS[provider],
        protocol="strict",
        base_url=base,
        max_attempts=2,
        backoff_base_s=0.001,
    )
    [result] = judge_rows([make_row()], config, None)
    assert result.verdict == "judge_error" and result.call_failed
    assert result.calls == 2
    assert "connection error" in (result.error or "").lower()


def test_retry_delay_is_exponential_capped_and_honours_retry_after() -> None:
    config = JudgeConfig(model="claude-haiku-4-5", backoff_base_s=1.0, max_backoff_s=5.0)
    assert 1.0 <= retry_delay(config, 1, None) <= 1.25
    assert 2.0 <= retry_delay(config, 2, None) <= 2.5
    assert retry_delay(config, 10, None) == 5.0
    assert retry_delay(config, 1, 3.0) == 3.0
    assert retry_delay(config, 1, 999.0) == 5.0  # capped


# --- cache ----------------------------------------------------------------------------------


def test_cache_makes_no_second_call_and_no_cache_forces_calls(
    server: FakeJudgeServer, tmp_path: Path
) -> None:
    server.responder = lambda _r: yes()
    rows = [make_row(f"wb-{i}") for i in range(3)]
    cache_path = tmp_path / CACHE_FILE_NAME
    config = config_for(server, "anthropic")

    first = judge_rows(rows, config, cache_path)
    assert len(server.requests) == 3
    assert not any(r.cached for r in first)

    second = judge_rows(rows, config, cache_path)
    assert len(server.requests) == 3  # nothing new
    assert all(r.cached and r.calls == 0 for r in second)
    assert [r.verdict for r in second] == ["YES"] * 3
    assert [r.id for r in second] == ["wb-0", "wb-1", "wb-2"]
    assert [(r.input_tokens, r.output_tokens) for r in second] == [(1000, 50)] * 3
    summary = judge_summary(second)
    assert summary["n_cached"] == 3 and summary["calls"] == 0
    assert summary["spent"]["input_tokens"] == 0

    forced = judge_rows(rows, config.model_copy(update={"no_cache": True}), cache_path)
    assert len(server.requests) == 6
    assert not any(r.cached for r in forced)

    lines = cache_path.read_text().splitlines()
    assert len(lines) == 6  # append-only: the forced calls were appended too
    entry = json.loads(lines[0])
    assert entry["model"] == "claude-haiku-4-5"
    assert entry["protocol"] == "strict"
    assert entry["prompt_hash"] == prompt_hash() == STRICT.prompt_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", entry["prompt_sha256"])
    text = cache_path.read_text()
    for key in KEYS.values():
        assert key not in text


def test_cache_is_keyed_by_model_and_prompt(server: FakeJudgeServer, tmp_path: Path) -> None:
    server.responder = lambda _r: yes()
    cache_path = tmp_path / CACHE_FILE_NAME
    config = config_for(server, "anthropic")
    judge_rows([make_row()], config, cache_path)
    judge_rows([make_row(prediction="Closed on Mondays")], config, cache_path)
    assert len(server.requests) == 2  # a different answer is a different prompt
    judge_rows([make_row()], config.model_copy(update={"model": "claude-sonnet-4-6"}), cache_path)
    assert len(server.requests) == 3  # a different judge model
    judge_rows([make_row()], config, cache_path)
    assert len(server.requests) == 3


def test_judge_errors_are_not_cached(server: FakeJudgeServer, tmp_path: Path) -> None:
    cache_path = tmp_path / CACHE_FILE_NAME
    server.script(Reply(status=401))
    config = config_for(server, "openai")
    [failed] = judge_rows([make_row()], config, cache_path)
    assert failed.verdict == "judge_error"
    assert not cache_path.exists() or cache_path.read_text() == ""

    server.script(Reply(text="nonsense"))
    [invalid] = judge_rows([make_row()], config, cache_path)
    assert invalid.verdict == "INVALID"
    [again] = judge_rows([make_row()], config, cache_path)
    assert again.cached and again.verdict == "INVALID"  # INVALID is a judgement: cached
    assert len(server.requests) == 2


def test_fully_cached_run_needs_no_key(
    server: FakeJudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.responder = lambda _r: no()
    cache_path = tmp_path / CACHE_FILE_NAME
    config = config_for(server, "google")
    judge_rows([make_row()], config, cache_path)
    monkeypatch.delenv("GEMINI_API_KEY")
    [result] = judge_rows([make_row()], config, cache_path)
    assert result.cached and result.verdict == "NO"
    with pytest.raises(JudgeConfigError, match="GEMINI_API_KEY"):
        judge_rows([make_row("other")], config, cache_path)


def test_torn_cache_line_is_skipped(server: FakeJudgeServer, tmp_path: Path) -> None:
    server.responder = lambda _r: yes()
    cache_path = tmp_path / CACHE_FILE_NAME
    config = config_for(server, "anthropic")
    judge_rows([make_row("a")], config, cache_path)
    with open(cache_path, "a") as fh:
        fh.write('{"model": "claude-haiku-4-5", "varia')  # a crash mid-write
    judge_rows([make_row("a"), make_row("b")], config, cache_path)
    assert len(server.requests) == 2  # "a" from the cache, "b" called
    good = [json.loads(line) for line in cache_path.read_text().splitlines()[::2]]
    assert [entry["id"] for entry in good] == ["a", "b"]


# --- concurrency ----------------------------------------------------------------------------


def test_workers_run_concurrently_and_results_keep_input_order(server: FakeJudgeServer) -> None:
    def respond(received: Received) -> Reply:
        number = int(re.search(r"\(wb-(\d+)\)", received.prompt).group(1))
        # Earlier rows answer later, so completion order is scrambled.
        delay = (12 - number) * 0.01 + random.random() * 0.01
        return Reply(text=(yes() if number % 2 == 0 else no()).text, delay_s=delay)

    server.responder = respond
    rows = [make_row(f"wb-{i}") for i in range(12)]
    seen: list[str] = []
    results = judge_rows(
        rows, config_for(server, "openai", workers=4), None, progress=lambda r: seen.append(r.id)
    )
    assert [r.id for r in results] == [f"wb-{i}" for i in range(12)]
    assert [r.verdict for r in results] == ["YES" if i % 2 == 0 else "NO" for i in range(12)]
    assert sorted(seen) == sorted(r.id for r in rows)
    assert server.max_in_flight > 1
    assert server.max_in_flight <= 4


def test_attempt_is_carried_over(server: FakeJudgeServer) -> None:
    server.responder = lambda _r: yes()
    rows = [make_row("wb-1", attempt=1), make_row("wb-1", attempt=2, prediction="other")]
    results = judge_rows(rows, config_for(server, "anthropic"), None)
    assert [(r.id, r.attempt) for r in results] == [("wb-1", 1), ("wb-1", 2)]


# --- the prompt -----------------------------------------------------------------------------


def _long_trace() -> list[ToolCall]:
    trace = [
        ToolCall(
            name="mcp__lightpanda__goto",
            args={"url": "https://shop.example.com/"},
            page_url="https://shop.example.com/",
            output="Navigated.",
        )
    ]
    for i in range(11):
        body = f"<<OUT{i:02d}>> " + ("x" * 100)
        if i == 9:
            body = "<<OUT09>> " + "y" * 2500 + "<<PAST-THE-CUT>>"
        trace.append(
            ToolCall(
                name="mcp__lightpanda__markdown" if i % 2 else "structuredData",
                page_url=f"https://shop.example.com/page-{i}",
                output=body,
            )
        )
        trace.append(
            ToolCall(
                name="click",
                args={"selector": "#next"},
                page_url=f"https://shop.example.com/page-{i}",
                output=f"<<CLICK{i:02d}>> clicked",
            )
        )
    return trace


def test_prompt_shows_the_last_8_outputs_cut_and_labelled(server: FakeJudgeServer) -> None:
    server.script(yes())
    row = make_row(trace=_long_trace())
    judge_rows([row], config_for(server, "google"), None)
    prompt = server.requests[0].prompt  # what the provider actually received

    for i in range(3):
        assert f"<<OUT{i:02d}>>" not in prompt  # older than the last 8
    for i in range(3, 11):
        assert f"<<OUT{i:02d}>>" in prompt
    assert "(3 earlier page outputs left out)" in prompt
    assert "<<CLICK" not in prompt and "Navigated." not in prompt  # actions are not reads
    assert "<<PAST-THE-CUT>>" not in prompt
    assert "y" * 1990 in prompt and "y" * 2000 not in prompt  # 10 + 1990 = 2,000 chars
    assert "[... cut: 2526 characters in all]" in prompt
    assert "--- [1/8] mcp__lightpanda__markdown on https://shop.example.com/page-3 ---" in prompt
    assert "--- [8/8] structuredData on https://shop.example.com/page-10 ---" in prompt
    assert prompt.index("<<OUT03>>") < prompt.index("<<OUT10>>")
    assert "START URL: https://shop.example.com/" in prompt
    assert "THE AGENT'S FINAL ANSWER:\nMon-Fri 9:00-17:00" in prompt
    assert "REFERENCE ANSWER" not in prompt


def test_visited_urls_in_order_without_consecutive_repeats() -> None:
    trace = [
        ToolCall(name="goto", args={"url": "https://a.example/"}, page_url="https://a.example/"),
        ToolCall(name="markdown", page_url="https://a.example/", output="A"),
        ToolCall(name="browser_navigate", args={"url": "https://b.example/x"}),
        ToolCall(name="click", args={"url": "https://not-navigation.example/"}),
        ToolCall(name="markdown", page_url="https://b.example/y", output="B"),  # redirect
        ToolCall(name="goto", args={"url": "https://a.example/"}),
    ]
    assert visited_urls(trace) == [
        "https://a.example/",
        "https://b.example/x",
        "https://b.example/y",
        "https://a.example/",
    ]
    prompt = build_prompt(make_row(trace=trace))
    assert (
        "1. https://a.example/\n2. https://b.example/x\n3. https://b.example/y\n"
        "4. https://a.example/" in prompt
    )


def test_page_reading_rule() -> None:
    calls = [
        ToolCall(name=name, output="content")
        for name in [
            "markdown",
            "mcp__lightpanda__structuredData",
            "interactiveElements",
            "semantic_tree",
            "get text",
            "WebFetch",
            "browser.snapshot",
            "evaluate",
            "links",
            "extract_content",
            "click",
            "fill",
            "goto",
            "scroll_down",
        ]
    ]
    calls.append(ToolCall(name="markdown", output="   "))  # blank output does not count
    calls.append(ToolCall(name="markdown", output=None))
    names = [c.name for c in page_reading_calls(calls)]
    assert names == [
        "markdown",
        "mcp__lightpanda__structuredData",
        "interactiveElements",
        "semantic_tree",
        "get text",
        "WebFetch",
        "browser.snapshot",
        "evaluate",
        "links",
        "extract_content",
    ]
    # Fallback: no read-tool name anywhere, so every call with output counts.
    unknown = [ToolCall(name="do_thing", output="page text"), ToolCall(name="other", output="")]
    assert [c.name for c in page_reading_calls(unknown)] == ["do_thing"]


def test_reference_answer_appears_when_given(server: FakeJudgeServer) -> None:
    server.responder = lambda _r: yes()
    rows = [make_row("wb-1"), make_row("wb-2"), make_row("wb-3", gold="gold answer 3")]
    judge_rows(rows, config_for(server, "anthropic", workers=1), None, {"wb-1": "9 to 5"})
    by_id = {
        re.search(r"\((wb-\d)\)", r.prompt).group(1): r.prompt  # type: ignore[union-attr]
        for r in server.requests
    }
    assert "REFERENCE ANSWER" in by_id["wb-1"] and "\n9 to 5\n" in by_id["wb-1"]
    assert "REFERENCE ANSWER" not in by_id["wb-2"]
    assert "gold answer 3" in by_id["wb-3"]  # the row's own gold when no reference given


def test_missing_answer_and_empty_trace() -> None:
    prompt = build_prompt(make_row(prediction=None, trace=[], start_url=None))
    assert "THE AGENT'S FINAL ANSWER:\n(the agent gave no answer)" in prompt
    assert "START URL: (none)" in prompt
    assert "IN ORDER:\n(none)" in prompt


def test_prompt_hash_tracks_the_template(monkeypatch: pytest.MonkeyPatch) -> None:
    original = prompt_hash()
    assert re.fullmatch(r"[0-9a-f]{64}", original)
    assert prompt_hash() == original
    monkeypatch.setattr(prompt_module, "TEMPLATE", prompt_module.TEMPLATE + " ")
    assert prompt_hash() != original
    monkeypatch.undo()
    monkeypatch.setattr(prompt_module, "MAX_PAGE_OUTPUTS", 9)
    assert prompt_hash() != original


# --- verdict parsing ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict", "reasoning"),
    [
        ("VERDICT: YES\nREASONING: fine", "YES", "fine"),
        ("VERDICT: NO\nREASONING: wrong page", "NO", "wrong page"),
        ("  \n VERDICT:   YES  \r\n\r\n  REASONING:  spaced out \n\n", "YES", "spaced out"),
        ("verdict: no\nreasoning: lower case", "NO", "lower case"),
        ("Verdict:Yes\nReasoning:tight", "YES", "tight"),
        ("VERDICT: YES\nREASONING: has: colons: inside", "YES", "has: colons: inside"),
    ],
)
def test_parse_verdict_accepts(text: str, verdict: str, reasoning: str) -> None:
    parsed = parse_verdict(text)
    assert (parsed.verdict, parsed.reasoning, parsed.problem) == (verdict, reasoning, None)


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   \n ",
        "VERDICT: YES",
        "REASONING: no verdict line",
        "VERDICT: MAYBE\nREASONING: unsure",
        "VERDICT: YES.\nREASONING: trailing period",
        "VERDICT: YES - it worked\nREASONING: extra words",
        "**VERDICT:** YES\nREASONING: markdown",
        "```\nVERDICT: YES\nREASONING: fenced\n```",
        "Here is my evaluation.\nVERDICT: YES\nREASONING: prose before",
        "VERDICT: YES\nREASONING: fine\nThanks!",
        "REASONING: swapped\nVERDICT: YES",
        "VERDICT: YES\nREASONING:   ",
        "VERDICT: YES\nVERDICT: NO",
        "FINAL VERDICT: YES\nREASONING: prefix",
    ],
)
def test_parse_verdict_rejects(text: str | None) -> None:
    parsed = parse_verdict(text)
    assert parsed.verdict == "INVALID"
    assert parsed.problem


# --- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "variable"),
    [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("google", "GEMINI_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
    ],
)
def test_missing_key_is_a_clear_config_error(
    server: FakeJudgeServer, monkeypatch: pytest.MonkeyPatch, provider: str, variable: str
) -> None:
    monkeypatch.delenv(variable)
    with pytest.raises(JudgeConfigError, match=variable):
        judge_rows([make_row()], config_for(server, provider), None)
    assert server.requests == []


def test_google_key_falls_back_to_google_api_key(
    server: FakeJudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY")
    monkeypatch.setenv("GOOGLE_API_KEY", "AIzaTEST-other-google-key-0123456789")
    server.script(yes())
    [result] = judge_rows([make_row()], config_for(server, "google"), None)
    assert result.verdict == "YES"
    assert server.requests[0].api_key == "AIzaTEST-other-google-key-0123456789"


def test_missing_judge_key_names_the_variable_to_set() -> None:
    claude, gemini = JudgeConfig(model="claude-sonnet-4-5"), JudgeConfig(model="gemini-2.5-pro")
    assert missing_judge_key(claude, {}) == "ANTHROPIC_API_KEY"
    assert missing_judge_key(claude, {"ANTHROPIC_API_KEY": "  "}) == "ANTHROPIC_API_KEY"
    assert missing_judge_key(claude, {"ANTHROPIC_API_KEY": "sk-ant-x"}) is None
    assert missing_judge_key(gemini, {}) == "GEMINI_API_KEY or GOOGLE_API_KEY"
    assert missing_judge_key(gemini, {"GOOGLE_API_KEY": "AIza-x"}) is None
    with pytest.raises(JudgeConfigError, match="my-model"):
        missing_judge_key(JudgeConfig(model="my-model"), {})


def test_provider_inference() -> None:
    def provider(model: str, base_url: str | None = None, explicit=None) -> str:
        return infer_provider(JudgeConfig(model=model, base_url=base_url, provider=explicit))

    assert provider("claude-sonnet-4-6") == "anthropic"
    assert provider("gemini-2.5-pro") == "google"
    assert provider("gpt-4.1") == "openai"
    assert provider("o3-mini") == "openai"
    assert provider("llama-3.3-70b", "http://localhost:8000/v1") == "openai"
    assert provider("claude-haiku-4-5", "http://proxy.local") == "anthropic"
    assert provider("my-model", explicit="anthropic") == "anthropic"
    with pytest.raises(JudgeConfigError, match="my-model"):
        provider("my-model")


def test_openai_compatible_endpoint_for_any_model(server: FakeJudgeServer) -> None:
    server.script(yes())
    config = JudgeConfig(model="qwen2.5-72b-instruct", base_url=server.base_url("openai"))
    [result] = judge_rows([make_row()], config, None)
    assert result.verdict == "YES"
    assert result.cost_usd is None  # not in the price table
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].model == "qwen2.5-72b-instruct"


def test_prices() -> None:
    assert cost_usd("claude-sonnet-4-6", 1_000_000, 1_000_000) == pytest.approx(18.0)
    assert cost_usd("claude-haiku-4-5-20251001", 1_000_000, 0) == pytest.approx(1.0)
    assert cost_usd("gemini-2.5-flash", 1_000_000, 1_000_000) == pytest.approx(2.80)
    assert cost_usd("gemini-2.5-flash-lite", 1_000_000, 0) == pytest.approx(0.10)
    assert cost_usd("gemini-2.5-pro", 0, 1_000_000) == pytest.approx(10.0)
    assert cost_usd("gpt-4.1", 1_000_000, 1_000_000) == pytest.approx(10.0)
    assert cost_usd("gpt-4.1-mini", 1_000_000, 1_000_000) == pytest.approx(2.0)
    assert cost_usd("gpt-4.10", 1, 1) is None
    assert cost_usd("mystery", 1, 1) is None


def test_judge_info() -> None:
    config = JudgeConfig(
        model="gpt-4.1-mini",
        protocol="strict",
        base_url="https://user:pw@gateway.example:8443/v1?token=abc",
    )
    info = judge_info(config)
    assert info["model"] == "gpt-4.1-mini"
    assert info["provider"] == "openai"
    assert info["protocol"] == "strict"
    assert info["prompt_hash"] == prompt_hash()
    assert info["base_url"] == "https://gateway.example:8443/v1"
    assert info["call"]["max_attempts"] == 5 and info["call"]["timeout_s"] == 60.0
    assert info["judges_empty_answers"] is False
    json.dumps(info)


def test_config_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        JudgeConfig(model="claude-haiku-4-5", workers=-1)
    with pytest.raises(ValueError):
        JudgeConfig(model="claude-haiku-4-5", protocol="strict", max_attempts=0)
    with pytest.raises(ValueError, match="one call per row"):
        JudgeConfig(model="claude-haiku-4-5", protocol="upstream", max_attempts=3)
    with pytest.raises(ValueError):
        JudgeConfig(model="claude-haiku-4-5", protocol="lenient")
    with pytest.raises(ValueError):
        JudgeConfig(model="")


def test_summary_counts_and_costs() -> None:
    results = [
        JudgeResult(id="a", verdict="YES", input_tokens=10, output_tokens=1, cost_usd=0.5),
        JudgeResult(
            id="b", verdict="NO", input_tokens=10, output_tokens=1, cost_usd=0.25, cached=True
        ),
        JudgeResult(id="c", verdict="judge_error", error="HTTP 500", call_failed=True, calls=5),
    ]
    summary = judge_summary(results)
    assert summary["verdicts"] == {"YES": 1, "NO": 1, "INVALID": 0, "judge_error": 1}
    assert summary["cost_usd"] == pytest.approx(0.75)
    assert summary["spent"]["cost_usd"] == pytest.approx(0.5)
    assert summary["calls"] == 5


# --- the upstream protocol ------------------------------------------------------------------


def upstream_config(server: FakeJudgeServer, provider: str, **overrides) -> JudgeConfig:
    settings = {
        "model": MODELS[provider],
        "protocol": "upstream",
        "base_url": server.base_url(provider),
        "workers": 1,
        "timeout_s": 5.0,
    }
    settings.update(overrides)
    return JudgeConfig(**settings)


def _every_stack_trace() -> list[ToolCall]:
    """Each call's output is a marker naming the call, so a prompt shows which got through."""

    def call(name: str, page: str | None = None, **args) -> ToolCall:
        return ToolCall(name=name, args=args, page_url=page, output=f"OUT<{name}>")

    return [
        call("markdown", page="https://shop.example.com/"),  # before any goto: the start URL
        ToolCall(name="goto", args={"url": "https://shop.example.com/a"}, output="navigated"),
        call("extract", page="https://shop.example.com/a", selector=".price"),
        call("tree", page="https://shop.example.com/a"),
        call("interactiveElements", page="https://shop.example.com/a"),
        call("structuredData", page="https://shop.example.com/a"),
        call("links", page="https://shop.example.com/a"),
        call("getUrl", page="https://shop.example.com/a"),
        call("eval", page="https://shop.example.com/a", script="document.title"),
        call("findElement", page="https://shop.example.com/a"),
        ToolCall(name="mcp__lightpanda__goto", args={"url": "https://shop.example.com/b"}),
        call("mcp__lightpanda__markdown", page="https://shop.example.com/b"),
        call("snapshot", page="https://shop.example.com/c"),  # agent-browser
        call("get", page="https://shop.example.com/c"),  # agent-browser
        call("mcp__browser-use__browser_get_state", page="https://shop.example.com/d"),
    ]


UPSTREAM_SHOWN = [
    "markdown",
    "extract",
    "tree",
    "interactiveElements",
    "structuredData",
    "mcp__lightpanda__markdown",
]
UPSTREAM_HIDDEN = [
    "links",
    "getUrl",
    "eval",
    "findElement",
    "snapshot",
    "get",
    "mcp__browser-use__browser_get_state",
]


def test_upstream_shows_the_judge_only_upstreams_page_reading_tools(
    server: FakeJudgeServer,
) -> None:
    server.script(yes())
    row = make_row(trace=_every_stack_trace(), web_name="shop.example.com")
    judge_rows([row], upstream_config(server, "anthropic"), None)
    [sent] = server.requests
    for name in UPSTREAM_SHOWN:
        assert f"OUT<{name}>" in sent.prompt, name
    for name in UPSTREAM_HIDDEN:
        assert f"OUT<{name}>" not in sent.prompt, name
    assert "navigated" not in sent.prompt  # goto gives a URL, never page text
    # Visited URLs: goto arguments only, in order; page URLs of other calls are not listed.
    assert "- https://shop.example.com/a\n- https://shop.example.com/b\n" in sent.prompt
    assert "https://shop.example.com/c" not in sent.prompt
    # Each excerpt is read on the page of the latest goto (the start URL before any).
    assert "[excerpt 1] markdown on https://shop.example.com/\n" in sent.prompt
    assert '[excerpt 2] extract {"selector": ".price"} on https://shop.example.com/a' in (
        sent.prompt
    )
    assert "[excerpt 6] markdown on https://shop.example.com/b\nOUT<" in sent.prompt
    assert "TASK (site: shop.example.com):" in sent.prompt
    assert sent.system == upstream_prompt.SYSTEM_PROMPT


def test_strict_shows_every_read_tool_and_no_system_prompt(server: FakeJudgeServer) -> None:
    server.script(yes())
    judge_rows([make_row(trace=_every_stack_trace())], config_for(server, "anthropic"), None)
    [sent] = server.requests
    # Its window is the last 8 read-tool outputs: the agent-browser and browser-use ones
    # (which upstream never shows) are in it.
    for name in ["snapshot", "get", "mcp__browser-use__browser_get_state", "getUrl", "eval"]:
        assert f"OUT<{name}>" in sent.prompt, name
    assert "https://shop.example.com/c" in sent.prompt  # page URLs count as visited
    assert sent.system is None


def test_upstream_keeps_the_last_8_excerpts_cut_at_2000_characters(
    server: FakeJudgeServer,
) -> None:
    trace = [
        ToolCall(name="markdown", output=f"page {i} " + "x" * (2500 if i == 11 else 10))
        for i in range(12)
    ]
    server.script(yes())
    judge_rows([make_row(trace=trace)], upstream_config(server, "google"), None)
    prompt = server.requests[0].prompt
    assert "page 3 " not in prompt and "page 4 " in prompt and "[excerpt 8]" in prompt
    assert "[excerpt 9]" not in prompt
    last = prompt.split("[excerpt 8] markdown on https://shop.example.com/\n", 1)[1]
    body = last.split("\n\nTHE AGENT'S ANSWER", 1)[0]
    assert body == ("page 11 " + "x" * 2500)[:2000] + upstream_prompt.CUT_NOTE


def test_upstream_prompt_without_navigation_reading_or_answer() -> None:
    row = make_row(prediction="  ", trace=[], web_name=None)
    text = upstream_prompt.build_prompt(row, "The shop opens at nine")
    assert upstream_prompt.NO_URLS in text and upstream_prompt.NO_SNAPSHOTS in text
    assert f"THE AGENT'S ANSWER:\n{upstream_prompt.EMPTY_ANSWER}\n" in text
    assert "REFERENCE ANSWER (a hint" in text and "The shop opens at nine" in text
    assert "TASK (site: (unknown))" in text


@pytest.mark.parametrize(
    ("reply", "verdict", "reasoning"),
    [
        ("VERDICT: YES\nREASONING: Seen on the page.", "YES", "Seen on the page."),
        ("verdict: no\nreasoning: not there", "NO", "not there"),
        ("Let me look.\n\n   VERDICT:   YES  \nREASONING: fine\nThanks!", "YES", "fine"),
        ("VERDICT: YES.\nREASONING: r", "YES", "r"),
        ("VERDICT: Yes, the price is shown", "YES", "VERDICT: Yes, the price is shown"),
        ("VERDICT: NOT SURE\nREASONING: hard to say", "NO", "hard to say"),  # prefix NO
        ("VERDICT: YES\nVERDICT: NO\nREASONING: changed its mind", "NO", "changed its mind"),
        ("VERDICT: NO\nVERDICT: MAYBE\nREASONING: r", "NO", "r"),
        ("REASONING: first\nVERDICT: YES\nREASONING: second", "YES", "second"),
    ],
)
def test_upstream_verdict_read_by_prefix(reply: str, verdict: str, reasoning: str) -> None:
    parsed = upstream_prompt.parse_verdict(reply)
    assert (parsed.verdict, parsed.reasoning, parsed.problem) == (verdict, reasoning, None)


@pytest.mark.parametrize(
    "reply",
    [
        "",
        None,
        "I think the agent succeeded.",
        "**VERDICT:** YES",
        "VERDICT : YES",
        "VERDICT: MAYBE\nREASONING: unsure",
        "VERDICT:\nREASONING: nothing",
        "The verdict: YES",
    ],
)
def test_upstream_verdict_junk_is_invalid(reply: str | None) -> None:
    parsed = upstream_prompt.parse_verdict(reply)
    assert parsed.verdict == "INVALID" and parsed.problem
    if reply and "REASONING:" not in reply:
        assert parsed.reasoning == reply.strip()  # the whole reply, for the report


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("verdict: yes, clearly\nreasoning: ok", "YES"), ("**VERDICT:** YES", "INVALID")],
)
def test_upstream_verdict_through_the_sdk(
    server: FakeJudgeServer, reply: str, verdict: str
) -> None:
    server.script(Reply(text=reply))
    [result] = judge_rows([make_row()], upstream_config(server, "openai"), None)
    assert result.verdict == verdict and result.raw == reply and not result.call_failed


@pytest.mark.parametrize("provider", ["google", "openai"])
def test_upstream_makes_one_call_and_a_failure_is_invalid(
    server: FakeJudgeServer, provider: str, tmp_path: Path
) -> None:
    server.script(Reply(status=500), yes())
    cache_path = tmp_path / CACHE_FILE_NAME
    [result] = judge_rows([make_row()], upstream_config(server, provider), cache_path)
    assert len(server.requests) == 1
    assert (result.verdict, result.call_failed, result.calls) == ("INVALID", True, 1)
    assert result.error and result.error.startswith("judge call failed: HTTP 500")
    assert "one call per row" in result.error
    summary = judge_summary([result])
    assert summary["verdicts"]["INVALID"] == 1 and summary["n_call_failed"] == 1
    # A failed call is not a judgement: grading again asks again.
    [again] = judge_rows([make_row()], upstream_config(server, provider), cache_path)
    assert again.verdict == "YES" and not again.cached and len(server.requests) == 2


def test_upstream_anthropic_keeps_the_sdks_own_two_retries(server: FakeJudgeServer) -> None:
    # Upstream builds anthropic.Anthropic() with the SDK's defaults: two retries inside one
    # call on a 5xx. The harness adds none, and the row is INVALID once they are spent.
    fast = {"retry-after-ms": "1"}
    server.script(*[Reply(status=500, headers=fast)] * 3, yes())
    [result] = judge_rows([make_row()], upstream_config(server, "anthropic"), None)
    assert len(server.requests) == 3
    assert [r.headers.get("x-stainless-retry-count") for r in server.requests] == ["0", "1", "2"]
    assert (result.verdict, result.call_failed, result.calls) == ("INVALID", True, 1)


def test_upstream_client_error_is_one_request(server: FakeJudgeServer) -> None:
    server.script(Reply(status=400), yes())
    [result] = judge_rows([make_row()], upstream_config(server, "anthropic"), None)
    assert len(server.requests) == 1
    assert result.verdict == "INVALID" and "HTTP 400" in (result.error or "")


def test_upstream_call_settings_on_the_wire(server: FakeJudgeServer) -> None:
    server.responder = lambda _r: yes()
    judge_rows([make_row()], upstream_config(server, "anthropic"), None)
    judge_rows([make_row()], upstream_config(server, "google"), None)
    anthropic_body, google_body = server.requests[0].body, server.requests[1].body
    assert anthropic_body["max_tokens"] == 256
    assert "temperature" not in anthropic_body
    assert server.requests[0].system == upstream_prompt.SYSTEM_PROMPT
    generation = google_body["generationConfig"]
    # google-genai 3.x spells the inner field in snake case; the API takes either spelling.
    thinking = {k.replace("_", "").lower(): v for k, v in generation["thinkingConfig"].items()}
    assert thinking == {"thinkingbudget": 512}
    assert generation["maxOutputTokens"] == 1024
    assert "temperature" not in generation
    assert server.requests[1].system == upstream_prompt.SYSTEM_PROMPT
    assert upstream_prompt.SYSTEM_PROMPT not in server.requests[1].prompt


def test_strict_call_settings_on_the_wire(server: FakeJudgeServer) -> None:
    server.responder = lambda _r: yes()
    judge_rows([make_row()], config_for(server, "anthropic"), None)
    judge_rows([make_row()], config_for(server, "google"), None)
    assert server.requests[0].body["max_tokens"] == 1024
    assert "system" not in server.requests[0].body
    generation = server.requests[1].body["generationConfig"]
    assert generation == {"temperature": 0.0}
    assert "systemInstruction" not in server.requests[1].body


def test_models_prefixed_gemini_model(server: FakeJudgeServer) -> None:
    config = upstream_config(server, "google", model="models/gemini-2.5-flash")
    assert infer_provider(config) == "google"
    assert missing_judge_key(config, {"GOOGLE_API_KEY": "AIza-x"}) is None
    server.script(no())
    [result] = judge_rows([make_row()], config, None)
    assert result.verdict == "NO"
    assert server.requests[0].path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert result.cost_usd == cost_usd("gemini-2.5-flash", 1000, 50)
    assert judge_info(config)["model"] == "models/gemini-2.5-flash"


@pytest.mark.parametrize("workers", [0, 1])
def test_zero_or_one_worker_judges_one_row_after_another(
    server: FakeJudgeServer, workers: int
) -> None:
    server.responder = lambda _r: Reply(text="VERDICT: YES\nREASONING: ok", delay_s=0.05)
    rows = [make_row(f"wb-{i}") for i in range(4)]
    seen: list[str] = []
    config = upstream_config(server, "anthropic", workers=workers)
    results = judge_rows(rows, config, None, progress=lambda r: seen.append(r.id))
    assert server.max_in_flight == 1
    assert [r.id for r in results] == seen == ["wb-0", "wb-1", "wb-2", "wb-3"]
    assert all(f"({r.id})" in q.prompt for r, q in zip(results, server.requests, strict=True))


def test_cache_never_reuses_a_verdict_across_protocols(
    server: FakeJudgeServer, tmp_path: Path
) -> None:
    server.script(no(), yes())
    cache_path = tmp_path / CACHE_FILE_NAME
    strict = config_for(server, "anthropic")
    upstream = upstream_config(server, "anthropic")
    [by_strict] = judge_rows([make_row()], strict, cache_path)
    [by_upstream] = judge_rows([make_row()], upstream, cache_path)
    assert (by_strict.verdict, by_upstream.verdict) == ("NO", "YES")
    assert len(server.requests) == 2 and not by_upstream.cached
    [strict_again] = judge_rows([make_row()], strict, cache_path)
    [upstream_again] = judge_rows([make_row()], upstream, cache_path)
    assert len(server.requests) == 2
    assert (strict_again.verdict, upstream_again.verdict) == ("NO", "YES")
    assert strict_again.cached and upstream_again.cached
    entries = [json.loads(line) for line in cache_path.read_text().splitlines()]
    assert [e["protocol"] for e in entries] == ["strict", "upstream"]
    assert [e["prompt_hash"] for e in entries] == [STRICT.prompt_hash(), UPSTREAM.prompt_hash()]
    assert STRICT.prompt_hash() != UPSTREAM.prompt_hash()


def test_upstream_judge_info_records_protocol_and_call_settings() -> None:
    info = judge_info(JudgeConfig(model=UPSTREAM.default_model))
    assert info["protocol"] == "upstream" and info["model"] == "claude-sonnet-4-5"
    assert info["provider"] == "anthropic"
    assert info["prompt_hash"] == UPSTREAM.prompt_hash()
    assert info["judges_empty_answers"] is True and info["failed_call_verdict"] == "INVALID"
    call = info["call"]
    assert (call["anthropic_max_tokens"], call["anthropic_sdk_retries"]) == (256, 2)
    assert (call["gemini_thinking_budget"], call["gemini_max_output_tokens"]) == (512, 1024)
    assert (call["temperature"], call["max_attempts"], call["timeout_s"]) == (None, 1, 600.0)
    json.dumps(info)
