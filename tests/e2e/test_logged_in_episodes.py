"""Logged-in episodes on localweb: the three tasks that need the member account (the order
history, a setting changed and read back, a member checkout) pass on every stack with the
scripted oracle, their contracts checked against the site's own record (the page served
signed in, the setting the server holds, the order it placed), and the account's password,
handed to the agent in the task's text, appears in no file of the run. Every program is the
real one; only the model is scripted."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_benchmarks.records.schema import Manifest, Scores
from tests.support import left_running, no_api_keys, read_rows, run_cli

pytestmark = pytest.mark.e2e

TASKS = ("account-orders", "account-settings", "member-checkout")
PASSWORD = "k2Wq9ZpLmN4xT7vR"  # a run's own, from the environment as a deployment's
STACKS = {
    "native": ("localweb-run",),
    "claude-lightpanda": ("localweb-mcp-run", "--backend", "lightpanda"),
    "claude-agent-browser": ("localweb-mcp-run", "--backend", "agent-browser"),
    "claude-agent-browser-lightpanda": (
        "localweb-mcp-run", "--backend", "agent-browser-lightpanda",
    ),
    "claude-browser-use": ("localweb-mcp-run", "--backend", "browser-use"),
    "claude-playwright": ("localweb-mcp-run", "--backend", "playwright"),
    "claude-chrome-devtools": ("localweb-mcp-run", "--backend", "chrome-devtools"),
    "claude-cli": ("localweb-mcp-run", "--backend", "cli", "--cli", "agent-browser"),
    "codex-lightpanda": ("localweb-mcp-run", "--agent", "codex", "--backend", "lightpanda"),
    "codex-playwright": ("localweb-mcp-run", "--agent", "codex", "--backend", "playwright"),
    "chat-chrome": ("localweb-ab-run", "--engine", "chrome"),
    "chat-lightpanda": ("localweb-ab-run", "--engine", "lightpanda"),
}  # fmt: skip
RUN_TIMEOUT = 300.0


@pytest.mark.timeout(RUN_TIMEOUT + 30)
@pytest.mark.parametrize("stack", list(STACKS))
def test_the_logged_in_tasks_pass_and_the_password_is_in_no_file(
    stack: str, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    proc = run_cli(
        *STACKS[stack], "--task-ids", ",".join(TASKS), "--out-dir", str(run_dir),
        env={**no_api_keys(), "LOCALWEB_PASSWORD": PASSWORD}, timeout=RUN_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert [(e.id, e.correct) for e in scores.per_task] == [(t, True) for t in TASKS]
    rows = {row.id: row for row in read_rows(run_dir)}
    site = {task: rows[task].details["site"] for task in TASKS}
    # the server's own record: signed in, the setting held, the order placed
    assert {"method": "GET", "path": "/account/orders", "status": 200} in site["account-orders"][
        "requests"
    ]
    assert site["account-settings"]["settings"]["delivery"] == "locker"
    [order] = site["member-checkout"]["orders"]
    assert order["member"] == "ada" and order["items"] == {"LW-1004": 1}
    # the agent typed the password (the form took it), and no file holds it
    assert any(r["path"] == "/account/login" and r["method"] == "POST"
               for r in site["account-orders"]["requests"])  # fmt: skip
    found = subprocess.run(["grep", "-rl", PASSWORD, str(tmp_path)], capture_output=True)
    assert found.stdout.decode() == "", found.stdout.decode()
    assert PASSWORD not in proc.stdout + proc.stderr
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.settings["session"]["account"]["password"] == "from LOCALWEB_PASSWORD"
    assert not left_running(run_dir)


@pytest.mark.timeout(RUN_TIMEOUT + 30)
def test_without_a_given_password_each_run_draws_its_own(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_cli(
        "localweb-run", "--task-ids", "account-orders", "--out-dir", str(run_dir),
        env=no_api_keys(), timeout=RUN_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = read_rows(run_dir)
    assert row.status == "ok" and row.prediction == "$37.50"
    # the task as stored keeps its slot; what the agent typed is masked
    assert "`{password}`" in row.task
    typed = [c for c in row.trace if c.name == "fill" and c.args.get("selector") == "#password"]
    assert [c.args["value"] for c in typed] == ["[REDACTED]"]
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.settings["session"]["account"]["password"].startswith("drawn for this run")
