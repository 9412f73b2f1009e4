"""The trace reader on traces the REAL ``lightpanda agent`` writes, checked against the
scripted model server's own ledger and the local site.

Only the model is scripted: Lightpanda lists the models, sends its requests, runs the tool
calls in its own browser against the localweb site and writes ``--trace``. The ledger
counts every reply the server billed, so ``read_trace(...).usage == server.usage(task)``
checks the cache subtraction end to end, for both wire conventions (OpenAI's prompt tokens
include cache reads; Anthropic's input tokens exclude reads and writes).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agent_benchmarks.backends.lightpanda_trace import parse_usage_line, read_trace
from agent_benchmarks.localweb.models import (
    API_KEY,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    TokenRules,
    call,
)
from agent_benchmarks.localweb.site import PRODUCTS, LocalSite
from agent_benchmarks.records.schema import Usage
from tests.support import lightpanda_binary

pytestmark = pytest.mark.e2e
MODEL = "scripted-trace"
ANSWER = "The catalogue lists 30 products."
# Anthropic is the only wire format with a cache-write count, so it gets a share too.
TOKENS = TokenRules(cache_read_share=0.5, cache_write_share=0.25)


def _agent(server: ScriptedModelServer, task_id: str, provider: str, trace: Path):
    env = {**os.environ, "LIGHTPANDA_DISABLE_TELEMETRY": "true"}
    argv = [lightpanda_binary(), "agent", "--provider", provider, "--model", MODEL]
    argv += ["--task", "How many products does the catalogue list?"]
    argv += ["--trace", str(trace), "--trace-results"]
    if provider == "openai_compatible":
        env |= {"OPENAI_BASE_URL": server.base_url(task_id, "openai"), "OPENAI_API_KEY": API_KEY}
    else:
        env |= {"ANTHROPIC_API_KEY": API_KEY}
        argv += ["--base-url", server.base_url(task_id, "anthropic")]
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=90, cwd=trace.parent
    )


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
def test_trace_matches_the_policy_and_the_ledger(tmp_path: Path, provider: str) -> None:
    task_id = f"trace-{provider}"
    with LocalSite() as site, ScriptedModelServer(models=[MODEL], tokens=TOKENS) as server:
        site.begin_task(task_id)
        page = site.task_url(task_id, "/catalogue")
        policy = ScriptedPolicy([call("goto", url=page), call("markdown"), FinalAnswer(ANSWER)])
        server.set_policy(task_id, policy)
        proc = _agent(server, task_id, provider, tmp_path / "trace.jsonl")
        ledger = server.usage(task_id)

    assert proc.returncode == 0, proc.stderr[-600:]
    assert proc.stdout.strip() == ANSWER
    s = read_trace(tmp_path / "trace.jsonl")
    assert s.problems == []
    assert s.usage == ledger
    assert ledger.turns == 3 and ledger.cache_read_tokens > 0
    assert (ledger.cache_write_tokens > 0) == (provider == "anthropic")
    assert s.phases == {"turn": 3}
    assert s.run is not None
    assert (s.run["provider"], s.run["model"], "task" in s.run) == (provider, MODEL, False)
    assert s.end is not None
    assert (s.end["model_calls"], s.end["tool_calls"]) == (3, 2)
    # On success the stderr line and the end record carry the same totals as the records.
    assert parse_usage_line(proc.stderr) == ledger.model_copy(update={"turns": 0})

    goto, markdown = s.calls
    assert (goto.name, goto.args) == ("goto", {"url": page})
    assert (markdown.name, markdown.args) == ("markdown", {})
    for c in s.calls:
        assert (c.page_url, c.http_status, c.error) == (page, 200, None)
        assert c.output is not None and c.result_bytes == len(c.output.encode())
        assert c.latency_ms is not None and c.latency_ms >= 0
    assert goto.output == "Navigated. HTTP 200 OK."
    assert markdown.output is not None
    shown = markdown.output.replace("\\", "")  # markdown escapes: "LW\\-1001"
    assert all(f"| {p.sku} | {p.name} | {p.category} | {p.price} |" in shown for p in PRODUCTS)
    # The site served what the trace says was read.
    assert any(r.path == "/catalogue" and r.status == 200 for r in site.requests_for(task_id))

    clipped = read_trace(tmp_path / "trace.jsonl", max_output_chars=10).calls[1].output
    assert clipped == f"{markdown.output[:10]}\n[... truncated {len(markdown.output) - 10} chars]"


def test_malformed_model_reply(tmp_path: Path) -> None:
    """The second model reply is not JSON: Lightpanda does not retry it, exits 1 with no
    answer, and still writes ``end``, but with zero token totals (the stderr ``$usage`` line
    too) although the first reply was billed. The model records keep the true usage."""
    task_id = "trace-malformed"
    with LocalSite() as site, ScriptedModelServer(models=[MODEL], tokens=TOKENS) as server:
        site.begin_task(task_id)
        page = site.task_url(task_id, "/catalogue")
        policy = ScriptedPolicy([call("goto", url=page), call("markdown"), FinalAnswer(ANSWER)])
        server.set_policy(task_id, policy)
        server.fault_on(task_id, {2: Fault.malformed()})
        proc = _agent(server, task_id, "openai_compatible", tmp_path / "trace.jsonl")
        ledger = server.usage(task_id)
        requests = [(r.request_number, r.fault) for r in server.model_requests(task_id)]

    assert proc.returncode == 1
    assert proc.stdout == ""
    assert requests == [(1, None), (2, "malformed")]
    assert "unexpected response (UnexpectedEndOfInput)" in proc.stderr
    assert parse_usage_line(proc.stderr) == Usage()

    s = read_trace(tmp_path / "trace.jsonl")
    assert s.problems == []
    assert ledger.turns == 1
    assert s.usage == ledger
    assert [(c.name, c.args, c.http_status) for c in s.calls] == [("goto", {"url": page}, 200)]
    assert s.end is not None
    assert (s.end["model_calls"], s.end["tool_calls"]) == (1, 1)
    assert s.end["tokens"] == {"input": 0, "cached": 0, "cache_creation": 0, "output": 0}
