"""Reading what an ``agent-browser chat`` attempt left: its verbose stderr, the gateway
meter's log, the classification of the attempt; the meter itself against the scripted
gateway; the chat oracle's command lines; and the command line's refusals.

The captures under ``tests/fixtures/agent_browser_chat`` come from agent-browser 0.41.2 (see
the README there); every number asserted on them was read from those files.
"""

from __future__ import annotations

import json
import shlex
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from agent_benchmarks.backends.agent_browser_chat import (
    ANSWER_LAST_REPLY,
    DEFINITION,
    GEMINI_OPENAI_URL,
    LIMITS,
    SESSION_LIMIT,
    STEP_CAP,
    TOOL_TIMEOUT,
    AgentBrowserChatBackend,
    ChatConfig,
    ChatOptions,
    MeterSummary,
    VerboseRun,
    _chosen_model,
    _endpoint,
    _gemini_model,
    _model,
    chat_prompt,
    classify,
    parse_verbose,
    read_meter,
    stderr_lines,
)
from agent_benchmarks.backends.agent_browser_chat_attempt import (
    Meter,
    StreamReader,
    _metered_request,
)
from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.gaia import SUITE as GAIA
from agent_benchmarks.isolation.process import ProcessResult
from agent_benchmarks.localweb import SUITE as LOCALWEB
from agent_benchmarks.localweb.models import (
    API_KEY,
    Fault,
    ScriptedModelServer,
    ScriptedPolicy,
    call,
)
from agent_benchmarks.localweb.oracle import (
    AGENT_BROWSER_CHAT,
    Check,
    Click,
    Fill,
    Go,
    Read,
    ReadHtml,
    Select,
    WaitFor,
    WaitForText,
)
from agent_benchmarks.records.schema import Task, TaskInput
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.runner.session import TaskSession, prompted_session
from agent_benchmarks.spec.prompts import ANSWER_ONLY, RESEARCH_ANSWER_ONLY, default_prompt_name
from agent_benchmarks.spec.run_spec import RunSpec
from agent_benchmarks.webbench import SUITE as WEBBENCH
from tests.support import REPO, run_cli

FIXTURES = REPO / "tests" / "fixtures" / "agent_browser_chat"


def fixture(name: str) -> Path:
    path = FIXTURES / name
    if not path.exists():
        pytest.fail(f"fixture missing: {path}")
    return path


def finished(returncode: int = 0, **fields: Any) -> ProcessResult:
    return ProcessResult(returncode=returncode, stdout="", stderr="", duration_s=1.0, **fields)


# --- chat -v on stderr ------------------------------------------------------------------------


def test_the_captured_run_becomes_its_tool_calls(tmp_path: Path) -> None:
    (tmp_path / "stderr.jsonl").write_bytes(fixture("enquiry_stderr.jsonl").read_bytes())
    run = parse_verbose(stderr_lines(tmp_path, stderr="ignored when the log is there"))
    names = [c.name for c in run.calls]
    assert names == ["open", "fill", "fill", "select", "fill", "check", "click", "wait", "eval"]
    assert run.calls[1].args == {"command": "agent-browser fill '#name' 'Ada Lovelace'"}
    opened = run.calls[0]
    assert opened.page_url == "http://127.0.0.1:40549/t/enquiry-submit.a1/enquiry"
    assert opened.output == (
        "✓ Wholesale enquiry · Lakeside Goods\n  http://127.0.0.1:40549/t/enquiry-submit.a1/enquiry"
    )
    # Command at 0.444 s, its output at 2.103 s (the browser starting).
    assert opened.latency_ms == pytest.approx(1659.0)
    assert all(c.latency_ms is not None and c.latency_ms >= 0 for c in run.calls)
    assert [c.output for c in run.calls[1:8]] == ["✓ Done"] * 7
    assert "LW-20634276" in (run.calls[-1].output or "")
    assert all(c.error is None for c in run.calls) and run.messages == []


