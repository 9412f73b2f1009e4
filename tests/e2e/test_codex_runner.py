"""``<suite>-mcp-run --agent codex``: the real Codex (``codex exec``) locked to one real
browser MCP server on the real browsers; only the model is scripted (the OpenAI Responses
API, streamed, with the MCP tools in a namespace as Codex offers them)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
    call,
)
from agent_benchmarks.records.schema import Manifest, Scores
from tests.support import left_running, no_api_keys, read_rows, run_cli

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(1000)  # covers the commands it runs (their timeouts)
@pytest.mark.parametrize("backend", ["lightpanda", "playwright"])
def test_codex_reaches_every_localweb_postcondition(backend: str, tmp_path: Path) -> None:
    run_dir = tmp_path / backend
    proc = run_cli(
        "localweb-mcp-run", "--agent", "codex", "--backend", backend, "--workers", "2",
        "--out-dir", str(run_dir), env=no_api_keys(), timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.n_tasks == 24
    assert [e.id for e in scores.per_task if not e.correct] == []
    rows = read_rows(run_dir)
    assert {r.backend for r in rows} == {f"codex-mcp/{backend}"}
    assert all(r.status == "ok" and not r.details["contaminated"] for r in rows)
    assert all(c.name.startswith("mcp__browser__") for r in rows for c in r.trace)
    # each call's latency, as Codex measured it (its rollout's duration of the MCP call)
    assert all(c.latency_ms is not None and c.latency_ms >= 0 for r in rows for c in r.trace)
    # Codex's usage is read from its turn events: exact, cached input apart
    assert all(r.usage.turns == 1 and r.usage.output_tokens > 0 for r in rows)
    assert all(r.usage.cache_read_tokens > 0 and not r.usage.estimated for r in rows)
    manifest = scores.manifest
    assert manifest is not None and manifest.mode == "scaffold"
    assert manifest.programs["codex"] == "codex-cli 0.169.0"
    settings = manifest.settings["backend"]
    assert settings["agent"] == "codex" and "shell_tool" in settings["disabled_features"]
    assert settings["built_in_tools"][0] == "list_mcp_resources"
    excluded = {"lightpanda": "screenshot", "playwright": "browser_take_screenshot"}[backend]
    assert excluded in settings["excluded_tools"]
    # the configuration Codex ran with: the server's excluded tools disabled, no shell
    config = (next(run_dir.glob("attempts/*/codex-config.toml"))).read_text()
    assert f'"{excluded}"' in config and "shell_tool = false" in config
    assert "required = true" in config
    # Codex's home (state databases, logs) went with the attempt's temp folder
    assert not list(run_dir.glob("attempts/*/codex-home"))
    assert not left_running(run_dir)


class Outside(StepPolicy):
    """Tries Codex's shell, an image viewer, the excluded screenshot tool, a tool nobody
    offers and an MCP resource listing (which Codex always offers), then answers."""

    def step(self, conv: Conversation) -> object:
        attempts = [
            ("exec_command", {"cmd": "cat /etc/passwd"}),
            ("view_image", {"path": "/etc/hostname"}),
            ("mcp__browser__screenshot", {}),
            ("no_such_tool", {}),
            ("list_mcp_resources", {}),
        ]
        if conv.turn < len(attempts):
            name, args = attempts[conv.turn]
            return call(name, **args)
        return FinalAnswer("<ANSWER>3</ANSWER>")


def _gaia_codex(gaia_file: Path, server: ScriptedModelServer, run_dir: Path, *extra: str):
    return run_cli(
        "gaia-mcp-run", "--agent", "codex", "--backend", "lightpanda",
        "--dataset-file", str(gaia_file), "--task-ids", "g1-plain",
        "--base-url", f"{server.root_url}/task/{{task_id}}/v1", "--model", "scripted-codex",
        "--scaffold", "--out-dir", str(run_dir), *extra,
        env={"OPENAI_API_KEY": API_KEY}, timeout=300,
    )  # fmt: skip


def test_codex_refuses_what_is_outside_the_surface_and_the_audit_lists_it(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "codex-audit"
    with ScriptedModelServer(lambda task_id: Outside()) as server:
        proc = _gaia_codex(gaia_file, server, run_dir, "--grade")
        offered = server.model_requests("g1-plain")[0].conversation
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = read_rows(run_dir)
    assert row.status == "ok" and row.prediction == "3"
    refused = [c["name"] for c in row.details["refused_calls"]]
    # the shell, the image viewer and the excluded tool are not offered: Codex refused them
    # (nothing ran), and its rollout is where they are found, with what they tried
    assert refused == ["exec_command", "view_image", "mcp__browser__screenshot", "no_such_tool"]
    assert row.details["refused_calls"][0]["args"] == {"cmd": "cat /etc/passwd"}
    assert row.details["contaminated"] is False and row.details["foreign_calls"] == []
    # the trace has every call in the order the model made it: the refused shell call
    # first, with its command; the resource listing Codex always offers ran, last
    assert [c.name for c in row.trace] == [*refused, "mcp__codex__list_mcp_resources"]
    assert row.trace[0].args == {"cmd": "cat /etc/passwd"} and row.trace[0].error
    assert row.trace[1].args == {"path": "/etc/hostname"}
    assert [c.latency_ms is None for c in row.trace] == [True] * 4 + [False]
    assert offered is not None
    assert "mcp__browser__goto" in offered.tool_names
    assert not {"exec_command", "view_image", "mcp__browser__screenshot"} & set(offered.tool_names)
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.model == "scripted-codex"
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.metrics["n_refused_calls"] == 4
    assert not left_running(run_dir)


def test_a_model_endpoint_nothing_answers_on_fails_the_attempt_in_seconds(
    gaia_file: Path, tmp_path: Path
) -> None:
    # Codex retried the stream for minutes (5 to 80 s apart), so the attempt sat until its
    # timeout; now it ends within seconds, an infrastructure error that resume retries.
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        port = unused.getsockname()[1]
        run_dir = tmp_path / "run"
        started = time.monotonic()
        proc = run_cli(
            "gaia-mcp-run", "--agent", "codex", "--backend", "lightpanda",
            "--dataset-file", str(gaia_file), "--task-ids", "g1-plain", "--model", "gpt-x",
            "--base-url", f"http://127.0.0.1:{port}/v1", "--timeout", "120", "--no-grade",
            "--out-dir", str(run_dir), env={"OPENAI_API_KEY": API_KEY}, timeout=300,
        )  # fmt: skip
        took = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert (row.status, row.error_class) == ("error", "model_api"), (row.error, row.stderr_tail)
    assert row.is_infra_failure and not row.timed_out
    assert row.duration_s < 10, row.duration_s
    assert took < 60, took  # the whole command, start-up and all
    assert not left_running(run_dir)


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
def test_a_server_that_cannot_start_is_refused_up_front_or_an_mcp_server_error(
    gaia_file: Path, tmp_path: Path
) -> None:
    """A server that cannot start is refused before anything runs (it is started once to
    list its tools); one that stops starting after that is an mcp_server error of the
    attempt, an infrastructure failure, since Codex is told the server is required and so
    does not run the task without it."""
    real = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "chrome-devtools-mcp"
    dead = tmp_path / "dead-server"
    dead.write_text('#!/bin/sh\n[ "$1" = --version ] && echo 1.11.0 && exit 0\nexit 3\n')
    dead.chmod(0o755)
    # The real server for the first start (the harness's listing), dead from then on.
    once = tmp_path / "once-server"
    started = tmp_path / "started"
    once.write_text(
        f'#!/bin/sh\n[ "$1" = --version ] && exec {real} --version\n'
        f'[ -e {started} ] && exit 3\ntouch {started}\nexec {real} "$@"\n'
    )
    once.chmod(0o755)

    def run(server_program: Path, run_dir: Path):
        return run_cli(
            "gaia-mcp-run", "--agent", "codex", "--backend", "chrome-devtools",
            "--mcp-server", str(server_program), "--dataset-file", str(gaia_file),
            "--task-ids", "g1-plain", "--model", "m", "--scaffold", "--no-grade",
            "--base-url", f"{model.root_url}/task/{{task_id}}/v1", "--out-dir", str(run_dir),
            env={"OPENAI_API_KEY": API_KEY}, timeout=300,
        )  # fmt: skip

    with ScriptedModelServer(lambda task_id: Outside()) as model:
        refused = run(dead, tmp_path / "refused")
        failed = run(once, tmp_path / "failed")
        asked = model.model_requests("g1-plain")
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "its MCP server did not list its tools" in refused.stderr
    assert not (tmp_path / "refused").exists()

    assert failed.returncode == 1, failed.stderr[-2000:]
    (row,) = read_rows(tmp_path / "failed")
    assert (row.status, row.error_class) == ("error", "mcp_server")
    assert "required MCP servers failed to initialize" in (row.error or "")
    assert asked == []  # the model was never asked: no turn ran without the browser
    assert not left_running(tmp_path / "failed")


def test_codex_flags_are_checked_before_anything_runs(gaia_file: Path, tmp_path: Path) -> None:
    base = ["gaia-mcp-run", "--dataset-file", str(gaia_file), "--out-dir", str(tmp_path / "x")]
    cases = {
        ("--agent", "codex", "--backend", "lightpanda"): "--agent codex needs --model",
        ("--agent", "codex", "--backend", "lightpanda", "--model", "m", "--max-turns", "3"): (
            "--max-turns: Claude Code's"
        ),
        ("--backend", "lightpanda", "--reasoning-effort", "high"): (
            "--reasoning-effort: for --agent codex only"
        ),
    }
    for flags, message in cases.items():
        proc = run_cli(*base, *flags, env={**no_api_keys(), "OPENAI_API_KEY": "sk-x"})
        assert proc.returncode == 2 and message in proc.stderr, (flags, proc.stderr[-800:])
    assert not (tmp_path / "x").exists()


def test_list_tools_shows_codex_surface_and_runs_nothing(tmp_path: Path) -> None:
    proc = run_cli(
        "localweb-mcp-run", "--agent", "codex", "--backend", "chrome-devtools", "--list-tools",
        "--out-dir", str(tmp_path / "never"), env=no_api_keys(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "backend chrome-devtools, surface upstream" in out
    assert "  click(pageId*, uid*" in out and "  take_screenshot: multimodal" in out
    assert "built-in Codex tools offered: list_mcp_resources" in out
    assert not (tmp_path / "never").exists()
