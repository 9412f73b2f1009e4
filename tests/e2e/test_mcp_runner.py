"""``<suite>-mcp-run``: the real Claude Code, locked to one real browser MCP server, on the
real browsers; only the model is scripted (the Anthropic Messages protocol, streamed)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
    call,
)
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.records import PredictionRow, Scores
from tests.support import run_cli

pytestmark = pytest.mark.e2e


def _rows(run_dir: Path) -> list[PredictionRow]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return [PredictionRow.model_validate_json(line) for line in lines]


def _left_running(run_dir: Path) -> list[str]:
    """Processes still alive that belong to the run: named in their argv or environment."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "environ"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            text = " ".join(proc.info["cmdline"] or []) + str(proc.info["environ"] or {})
            if str(run_dir) in text:
                found.append(" ".join(proc.info["cmdline"] or [])[:120])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _no_keys() -> dict[str, str]:
    return {k: "" for k in os.environ if k.endswith("_API_KEY")}


def test_localweb_on_lightpanda_mcp_passes_every_contract(tmp_path: Path) -> None:
    run_dir = tmp_path / "lp"
    proc = run_cli(
        "localweb-mcp-run",
        "--backend",
        "lightpanda",
        "--workers",
        "2",
        "--out-dir",
        str(run_dir),
        env=_no_keys(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    failed = [(e.id, e.details.get("failed")) for e in scores.per_task if not e.correct]
    assert scores.n_tasks == 21 and failed == []
    rows = _rows(run_dir)
    assert {r.backend for r in rows} == {"claude-mcp/lightpanda"}
    assert all(c.name.startswith("mcp__browser__") for r in rows for c in r.trace)
    assert not any(r.details["contaminated"] for r in rows)
    manifest = scores.manifest
    assert manifest is not None and manifest.mode == "scaffold"
    assert manifest.programs["claude-code"].startswith("2.1.")
    settings = manifest.settings["backend"]
    assert "screenshot" in settings["excluded_tools"] and "goto" in settings["allowed_tools"]
    assert settings["mcp_tool_timeout_ms"] > 0
    assert not _left_running(run_dir)


def test_localweb_on_agent_browser_chromium(tmp_path: Path) -> None:
    """Claude Code + our agent-browser wrapper + Chromium: JS content, the cookie banner,
    the cart and the form, with the server's own record as the judge."""
    run_dir = tmp_path / "ab"
    tasks = "deal-price,cookie-offer,add-to-cart,enquiry-submit,docs-install"
    proc = run_cli(
        "localweb-mcp-run",
        "--backend",
        "agent-browser",
        "--task-ids",
        tasks,
        "--workers",
        "2",
        "--out-dir",
        str(run_dir),
        env=_no_keys(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    failed = [
        (e.id, e.details.get("failed"), e.prediction) for e in scores.per_task if not e.correct
    ]
    assert failed == []
    assert scores.manifest is not None and "agent-browser" in scores.manifest.programs
    # The agent-browser daemons and their Chromium carry the attempt's HOME (under the run
    # folder) in their environment: none may be left.
    assert not _left_running(run_dir)


class LeaveTheBrowser(StepPolicy):
    """A model that tries a shell, then an excluded MCP tool, then answers."""

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return call("Bash", command="cat /etc/passwd")
        if conv.turn == 1:
            return call("mcp__browser__search", query="gaia answers")
        return FinalAnswer("<ANSWER>3</ANSWER>")


def _gaia_mcp(gaia_file: Path, server: ScriptedModelServer, run_dir: Path, *extra: str):
    return run_cli(
        "gaia-mcp-run",
        "--backend",
        "lightpanda",
        "--dataset-file",
        str(gaia_file),
        "--task-ids",
        "g1-plain",
        "--base-url",
        f"{server.root_url}/task/{{task_id}}",
        "--auth",
        "api-key",
        "--scaffold",
        "--out-dir",
        str(run_dir),
        *extra,
        env={"ANTHROPIC_API_KEY": API_KEY},
    )


def test_lockdown_denies_and_the_audit_reports_foreign_tools(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "audit"
    with ScriptedModelServer(lambda task_id: LeaveTheBrowser()) as server:
        proc = _gaia_mcp(gaia_file, server, run_dir, "--grade")
        offered = server.model_requests("g1-plain")[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CONTAMINATED" in proc.stderr
    (row,) = _rows(run_dir)
    names = [c["name"] for c in row.details["foreign_calls"]]
    assert names == ["Bash", "mcp__browser__search"]
    assert row.details["contaminated"] is True
    # Neither ran: Claude Code offered neither tool, so both calls came back as errors.
    assert all(c.error for c in row.trace)
    assert offered.conversation is not None
    tools = offered.conversation.tool_names
    assert "Bash" not in tools and "mcp__browser__search" not in tools
    assert "mcp__browser__goto" in tools
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.metrics["n_contaminated"] == 1
    assert scores.metrics["accuracy_strict_uncontaminated"] is None
    assert any("contaminated" in w for w in scores.warnings)


def test_a_hung_model_is_cut_at_the_timeout_with_nothing_left(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "hung"
    with LocalSite() as site:
        url = site.task_url("g1-plain", "/catalogue")

        class ReadThenHang(StepPolicy):
            def step(self, conv: Conversation) -> object:
                return self.call(conv, "goto", url=url)

        with ScriptedModelServer(lambda task_id: ReadThenHang()) as server:
            server.fault_on("g1-plain", {2: Fault.hang()})
            proc = _gaia_mcp(gaia_file, server, run_dir, "--timeout", "15")
    assert proc.returncode == 1, proc.stderr[-2000:]
    (row,) = _rows(run_dir)
    assert row.status == "timeout" and 15 <= row.duration_s < 25
    assert not _left_running(run_dir)