def test_multiline_commands_errors_and_the_chats_own_messages() -> None:
    lines = [
        "> agent-browser eval 'let a = 1",
        "a + 1'",
        "  2",
        "> agent-browser open http://127.0.0.1:9/x",
        "  ✗ Navigation failed: net::ERR_FAILED",
        "> agent-browser wait 65000",
        "  Tool execution timed out after 60 seconds.",
        "> agent-browser --session other open http://x/",
        "  Blocked: this chat is bound to session 's'. Global flags such as --session are not "
        "available; only --json and --annotate are allowed.",
        "> agent-browser get text body",
        "  first",
        "  ",
        "  third",
        "",
        "\x1b[31m✗\x1b[0m Chat session timed out (5 minute limit).",
    ]
    run = parse_verbose([(None, line) for line in lines])
    assert [c.name for c in run.calls] == ["eval", "open", "wait", "--session", "get"]
    assert run.calls[0].args["command"] == "agent-browser eval 'let a = 1\na + 1'"
    assert run.calls[0].output == "2" and run.calls[0].latency_ms is None
    assert run.calls[1].error == "✗ Navigation failed: net::ERR_FAILED"
    assert run.calls[1].page_url is None
    assert run.calls[2].error == "Tool execution timed out after 60 seconds."
    assert (run.calls[3].error or "").startswith("Blocked: this chat is bound")
    assert run.calls[4].output == "first\n\nthird" and run.calls[4].error is None
    assert run.messages == ["✗ Chat session timed out (5 minute limit)."]


def test_long_outputs_are_truncated_with_their_size_kept() -> None:
    run = parse_verbose([(0.0, "> agent-browser snapshot"), (0.5, "  " + "x" * 50)], 20)
    (only,) = run.calls
    assert only.result_bytes == 50 and only.latency_ms == 500.0
    assert only.output == "x" * 20 + "\n[... truncated 30 chars]"


def test_without_the_log_the_process_stderr_is_read(tmp_path: Path) -> None:
    lines = stderr_lines(tmp_path, "> agent-browser get title\n  Catalogue\n")
    assert lines == [(None, "> agent-browser get title"), (None, "  Catalogue")]


# --- the meter's log --------------------------------------------------------------------------


def test_the_captured_meter_log_gives_usage_turns_and_the_final_reply() -> None:
    meter = read_meter(fixture("enquiry_meter.jsonl"))
    assert meter.requests == 10 and meter.unanswered == [] and meter.problems == []
    assert meter.final_text == "LW-20634276"
    # Sums of the ten replies' prompt_tokens (16638), cached_tokens (8317) and
    # completion_tokens (139): input excludes the cached part.
    assert meter.usage.model_dump() == {
        "input_tokens": 8321,
        "cache_read_tokens": 8317,
        "cache_write_tokens": 0,
        "output_tokens": 139,
        "turns": 10,
        "cost_usd": None,
        "estimated": False,
    }
    assert meter.gateway_error() is None


def write_meter(tmp_path: Path, entries: list[dict[str, Any]], tail: str = "") -> Path:
    path = tmp_path / "meter.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries) + tail, encoding="utf-8")
    return path


def reply(n: int, **fields: Any) -> dict[str, Any]:
    return {
        "event": "reply",
        "n": n,
        "status": 200,
        "stream": True,
        "done": True,
        "malformed_lines": 0,
        "text": "",
        "tool_calls": [],
        "usage": None,
        "prompt_chars": 0,
        **fields,
    }


