"""One budget for every agent, enforced by the harness at the model boundary: a budget of 3
steps ends Claude Code's, Codex's, the native Lightpanda agent's and agent-browser chat's
attempts when they ask for their 4th tool call, each with status ``budget`` (a wrong answer,
never an infrastructure failure), recorded in the same manifest fields for every agent, so
Claude Code and Codex runs with equal budgets compare as equals. The real programs run;
only the model is scripted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.records.schema import Manifest, Scores
from tests.support import left_running, no_api_keys, read_rows, run_cli

pytestmark = pytest.mark.e2e

TASKS = "cart-total,enquiry-submit"  # both need more than 3 tool calls
STACKS = {
    "claude": ("localweb-mcp-run", "--backend", "lightpanda"),
    "codex": ("localweb-mcp-run", "--agent", "codex", "--backend", "lightpanda"),
    "native": ("localweb-run",),
    "chat": ("localweb-ab-run", "--engine", "lightpanda"),
}
RUN_TIMEOUT = 300.0


def run(tmp_path: Path, name: str, *flags: str) -> Path:
    run_dir = tmp_path / name
    proc = run_cli(
        *STACKS[name], *flags, "--task-ids", TASKS, "--out-dir", str(run_dir),
        env=no_api_keys(), timeout=RUN_TIMEOUT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir


@pytest.mark.timeout(4 * RUN_TIMEOUT + 120)
def test_three_steps_end_every_agent_at_its_fourth_call_with_status_budget(
    tmp_path: Path,
) -> None:
    budgets = {}
    for name in STACKS:
        run_dir = run(tmp_path, name, "--max-steps", "3")
        rows = read_rows(run_dir)
        assert len(rows) == 2
        for row in rows:
            assert row.status == "budget", (name, row.id, row.status, row.error)
            assert row.error_class is None and row.error is None and not row.prediction
            meter = row.details["meter"]
            assert meter["budget_exhausted"] == "steps" and meter["tool_calls"] == 3
            # the reply asking for the 4th call was withheld: the agent never made it
            assert len(meter["withheld"]["tool_calls_asked"]) == 1
            assert len(row.trace) == 3, (name, [c.name for c in row.trace])
        scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
        # a wrong answer: in the denominator, no infrastructure failure
        assert scores.accuracy_strict == 0.0 and scores.n_errors == {}
        assert scores.n_timeouts == 0 and scores.n_completed == 2
        manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
        recorded = manifest.settings["budgets"]
        assert recorded["harness"]["max_steps"] == 3 and "how" in recorded
        budgets[name] = {k: recorded[k] for k in ("max_steps", "max_tokens", "max_cost_usd")}
        assert recorded["enforced_by"]["max_steps"] == "harness"
        assert not left_running(run_dir)
    # the same fields, the same values, whatever the agent
    assert {json.dumps(b, sort_keys=True) for b in budgets.values()} == {
        json.dumps({"max_steps": 3, "max_tokens": None, "max_cost_usd": None}, sort_keys=True)
    }
    # Claude Code and Codex under one budget: compare finds no budget difference
    out = tmp_path / "compare.json"
    proc = run_cli(
        "agent-benchmarks", "compare", str(tmp_path / "claude"), str(tmp_path / "codex"),
        "--json-out", str(out), timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(out.read_text())["groups"][0]["rows"]
    codes = {r["stack"]["agent"]: [x["code"] for x in r["eligibility"]["reasons"]] for r in rows}
    assert set(codes) == {"claude-mcp", "codex-mcp"}
    assert all("budgets_differ" not in reasons for reasons in codes.values()), codes
    assert [r["budgets"]["steps"] for r in rows] == [3.0, 3.0]


@pytest.mark.timeout(RUN_TIMEOUT + 30)
def test_a_token_budget_and_the_temperature_are_the_harness_s_too(tmp_path: Path) -> None:
    # the scripted model's requests are about 7,000 tokens each: the third crosses 15,000
    run_dir = run(tmp_path, "native", "--max-tokens", "15000", "--temperature", "0")
    rows = read_rows(run_dir)
    assert all(r.status == "budget" for r in rows)
    assert {r.details["meter"]["budget_exhausted"] for r in rows} == {"tokens"}
    assert all(r.details["meter"]["tokens"] > 15000 for r in rows)
    recorded = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    budgets = recorded.settings["budgets"]
    assert budgets["max_tokens"] == 15000 and budgets["temperature"] == 0.0
    assert budgets["max_steps"] == 100  # Lightpanda's own cap, named as the agent's
    assert budgets["enforced_by"] == {
        "max_steps": "agent",
        "max_tokens": "harness",
        "max_cost_usd": None,
    }


def test_a_budget_is_refused_where_the_meter_cannot_read_the_model_s_wire(
    tmp_path: Path,
) -> None:
    proc = run_cli(
        "localweb-run", "--provider", "gemini", "--max-steps", "3",
        "--out-dir", str(tmp_path / "run"), env={**no_api_keys(), "GOOGLE_API_KEY": "x"},
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "model meter" in proc.stderr and "--provider gemini" in proc.stderr
    assert not (tmp_path / "run" / "predictions.jsonl").exists()
