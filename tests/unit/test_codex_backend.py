"""The --agent codex backend: its configuration, and what it reads from a real ``codex exec
--json`` (tests/fixtures/codex, recorded by tests/fixtures/record_codex.py)."""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

from agent_benchmarks.backends.attachments import GIVEN_TEXT
from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.codex_mcp import (
    CODEX_BUILT_INS,
    DISABLED_FEATURES,
    ROLLOUT,
    SESSIONS,
    CodexMcpBackend,
    CodexSettings,
    codex_config,
)
from agent_benchmarks.backends.codex_stream import parse_events, unsupported_calls
from agent_benchmarks.backends.mcp_servers import SERVERS
from agent_benchmarks.gaia.attachments import prepare_attachment
from agent_benchmarks.isolation.process import MARKER_ENV, ProcessResult
from agent_benchmarks.records.schema import TaskInput
from tests.fixtures import FIXTURES, fixture

RUN = FIXTURES / "codex" / "browse_and_refuse"


def _settings(**kw: object) -> CodexSettings:
    fields = {
        "backend": "lightpanda",
        "surface": "upstream",
        "codex": "/x/codex",
        "model": "gpt-x",
        "mcp_tool_timeout_ms": 90_000,
        "lightpanda": "/x/lightpanda",
        "allowed_tools": ["goto", "markdown"],
        "excluded_tools": ["screenshot"],
    }
    return CodexSettings(**(fields | kw))


def test_the_config_leaves_the_model_the_browser_server_alone() -> None:
    settings = _settings(reasoning_effort="high")
    server = {"command": "/x/lightpanda", "args": ["mcp"], "env": {"A": "1"}}
    config = codex_config(settings, server, "http://127.0.0.1:9/v1", "be brief")
    browser = config["mcp_servers"]["browser"]
    assert list(config["mcp_servers"]) == ["browser"]
    assert browser["disabled_tools"] == ["screenshot"] and browser["required"] is True
    assert browser["default_tools_approval_mode"] == "approve"
    assert browser["env_vars"] == [MARKER_ENV] and browser["tool_timeout_sec"] == 90
    assert set(DISABLED_FEATURES) <= {k for k, v in config["features"].items() if v is False}
    assert {"shell_tool", "unified_exec", "view_image", "browser_use"} <= set(DISABLED_FEATURES)
    assert config["web_search"] == "disabled" and config["agents"] == {"enabled": False}
    provider = config["model_providers"][config["model_provider"]]
    assert (
        provider["base_url"] == "http://127.0.0.1:9/v1" and provider["env_key"] == "OPENAI_API_KEY"
    )
    assert provider["wire_api"] == "responses"
    assert config["model_reasoning_effort"] == "high"
    assert config["developer_instructions"] == "be brief"
    # no key in it: Codex reads the key from the environment variable it names
    assert "sk-" not in str(config)
    search = {"command": "/x/python", "args": ["-m", "agent_benchmarks.search.server"]}
    with_search = codex_config(settings, server, "http://x/v1", None, search)
    web_search = with_search["mcp_servers"]["search"]
    assert web_search["env_vars"] == [MARKER_ENV, "TAVILY_API_KEY"] and web_search["required"]
    assert "disabled_tools" not in web_search


def test_the_recorded_run_reads_into_trace_usage_and_answer() -> None:
    run = parse_events(fixture(RUN / "stdout.jsonl").read_text())
    assert [c.name for c in run.calls] == [
        "mcp__browser__goto",
        "mcp__browser__markdown",
        "mcp__codex__list_mcp_resources",
    ]
    assert run.calls[0].args == {"url": "http://127.0.0.1:8765/t/fx/catalogue"}
    assert run.calls[0].output == "Navigated. HTTP 200 OK." and run.calls[0].error is None
    assert r"| LW\-1024 |" in (run.calls[1].output or "")
    assert run.answer == "<ANSWER>$24.00</ANSWER>"
    assert run.usage.input_tokens == 77994 - 38995 and run.usage.cache_read_tokens == 38995
    assert run.usage.output_tokens == 31 and run.usage.turns == 1
    assert run.notices and "Model metadata" in run.notices[0]
    assert run.failure is None and run.problems == []
    assert unsupported_calls(fixture(RUN / "stderr.txt").read_text()) == ["exec_command"]


