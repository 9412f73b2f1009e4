"""The leak audit: mirrors, local dataset caches and task ids in tool calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.report.audit import audit_run
from agent_benchmarks.report.leaks import distinctive, row_hits
from agent_benchmarks.report.load import load_run
from tests.support import run_cli
from tests.unit.report_builders import Attempt, make_run, row_for, uniform

GAIA_ID = "c61d22de-5f6f-4958-a7f6-5e9707bd3466"
MIRRORS = ("*://huggingface.co/datasets/*", "*://huggingface.co/spaces/*", "*gaia-benchmark*")


def hits_for(task_id: str, *calls: ToolCall, file_name: str | None = None):
    row = row_for(task_id, 1, Attempt(trace=list(calls)), suite="gaia", backend="x", level=1)
    row.file_name = file_name
    return row_hits(row, MIRRORS)


def test_mirror_visits_are_flagged_wherever_they_appear() -> None:
    (hit,) = hits_for(
        "t1", ToolCall(name="goto", args={}, page_url="https://HuggingFace.co/datasets/x/y")
    )
    assert (hit.kind, hit.field) == ("mirror", "page_url")
    (hit,) = hits_for(
        "t1",
        ToolCall(name="evaluate", args={"steps": [{"open": "https://huggingface.co/spaces/lb"}]}),
    )
    assert hit.field == "args.steps.0.open" and hit.pattern == "*://huggingface.co/spaces/*"
    (hit,) = hits_for(
        "t1", ToolCall(name="goto", args={"url": "https://github.com/gaia-benchmark"})
    )
    assert hit.pattern == "*gaia-benchmark*"


def test_local_dataset_caches_are_flagged() -> None:
    (hit,) = hits_for(
        "t1",
        ToolCall(
            name="goto",
            args={"url": "file:///root/.cache/huggingface/hub/datasets--x--y/snapshots/a.json"},
        ),
    )
    assert hit.kind == "local_cache"


def test_a_distinctive_task_id_in_a_url_or_argument_is_flagged() -> None:
    (hit,) = hits_for(
        GAIA_ID, ToolCall(name="goto", args={"url": f"https://www.google.com/search?q={GAIA_ID}"})
    )
    assert hit.kind == "task_id" and hit.pattern == GAIA_ID
    # Its attachment is named after the task: reading it is not a leak.
    assert not hits_for(
        GAIA_ID,
        ToolCall(name="read", args={"path": f"/work/{GAIA_ID}.xlsx"}),
        file_name=f"{GAIA_ID}.xlsx",
    )


def test_generic_ids_and_tool_outputs_are_not_searched() -> None:
    assert not distinctive("1234") and not distinctive("home-links") and distinctive(GAIA_ID)
    assert not hits_for(
        "home-links", ToolCall(name="goto", args={"url": "http://h/t/home-links.a1/"})
    )
    # A page of results mentioning a mirror is not a visit.
    assert not hits_for(
        "t1", ToolCall(name="markdown", args={}, output="see https://huggingface.co/datasets/x")
    )


def test_audit_counts_flagged_attempts_wrong(tmp_path: Path) -> None:
    outcomes = uniform(10, Attempt())
    leak = ToolCall(
        name="goto", args={"url": "https://huggingface.co/datasets/gaia-benchmark/GAIA"}
    )
    outcomes["task-02"] = [Attempt(trace=[leak])]
    outcomes["task-03"] = [Attempt(correct=False, trace=[leak, leak])]
    run = make_run(tmp_path, "leaky", outcomes)
    audit = audit_run(load_run(run))
    assert audit.flagged_tasks == ["task-02", "task-03"] and len(audit.hits) == 3
    assert audit.accuracy_strict == pytest.approx(0.9)
    assert audit.accuracy_flagged_wrong == pytest.approx(0.8)  # task-02 was right: now wrong


def test_leak_audit_command(tmp_path: Path) -> None:
    clean = make_run(tmp_path, "clean")
    result = run_cli("leak-audit", str(clean))
    assert result.returncode == 0, result.stderr
    assert "no leak found" in result.stdout

    outcomes = uniform(10, Attempt())
    outcomes["task-01"] = [
        Attempt(trace=[ToolCall(name="goto", args={"url": "https://huggingface.co/datasets/a/b"})])
    ]
    leaky = make_run(tmp_path, "leaky", outcomes)
    out = tmp_path / "audit.json"
    result = run_cli("agent-benchmarks", "leak-audit", str(leaky), "--json-out", str(out))
    assert result.returncode == 1, result.stderr  # found something, like a linter
    assert "task-01" in result.stdout and "accuracy 100.0%" in result.stdout
    data = json.loads(out.read_text())
    assert data["schema_version"] == 1 and data["flagged_tasks"] == ["task-01"]
    assert data["accuracy_flagged_wrong"] == pytest.approx(0.9)


def test_leak_audit_needs_no_grades(tmp_path: Path) -> None:
    # A WebBench run cannot be graded for free; the audit still runs on its traces.
    outcomes = uniform(3, Attempt())
    run = make_run(tmp_path, "wb", outcomes, suite="webbench")
    result = run_cli("leak-audit", str(run))
    assert result.returncode == 0, result.stderr
    assert "accuracy: not graded" in result.stdout
    assert not (run / "scores.json").exists()
