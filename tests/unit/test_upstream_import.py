"""Run folders written by upstream's harness (lightpanda-io/agent-benchmarks): graded and
compared as they are, converted on read, never rewritten, and labelled imported.

The rows below are built in upstream's shape: its GAIA native runner (``level``,
``file_name``, ``retried``, a ``trace`` of ``{tool, args, output}``, ``usage`` with Claude
Code's counter names), its AssistantBench rows (``difficulty``, no trace or usage in older
versions) and its WebBench rows (``webbench-N`` ids, ``web_name``, ``category``,
``start_url``, ``reference: null``); and its four-key manifest.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.__main__ import main
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.storage import read_predictions
from agent_benchmarks.records.upstream import DENOMINATOR_NOTE, IMPORTED_SCORES_NAME, convert_row
from agent_benchmarks.spec.datasets import load_dataset_bundled
from agent_benchmarks.webbench import DATASET as WEBBENCH
from tests.support import run_cli
from tests.unit.judge_fakes import FakeJudgeServer, no, yes

KEY = "sk-ant-test-0123456789abcdef"


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _write_upstream_run(
    folder: Path, rows: list[dict[str, Any]], script: str, model: str | None = "sonnet"
) -> Path:
    folder.mkdir(parents=True)
    # Upstream writes json.dumps(row) + "\n" per row, keys in insertion order.
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    manifest = {
        "agent_provider": "claude-mcp-lightpanda",
        "agent_model": model,
        "argv": [f"/home/u/agent-benchmarks/.venv/bin/{script}", "--limit", str(len(rows))],
        "started_at": "2026-05-01T10:00:00.000000+00:00",
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return folder


def _gaia_row(task_id: str, gold: str, prediction: str, **kw: Any) -> dict[str, Any]:
    row = {
        "id": task_id,
        "task": f"Question {task_id}?",
        "gold": gold,
        "prediction": prediction,
        "duration_s": 12.5,
        "timed_out": False,
        "returncode": 0,
        "level": "1",
        "file_name": None,
        "retried": False,
        "trace": [
            {"tool": "goto", "args": {"url": f"https://example.org/{task_id}"}},
            {"tool": "markdown", "args": {}, "output": f"# Page {task_id}"},
        ],
        "usage": {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 50,
            "num_turns": 3,
            "final_turn_input_tokens": 400,
            "total_cost_usd": None,
        },
        "stderr_tail": "",
    }
    row.update(kw)
    return row


def _gaia_rows() -> list[dict[str, Any]]:
    return [
        _gaia_row("g1", "42", "42"),
        # Right for upstream's lenient match, wrong for the official scorer.
        _gaia_row("g2", "Beatles", "The Beatles", level=2),
        _gaia_row("g3", "a, b", "", retried=True),
        _gaia_row("g4", "42", "42", timed_out=True, returncode=None),
        _gaia_row("g5", "7", "", returncode=-9, usage=None),
    ]


def _ab_row(task_id: str, gold: str, prediction: str, **kw: Any) -> dict[str, Any]:
    row = {
        "id": task_id,
        "task": f"How much is {task_id}?",
        "gold": gold,
        "prediction": prediction,
        "duration_s": 30.0,
        "timed_out": False,
        "returncode": 0,
        "difficulty": "Easy",
        "stderr_tail": "",
    }
    row.update(kw)
    return row


def _webbench_row(n: int, prediction: str, **kw: Any) -> dict[str, Any]:
    row = {
        "id": f"webbench-{n}",
        "web_name": "shop.example",
        "category": "READ",
        "task": f"Read the price of item {n}\nOnly use http://shop.example to achieve the task.",
        "start_url": "https://www.shop.example",
        "reference": None,
        "prediction": prediction,
        "duration_s": 40.0,
        "timed_out": False,
        "returncode": 0,
        "trace": [
            {"tool": "goto", "args": {"url": f"https://www.shop.example/item/{n}"}},
            {"tool": "markdown", "args": {}, "output": f"# Item {n}\nPrice: $5"},
        ],
        "stderr_tail": "",
    }
    row.update(kw)
    return row


def _scores(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _assert_imported(scores: dict[str, Any], model: str | None = "sonnet") -> None:
    provenance = scores["provenance"]
    assert provenance["imported"] == "upstream"
    assert provenance["denominator"] == DENOMINATOR_NOTE
    assert provenance["upstream_manifest"]["agent_model"] == model
    assert any("no dataset revision" in line for line in provenance["not_recorded"])
    assert any("no per-call latency" in line for line in provenance["not_recorded"])
    assert scores["manifest"] is None
    assert any("upstream's harness" in w for w in scores["warnings"])


# --- conversion -------------------------------------------------------------------------------


def test_one_upstream_row_maps_field_by_field() -> None:
    row = convert_row(_gaia_row("g1", "42", "42", retried=True))
    assert (row.suite, row.id, row.gold, row.prediction) == ("gaia", "g1", "42", "42")
    assert (row.status, row.error_class, row.attempt, row.level) == ("ok", None, 1, 1)
    assert [(c.name, c.args) for c in row.trace] == [
        ("goto", {"url": "https://example.org/g1"}),
        ("markdown", {}),
    ]
    assert row.trace[1].output == "# Page g1" and row.trace[0].latency_ms is None
    usage = row.usage
    assert (usage.input_tokens, usage.output_tokens, usage.turns) == (100, 10, 3)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (1000, 50)
    assert usage.cost_usd is None
    assert row.details == {"imported_from": "upstream", "retried": True}

    timeout = convert_row(_gaia_row("g4", "42", "42", timed_out=True, returncode=None))
    assert (timeout.status, timeout.error_class) == ("timeout", "timeout")
    crash = convert_row(_gaia_row("g5", "7", "", returncode=-9, usage=None))
    assert (crash.status, crash.error_class) == ("error", "crash")
    assert crash.details["usage_recorded"] is False
    failed = convert_row(_ab_row("a4", "3", "3", returncode=1))
    assert (failed.suite, failed.status, failed.error_class) == (
        "assistantbench",
        "error",
        "agent_error",
    )
    assert convert_row(_ab_row("a3", "3", "  ")).status == "empty"

    web = convert_row(_webbench_row(7, "It is $5.", backend="lightpanda"))
    # Upstream's WebBench id is ours too: kept as written, no alias recorded.
    assert (web.suite, web.id) == ("webbench", "webbench-7")
    assert "upstream_id" not in web.details
    assert (web.web_name, web.category, web.start_url) == (
        "shop.example",
        "READ",
        "https://www.shop.example",
    )
    assert web.gold is None
    assert web.backend == "upstream/claude-mcp/lightpanda"
    assert web.details["upstream_fields"] == {"backend": "lightpanda"}


def test_upstream_webbench_ids_are_ours() -> None:
    """An upstream WebBench row and our task for the same row of WebBench's table carry the
    same id, so the two line up with no mapping (every id of the shipped READ table)."""
    tasks = load_dataset_bundled(WEBBENCH, "train").tasks
    assert tasks[0].id == "webbench-0"
    for task in tasks:
        number = int(task.id.removeprefix("webbench-"))
        assert convert_row(_webbench_row(number, "x")).id == task.id


# --- the three graders ------------------------------------------------------------------------


def test_gaia_grade_reads_an_upstream_folder(tmp_path: Path) -> None:
    run = _write_upstream_run(tmp_path / "gaia", _gaia_rows(), "gaia-mcp-run")
    before = _digests(run)
    result = run_cli("gaia-grade", str(run / "predictions.jsonl"))
    assert result.returncode == 0, result.stderr
    after = _digests(run)
    assert {k: v for k, v in after.items() if k != "scores.json"} == before
    scores = _scores(run / "scores.json")
    _assert_imported(scores)
    # g1 right; g2 wrong under the official scorer; g3 empty; g4 timed out after printing
    # the right answer, graded on it as upstream did; g5 crashed with nothing printed.
    assert scores["n_tasks"] == 5 and scores["n_rows"] == 5
    assert scores["accuracy_strict"] == pytest.approx(2 / 5)
    assert scores["accuracy_on_completed"] == pytest.approx(1 / 3)
    assert (scores["n_timeouts"], scores["n_errors"]) == (1, {"crash": 1})
    assert scores["by_group"]["level"]["1"]["n"] == 4
    assert scores["by_group"]["level"]["2"]["accuracy_strict"] == 0.0
    per = {e["id"]: e for e in scores["per_task"]}
    assert per["g4"]["correct"] is True
    assert per["g4"]["details"] == {"answer_before_failure": "timeout"}
    assert per["g5"]["details"] == {"not_graded": "error"}
    assert scores["failed_with_answer"] == {"n": 1, "n_correct": 1, "ids": ["g4"]}
    # Upstream's own matching takes g2 too (Beatles = The Beatles), over the rows in the file.
    view = scores["upstream_view"]
    assert (view["n_tasks"], view["accuracy"], view["timeouts"]) == (5, pytest.approx(3 / 5), 1)
    assert view["by_level"]["2"]["accuracy"] == 1.0
    # Four rows carry usage: 100 + 10 + 1000 + 50 tokens each, no cost.
    assert scores["usage"]["totals"]["input_tokens"] == 400
    assert scores["usage"]["totals"]["cost_usd"] is None
    assert "imported from upstream" in result.stdout


def test_assistantbench_grade_reads_an_upstream_file(tmp_path: Path) -> None:
    rows = [
        _ab_row("a1", "1000", "1000"),
        _ab_row("a2", "50", "100", difficulty="Hard"),
        _ab_row("a3", "Paris", ""),
        _ab_row("a4", "3", "", returncode=1),
    ]
    run = _write_upstream_run(tmp_path / "ab", rows, "assistantbench-run", model=None)
    before = _digests(run)
    result = run_cli("assistantbench-grade", str(run / "predictions.jsonl"))
    assert result.returncode == 0, result.stderr
    assert {k: v for k, v in _digests(run).items() if k != "scores.json"} == before
    scores = _scores(run / "scores.json")
    _assert_imported(scores, model=None)
    # The official evaluator: 1000 = 1000 scores 1; 100 for 50 scores 1 - ln(100/50).
    soft = (1.0 + (1 - math.log(2)) + 0.0 + 0.0) / 4
    assert scores["accuracy_strict"] == pytest.approx(1 / 4)
    assert scores["metrics"]["accuracy_soft"] == pytest.approx(soft)
    assert scores["metrics"]["answer_rate"] == pytest.approx(2 / 4)
    assert scores["n_errors"] == {"agent_error": 1}
    assert scores["by_group"]["difficulty"]["Hard"]["accuracy_soft"] == pytest.approx(
        1 - math.log(2)
    )


def test_webbench_grade_judges_upstream_rows_with_their_task_text(tmp_path: Path) -> None:
    rows = [
        _webbench_row(5, "The price is $5."),
        _webbench_row(6, "It costs $9."),
        _webbench_row(7, "", timed_out=True, returncode=None),
    ]
    run = _write_upstream_run(tmp_path / "wb", rows, "webbench-run", model="gemini-2.5-flash")
    before = _digests(run)
    with FakeJudgeServer() as server:
        server.script(yes(), no())
        result = run_cli(
            "webbench-grade",
            str(run),
            "--judge-model",
            "claude-sonnet-4-6",
            "--judge-base-url",
            server.base_url("anthropic"),
            "--judge-workers",
            "1",
            env={"ANTHROPIC_API_KEY": KEY},
        )
        assert result.returncode == 0, result.stderr
        assert len(server.requests) == 2  # the timed-out row is not judged
        prompts = sorted(r.prompt for r in server.requests)
    assert "Read the price of item 5" in prompts[0] and "Price: $5" in prompts[0]
    assert "https://www.shop.example/item/5" in prompts[0]
    after = _digests(run)
    assert after["predictions.jsonl"] == before["predictions.jsonl"]
    assert after["manifest.json"] == before["manifest.json"]
    scores = _scores(run / "scores.json")
    _assert_imported(scores, model="gemini-2.5-flash")
    per = {e["id"]: e for e in scores["per_task"]}
    assert sorted(per) == ["webbench-5", "webbench-6", "webbench-7"]  # ids as upstream wrote
    verdicts = [per[f"webbench-{n}"]["details"].get("verdict") for n in "567"]
    assert verdicts == ["YES", "NO", None]
    assert scores["accuracy_strict"] == pytest.approx(1 / 3)
    assert scores["metrics"]["n_yes"] == 1 and scores["metrics"]["n_no"] == 1
    assert scores["by_group"]["web_name"]["shop.example"]["n"] == 3
    # Upstream's summary of the same verdicts: the timed-out row printed nothing, a no.
    view = scores["upstream_view"]
    assert (view["n_tasks"], view["yes"], view["no"], view["invalid"]) == (3, 1, 2, 0)
    assert view["accuracy"] == pytest.approx(1 / 3) and view["timeouts"] == 1
    assert view["by_site"]["shop.example"]["yes"] == 1


def test_upstreams_own_scores_json_is_left_alone(tmp_path: Path) -> None:
    run = _write_upstream_run(tmp_path / "gaia", _gaia_rows(), "gaia-run")
    (run / "scores.json").write_text(json.dumps({"accuracy": 0.6, "n": 5, "per_task": []}))
    before = _digests(run)
    result = run_cli("gaia-grade", str(run))
    assert result.returncode == 0, result.stderr
    after = _digests(run)
    assert {k: v for k, v in after.items() if k != IMPORTED_SCORES_NAME} == before
    assert _scores(run / IMPORTED_SCORES_NAME)["accuracy_strict"] == pytest.approx(2 / 5)


# --- compare ----------------------------------------------------------------------------------


@pytest.fixture
def cli(capsys):
    def call(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return call


def test_compare_accepts_an_upstream_folder_as_imported(cli, tmp_path: Path) -> None:
    run = _write_upstream_run(tmp_path / "gaia", _gaia_rows(), "gaia-mcp-run")
    (run / "scores.json").write_text(json.dumps({"accuracy": 0.6}))  # upstream's own
    before = _digests(run)
    out = tmp_path / "report.json"
    result = cli("compare", str(run), "--json-out", str(out))
    assert result.returncode == 0, result.stderr
    after = _digests(run)
    assert {k: v for k, v in after.items() if k != IMPORTED_SCORES_NAME} == before
    report = json.loads(out.read_text())
    (group,) = report["groups"]
    (row,) = group["rows"]
    assert row["mode"] == "imported"
    assert row["stack"]["model"] == "sonnet"
    assert row["stack"]["backend"].startswith("upstream")
    assert row["n_tasks"] == 5 and row["n_successes"] == 2  # g4 printed 42 before timing out
    assert row["eligibility"]["headline"] is False
    codes = [r["code"] for r in row["eligibility"]["reasons"]]
    assert "imported" in codes and "mode" not in codes
    assert any("upstream's harness" in w for w in report["warnings"])


# --- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "needle"),
    [
        ({"id": "g9", "answer": "1"}, "not a prediction row"),
        ({**_gaia_row("g9", "1", "1"), "timed_out": "no"}, "field 'timed_out'"),
    ],
)
def test_a_row_in_neither_shape_is_refused_naming_file_and_line(
    tmp_path: Path, bad: dict[str, Any], needle: str
) -> None:
    run = _write_upstream_run(tmp_path / "gaia", [*_gaia_rows()[:2], bad], "gaia-run")
    before = _digests(run)
    path = run / "predictions.jsonl"
    result = run_cli("gaia-grade", str(path))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{path}:3:" in lines[0] and needle in lines[0]
    assert _digests(run) == before  # nothing written
    with pytest.raises(InputError, match=":3:"):
        read_predictions(path)


def test_suite_that_cannot_be_told_is_refused_unless_the_grader_says(tmp_path: Path) -> None:
    bare = {k: v for k, v in _ab_row("a1", "1", "1").items() if k != "difficulty"}
    path = tmp_path / "predictions.jsonl"
    path.write_text(json.dumps(bare) + "\n")
    with pytest.raises(InputError, match=r":1: .*suite cannot be told"):
        read_predictions(path)
    loaded = read_predictions(path, suite="assistantbench")
    assert loaded.n_imported == 1 and loaded.rows[0].suite == "assistantbench"