def test_replies_without_usage_are_estimated_from_characters(tmp_path: Path) -> None:
    args = '{"command":"agent-browser open http://x/"}'  # 44 characters
    path = write_meter(
        tmp_path,
        [
            {"event": "request", "n": 1},
            reply(1, prompt_chars=4001, tool_calls=[{"name": "agent_browser", "arguments": args}]),
            {"event": "request", "n": 2},
            reply(
                2,
                text="42",
                usage={"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1},
            ),
        ],
        tail='{"event": "req',  # a torn last line: the attempt was killed while it wrote
    )
    meter = read_meter(path)
    assert meter.usage.estimated is True and meter.usage.turns == 2
    # ceil(4001 / 4) + 10 input; 5 cached (Anthropic shape); ceil(44 / 4) + 1 output.
    assert meter.usage.input_tokens == 1001 + 10
    assert meter.usage.cache_read_tokens == 5
    assert meter.usage.output_tokens == 11 + 1
    assert meter.final_text == "42"
    assert meter.problems == ["meter line 5: not JSON"]


def test_unanswered_requests_and_gateway_errors(tmp_path: Path) -> None:
    hung = read_meter(write_meter(tmp_path, [{"event": "request", "n": 1}]))
    assert hung.unanswered == [1] and hung.final_text is None and hung.usage.turns == 0
    failed = read_meter(
        write_meter(
            tmp_path,
            [{"event": "request", "n": 1}, reply(1, status=429, error='{"error": "slow down"}')],
        )
    )
    assert failed.gateway_error() == 'gateway reply 1: HTTP 429: {"error": "slow down"}'
    assert failed.usage.turns == 0  # an error is not a model turn
    broken = read_meter(
        write_meter(
            tmp_path, [{"event": "request", "n": 1}, reply(1, malformed_lines=1, done=False)]
        )
    )
    assert "malformed: 1 stream line(s) not JSON, end of stream missing" in (
        broken.gateway_error() or ""
    )


# --- classification ---------------------------------------------------------------------------


def summary(*replies: dict[str, Any]) -> MeterSummary:
    return MeterSummary(requests=len(replies), replies=list(replies))


def test_classification() -> None:
    answered = summary(reply(1, tool_calls=[{"name": "agent_browser"}]), reply(2, text="42"))
    quiet = VerboseRun()
    assert classify(finished(), answered, quiet, {}) == ("ok", None, None, [])
    assert classify(finished(), summary(reply(1, text=" ")), quiet, {})[0] == "empty"
    status, kind, error, _ = classify(
        finished(1), summary(reply(1, status=500, error="boom")), quiet, {}
    )
    assert (status, kind) == ("error", "model_api") and "HTTP 500" in (error or "")
    unreachable = VerboseRun(messages=["✗ Gateway request failed: error sending request"])
    assert classify(finished(1), MeterSummary(), unreachable, {})[:2] == ("error", "model_api")
    malformed = summary(reply(1, malformed_lines=1, done=False))
    assert classify(finished(), malformed, quiet, {})[:2] == ("error", "model_api")
    crashed = VerboseRun(messages=["✗ AI_GATEWAY_API_KEY not set"])
    assert classify(finished(1), MeterSummary(), crashed, {})[:3] == (
        "error",
        "agent_error",
        "exit 1: AI_GATEWAY_API_KEY not set",
    )
    blocked = {"routes_failed": {"pattern": "*x*", "error": "no browser"}}
    assert classify(finished(1), MeterSummary(), quiet, blocked)[:2] == ("error", "agent_error")
    killed = classify(finished(None, timed_out=True), answered, quiet, {})
    assert killed[:2] == ("timeout", "timeout")


def test_its_own_limits_are_named_in_the_row() -> None:
    # agent-browser's own budget spent: status budget, a wrong answer.
    looping = MeterSummary(
        requests=LIMITS[STEP_CAP],
        replies=[reply(n, tool_calls=[{"name": "agent_browser"}]) for n in range(1, 51)],
    )
    assert classify(finished(), looping, VerboseRun(), {}) == ("budget", None, None, [STEP_CAP])
    out_of_time = VerboseRun(messages=["✗ Chat session timed out (5 minute limit)."])
    assert classify(finished(1), MeterSummary(), out_of_time, {}) == (
        "budget",
        None,
        None,
        [SESSION_LIMIT],
    )
    slow_tool = parse_verbose(
        [
            (None, "> agent-browser wait 65000"),
            (None, "  Tool execution timed out after 60 seconds."),
        ]
    )
    answered = summary(reply(1, tool_calls=[{"name": "agent_browser"}]), reply(2, text="late"))
    assert classify(finished(), answered, slow_tool, {}) == ("ok", None, None, [TOOL_TIMEOUT])


# --- the meter --------------------------------------------------------------------------------


def test_stream_reader_reads_what_agent_browser_reads_and_what_it_ignores() -> None:
    reader = StreamReader()
    for line in [
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"The "}}]}\n',
        b"\n",
        b'data: {"choices":[{"index":0,"delta":{"content":"answer"}}]}\n',
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",'
        b'"function":{"name":"agent_browser","arguments":"{\\"comm"}}]}}]}\n',
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
        b'"function":{"arguments":"and\\":\\"x\\"}"}}]},"finish_reason":"tool_calls"}]}\n',
        b'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}\n',
        b"data: {not json\n",
        b"data: [DONE]\n",
    ]:
        reader.feed(line)
    assert reader.summary() == {
        "text": "The answer",
        "tool_calls": [{"id": "c1", "name": "agent_browser", "arguments": '{"command":"x"}'}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 2},
        "finish_reason": "tool_calls",
        "malformed_lines": 1,
        "done": True,
    }


