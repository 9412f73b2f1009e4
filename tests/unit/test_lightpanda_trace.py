"""The Lightpanda trace reader, on the project's recordings and on synthetic traces.

The recordings (``tests/fixtures/lightpanda``, made by ``tests/fixtures/record.py``) are of
the real ``lightpanda agent`` 1.0.2 driven by the project's scripted model server, browsing
the localweb site; every number asserted here was read from them. They are required: a
missing file fails the test rather than skipping it.
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
from agent_benchmarks.records.schema import Usage
from tests.fixtures import LIGHTPANDA, SITE, fixture, read_jsonl

RUNS = ("table", "form", "anthropic", "http500", "turn_cap")
ENQUIRY = f"{SITE}/enquiry"
# The confirmation page the form's submit click landed on.
THANKS = f"{SITE}/enquiry/thanks?c=LW-20634276"


def sample(rel: str) -> Path:
    return fixture(LIGHTPANDA / rel)


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


# --- the recordings ---------------------------------------------------------------------------


def test_table_run_with_results() -> None:
    s = read_trace(sample("table/trace.jsonl"))
    assert s.problems == []
    assert s.run == {
        "type": "run",
        "t": 0,
        "provider": "openai_compatible",
        "model": "scripted-model",
    }
    # The scripted server bills half of each prompt as cached: Lightpanda's "input" includes
    # it, the neutral count does not.
    assert s.usage == Usage(input_tokens=13610, cache_read_tokens=13608, output_tokens=60, turns=3)
    assert s.phases == {"turn": 3}
    assert s.preloaded_calls == 0
    assert s.end == {
        "type": "end",
        "t": 18,
        "model_calls": 3,
        "tool_calls": 2,
        "tokens": {"input": 27218, "cached": 13608, "cache_creation": 0, "output": 60},
    }
    markdown, extract = s.calls
    assert markdown.name == "markdown"
    assert markdown.args == {"url": f"{SITE}/catalogue"}
    assert (markdown.latency_ms, markdown.result_bytes) == (11.0, 2105)
    assert (markdown.page_url, markdown.http_status, markdown.error) == (
        f"{SITE}/catalogue",
        200,
        None,
    )
    assert markdown.output is not None
    assert "| LW\\-1011 | Kestrel Binoculars | Outdoor | $129.00 |" in markdown.output
    assert len(markdown.output.encode()) == 2105
    assert extract.name == "extract"
    assert (extract.latency_ms, extract.result_bytes) == (1.0, 1063)
    assert extract.output is not None
    assert json.loads(extract.output)["rows"][10] == {"sku": "LW-1011", "price": "$129.00"}
    answer = sample("table/stdout.txt").read_text(encoding="utf-8")
    assert answer == "The Kestrel Binoculars (LW-1011) cost $129.00.\n"


def test_form_run_without_results_has_a_preload_and_two_errors() -> None:
    s = read_trace(sample("form/trace.jsonl"))
    assert s.problems == []
    assert s.usage == Usage(input_tokens=32434, cache_read_tokens=32431, output_tokens=106, turns=7)
    assert [c.name for c in s.calls] == [
        "goto",
        "tree",
        "fill",
        "fill",
        "selectOption",
        "fill",
        "setChecked",
        "click",
        "noSuchTool",
        "click",
        "extract",
    ]
    # The opening goto comes from --url: it precedes every model record.
    assert s.preloaded_calls == 1
    assert s.calls[0].args == {"url": ENQUIRY}
    assert all(c.output is None for c in s.calls)  # recorded without --trace-results
    assert [c.error for c in s.calls] == [None] * 8 + ["error", "error", None]
    assert s.calls[7].args == {"selector": "#submit-enquiry"}
    assert (s.calls[7].page_url, s.calls[7].latency_ms) == (THANKS, 22.0)
    assert [c.page_url for c in s.calls[:7]] == [ENQUIRY] * 7
    assert [c.page_url for c in s.calls[7:]] == [THANKS] * 4
    assert {c.http_status for c in s.calls} == {200}
    assert [c.result_bytes for c in s.calls] == [
        23,
        1072,
        155,
        159,
        150,
        149,
        144,
        166,
        24,
        198,
        30,
    ]
    assert s.end is not None
    assert (s.end["model_calls"], s.end["tool_calls"]) == (7, 11)


def test_anthropic_run() -> None:
    s = read_trace(sample("anthropic/trace.jsonl"))
    assert s.problems == []
    assert s.run == {"type": "run", "t": 0, "provider": "anthropic", "model": "claude-scripted-1"}
    assert s.usage == Usage(input_tokens=8537, cache_read_tokens=8536, output_tokens=23, turns=2)
    [markdown] = s.calls
    assert markdown.args == {"url": f"{SITE}/"}
    assert (markdown.page_url, markdown.http_status, markdown.result_bytes) == (
        f"{SITE}/",
        200,
        1539,
    )
    # Non-streaming Messages requests, straight to /v1/messages (no ?beta=true).
    log = read_jsonl(LIGHTPANDA / "anthropic" / "requests.jsonl")
    assert [(r["method"], r["path"], r["stream"]) for r in log] == [
        ("POST", "/v1/messages", False)
    ] * 2


def test_http_500_run_has_only_run_and_end() -> None:
    s = read_trace(sample("http500/trace.jsonl"))
    assert sample("http500/rc.txt").read_text().strip() == "rc=1"
    assert s.problems == []
    assert s.calls == []
    assert s.usage == Usage()
    assert s.phases == {}
    assert s.end is not None
    assert (s.end["t"], s.end["model_calls"]) == (57708, 0)
    # The model listing, then the first request and five retries, each answered 500.
    log = read_jsonl(LIGHTPANDA / "http500" / "requests.jsonl")
    assert [(r["route"], r["status"], r["fault"]) for r in log] == [("models", 200, None)] + [
        ("chat_completions", 500, "server_error")
    ] * 6


def test_turn_cap_run_ends_with_a_synthesis_call() -> None:
    s = read_trace(sample("turn_cap/trace.jsonl"))
    assert s.problems == []
    assert s.phases == {"turn": 100, "synthesis": 1}
    assert s.usage == Usage(
        input_tokens=608465, cache_read_tokens=608414, output_tokens=101, turns=101
    )
    assert len(s.calls) == 101
    # No page was ever loaded: the records carry no page at all.
    assert {(c.name, c.error, c.page_url, c.http_status) for c in s.calls} == {
        ("getUrl", "error", None, None)
    }
    # The synthesis request offers no tools; its reply (a tool call) leaves no answer.
    log = read_jsonl(LIGHTPANDA / "turn_cap" / "requests.jsonl")
    assert len(log) == 102 and log[-1]["file"] == "requests/req_102.json"
    last = json.loads(sample("turn_cap/requests/req_102.json").read_text(encoding="utf-8"))
    assert "tools" not in last["body"] or last["body"]["tools"] == []
    assert sample("turn_cap/stdout.txt").read_text(encoding="utf-8").strip() == ""


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("table", Usage(input_tokens=13610, cache_read_tokens=13608, output_tokens=60)),
        ("form", Usage(input_tokens=32434, cache_read_tokens=32431, output_tokens=106)),
        ("anthropic", Usage(input_tokens=8537, cache_read_tokens=8536, output_tokens=23)),
        ("http500", Usage()),
        ("turn_cap", Usage(input_tokens=608465, cache_read_tokens=608414, output_tokens=101)),
    ],
)
def test_usage_line_of_each_sample(rel: str, expected: Usage) -> None:
    stderr = sample(f"{rel}/stderr.txt").read_text(encoding="utf-8")
    assert "\x1b[" in stderr  # the recordings are coloured, as a pipe receives them
    assert parse_usage_line(stderr) == expected
    # On success the line equals the end record's totals (turns aside: the line has none).
    trace_usage = read_trace(sample(f"{rel}/trace.jsonl")).usage
    if trace_usage.turns:
        assert trace_usage.model_copy(update={"turns": 0}) == expected


@pytest.mark.parametrize("rel", RUNS)
def test_every_sample_agrees_with_the_server(rel: str) -> None:
    s = read_trace(sample(f"{rel}/trace.jsonl"))
    assert s.problems == []
    assert s.end is not None
    assert s.end["model_calls"] == s.usage.turns
    assert s.end["tool_calls"] == len(s.calls)
    # Every answered model request is one model record, with the server's own counts.
    log = read_jsonl(LIGHTPANDA / rel / "requests.jsonl")
    answered = [r["usage"] for r in log if r["request_number"] and r["status"] == 200]
    assert s.usage == Usage(
        input_tokens=sum(u["input_tokens"] for u in answered),
        cache_read_tokens=sum(u["cache_read_tokens"] for u in answered),
        cache_write_tokens=sum(u["cache_write_tokens"] for u in answered),
        output_tokens=sum(u["output_tokens"] for u in answered),
        turns=len(answered),
    )


def test_the_recordings_are_all_there() -> None:
    traces = sorted(LIGHTPANDA.glob("*/trace.jsonl"))
    assert [p.parent.name for p in traces] == sorted(RUNS)


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
