"""Every declared console script exists, and the shared flags behave."""

from __future__ import annotations

import json
import tomllib

from tests.support import REPO, run_cli

SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_all_suite_scripts_are_declared() -> None:
    for suite in ("gaia", "assistantbench", "webbench", "localweb"):
        for kind in ("run", "grade", "mcp-run", "ab-run"):
            assert f"{suite}-{kind}" in SCRIPTS


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