def test_the_meter_asks_streams_for_usage_and_changes_nothing_else() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hé"}], "stream": True}
    metered = _metered_request(json.dumps(body).encode())
    sent = json.loads(metered["body"])
    assert sent == {**body, "stream_options": {"include_usage": True}}
    assert metered["facts"] == {
        "model": "m",
        "stream": True,
        "prompt_chars": len('{"messages":[{"role":"user","content":"hé"}],"tools":null}'),
        "messages": 1,
    }
    plain = _metered_request(b'{"model": "m", "messages": [], "stream": false}')
    assert plain["body"] == b'{"model": "m", "messages": [], "stream": false}'
    assert _metered_request(b"not json")["facts"] == {"request_chars": 8}


def post(url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def meter_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_meter_relays_the_scripted_gateway_and_logs_its_usage(tmp_path: Path) -> None:
    """Through the meter, a chat-style streamed request gets the gateway's reply unchanged
    and the log holds the gateway's own count (its ledger), never the key."""
    policy = ScriptedPolicy([call("agent_browser", command="agent-browser get title")])
    body = {
        "model": "scripted",
        "messages": [{"role": "user", "content": "go"}],
        "tools": [{"type": "function", "function": {"name": "agent_browser", "parameters": {}}}],
        "stream": True,
    }
    with ScriptedModelServer(lambda task_id: policy) as server:
        meter = Meter(server.base_url("t1", "gateway"), tmp_path / "meter.jsonl")
        threading.Thread(target=meter.serve_forever, daemon=True).start()
        try:
            status, streamed = post(meter.url, body)
            server.fault_on("t1", {2: Fault.server_error()})
            failed_status, failed_body = post(meter.url, body)
        finally:
            meter.close()
        ledger = server.usage("t1")
    assert status == 200 and b"data: [DONE]" in streamed
    assert failed_status == 500 and b"scripted server error" in failed_body
    log_text = (tmp_path / "meter.jsonl").read_text()
    assert API_KEY not in log_text
    meter_log = read_meter(tmp_path / "meter.jsonl")
    first, second = meter_log.replies
    assert first["tool_calls"][0]["arguments"] == '{"command":"agent-browser get title"}'
    assert second["status"] == 500
    assert (meter_log.gateway_error() or "").startswith("gateway reply 2: HTTP 500")
    assert meter_log.usage.model_dump(exclude={"cost_usd"}) == ledger.model_dump(
        exclude={"cost_usd"}
    )


def test_an_unreachable_gateway_is_a_502_the_chat_can_print(tmp_path: Path) -> None:
    meter = Meter("http://127.0.0.1:9", tmp_path / "meter.jsonl")  # nothing listens on 9
    threading.Thread(target=meter.serve_forever, daemon=True).start()
    try:
        status, body = post(meter.url, {"model": "m", "messages": [], "stream": True})
    finally:
        meter.close()
    assert status == 502
    assert (
        "gateway meter: upstream http://127.0.0.1:9 failed" in json.loads(body)["error"]["message"]
    )
    assert [e["event"] for e in meter_entries(tmp_path / "meter.jsonl")] == ["request", "reply"]


# --- the chat oracle's command lines ----------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "words"),
    [
        (Go("/deal"), ["open", "http://h/t/deal"]),
        (Read(), ["snapshot", "--compact"]),
        (Read("#deal"), ["eval", "document.querySelector(\"#deal\")?.outerHTML ?? ''"]),
        (ReadHtml("#frame"), ["eval", "document.querySelector(\"#frame\")?.outerHTML ?? ''"]),
        (Click('#nav a[href$="/returns"]'), ["click", '#nav a[href$="/returns"]']),
        (Fill("#name", "Ada Lovelace"), ["fill", "#name", "Ada Lovelace"]),
        (Select("#topic", "bulk-order"), ["select", "#topic", "bulk-order"]),
        (Check("#terms"), ["check", "#terms"]),
        (WaitFor("#notice"), ["wait", "#notice"]),
        (WaitForText("#doc", "it's here"), ["wait", "--text", "it's here"]),
    ],
)
def test_each_step_is_one_agent_browser_command_line(step: Any, words: list[str]) -> None:
    url = "http://h/t/deal" if isinstance(step, Go) else None
    name, args = AGENT_BROWSER_CHAT.tool_call(step, url)
    assert name == "agent_browser"
    # agent-browser splits the line the POSIX shell way (checked on the real binary).
    assert shlex.split(args["command"]) == ["agent-browser", *words]


