"""Faults injected into real localweb episodes (``--fault KIND --fault-at WHEN``): each kind
fires at its point on the native agent and on an MCP stack per engine (Claude Code on
``lightpanda mcp``, on Playwright's server over Chromium, and on Chrome DevTools' where a
stale node is an element reference), is recorded in the manifest and the row, and the row
shows the outcome: the scripted oracle recovers where a real agent could (it looks at the
page, tries again, opens the page again), and a crash it cannot recover from ends the
attempt at once as the run's injected fault, never a hang. Every program is the real one;
only the model is scripted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.records.schema import Manifest, PredictionRow, Scores
from tests.support import left_running, no_api_keys, read_rows, run_cli

pytestmark = pytest.mark.e2e

NATIVE = ("localweb-run",)
LIGHTPANDA_MCP = ("localweb-mcp-run", "--backend", "lightpanda")
CHROMIUM_MCP = ("localweb-mcp-run", "--backend", "playwright")
DEVTOOLS_MCP = ("localweb-mcp-run", "--backend", "chrome-devtools")
# The task: two products into the cart, then the cart's total; call 2 is the wait before
# the first "Add to cart", so the fault lands between reading the page and acting on it.
TASK = "cart-total"
RUN_TIMEOUT = 240.0


def faulted(
    tmp_path: Path, stack: tuple[str, ...], kind: str, *extra: str, task: str = TASK
) -> tuple[Any, Path, list[PredictionRow]]:
    run_dir = tmp_path / kind
    proc = run_cli(
        *stack, "--fault", kind, *extra, "--task-ids", task, "--out-dir", str(run_dir),
        env=no_api_keys(), timeout=RUN_TIMEOUT,
    )  # fmt: skip
    rows = read_rows(run_dir) if (run_dir / "predictions.jsonl").exists() else []
    return proc, run_dir, rows


def graded(run_dir: Path) -> Scores:
    return Scores.model_validate_json((run_dir / "scores.json").read_text())


def recovered(proc: Any, run_dir: Path, rows: list[PredictionRow], kind: str) -> dict:
    """The one row: the fault fired after call 2, and the task's contract still passed."""
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = rows
    fault = row.details["fault"]
    assert fault["kind"] == kind and fault["at"] == "call:2"
    assert fault["fired"] is True and fault["fired_at_call"] == 2, fault
    assert fault["action"]["done"] is True, fault
    assert row.status == "ok", (row.status, row.error)
    assert graded(run_dir).per_task[0].correct, row.prediction
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.settings["session"]["fault"]["kind"] == kind
    assert manifest.settings["session"]["fault"]["at"] == "call:2"
    assert "model_meter" in manifest.settings
    assert not left_running(run_dir)
    return fault


# (stack, kind, extra flags): what each kind does to each stack, and the oracle recovers.
RECOVERABLE = [
    pytest.param(NATIVE, "stale-dom", (), id="native-stale-dom"),
    pytest.param(NATIVE, "consent-wall", (), id="native-consent-wall"),
    pytest.param(NATIVE, "slow-resource", ("--fault-delay-ms", "1500"), id="native-slow"),
    pytest.param(NATIVE, "failing-resource", (), id="native-failing"),
    pytest.param(NATIVE, "login-wall", (), id="native-login-wall"),
    pytest.param(LIGHTPANDA_MCP, "engine-crash", (), id="lightpanda-mcp-engine-crash"),
    pytest.param(LIGHTPANDA_MCP, "connection-drop", (), id="lightpanda-mcp-connection-drop"),
    pytest.param(LIGHTPANDA_MCP, "stale-dom", (), id="lightpanda-mcp-stale-dom"),
    pytest.param(LIGHTPANDA_MCP, "consent-wall", (), id="lightpanda-mcp-consent-wall"),
    pytest.param(LIGHTPANDA_MCP, "failing-resource", (), id="lightpanda-mcp-failing"),
    pytest.param(
        LIGHTPANDA_MCP, "slow-resource", ("--fault-delay-ms", "1500"), id="lightpanda-mcp-slow"
    ),
    pytest.param(LIGHTPANDA_MCP, "login-wall", (), id="lightpanda-mcp-login-wall"),
    pytest.param(CHROMIUM_MCP, "engine-crash", (), id="playwright-engine-crash"),
    pytest.param(CHROMIUM_MCP, "renderer-crash", (), id="playwright-renderer-crash"),
    pytest.param(CHROMIUM_MCP, "connection-drop", (), id="playwright-connection-drop"),
    pytest.param(CHROMIUM_MCP, "stale-dom", (), id="playwright-stale-dom"),
    pytest.param(CHROMIUM_MCP, "consent-wall", (), id="playwright-consent-wall"),
    pytest.param(CHROMIUM_MCP, "slow-resource", ("--fault-delay-ms", "1500"), id="pw-slow"),
    pytest.param(CHROMIUM_MCP, "failing-resource", (), id="playwright-failing"),
    pytest.param(CHROMIUM_MCP, "login-wall", (), id="playwright-login-wall"),
]