def test_the_backend_audits_the_recorded_run(tmp_path: Path) -> None:
    backend = CodexMcpBackend(_settings(), SERVERS["lightpanda"], {})
    prepared = PreparedTask(
        task=TaskInput(id="t", suite="gaia", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path,
    )
    result = ProcessResult(
        returncode=0,
        stdout=fixture(RUN / "stdout.jsonl").read_text(),
        stderr=fixture(RUN / "stderr.txt").read_text(),
        duration_s=3.0,
    )
    # Without Codex's rollout (killed before it wrote one), the refused call's name is
    # all its log has: after what ran, with no arguments.
    outcome = backend.outcome(prepared, result)
    assert outcome.status == "ok" and outcome.output == "<ANSWER>$24.00</ANSWER>"
    assert outcome.details["contaminated"] is False  # the resource listing is a built-in
    assert outcome.details["refused_calls"] == [
        {"name": "exec_command", "args": {}, "why": "unsupported call: Codex offers no such tool"}
    ]
    assert [c.name for c in outcome.trace][-1] == "exec_command"
    assert outcome.trace[-1].error is not None
    assert outcome.details["call_order"] == "completed, refused last"
    # With it (the attempt's sessions folder, as Codex leaves it): every call in the order
    # the model made it, the refused one with the command it tried, and each MCP call's
    # latency as Codex measured it; the rollout is kept in the attempt folder.
    dated = tmp_path / SESSIONS / "2026" / "11" / "27"
    dated.mkdir(parents=True)
    shutil.copy(fixture(RUN / "rollout.jsonl"), dated / "rollout-2026-11-27T06-52-47-x.jsonl")
    outcome = backend.outcome(prepared, result)
    assert [c.name for c in outcome.trace] == [
        "mcp__browser__goto",
        "mcp__browser__markdown",
        "exec_command",
        "mcp__codex__list_mcp_resources",
    ]
    refused = outcome.trace[2]
    assert refused.args == {"cmd": "cat /etc/passwd"} and refused.error is not None
    assert refused.latency_ms is None  # it never ran
    assert outcome.details["refused_calls"] == [
        {
            "name": "exec_command",
            "args": {"cmd": "cat /etc/passwd"},
            "why": "unsupported call: Codex offers no such tool",
        }
    ]
    latencies = [c.latency_ms for c in outcome.trace if c.name.startswith("mcp__")]
    assert all(ms is not None and 0 < ms < 5000 for ms in latencies), latencies
    assert outcome.trace[0].output == "Navigated. HTTP 200 OK."  # from the events, as before
    assert outcome.details["call_order"] == "as made"
    assert (tmp_path / ROLLOUT).is_file() and not (tmp_path / SESSIONS).exists()
    # a call that ran outside the surface contaminates the row
    stdout = result.stdout.replace('"tool":"markdown"', '"tool":"nodeDetails"')
    foreign = backend.outcome(prepared, ProcessResult(**(vars(result) | {"stdout": stdout})))
    assert foreign.details["contaminated"] is True
    assert foreign.details["foreign_calls"][0]["name"] == "mcp__browser__nodeDetails"


def test_the_recorded_config_is_the_backends(tmp_path: Path) -> None:
    recorded = tomllib.loads(fixture(RUN / "config.toml").read_text())
    assert recorded["mcp_servers"]["browser"]["disabled_tools"] == ["screenshot"]
    assert set(CODEX_BUILT_INS) == {
        "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource",
        "request_user_input",
    }  # fmt: skip


def test_codex_is_given_an_attachments_text_in_its_message(tmp_path: Path) -> None:
    """Codex takes no files, as Claude Code: the attachment's text goes into the task's
    message (its stdin) and the row's record says it was given as text."""
    note = tmp_path / "g1-text.txt"
    note.write_text("ocelot\n", encoding="utf-8")
    workdir = tmp_path / "work"
    plan = prepare_attachment(note, workdir).model_dump(exclude_none=True)
    prepared = PreparedTask(
        task=TaskInput(id="t", suite="gaia", question="q"),
        attempt=1,
        text="what animal?",
        system_prompt=None,
        workdir=workdir,
        tmpdir=tmp_path / "tmp",  # Codex's home goes there
        details={"attachments": [plan]},
    )
    spec = CodexMcpBackend(_settings(), SERVERS["lightpanda"], {}).command(prepared)
    assert spec.stdin_text is not None
    assert spec.stdin_text.startswith("what animal?\n\nThe file attached to this task")
    assert spec.stdin_text.endswith("g1-text.txt, as text:\n\nocelot\n")
    (record,) = prepared.details["attachments"]
    assert record["given_to_agent"] == GIVEN_TEXT
