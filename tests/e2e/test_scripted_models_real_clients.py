"""The scripted model server driving the REAL Lightpanda agent (``lightpanda agent --task``).

Lightpanda runs for real: it lists models, sends its 28-tool requests, executes the scripted
tool calls in its own browser against a page served here on 127.0.0.1, and prints the final
answer. Only the model is scripted. The checks are the ones a harness relies on: stdout is
the scripted answer, and the token counts Lightpanda reports (``--trace`` and the stderr
``$usage`` line) equal the server's ledger.

Lightpanda's trace reports ``input`` as the WHOLE prompt for every provider (cache reads and
cache writes included, even for Anthropic whose wire ``input_tokens`` excludes them), so the
ledger's neutral ``input_tokens`` is ``input - cached - cache_creation`` of the trace.

Claude Code and agent-browser are not installed here yet; their real-client tests come with
the piece that installs them (their wire formats are covered by the unit tests' replays).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    Action,
    Call,
    Conversation,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    StepPolicy,
    TokenRules,
    ToolCallAction,
    call,
)
from agent_benchmarks.records.schema import Usage
from tests.support import lightpanda_binary

pytestmark = pytest.mark.e2e

MODEL = "scripted-lp-1"
_USAGE_LINE = re.compile(r"\$usage input=(\d+) cached=(\d+) cache_creation=(\d+) output=(\d+)")
PAGES = {
    "code.html": "<html><head><title>Codes</title></head><body><h1>Vault</h1>"
    "<p>The secret code is ZETA-9.</p></body></html>",
    "price.html": "<html><head><title>Prices</title></head><body><table id='p'>"
    "<tr><th>Item</th><th>Price</th></tr><tr><td>Green Gadget</td><td>99.99</td></tr>"
    "</table></body></html>",
}


@pytest.fixture(scope="module")
def lightpanda_bin() -> str:
    return lightpanda_binary()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A tiny static site on 127.0.0.1; yields its root URL."""
    root = tmp_path_factory.mktemp("site")
    for name, html in PAGES.items():
        (root / name).write_text(html)
    httpd = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root))
    )
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedModelServer]:
    # One server for the module: every test is its own task, which is the routing under test.
    rules = TokenRules(cache_read_share=0.25, cache_write_share=0.125)
    with ScriptedModelServer(models=[MODEL], tokens=rules) as s:
        yield s


def _command(
    server: ScriptedModelServer, lp: str, task: str, provider: str, question: str, trace: Path
) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "LIGHTPANDA_DISABLE_TELEMETRY": "true"}
    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        env.pop(key, None)
    argv = [lp, "agent", "--task", question, "--provider", provider, "--model", MODEL]
    argv += ["--trace", str(trace)]
    if provider == "openai_compatible":
        env["OPENAI_BASE_URL"] = server.base_url(task, "openai")
        env["OPENAI_API_KEY"] = API_KEY
    elif provider == "openai":
        env["OPENAI_API_KEY"] = API_KEY
        argv += ["--base-url", server.base_url(task, "openai")]
    elif provider == "anthropic":
        env["ANTHROPIC_API_KEY"] = API_KEY
        argv += ["--base-url", server.base_url(task, "anthropic")]
    else:
        raise ValueError(provider)
    return argv, env


