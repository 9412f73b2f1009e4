"""A suite defined in the tests' own folder runs, grades and compares with no edit outside it.

``tests/defined_suite/`` holds the pocket suite (a package with its registration, run.py and
grade.py) and the one entry-point line that registers it. With that folder on PYTHONPATH
and nothing else changed, the suite's own run entry runs it on the real Lightpanda agent
(the model scripted on 127.0.0.1, the run labelled scaffold), its grade entry grades it,
and ``agent-benchmarks tasks`` and ``compare`` find it through the registry alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import FinalAnswer, ScriptedModelServer, ScriptedPolicy
from agent_benchmarks.records.schema import PredictionRow, Scores
from tests.support import REPO, lightpanda_binary, run_cli

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

DEFINED = REPO / "tests" / "defined_suite"
ANSWERS = {"pocket-1": "42", "pocket-2": "7", "pocket-3": "30"}  # the last one is wrong


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(DEFINED), "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy-key-7c1d"}


def _entry(module: str, attribute: str, *args: str, timeout: float = 60):
    code = f"import sys\nfrom {module} import {attribute}\nsys.exit({attribute}())"
    return run_cli("python", "-c", code, *args, env=_env(), timeout=timeout)


def test_a_suite_defined_in_the_tests_runs_grades_and_compares(tmp_path: Path) -> None:
    listed = run_cli("agent-benchmarks", "tasks", "pocket", env=_env())
    assert listed.returncode == 0, listed.stderr
    assert "pocket-1" in listed.stdout and "6 times 7" in listed.stdout
    assert "42" not in listed.stdout  # the tasks command never shows a gold

    run_dir = tmp_path / "pocket-run"
    policy = lambda task_id: ScriptedPolicy([FinalAnswer(ANSWERS[task_id])])  # noqa: E731
    with ScriptedModelServer(policy) as server:
        ran = _entry(
            "pocket_suite.run",
            "native",
            *("--provider", "anthropic", "--model", "claude-sonnet-4-6"),
            *("--lightpanda", lightpanda_binary(), "--workers", "2", "--timeout", "60"),
            *("--base-url", f"{server.root_url}/task/{{task_id}}", "--scaffold"),
            *("--out-dir", str(run_dir), "--no-grade"),
            timeout=150,
        )
    assert ran.returncode == 0, ran.stderr[-3000:]
    rows = [
        PredictionRow.model_validate_json(line)
        for line in (run_dir / "predictions.jsonl").read_text().splitlines()
    ]
    assert {row.id: row.prediction for row in rows} == ANSWERS
    assert {row.suite for row in rows} == {"pocket"} and all(row.status == "ok" for row in rows)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["suite"] == "pocket" and manifest["mode"] == "scaffold"

    # Without the folder that registers it, the run cannot be graded, and says so.
    unregistered = run_cli("agent-benchmarks", "compare", str(run_dir), env={"PYTHONPATH": ""})
    assert unregistered.returncode == 2
    assert "no suite 'pocket' is registered here" in unregistered.stderr, unregistered.stderr
    assert not (run_dir / "scores.json").exists()

    graded = _entry("pocket_suite.grade", "main", str(run_dir), "--json")
    assert graded.returncode == 0, graded.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert {entry.id: entry.correct for entry in scores.per_task} == {
        "pocket-1": True,
        "pocket-2": True,
        "pocket-3": False,
    }
    assert scores.upstream_view is None  # upstream's harness has no pocket suite

    out = tmp_path / "compare.json"
    compared = run_cli(
        "agent-benchmarks", "compare", str(run_dir), "--json-out", str(out), env=_env()
    )
    assert compared.returncode == 0, compared.stderr[-3000:]
    record = json.loads(out.read_text())
    assert "pocket" in json.dumps(record)
    assert "2/3" in compared.stdout or "66.7" in compared.stdout, compared.stdout
