"""Every declared console script exists, and the shared flags behave."""

from __future__ import annotations

import importlib
import json
import tomllib
from pathlib import Path

import pytest

from agent_benchmarks.records.schema import DatasetSource, Manifest, PredictionRow
from agent_benchmarks.records.storage import PredictionsWriter
from tests.support import REPO, run_cli
from tests.unit.judge_fakes import FakeJudgeServer, yes

SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_all_suite_scripts_are_declared() -> None:
    for suite in ("gaia", "assistantbench", "webbench", "localweb"):
        for kind in ("run", "grade", "mcp-run", "ab-run"):
            assert f"{suite}-{kind}" in SCRIPTS


def test_each_script_is_declared_once_and_made_by_its_suite() -> None:
    # pyproject.toml is the one list: each entry names a function that exists, and a
    # suite's scripts are made by its own run.py and grade.py.
    for name, target in SCRIPTS.items():
        module, _, attribute = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attribute)), name
        suite = name.split("-")[0]
        if suite in ("gaia", "assistantbench", "webbench", "localweb"):
            kind = "grade" if name.endswith("-grade") else "run"
            assert module == f"agent_benchmarks.{suite}.{kind}", (name, target)


def test_common_run_flags_are_declared() -> None:
    result = run_cli("gaia-run", "--help")
    assert result.returncode == 0
    for flag in (
        "--provider",
        "--model",
        "--workers",
        "--timeout",
        "--out-dir",
        "--resume",
        "--limit",
        "--task-ids",
        "--dataset-file",
        "--split",
        "--level",
        "--skip-attachments",
    ):
        assert flag in result.stdout, flag
    assert "--sample-per-site" in run_cli("webbench-run", "--help").stdout


def test_every_run_command_grades_at_the_end_unless_told_not_to(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for suite in ("gaia", "assistantbench", "webbench", "localweb"):
        for runner in ("native", "mcp", "chat"):
            main = getattr(importlib.import_module(f"agent_benchmarks.{suite}.run"), runner)
            with pytest.raises(SystemExit):
                main(["--help"])
            help_text = capsys.readouterr().out
            assert "--grade, --no-grade" in help_text and "default: on" in help_text
            # A WebBench run ends with the judge, so it takes webbench-grade's judge flags.
            assert ("--judge-model" in help_text) == (suite == "webbench"), help_text[:80]


def test_bad_flag_values_exit_2() -> None:
    result = run_cli("gaia-run", "--workers", "0")
    assert result.returncode == 2 and "--workers" in result.stderr


def test_tasks_command_prints_inputs_without_gold(assistantbench_file) -> None:
    result = run_cli(
        "agent-benchmarks",
        "tasks",
        "assistantbench",
        "--dataset-file",
        str(assistantbench_file),
        "--json",
        "--task-ids",
        "ab-string",
    )
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    task = json.loads(line)
    assert task["id"] == "ab-string" and "gold" not in task
    assert "Crunch Fitness" not in line


def test_tasks_command_bad_input_is_one_line(tmp_path) -> None:
    bad = tmp_path / "ab.jsonl"
    bad.write_bytes(b'{"id": "x", "task": "\xff"}\n')
    result = run_cli("agent-benchmarks", "tasks", "assistantbench", "--dataset-file", str(bad))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {bad}:1: invalid UTF-8 (byte offset 21)"]


def _graded_run(tmp_path: Path, suite: str, rows: list[PredictionRow]) -> Path:
    run = tmp_path / suite
    with PredictionsWriter(run / "predictions.jsonl") as writer:
        for row in rows:
            writer.append(row)
    manifest = Manifest(
        suite=suite,
        split="validation",
        dataset=DatasetSource(kind="file", path="/data/tasks.jsonl", sha256="0" * 64),
        task_ids=[r.id for r in rows],
        backend="lightpanda-native",
        started_at="2026-11-21T00:00:00Z",
        harness_version="0.1.0",
        mode="scaffold",
    )
    (run / "manifest.json").write_text(manifest.model_dump_json())
    return run


def test_grade_json_prints_the_summary_alone_on_stdout(tmp_path: Path) -> None:
    rows = [
        PredictionRow(
            id=i, suite="gaia", task="q", gold="3", prediction=p, status="ok", backend="b"
        )
        for i, p in (("g1", "3"), ("g2", "4"))
    ]
    run = _graded_run(tmp_path, "gaia", rows)
    with open(run / "predictions.jsonl", "ab") as fh:
        fh.write(b'{"torn')  # a crash mid-write: a warning, which must stay off stdout
    result = run_cli("gaia-grade", str(run), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)  # nothing but the JSON document
    scores = json.loads((run / "scores.json").read_text())
    # The summary: scores.json less both per-attempt lists (the official one and the
    # upstream view's), so it stays small whatever the run's size.
    assert len(scores["upstream_view"]["per_task"]) == 2
    del scores["per_task"], scores["upstream_view"]["per_task"]
    assert summary == scores
    assert summary["accuracy_strict"] == 0.5 and summary["manifest"]["task_ids"] == ["g1", "g2"]
    assert summary["upstream_view"]["accuracy"] == 0.5
    assert "torn last line" in result.stderr and f"wrote {run / 'scores.json'}" in result.stderr


def test_webbench_grade_json_keeps_the_judge_progress_off_stdout(tmp_path: Path) -> None:
    rows = [
        PredictionRow(
            id="webbench-1",
            suite="webbench",
            task="Read the price",
            prediction="It costs $5.",
            status="ok",
            backend="b",
            web_name="shop.example",
        )
    ]
    run = _graded_run(tmp_path, "webbench", rows)
    with FakeJudgeServer() as judge:
        judge.script(yes())
        result = run_cli(
            *("webbench-grade", str(run), "--json"),
            *("--judge-base-url", judge.base_url("anthropic")),
            env={"ANTHROPIC_API_KEY": "sk-ant-test-0123456789abcdef"},
        )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["accuracy_strict"] == 1.0 and summary["suite"] == "webbench"
    assert "per_task" not in summary