def _run(
    server: ScriptedModelServer,
    lp: str,
    tmp_path: Path,
    task: str,
    provider: str,
    question: str = "What is the secret code?",
    timeout: float = 30,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    trace = tmp_path / f"{task}.trace.jsonl"
    argv, env = _command(server, lp, task, provider, question, trace)
    proc = subprocess.run(
        argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=timeout
    )
    return proc, trace


def _trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _neutral(tokens: dict[str, int]) -> dict[str, int]:
    """Lightpanda's trace tokens in the ledger's convention (input excludes cache traffic)."""
    return {
        "input": tokens["input"] - tokens["cached"] - tokens["cache_creation"],
        "cached": tokens["cached"],
        "cache_write": tokens["cache_creation"],
        "output": tokens["output"],
    }


def _usage_from_trace(events: list[dict[str, Any]]) -> Usage:
    models = [_neutral(e["tokens"]) for e in events if e["type"] == "model"]
    return Usage(
        input_tokens=sum(m["input"] for m in models),
        cache_read_tokens=sum(m["cached"] for m in models),
        cache_write_tokens=sum(m["cache_write"] for m in models),
        output_tokens=sum(m["output"] for m in models),
        turns=len(models),
    )


def _assert_usage_matches(
    server: ScriptedModelServer, task: str, proc: subprocess.CompletedProcess[str], trace: Path
) -> list[dict[str, Any]]:
    events = _trace(trace)
    assert _usage_from_trace(events) == server.usage(task)
    # Per call, not just in total.
    per_call = [_neutral(e["tokens"]) for e in events if e["type"] == "model"]
    ledger = [
        {
            "input": e.tokens.input_tokens,
            "cached": e.tokens.cache_read_tokens,
            "cache_write": e.tokens.cache_write_tokens,
            "output": e.tokens.output_tokens,
        }
        for e in server.ledger(task)
    ]
    assert per_call == ledger
    # The stderr summary line is the trace's end totals (whole-prompt input).
    end = next(e for e in events if e["type"] == "end")
    match = _USAGE_LINE.search(proc.stderr)
    assert match, proc.stderr[-500:]
    assert [int(g) for g in match.groups()] == [
        end["tokens"][k] for k in ("input", "cached", "cache_creation", "output")
    ]
    return events


class ReadCode(StepPolicy):
    """Oracle-style policy: goto the page, read it as markdown, answer with a regex."""

    def __init__(self, url: str) -> None:
        self.url = url

    def step(self, conv: Conversation) -> Action:
        if conv.turn == 0:
            return self.call(conv, "goto", url=self.url)
        if conv.turn == 1:
            return self.call(conv, "markdown")
        found = re.search(r"code is (\S+?)\.", (conv.last_tool_text or "").replace("\\", ""))
        return FinalAnswer(f"The code is {found.group(1)}." if found else "not found")


def test_openai_compatible_with_an_oracle_policy(
    server: ScriptedModelServer, lightpanda_bin: str, site: str, tmp_path: Path
) -> None:
    task = "lp-openai-compatible"
    server.set_policy(task, ReadCode(f"{site}/code.html"))
    proc, trace = _run(server, lightpanda_bin, tmp_path, task, "openai_compatible")
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout == "The code is ZETA-9.\n"
    events = _assert_usage_matches(server, task, proc, trace)
    tools = [e for e in events if e["type"] == "tool"]
    assert [t["name"] for t in tools] == ["goto", "markdown"]
    assert tools[0]["page"]["httpStatus"] == 200 and tools[0]["navigated"]
    records = server.requests(task)
    assert (records[0].method, records[0].route) == ("GET", "models")
    assert [r.route for r in records[1:]] == ["chat_completions"] * 3
    convs = [r.conversation for r in server.model_requests(task)]
    assert all(not c.stream and len(c.tools) == 28 for c in convs)
    assert convs[-1].last_tool_result.name == "markdown"
    assert "ZETA" in (convs[-1].last_tool_text or "")
    assert "search" in convs[0].tool_names  # Lightpanda always offers search


def test_anthropic_provider_with_a_scripted_policy(
    server: ScriptedModelServer, lightpanda_bin: str, site: str, tmp_path: Path
) -> None:
    task = "lp-anthropic"
    answer = "The Green Gadget costs 99.99."
    server.set_policy(
        task,
        ScriptedPolicy(
            [
                ToolCallAction(
                    calls=[Call(name="goto", args={"url": f"{site}/price.html"})],
                    text="Opening the price list.",
                ),
                call("markdown"),
                FinalAnswer(answer),
            ]
        ),
    )
    proc, trace = _run(server, lightpanda_bin, tmp_path, task, "anthropic", "Gadget price?")
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout == answer + "\n"
    _assert_usage_matches(server, task, proc, trace)
    assert server.usage(task).cache_write_tokens > 0  # the Anthropic-only field round-trips
    records = server.requests(task)
    assert [r.path for r in records] == [f"/task/{task}/v1/messages"] * 3
    assert records[0].headers["anthropic-version"] == "2023-06-01"
    # Lightpanda echoes the preamble text back with the tool_use in the next request.
    assert records[1].conversation.messages[1].text == "Opening the price list."
    assert "99.99" in (records[2].conversation.last_tool_text or "")


def test_openai_provider_uses_the_responses_api(
    server: ScriptedModelServer, lightpanda_bin: str, site: str, tmp_path: Path
) -> None:
    task = "lp-openai-responses"
    server.set_policy(task, ReadCode(f"{site}/code.html"))
    proc, trace = _run(server, lightpanda_bin, tmp_path, task, "openai")
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout == "The code is ZETA-9.\n"
    _assert_usage_matches(server, task, proc, trace)
    assert [r.route for r in server.requests(task)] == ["models"] + ["responses"] * 3


def test_concurrent_tasks_share_one_server(
    server: ScriptedModelServer, lightpanda_bin: str, site: str, tmp_path: Path
) -> None:
    tasks = {f"lp-concurrent-{i}": f"Answer number {i}." for i in range(3)}
    procs = {}
    try:
        for task, answer in tasks.items():
            server.set_policy(
                task, ScriptedPolicy([call("goto", url=f"{site}/code.html"), FinalAnswer(answer)])
            )
            argv, env = _command(
                server, lightpanda_bin, task, "openai_compatible", "q", tmp_path / f"{task}.jsonl"
            )
            procs[task] = subprocess.Popen(
                argv,
                env=env,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        for task, proc in procs.items():
            out, _ = proc.communicate(timeout=30)
            assert proc.returncode == 0 and out == tasks[task] + "\n"
            assert server.usage(task).turns == 2
            assert _usage_from_trace(_trace(tmp_path / f"{task}.jsonl")) == server.usage(task)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)


def test_rate_limit_is_retried_after_retry_after_and_not_billed(
    server: ScriptedModelServer, lightpanda_bin: str, tmp_path: Path
) -> None:
    task = "lp-429"
    server.set_policy(task, ScriptedPolicy([FinalAnswer("fine")]))
    server.fault_on(task, {1: Fault.rate_limit(1)})
    started = time.monotonic()
    proc, trace = _run(server, lightpanda_bin, tmp_path, task, "openai_compatible")
    assert proc.returncode == 0 and proc.stdout == "fine\n"
    assert time.monotonic() - started >= 1.0
    statuses = [r.status for r in server.model_requests(task)]
    assert statuses == [429, 200]
    gap = server.model_requests(task)[1].time - server.model_requests(task)[0].time
    assert gap >= 0.95  # Lightpanda waited as long as retry-after said
    _assert_usage_matches(server, task, proc, trace)
    assert server.usage(task).turns == 1


def test_empty_replies_end_in_no_response(
    server: ScriptedModelServer, lightpanda_bin: str, tmp_path: Path
) -> None:
    task = "lp-empty"
    server.set_policy(task, ScriptedPolicy([FinalAnswer("unused")]))
    server.fault_on(task, {1: Fault.empty(), 2: Fault.no_content()})
    proc, _ = _run(server, lightpanda_bin, tmp_path, task, "openai_compatible")
    assert proc.returncode == 0 and proc.stdout == ""
    assert "(no response from model)" in proc.stderr
    first, second = server.model_requests(task)
    # After an empty reply Lightpanda makes one tool-less "synthesis" call.
    assert len(first.conversation.tools) == 28 and second.conversation.tools == []
    assert "best final answer" in second.conversation.last_user_text


def test_malformed_reply_fails_fast(
    server: ScriptedModelServer, lightpanda_bin: str, tmp_path: Path
) -> None:
    task = "lp-malformed"
    server.set_policy(task, ScriptedPolicy([FinalAnswer("unused")]))
    server.fault_on(task, {1: Fault.malformed()})
    proc, _ = _run(server, lightpanda_bin, tmp_path, task, "anthropic")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "UnexpectedEndOfInput" in proc.stderr
    assert server.request_count(task) == 1  # not retried


def test_unlisted_model_is_refused_before_any_completion(
    server: ScriptedModelServer, lightpanda_bin: str, tmp_path: Path
) -> None:
    task = "lp-unlisted"
    trace = tmp_path / "t.jsonl"
    argv, env = _command(server, lightpanda_bin, task, "openai_compatible", "q", trace)
    argv[argv.index(MODEL)] = "not-listed"
    proc = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "Model 'not-listed' is not available" in proc.stdout + proc.stderr
    assert [r.route for r in server.requests(task)] == ["models"]