@pytest.mark.timeout(RUN_TIMEOUT + 30)
@pytest.mark.parametrize(("stack", "kind", "extra"), RECOVERABLE)
def test_the_fault_fires_after_call_2_and_the_oracle_recovers(
    stack: tuple[str, ...], kind: str, extra: tuple[str, ...], tmp_path: Path
) -> None:
    proc, run_dir, rows = faulted(tmp_path, stack, kind, "--fault-at", "call:2", *extra)
    fault = recovered(proc, run_dir, rows, kind)
    [row] = rows
    action = fault["action"]
    requests = row.details["site"]["requests"]
    if kind == "engine-crash":
        engine = "lightpanda mcp" if stack == LIGHTPANDA_MCP else "chromium browser process"
        assert [k["what"] for k in action["killed"]] == [engine]
        # the browser had to be opened again: the start page twice
        assert sum(r["path"] == "/products/lw-1004" for r in requests) >= 2
    elif kind == "renderer-crash":
        assert {k["what"] for k in action["killed"]} == {"chromium renderer"}
    elif kind == "connection-drop":
        log = (next(run_dir.glob("attempts/*/mcp-relay.jsonl"))).read_text().splitlines()
        events = [json.loads(line)["event"] for line in log]
        assert events[:2] == ["cut", "reconnected"], events
        assert sum(r["path"] == "/products/lw-1004" for r in requests) >= 2
    elif kind == "stale-dom":
        assert action == {"done": True, "generation": 1}
    elif kind == "consent-wall":
        assert any(r["method"] == "POST" and r["path"] == "/__fault/accept-wall" for r in requests)
    elif kind == "login-wall":
        # a task that never asked to sign in: the run hands every task the account's
        # credentials, and the oracle signs in where the site sends it
        assert any(r["method"] == "POST" and r["path"] == "/account/login" for r in requests)
    elif kind == "failing-resource":
        assert [r["status"] for r in requests].count(503) == 1
    elif kind == "slow-resource":
        assert row.duration_s >= 1.5
    # the harness's own traffic with the page is not part of the episode's record
    assert not any(r["path"].startswith("/__fault/dom") for r in requests)