def test_a_value_read_as_an_option_is_refused() -> None:
    with pytest.raises(ValueError, match="read as an option"):
        AGENT_BROWSER_CHAT.tool_call(Fill("#qty", "-5"), None)


# --- the suites' prompt, and the command line ---------------------------------------------------


def test_envelope_suites_ask_this_loop_for_the_answer_only() -> None:
    gaia = chat_prompt(GAIA)
    assert (gaia.system, gaia.answer) == (RESEARCH_ANSWER_ONLY, "raw")
    assert "<ANSWER>" not in gaia.task_text(TaskInput(suite="gaia", id="g", question="How?"))
    assert chat_prompt(WEBBENCH) is WEBBENCH.prompt
    assert chat_prompt(LOCALWEB) is LOCALWEB.prompt


def test_the_chat_prompt_replaces_the_suites_own_under_prompt_standard_only() -> None:
    """The runner's session for this backend (its dataset_prompt): --prompt standard
    gets the answer-only research prompt; a named variant stays GAIA's own."""
    assert DEFINITION.dataset_prompt is chat_prompt
    factory = prompted_session(DEFINITION.dataset_prompt)

    def opened(prompt: str) -> TaskSession:
        spec = RunSpec(suite="gaia", runner="chat", prompt=prompt)
        with factory(GAIA, spec, "scaffold", None, None) as session:  # type: ignore[arg-type]
            return session

    standard = opened("standard")
    assert (standard.system_prompt, standard.prompt.answer) == (RESEARCH_ANSWER_ONLY, "raw")
    assert standard.settings()["prompt"] == "standard"
    persistence = opened("persistence")
    assert persistence.prompt.answer == "envelope"
    assert persistence.system_prompt != RESEARCH_ANSWER_ONLY
    assert persistence.settings()["prompt"] == "persistence"


def namespace(**fields: Any) -> RunSpec:
    """The run spec with these shared fields (model, provider)."""
    return RunSpec(suite="gaia", runner="chat", **fields)


def _resolved(spec: RunSpec) -> tuple[str, str]:
    chosen, _, named = _chosen_model(spec)
    return _model(spec, chosen, named)


def test_models_are_provider_slash_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AI_GATEWAY_MODEL", raising=False)
    assert _resolved(namespace()) == ("anthropic", "anthropic/claude-sonnet-4.6")
    assert _resolved(namespace(model="google/gemini-3.5-flash")) == (
        "google",
        "google/gemini-3.5-flash",
    )
    assert _resolved(namespace(model="gemini-3.5-flash", provider="google")) == (
        "google",
        "google/gemini-3.5-flash",
    )
    for bad, message in [
        (namespace(model="gemini-3.5-flash"), "provider/model"),
        (namespace(model="google/"), "expected provider/model"),
        (namespace(model="google/x", provider="openai"), "disagree"),
    ]:
        with pytest.raises(InputError, match=message):
            _resolved(bad)


def test_the_model_comes_from_the_flag_then_ai_gateway_model_then_agent_browser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As upstream: --model is passed only when given; AI_GATEWAY_MODEL is chat's default."""
    monkeypatch.delenv("AI_GATEWAY_MODEL", raising=False)
    assert _chosen_model(namespace())[:2] == (
        "anthropic/claude-sonnet-4.6",
        "agent-browser default",
    )
    monkeypatch.setenv("AI_GATEWAY_MODEL", "openai/gpt-5.5")
    assert _chosen_model(namespace())[:2] == ("openai/gpt-5.5", "AI_GATEWAY_MODEL")
    assert _chosen_model(namespace(model="google/g"))[:2] == ("google/g", "--model")
    monkeypatch.setenv("AI_GATEWAY_MODEL", "bare")
    with pytest.raises(InputError, match="AI_GATEWAY_MODEL=bare: agent-browser chat names"):
        _resolved(namespace())


