"""The Lightpanda trace reader, on the real wire samples and on synthetic traces.

The samples (``../shared/wire-samples/lightpanda``) were recorded from ``lightpanda agent``
1.0.2 driven by a fake model server; every number asserted here was read from those files.
They are required: a missing sample fails the test rather than skipping it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.backends.lightpanda_trace import (
    parse_usage_line,
    read_trace,
    strip_ansi,
)
from agent_benchmarks.records import Usage
from tests.support import SHARED

SAMPLES = SHARED / "wire-samples" / "lightpanda"
SITE = "http://127.0.0.1:8765"
FORM_RESULT = (
    f"{SITE}/result.html?name=Ada+Lovelace&email=ada%40example.com&topic=support&subscribe=yes"
)


def sample(rel: str) -> Path:
    path = SAMPLES / rel
    if not path.exists():
        pytest.fail(f"wire sample missing: {path}")
    return path


def write_trace(tmp_path: Path, records: list[dict], tail: str = "") -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")
    return path


def model(step: int, input: int, cached: int = 0, creation: int = 0, output: int = 5, **kw):
    tokens = {"input": input, "cached": cached, "cache_creation": creation, "output": output}
    return {"type": "model", "step": step, "phase": "turn", "ms": 3, "tokens": tokens, **kw}


def tool(step: int, name: str, **kw):
    return {"type": "tool", "step": step, "name": name, "args": {}, "ms": 1, "error": False, **kw}


RUN = {"type": "run", "t": 0, "provider": "openai_compatible", "model": "m", "task": "secret"}


def end(model_calls: int, tool_calls: int) -> dict:
    zero = {"input": 0, "cached": 0, "cache_creation": 0, "output": 0}
    return {"type": "end", "model_calls": model_calls, "tool_calls": tool_calls, "tokens": zero}


# --- the real samples -------------------------------------------------------------------------


def test_table_run_with_results() -> None:
    s = read_trace(sample("agent_run1_table/trace.jsonl"))
    assert s.problems == []
    assert s.run == {"type": "run", "t": 0, "provider": "openai_compatible", "model": "fake-model"}
    assert s.usage == Usage(input_tokens=3009, output_tokens=60, turns=3)
    assert s.phases == {"turn": 3}
    assert s.preloaded_calls == 0
    assert s.end == {
        "type": "end",
        "t": 108,
        "model_calls": 3,
        "tool_calls": 2,
        "tokens": {"input": 3009, "cached": 0, "cache_creation": 0, "output": 60},
    }
    markdown, extract = s.calls
    assert markdown.name == "markdown"
    assert markdown.args == {"url": f"{SITE}/products.html"}
    assert (markdown.latency_ms, markdown.result_bytes) == (5.0, 295)
    assert (markdown.page_url, markdown.http_status, markdown.error) == (
        f"{SITE}/products.html",
        200,
        None,
    )
    assert markdown.output is not None
    assert "| B\\-300 | Green Gadget | 99.99 | 7 |" in markdown.output
    assert len(markdown.output.encode()) == 295
    assert extract.name == "extract"
    assert (extract.latency_ms, extract.result_bytes) == (1.0, 137)
    assert extract.output is not None
    assert json.loads(extract.output)["rows"][2] == {"sku": "B-300", "price": "99.99"}


def test_form_run_without_results_has_a_preload_and_two_errors() -> None:
    s = read_trace(sample("agent_run2_form/trace.jsonl"))
    assert s.problems == []
    assert s.usage == Usage(input_tokens=7035, output_tokens=140, turns=7)
    assert [c.name for c in s.calls] == [
        "goto",
        "tree",
        "fill",
        "fill",
        "selectOption",
        "setChecked",
        "click",
        "noSuchTool",
        "click",
        "extract",
    ]
    # The opening goto comes from --url: it precedes every model record.
    assert s.preloaded_calls == 1
    assert s.calls[0].args == {"url": f"{SITE}/form.html"}
    assert all(c.output is None for c in s.calls)  # recorded without --trace-results
    assert [c.error for c in s.calls] == [None] * 7 + ["error", "error", None]
    assert s.calls[6].args == {"selector": "#submit"}
    assert (s.calls[6].page_url, s.calls[6].latency_ms) == (FORM_RESULT, 12.0)
    assert [c.page_url for c in s.calls[:6]] == [f"{SITE}/form.html"] * 6
    assert {c.http_status for c in s.calls} == {200}
    assert [c.result_bytes for c in s.calls] == [23, 309, 129, 133, 121, 122, 183, 24, 198, 86]
    assert s.end is not None
    assert (s.end["model_calls"], s.end["tool_calls"]) == (7, 10)


def test_anthropic_run() -> None:
    s = read_trace(sample("agent_run6_anthropic_provider/trace.jsonl"))
    assert s.problems == []
    assert s.run == {"type": "run", "t": 0, "provider": "anthropic", "model": "claude-fake-1"}
    assert s.usage == Usage(input_tokens=203, output_tokens=20, turns=2)
    [markdown] = s.calls
    assert markdown.args == {"url": f"{SITE}/index.html"}
    assert (markdown.page_url, markdown.http_status, markdown.result_bytes) == (
        f"{SITE}/index.html",
        200,
        507,
    )


def test_http_500_run_has_only_run_and_end() -> None:
    s = read_trace(sample("agent_run4_errors/a_http500_retries/trace.jsonl"))
    assert s.problems == []
    assert s.calls == []
    assert s.usage == Usage()
    assert s.phases == {}
    assert s.end is not None
    assert (s.end["t"], s.end["model_calls"]) == (64114, 0)


def test_turn_cap_run_ends_with_a_synthesis_call() -> None:
    s = read_trace(sample("agent_run4_errors/b_loop_100_turn_cap/trace.jsonl"))
    assert s.problems == []
    assert s.phases == {"turn": 100, "synthesis": 1}
    assert s.usage == Usage(input_tokens=106252, output_tokens=2020, turns=101)
    assert len(s.calls) == 101
    # No page was ever loaded: the records carry no page at all.
    assert {(c.name, c.error, c.page_url, c.http_status) for c in s.calls} == {
        ("getUrl", "error", None, None)
    }


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("agent_run1_table", Usage(input_tokens=3009, output_tokens=60)),
        ("agent_run2_form", Usage(input_tokens=7035, output_tokens=140)),
        ("agent_run6_anthropic_provider", Usage(input_tokens=203, output_tokens=20)),
        ("agent_run4_errors/a_http500_retries", Usage()),
        ("agent_run4_errors/b_loop_100_turn_cap", Usage(input_tokens=106252, output_tokens=2020)),
    ],
)
def test_usage_line_of_each_sample(rel: str, expected: Usage) -> None:
    stderr = sample(f"{rel}/stderr.txt").read_text(encoding="utf-8")
    assert "\x1b[" in stderr  # the samples are coloured, as a pipe receives them
    assert parse_usage_line(stderr) == expected
    # On success the line equals the end record's totals (turns aside: the line has none).
    trace_usage = read_trace(sample(f"{rel}/trace.jsonl")).usage
    if trace_usage.turns:
        assert trace_usage.model_copy(update={"turns": 0}) == expected


def test_every_sample_trace_parses_cleanly() -> None:
    traces = sorted(SAMPLES.glob("agent_run*/**/trace.jsonl"))
    assert len(traces) >= 5, traces
    for path in traces:
        s = read_trace(path)
        assert s.problems == [], (path, s.problems)
        assert s.end is not None
        assert s.end["model_calls"] == s.usage.turns
        assert s.end["tool_calls"] == len(s.calls)


# --- synthetic traces -----------------------------------------------------------------------


def test_input_includes_both_cache_counts(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        [
            RUN,
            model(1, input=1000, cached=600, creation=300, output=7),
            model(2, input=1100, cached=900, creation=0, output=3, phase="synthesis"),
            # A provider that under-reports input must not yield negative tokens.
            model(3, input=10, cached=30, creation=0, output=1, phase="save"),
            end(3, 0),
        ],
    )
    s = read_trace(path)
    assert s.problems == []
    assert s.usage == Usage(
        input_tokens=100 + 200 + 0,
        cache_read_tokens=600 + 900 + 30,
        cache_write_tokens=300,
        output_tokens=11,
        turns=3,
    )
    assert s.usage.cost_usd is None
    assert s.phases == {"turn": 1, "synthesis": 1, "save": 1}
    assert s.run == {"type": "run", "t": 0, "provider": "openai_compatible", "model": "m"}


def test_tool_error_text_is_the_result(tmp_path: Path) -> None:
    page = {"url": "http://x/a", "httpStatus": 404, "title": "Not found"}
    path = write_trace(
        tmp_path,
        [
            RUN,
            model(1, input=10),
            tool(1, "click", args={"selector": "#no"}, error=True, result="No element", page=page),
            tool(2, "click", error=True, result=""),
            tool(3, "goto", navigated=True, result="Navigated. HTTP 404.", page=page),
            end(1, 3),
        ],
    )
    failed, silent, goto = read_trace(path).calls
    assert (failed.error, failed.output, failed.args) == (
        "No element",
        "No element",
        {"selector": "#no"},
    )
    assert (failed.page_url, failed.http_status) == ("http://x/a", 404)
    assert (silent.error, silent.output) == ("error", "")
    # A 404 page is not a tool error: the status says what happened.
    assert (goto.error, goto.http_status) == (None, 404)


def test_torn_last_line_is_noted_not_raised(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        [RUN, model(1, input=50, output=2), tool(1, "goto", result="ok")],
        tail='{"type":"tool","step":2,"name":"markdown","args":{},"res',
    )
    s = read_trace(path)
    assert s.problems == [
        "line 4: not JSON (torn last line?)",
        "no end record (agent killed before finishing?)",
    ]
    assert s.end is None
    assert [c.name for c in s.calls] == ["goto"]
    assert s.usage == Usage(input_tokens=50, output_tokens=2, turns=1)


def test_torn_multibyte_character(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_bytes((json.dumps(RUN) + "\n").encode() + '{"result":"Caf\u00e9'.encode()[:-1])
    assert read_trace(path).problems == [
        "line 2: not JSON (torn last line?)",
        "no end record (agent killed before finishing?)",
    ]


def test_bad_records_in_the_middle(tmp_path: Path) -> None:
    path = write_trace(
        tmp_path,
        [{"type": "model", "tokens": {"input": 5}}, {"type": "tool"}, {"type": "later"}, [1]],
    )
    assert read_trace(path).problems == [
        "line 1: model record without tokens.cached",
        "line 1: model record without tokens.cache_creation",
        "line 1: model record without tokens.output",
        "line 2: tool record without a name",
        "line 3: unknown record type 'later'",
        "line 4: not a JSON object",
        "no run record",
        "no end record (agent killed before finishing?)",
    ]


def test_missing_file(tmp_path: Path) -> None:
    s = read_trace(tmp_path / "absent.jsonl")
    assert s.problems == ["no trace file"]
    assert (s.calls, s.usage, s.run, s.end, s.phases) == ([], Usage(), None, None, {})


def test_output_truncation(tmp_path: Path) -> None:
    text = "x" * 30
    path = write_trace(
        tmp_path,
        [RUN, model(1, input=1), tool(1, "markdown", result=text, error=True), end(1, 1)],
    )
    [call] = read_trace(path, max_output_chars=10).calls
    assert call.output == "x" * 10 + "\n[... truncated 20 chars]"
    assert call.error == call.output
    [whole] = read_trace(path, max_output_chars=30).calls
    assert whole.output == text


def test_usage_line_absent_or_incomplete() -> None:
    assert parse_usage_line("") is None
    assert parse_usage_line("error: boom\n") is None
    assert parse_usage_line("$usage input=3 output=4\n") is None


def test_usage_line_last_one_wins_and_cache_is_subtracted() -> None:
    stderr = (
        "$usage input=1 cached=0 cache_creation=0 output=1\n"
        "\x1b[2m\x1b[36m[tool: goto]\x1b[0m {}\n"
        "\x1b[2m$usage input=900 cached=500 cache_creation=100 output=42\x1b[0m\n"
    )
    assert parse_usage_line(stderr) == Usage(
        input_tokens=300, cache_read_tokens=500, cache_write_tokens=100, output_tokens=42
    )


def test_strip_ansi() -> None:
    line = "\x1b[2m\x1b[36m[tool: markdown]\x1b[0m {}\x1b[1m\x1b[31mError\x1b[0m"
    assert strip_ansi(line) == "[tool: markdown] {}Error"