@pytest.mark.timeout(RUN_TIMEOUT + 30)
def test_a_stale_element_reference_fails_and_the_oracle_looks_it_up_again(
    tmp_path: Path,
) -> None:
    # Chrome DevTools' tools act on snapshot uids: after call 3 (the snapshot that gave
    # the name field's uid) the page replaces its nodes, and the fill on the old uid fails.
    proc, run_dir, rows = faulted(
        tmp_path, DEVTOOLS_MCP, "stale-dom", "--fault-at", "call:3", task="enquiry-submit"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = rows
    assert row.details["fault"]["fired_at_call"] == 3
    names = [c.name.rsplit("__", 1)[-1] for c in row.trace]
    assert names[:4] == ["navigate_page", "evaluate_script", "take_snapshot", "fill"]
    # the fill failed; the oracle looked at the page, described the field, took a snapshot
    # and filled the new node
    assert names[4:8] == ["take_snapshot", "evaluate_script", "take_snapshot", "fill"]
    stale, retried = row.trace[3], row.trace[7]
    assert stale.error is not None and stale.args["uid"].startswith("1_")
    assert retried.error is None and retried.args["value"] == "Ada Lovelace"
    assert retried.args["uid"] != stale.args["uid"]  # the new node's
    assert graded(run_dir).per_task[0].correct


@pytest.mark.timeout(2 * RUN_TIMEOUT + 30)
def test_a_crash_of_the_native_agent_ends_at_once_as_the_injected_fault(tmp_path: Path) -> None:
    # lightpanda agent is its own engine: killing it ends the attempt, a failure the run
    # injected (recorded as such, in the denominator), well before any deadline.
    proc, run_dir, rows = faulted(tmp_path, NATIVE, "engine-crash", "--fault-at", "call:2")
    [row] = rows
    assert row.status == "error" and row.error_class == "injected_fault", row.error
    assert row.details["fault"]["error_class"] == "crash"
    assert [k["what"] for k in row.details["fault"]["action"]["killed"]] == ["lightpanda agent"]
    assert row.duration_s < 30
    assert "ended with the run's injected fault" in proc.stderr
    assert proc.returncode == 0, proc.stderr[-2000:]  # the run measured what it was asked
    scores = graded(run_dir)
    assert scores.n_tasks == 1 and scores.accuracy_strict == 0.0
    # a resume does not inject the same fault again: the attempt is settled
    again = run_cli("localweb-run", "--resume", str(run_dir), env=no_api_keys(), timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "0 attempt(s) to run" in again.stderr
    assert len(read_rows(run_dir)) == 1


@pytest.mark.timeout(RUN_TIMEOUT + 30)
def test_a_url_trigger_fires_after_the_call_that_loaded_the_page(tmp_path: Path) -> None:
    proc, run_dir, rows = faulted(
        tmp_path, NATIVE, "consent-wall", "--fault-at", "url:/products/lw-1006*"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = rows
    fault = row.details["fault"]
    # call 5 opens the second product: the wall goes up before call 6
    assert fault["page_loaded"] == "/products/lw-1006" and fault["loaded_after_call"] == 4
    assert fault["fired"] is True and fault["fired_at_call"] == 5
    assert graded(run_dir).per_task[0].correct


@pytest.mark.timeout(RUN_TIMEOUT + 30)
@pytest.mark.parametrize(
    "stack", [NATIVE, LIGHTPANDA_MCP, CHROMIUM_MCP], ids=["native", "lightpanda-mcp", "playwright"]
)
def test_fault_none_is_the_clean_pair_on_the_faulted_path(
    stack: tuple[str, ...], tmp_path: Path
) -> None:
    proc, run_dir, rows = faulted(tmp_path, stack, "none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = rows
    fault = row.details["fault"]
    assert (fault["kind"], fault["at"], fault["fired"]) == ("none", None, False)
    assert "action" not in fault and fault["tool_calls_seen"] == len(row.trace)
    # the same path as a faulted run: the meter and, on MCP stacks, the relay (which cut
    # nothing, so it wrote no log)
    assert next(run_dir.glob("attempts/*/model-meter.jsonl")).read_text().count('"n"') >= 10
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert "--fault none" in " ".join(manifest.argv)
    assert manifest.settings["session"]["fault"]["kind"] == "none"
    assert not (next(run_dir.glob("attempts/*")) / "mcp-relay.jsonl").exists()
    assert row.status == "ok" and graded(run_dir).per_task[0].correct
    assert not left_running(run_dir)


@pytest.mark.timeout(RUN_TIMEOUT + 30)
def test_a_fault_not_reached_says_why(tmp_path: Path) -> None:
    late = run_cli(
        *NATIVE, "--fault", "engine-crash", "--fault-at", "call:50", "--task-ids",
        "catalogue-price", "--out-dir", str(tmp_path / "late"), env=no_api_keys(),
        timeout=RUN_TIMEOUT,
    )  # fmt: skip
    assert late.returncode == 0, late.stderr[-2000:]
    [row] = read_rows(tmp_path / "late")
    assert row.status == "ok" and row.details["fault"]["fired"] is False
    assert "after 2 tool call(s)" in row.details["fault"]["why"]


@pytest.mark.parametrize(
    ("stack", "flags", "says"),
    [
        (NATIVE, ("--fault", "connection-drop", "--fault-at", "call:1"), "runs its browser"),
        (LIGHTPANDA_MCP, ("--fault", "renderer-crash", "--fault-at", "call:1"), "no renderer"),
        (NATIVE, ("--fault", "stale-dom"), "needs --fault-at"),
        (NATIVE, ("--fault-at", "call:1"), "goes with --fault"),
        (NATIVE, ("--fault", "stale-dom", "--fault-at", "call:0"), "call:K needs"),
        (NATIVE, ("--fault", "stale-dom", "--fault-at", "when:3"), "expected call:K"),
    ],
)
def test_a_fault_the_stack_cannot_take_is_refused_before_anything_runs(
    stack: tuple[str, ...], flags: tuple[str, ...], says: str, tmp_path: Path
) -> None:
    proc = run_cli(
        *stack, *flags, "--out-dir", str(tmp_path / "run"), env=no_api_keys(), timeout=60
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert says in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


@pytest.mark.timeout(RUN_TIMEOUT + 30)
@pytest.mark.parametrize(
    "stack", [NATIVE, LIGHTPANDA_MCP, CHROMIUM_MCP], ids=["native", "lightpanda-mcp", "playwright"]
)
def test_an_expired_session_is_signed_through(stack: tuple[str, ...], tmp_path: Path) -> None:
    # the member's session expires after call 8 (the option chosen, on every one of these
    # surfaces): saving sends the member to sign in again, and the setting is saved after all
    proc, run_dir, rows = faulted(
        tmp_path, stack, "session-expiry", "--fault-at", "call:8", task="account-settings"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [row] = rows
    fault = row.details["fault"]
    assert fault["fired_at_call"] == 8 and fault["action"] == {"done": True, "sessions_ended": 1}
    logins = [r for r in row.details["site"]["requests"] if r["path"] == "/account/login"]
    assert len(logins) == 2 and row.details["site"]["settings"]["delivery"] == "locker"
    assert graded(run_dir).per_task[0].correct