def test_gemini_direct_is_google_s_endpoint_with_google_s_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_DIRECT", "1")
    monkeypatch.delenv("GEMINI_OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv("AI_GATEWAY_API_KEY", "gw-key-that-does-not-count")
    with pytest.raises(InputError, match="GEMINI_DIRECT=1 needs GOOGLE_API_KEY"):
        _endpoint(ChatOptions(base_url=None))
    monkeypatch.setenv("GOOGLE_API_KEY", "google-unit-test-key")
    assert _endpoint(ChatOptions(base_url=None)) == (
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "openai-base",
        "GOOGLE_API_KEY",
    )
    assert GEMINI_OPENAI_URL.startswith("https://generativelanguage.googleapis.com/")
    with pytest.raises(InputError, match="--gateway-url: GEMINI_DIRECT=1 already points"):
        _endpoint(ChatOptions(base_url="http://127.0.0.1:9"))
    monkeypatch.setenv("GEMINI_OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert _endpoint(ChatOptions(base_url=None))[0] == "http://127.0.0.1:9/v1"
    # The google/ prefix is stripped, as upstream; another provider's model is refused.
    assert _gemini_model(namespace(), "google/gemini-3.5-flash", "--model x") == "gemini-3.5-flash"
    assert _gemini_model(namespace(), "gemini-3.5-flash", "--model x") == "gemini-3.5-flash"
    with pytest.raises(InputError, match="give a Gemini model"):
        _gemini_model(namespace(), "anthropic/claude-sonnet-4.6", "--model x")
    with pytest.raises(InputError, match="GEMINI_DIRECT=1 talks to Google only"):
        _gemini_model(namespace(provider="openai"), "gemini-3.5-flash", "--model x")
    monkeypatch.setenv("GEMINI_DIRECT", "0")
    assert _endpoint(ChatOptions(base_url=None))[1] == "gateway"


def test_the_meter_maps_chat_s_path_onto_an_openai_base_url(tmp_path: Path) -> None:
    gateway = Meter("https://gw.example/", tmp_path / "m1.jsonl")
    google = Meter(GEMINI_OPENAI_URL, tmp_path / "m2.jsonl", "openai-base")
    try:
        assert gateway.target("/v1/chat/completions") == "https://gw.example/v1/chat/completions"
        assert google.target("/v1/chat/completions") == GEMINI_OPENAI_URL + "/chat/completions"
    finally:
        for meter in (gateway, google):
            meter.server_close()
            meter._log.close()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "needs AI_GATEWAY_API_KEY"),
        (["--model", "gemini-flash"], "provider/model"),
        (["--lightpanda", "/bin/true"], "--lightpanda only applies with --engine lightpanda"),
        (["--gateway-url", "ftp://x"], "expected an http(s):// URL"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    assistantbench_file: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    env = {"AI_GATEWAY_API_KEY": "" if not extra else "gw-unit-test-key-123"}
    proc = run_cli(
        "assistantbench-ab-run",
        "--dataset-file",
        str(assistantbench_file),
        "--out-dir",
        str(tmp_path / "run"),
        *extra,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert not (tmp_path / "run").exists()


def test_a_model_the_scripted_oracle_would_ignore_is_refused(tmp_path: Path) -> None:
    proc = run_cli(
        "localweb-ab-run", "--model", "google/gemini-3.5-flash", "--out-dir", str(tmp_path / "r")
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --model google/gemini-3.5-flash: the scripted oracle plays the model here; add "
        "--provider (or --gateway-url) to run a real one"
    ]


def _sent_for(attachment: Path, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    """The message a GAIA task with ``attachment`` reaches the chat with (what the attempt
    passes to ``agent-browser chat``), and the row's record of the attachment."""
    session = TaskSession(GAIA, "scaffold", prompt_name=ANSWER_ONLY)
    task = Task(
        suite="gaia",
        id="g1",
        question="What does the attached file say?",
        level=1,
        file_name=attachment.name,
        attachment_path=attachment,
    )
    workdir = tmp_path / "attempt"
    prepared = session.prepare(task, AttemptKey("g1", 1, 1), workdir)
    config = ChatConfig(
        agent_browser="agent-browser",
        engine="chrome",
        model="anthropic/claude-sonnet-4.6",
        provider="anthropic",
        gateway_url="http://127.0.0.1:9/",
    )
    spec = AgentBrowserChatBackend(config, {}).command(prepared)
    message = json.loads(Path(spec.argv[-1]).read_text(encoding="utf-8"))["message"]
    # chat takes no system prompt: the suite's opens the message, then the task.
    assert prepared.system_prompt is not None
    opening = f"{prepared.system_prompt.strip()}\n\n{prepared.text}\n\n"
    assert message.startswith(opening)
    (record,) = prepared.details["attachments"]  # what the engine writes into the row
    return message[len(opening) :], record


def test_a_text_attachment_follows_the_task_in_the_message(tmp_path: Path) -> None:
    note = tmp_path / "g1-text.txt"
    note.write_text("ocelot\n", encoding="utf-8")
    sent, record = _sent_for(note, tmp_path)
    assert sent == "The file attached to this task, g1-text.txt, as text:\n\nocelot\n"
    assert (record["action"], record["given_to_agent"]) == ("attached", "text in the message")


def test_a_spreadsheet_reaches_the_chat_as_its_cells(tmp_path: Path) -> None:
    book = openpyxl.Workbook()
    book.active.append(["item", "amount"])
    book.active.append(["walnuts", 20])
    book.active.append(["figs", 22])
    book.save(tmp_path / "g1-sheet.xlsx")
    sent, record = _sent_for(tmp_path / "g1-sheet.xlsx", tmp_path)
    assert sent.startswith("The file attached to this task, g1-sheet.xlsx, as text:\n\n")
    assert "1\titem\tamount\n2\twalnuts\t20\n3\tfigs\t22\n" in sent
    assert (record["action"], record["given_to_agent"]) == ("extracted", "text in the message")


@pytest.mark.parametrize(
    ("name", "action"),
    [("g1-scan.png", "attached"), ("g1-archive.bin", "skipped")],
    ids=["image", "binary"],
)
def test_a_file_the_chat_cannot_read_is_named_in_one_line(
    tmp_path: Path, name: str, action: str
) -> None:
    (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    sent, record = _sent_for(tmp_path / name, tmp_path)
    assert sent == (
        f"A file comes with this task: {name}. You have no tool that can open it; "
        "answer from the question and the web."
    )
    assert (record["action"], record["given_to_agent"]) == (action, "file named only")


def test_a_text_too_long_for_one_argument_is_cut_and_the_row_says_so(tmp_path: Path) -> None:
    table = tmp_path / "g1-table.csv"
    table.write_text("row,value\n" + "n,1\n" * 100_000, encoding="utf-8")  # 400 KB
    sent, record = _sent_for(table, tmp_path)
    message = json.loads(next(tmp_path.glob("attempt/attempt.json")).read_text())["message"]
    # Linux takes at most 128 KiB in one argument; the message stays under the project's cap.
    assert 119 * 1024 < len(message.encode()) <= 120 * 1024
    kept, total = record["given_chars"], record["text_chars"]
    assert record["given_to_agent"] == "text in the message, cut to fit"
    assert total == len(table.read_text()) and 0 < kept < total
    assert sent.endswith(
        f"[... g1-table.csv is cut here: only its first {kept} of {total} characters fit in "
        "the message]"
    )


def test_under_gemini_direct_the_meter_gives_back_gemini_s_thought_signatures(
    tmp_path: Path,
) -> None:
    """Google's endpoint signs each tool call (extra_content) and refuses the next request
    without it; agent-browser drops it, so the meter puts it back (GEMINI_DIRECT only)."""
    signature = {"google": {"thought_signature": "c2lnbmVk"}}
    seen: list[dict[str, Any]] = []

    class Google(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            seen.append(
                {
                    "path": self.path,
                    **json.loads(self.rfile.read(int(self.headers["Content-Length"]))),
                }
            )
            call = {
                "index": 0,
                "id": "call-1",
                "type": "function",
                "function": {"name": "agent_browser", "arguments": '{"command":"get url"}'},
                "extra_content": signature,
            }
            chunks = [{"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}]
            body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

    google = ThreadingHTTPServer(("127.0.0.1", 0), Google)
    threading.Thread(target=google.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{google.server_address[1]}/v1beta/openai"
    meter = Meter(base, tmp_path / "meter.jsonl", "openai-base")
    threading.Thread(target=meter.serve_forever, daemon=True).start()
    asked = {"model": "gemini-3.5-flash", "messages": [{"role": "user", "content": "go"}]}
    dropped = {  # what agent-browser sends next: the call, without its extra_content
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call-1",
                "type": "function",
                "function": {"name": "agent_browser", "arguments": '{"command":"get url"}'},
            }
        ],
    }
    tool = {"role": "tool", "tool_call_id": "call-1", "content": "http://x/"}
    try:
        post(meter.url, {**asked, "stream": True})
        post(meter.url, {**asked, "messages": [*asked["messages"], dropped, tool], "stream": True})
    finally:
        meter.close()
        google.shutdown()
        google.server_close()
    assert [s["path"] for s in seen] == ["/v1beta/openai/chat/completions"] * 2
    assert seen[1]["messages"][1]["tool_calls"][0]["extra_content"] == signature
    first, second = [e for e in meter_entries(tmp_path / "meter.jsonl") if e["event"] == "reply"]
    assert first["extra_content_calls"] == 1 and "extra_content_restored" not in first
    assert second["extra_content_restored"] == 1


# --- which text is the prediction (--answer) ----------------------------------------------------


def _chat_outcome(tmp_path: Path, answer: str | None, entries: list[dict[str, Any]]) -> Any:
    write_meter(tmp_path, entries)
    config = ChatConfig(
        agent_browser="agent-browser",
        engine="chrome",
        model="anthropic/claude-sonnet-4.6",
        provider="anthropic",
        gateway_url="http://127.0.0.1:9/",
        **({"answer": answer} if answer else {}),
    )
    backend = AgentBrowserChatBackend(config, {})
    prepared = PreparedTask(
        task=TaskInput(suite="gaia", id="g", question="How many?"),
        attempt=1,
        text="How many?",
        system_prompt=None,
        workdir=tmp_path,
    )
    return backend.outcome(prepared, finished())


NARRATED = [
    reply(1, text="Opening the catalogue. ", tool_calls=[{"name": "agent_browser"}]),
    reply(2, text="There are 3 bottles.\n3"),
]


def test_upstream_s_prediction_is_every_turn_s_text_joined(tmp_path: Path) -> None:
    outcome = _chat_outcome(tmp_path, None, NARRATED)
    assert outcome.status == "ok"
    assert outcome.output == "Opening the catalogue. There are 3 bottles.\n3"
    assert outcome.details["chat_answers"] == {
        "prediction": "joined",
        "joined": "Opening the catalogue. There are 3 bottles.\n3",
        "last_reply": "There are 3 bottles.\n3",
    }


def test_answer_last_reply_picks_the_loop_s_last_reply(tmp_path: Path) -> None:
    outcome = _chat_outcome(tmp_path, ANSWER_LAST_REPLY, NARRATED)
    assert outcome.output == "There are 3 bottles.\n3"
    assert outcome.details["chat_answers"]["prediction"] == "last-reply"
    assert outcome.details["chat_answers"]["joined"].startswith("Opening the catalogue.")


def test_a_loop_that_ended_on_a_tool_call_still_has_upstream_s_prediction(
    tmp_path: Path,
) -> None:
    entries = [reply(1, text="Probably 3.", tool_calls=[{"name": "agent_browser"}])]
    joined = _chat_outcome(tmp_path, None, entries)
    assert (joined.status, joined.output) == ("ok", "Probably 3.")
    last = _chat_outcome(tmp_path, ANSWER_LAST_REPLY, entries)
    assert (last.status, last.output) == ("empty", "")
    assert last.details["chat_answers"]["last_reply"] == ""


def test_the_chat_runner_defaults_to_the_answer_only_variant() -> None:
    assert default_prompt_name(GAIA.prompt, "agent-browser-chat/chrome", None) == ANSWER_ONLY
    assert default_prompt_name(GAIA.prompt, "agent-browser-chat/lightpanda", "x") == ANSWER_ONLY
    assert default_prompt_name(WEBBENCH.prompt, "agent-browser-chat/chrome", None) == "standard"
