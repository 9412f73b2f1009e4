"""gaia-grade and assistantbench-grade end to end: scores.json from a predictions file,
denominators, retried rows, repeats, missing rows, and bad input."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from agent_benchmarks.backends.base import PreparedTask
from agent_benchmarks.backends.claude_mcp import (
    UPSTREAM_BUILT_INS,
    ClaudeMcpBackend,
    McpSettings,
)
from agent_benchmarks.backends.mcp_servers import SERVERS
from agent_benchmarks.isolation.process import ProcessResult
from agent_benchmarks.records.schema import DatasetSource, Manifest, PredictionRow, TaskInput, Usage
from agent_benchmarks.records.storage import PredictionsWriter
from tests.fixtures import CLAUDE_CODE, fixture
from tests.support import run_cli


def _row(task_id: str, prediction: str | None, gold: str, **kw) -> PredictionRow:
    fields = {
        "suite": "gaia",
        "task": f"question {task_id}",
        "status": "ok" if prediction else "empty",
        "backend": "lightpanda",
        "duration_s": 10.0,
        "level": 1,
    }
    fields.update(kw)
    return PredictionRow(id=task_id, prediction=prediction, gold=gold, **fields)


def _run_dir(tmp_path: Path, rows: list[PredictionRow], task_ids=None, suite="gaia", repeat=1):
    run = tmp_path / "run"
    with PredictionsWriter(run / "predictions.jsonl") as writer:
        for row in rows:
            writer.append(row)
    if task_ids is not None:
        manifest = Manifest(
            suite=suite,
            split="validation",
            dataset=DatasetSource(kind="file", path="/data/x.jsonl", sha256="0" * 64),
            task_ids=task_ids,
            backend="lightpanda",
            started_at="2026-11-21T00:00:00Z",
            harness_version="0.1.0",
            mode="scaffold",
            repeat=repeat,
        )
        (run / "manifest.json").write_text(manifest.model_dump_json())
    return run / "predictions.jsonl"


def _grade(cmd: str, predictions: Path, *extra: str) -> dict:
    before = predictions.read_bytes()
    result = run_cli(cmd, str(predictions), *extra)
    assert result.returncode == 0, result.stderr
    assert predictions.read_bytes() == before  # grading never modifies the predictions
    out = predictions.parent / "scores.json"
    if "--out" in extra:
        out = Path(extra[extra.index("--out") + 1])
    return json.loads(out.read_text())


def test_gaia_scores_with_infra_failures_in_the_denominator(tmp_path: Path) -> None:
    usage = Usage(input_tokens=1000, output_tokens=100, turns=2, cost_usd=0.0045)
    rows = [
        _row("a", "$1,250", "1250", usage=usage),  # numeric: $ and , removed -> correct
        _row("b", "Blue, Red, Yellow", "blue, red, yellow", level=2, usage=usage),  # list
        _row("c", "The Ada Lovelace", "Ada Lovelace"),  # no article stripping -> wrong
        _row("d", None, "3", status="timeout", timed_out=True, error_class="timeout"),
        _row("e", None, "3", status="error", error_class="model_api"),
        _row("f", None, "None"),  # empty answer is the string "None"
    ]
    scores = _grade("gaia-grade", _run_dir(tmp_path, rows, [r.id for r in rows]))
    assert scores["n_tasks"] == 6
    per = {e["id"]: e for e in scores["per_task"]}
    assert [per[i]["correct"] for i in "abcdef"] == [True, True, False, False, False, True]
    assert scores["accuracy_strict"] == pytest.approx(3 / 6)
    assert scores["accuracy_on_completed"] == pytest.approx(3 / 4)
    assert scores["n_completed"] == 4
    assert scores["n_timeouts"] == 1
    assert scores["n_errors"] == {"model_api": 1}
    assert scores["n_answered"] == 3
    assert per["d"]["details"] == {"not_graded": "timeout"}
    assert scores["by_group"]["level"]["1"]["n"] == 5
    assert scores["by_group"]["level"]["2"]["accuracy_strict"] == 1.0
    assert scores["usage"]["totals"]["input_tokens"] == 2000
    assert scores["usage"]["totals"]["cost_usd"] == pytest.approx(0.009)
    assert scores["usage"]["per_task_mean"]["input_tokens"] == 333
    assert scores["duration_s"]["median"] == 10.0
    assert scores["manifest"]["mode"] == "scaffold"
    predictions = tmp_path / "run" / "predictions.jsonl"
    assert scores["predictions_sha256"] == hashlib.sha256(predictions.read_bytes()).hexdigest()
    assert "question_scorer" in scores["grader"]["scorer"]


def test_missing_rows_count_wrong_and_warn(tmp_path: Path) -> None:
    rows = [_row("a", "3", "3")]
    result = run_cli("gaia-grade", str(_run_dir(tmp_path, rows, ["a", "b", "c"])))
    assert result.returncode == 0, result.stderr
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["n_tasks"] == 3
    assert scores["accuracy_strict"] == pytest.approx(1 / 3)
    assert scores["n_errors"] == {"missing_row": 2}
    assert any("2 selected attempt(s) have no row" in w for w in scores["warnings"])
    assert "have no row" in result.stdout


def test_retried_rows_are_superseded_and_settled_duplicates_refused(tmp_path: Path) -> None:
    rows = [
        _row("a", None, "3", status="timeout", error_class="timeout", usage=Usage(input_tokens=5)),
        _row("a", "3", "3", usage=Usage(input_tokens=7)),
    ]
    scores = _grade("gaia-grade", _run_dir(tmp_path, rows, ["a"]))
    assert scores["accuracy_strict"] == 1.0
    assert scores["n_rows"] == 2 and scores["n_tasks"] == 1
    assert scores["metrics"]["n_superseded_rows"] == 1
    assert scores["usage"]["totals"]["input_tokens"] == 12  # the retry's tokens still count
    dup = [_row("a", "3", "3"), _row("a", "4", "3")]
    result = run_cli("gaia-grade", str(_run_dir(tmp_path / "dup", dup)))
    assert result.returncode == 2
    assert "duplicate rows for task 'a' attempt 1" in result.stderr


def test_repeats_report_per_attempt_accuracy_and_mean(tmp_path: Path) -> None:
    rows = [
        _row("a", "3", "3", attempt=1),
        _row("b", "x", "4", attempt=1),
        _row("a", "3", "3", attempt=2),
        _row("b", "4", "4", attempt=2),
    ]
    scores = _grade("gaia-grade", _run_dir(tmp_path, rows, ["a", "b"], repeat=2))
    per_attempt = scores["attempts"]["per_attempt"]
    assert per_attempt["1"]["accuracy_strict"] == 0.5
    assert per_attempt["2"]["accuracy_strict"] == 1.0
    assert scores["attempts"]["mean_accuracy_strict"] == 0.75
    assert scores["accuracy_strict"] == 0.75
    assert len(scores["per_task"]) == 4


def test_assistantbench_metrics(tmp_path: Path) -> None:
    common = {"suite": "assistantbench", "level": None}
    rows = [
        _row("n1", "55", "55", difficulty="Easy", **common),  # 1.0, exact
        _row("n2", "50", "55", difficulty="Easy", **common),  # 1 - ln(55/50) = 0.9047
        _row("s1", "crunch fitness gym", "Crunch Fitness", difficulty="Medium", **common),  # F1 .8
        _row("s2", None, "Crunch Fitness", difficulty="Medium", **common),  # unanswered
        # JSON null: the official code raises; scored 0, unanswered, and the reason kept.
        _row("j1", "null", '{"sender": "DHL"}', difficulty="Hard", **common),
        _row(
            "t1", None, "55", difficulty="Hard", status="timeout", error_class="timeout", **common
        ),
    ]
    predictions = _run_dir(tmp_path, rows, [r.id for r in rows], suite="assistantbench")
    scores = _grade("assistantbench-grade", predictions)
    per = {e["id"]: e for e in scores["per_task"]}
    assert per["n2"]["score"] == pytest.approx(0.904689820195675)
    assert per["s1"]["score"] == pytest.approx(0.8)
    assert per["j1"]["score"] == 0.0 and "error" in per["j1"]["details"]
    metrics = scores["metrics"]
    total = 1.0 + 0.904689820195675 + 0.8
    assert metrics["accuracy_soft"] == pytest.approx(total / 6)
    assert scores["accuracy_strict"] == pytest.approx(3 / 6)
    assert metrics["answer_rate"] == pytest.approx(3 / 6)
    assert metrics["precision"] == pytest.approx(total / 3)
    assert metrics["exact_match"] == pytest.approx(1 / 6)
    easy = scores["by_group"]["difficulty"]["Easy"]
    assert easy["accuracy_soft"] == pytest.approx((1.0 + 0.904689820195675) / 2)


def test_out_flag_and_regrading_is_repeatable(tmp_path: Path) -> None:
    predictions = _run_dir(tmp_path, [_row("a", "3", "3")], ["a"])
    out = tmp_path / "elsewhere" / "s.json"
    first = _grade("gaia-grade", predictions, "--out", str(out))
    second = _grade("gaia-grade", predictions, "--out", str(out))
    assert first == second
    assert not (tmp_path / "run" / "scores.json").exists()


def test_torn_tail_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    predictions = _run_dir(tmp_path, [_row("a", "3", "3")], ["a"])
    with open(predictions, "ab") as fh:
        fh.write(b'{"id": "b", "sui')
    result = run_cli("gaia-grade", str(predictions))
    assert result.returncode == 0, result.stderr
    assert "predictions.jsonl:2: torn last line" in result.stderr
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert any("torn last line" in w for w in scores["warnings"])


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (None, "predictions file not found"),
        ([], "no prediction rows to grade"),
        (['{"suite": "gaia"}'], ":1: invalid prediction row: field 'id'"),
        (["{bad", "{}"], ":1: not a JSON line"),
    ],
)
def test_bad_predictions_files(tmp_path: Path, lines, message) -> None:
    path = tmp_path / "predictions.jsonl"
    if lines is not None:
        path.write_text("".join(line + "\n" for line in lines))
    result = run_cli("gaia-grade", str(path))
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_rows_without_gold_and_wrong_suite_are_refused(tmp_path: Path) -> None:
    row = _row("a", "3", "3").model_copy(update={"gold": None})
    result = run_cli("gaia-grade", str(_run_dir(tmp_path / "x", [row])))
    assert result.returncode == 2 and "row 1 (task 'a') has no gold answer" in result.stderr
    result = run_cli("assistantbench-grade", str(_run_dir(tmp_path / "y", [_row("a", "3", "3")])))
    assert result.returncode == 2 and "is a gaia row; this is the assistantbench grader" in (
        result.stderr
    )


def test_out_may_not_overwrite_the_predictions(tmp_path: Path) -> None:
    predictions = _run_dir(tmp_path, [_row("a", "3", "3")], ["a"])
    before = predictions.read_bytes()
    result = run_cli("gaia-grade", str(predictions), "--out", str(predictions))
    assert result.returncode == 2
    assert "that is the predictions file" in result.stderr
    assert predictions.read_bytes() == before


# --- the upstream-comparable view and answers printed before a failure ------------------------


def test_gaia_upstream_view_beside_unchanged_official_scores(tmp_path: Path) -> None:
    rows = [
        _row("a", "The Beatles", "Beatles"),  # articles: upstream right, official wrong
        _row("b", "b, a", "a, b", level=2),  # list order: the same
        _row("c", "€1.5", "1.5"),  # currency sign: the same
        _row("d", "1.005", "1"),  # wrong in both; within 1%: 0.5 in upstream's soft score
        _row("e", "42", "42"),  # right in both
        # Printed the right answer, then timed out: graded on it in both views.
        _row("f", "42", "42", status="timeout", timed_out=True, error_class="timeout"),
        # Printed a wrong answer, then crashed: graded, wrong in both.
        _row("g", "41", "42", status="error", error_class="crash", returncode=-9),
        # Timed out with nothing printed: not graded, wrong.
        _row("h", None, "42", status="timeout", timed_out=True, error_class="timeout"),
    ]
    # "i" was selected but has no row: in the official denominator, not in upstream's.
    scores = _grade("gaia-grade", _run_dir(tmp_path, rows, [*(r.id for r in rows), "i"]))
    per = {e["id"]: e for e in scores["per_task"]}
    assert [per[i]["correct"] for i in "abcdefghi"] == [False] * 4 + [True, True] + [False] * 3
    assert scores["accuracy_strict"] == pytest.approx(2 / 9)
    assert scores["accuracy_on_completed"] == pytest.approx(1 / 5)  # its meaning kept: a-e
    assert scores["n_timeouts"] == 2  # failures stay failures in the status counts
    assert scores["n_errors"] == {"crash": 1, "missing_row": 1}
    assert scores["failed_with_answer"] == {"n": 2, "n_correct": 1, "ids": ["f", "g"]}
    assert per["f"]["details"] == {"answer_before_failure": "timeout"}
    assert per["h"]["details"] == {"not_graded": "timeout"}

    view = scores["upstream_view"]
    assert view["label"] == "upstream-comparable view"
    assert "not the official scorer" in view["note"]
    assert view["n_tasks"] == 8  # the rows in the file: the task without a row is left out
    assert view["accuracy"] == pytest.approx(5 / 8)  # a, b, c, e, f
    assert view["accuracy_soft"] == pytest.approx(5.5 / 8)  # d counts 0.5
    assert view["timeouts"] == 2 and view["n_answered"] == 7
    assert view["by_level"]["2"] == {"n": 1, "accuracy": 1.0, "accuracy_soft": 1.0}
    assert view["failed_with_answer"] == {"n": 2, "n_correct": 1, "ids": ["f", "g"]}
    assert view["avg_duration_s"] == 10.0
    upstream_per = {line["id"]: line for line in view["per_task"]}
    assert upstream_per["d"]["score_soft"] == 0.5
    assert "i" not in upstream_per


def test_assistantbench_upstream_view(tmp_path: Path) -> None:
    common = {"suite": "assistantbench", "level": None}
    rows = [
        _row("a", "1,000", "1000", difficulty="Easy", **common),  # official 0, upstream 1
        _row("b", "3 miles", "3", difficulty="Easy", **common),  # official 0, upstream 1
        _row("c", "50", "100", difficulty="Hard", **common),  # official 0.31, upstream 0.5
        _row("d", "55", "55", difficulty="Hard", status="timeout", error_class="timeout", **common),
    ]
    scores = _grade(
        "assistantbench-grade", _run_dir(tmp_path, rows, ["a", "b", "c", "d"], "assistantbench")
    )
    per = {e["id"]: e["score"] for e in scores["per_task"]}
    assert per == pytest.approx({"a": 0.0, "b": 0.0, "c": 1 - 0.6931471805599453, "d": 1.0})
    assert scores["accuracy_strict"] == pytest.approx(1 / 4)
    assert scores["failed_with_answer"] == {"n": 1, "n_correct": 1, "ids": ["d"]}
    view = scores["upstream_view"]
    assert view["accuracy_soft"] == pytest.approx((1 + 1 + 0.5 + 1) / 4)
    assert view["accuracy_strict"] == 1.0  # 0.5 is strict-correct upstream
    assert view["by_difficulty"]["Hard"] == {"n": 2, "accuracy_soft": 0.75, "accuracy_strict": 1.0}


def test_upstream_view_counts_the_final_row_of_a_retried_attempt(tmp_path: Path) -> None:
    rows = [
        _row("a", None, "3", status="timeout", error_class="timeout"),
        _row("a", "The 3", "3"),  # a resume's retry: the row that counts
        _row("b", "x", "3"),
    ]
    scores = _grade("gaia-grade", _run_dir(tmp_path, rows, ["a", "b"]))
    view = scores["upstream_view"]
    assert view["n_tasks"] == 2 and scores["n_rows"] == 3
    assert view["timeouts"] == 0 and scores["failed_with_answer"]["n"] == 0


def test_grade_prints_the_upstream_view_apart(tmp_path: Path) -> None:
    predictions = _run_dir(tmp_path, [_row("a", "The Beatles", "Beatles")], ["a"])
    result = run_cli("gaia-grade", str(predictions))
    assert result.returncode == 0, result.stderr
    assert "upstream-comparable view" in result.stdout
    assert "not the official scorer" in result.stdout
    # The same answer, two verdicts, each in its own table: official wrong, upstream right.
    official, upstream = result.stdout.split("upstream-comparable view", 1)
    assert re.search(r"│ accuracy_strict\s+│\s+0\.000 │", official)
    assert re.search(r"│ accuracy\s+│\s+1\.000 │", upstream)


def _audited_details(tmp_path: Path, recording: str) -> dict:
    """The row details the MCP backend writes for one of the Claude Code recordings, under
    the refused_calls recording's lockdown (its allowed tools and built-ins)."""
    settings = McpSettings(
        backend="lightpanda",
        claude="claude",
        model="claude-sonnet-4-6",
        auth="api-key",
        mcp_tool_timeout_ms=1000,
        lightpanda="lightpanda",
        allowed_tools=["goto", "markdown", "extract", "tree", "links", "getUrl"],
        built_in_tools=list(UPSTREAM_BUILT_INS),
    )
    backend = ClaudeMcpBackend(settings, SERVERS["lightpanda"], {})
    stdout = fixture(CLAUDE_CODE / recording / "stream.jsonl").read_text(encoding="utf-8")
    task = TaskInput(id="t", suite="gaia", question="q")
    prepared = PreparedTask(task=task, attempt=1, text="q", system_prompt=None)
    result = ProcessResult(returncode=0, stdout=stdout, stderr="", duration_s=1.0)
    return backend.outcome(prepared, result).details


def test_refused_calls_are_counted_beside_contamination(tmp_path: Path) -> None:
    """Two rows whose WebSearch, Bash and three MCP calls Claude Code refused stay in the
    uncontaminated accuracy; the row whose foreign calls ran (lightpanda_mcp, recorded with
    another server name) is out of it. scores.json counts the refused calls beside."""
    refused = _audited_details(tmp_path, "refused_calls")
    ran = _audited_details(tmp_path, "lightpanda_mcp")
    assert (refused["contaminated"], refused["n_refused_calls"]) == (False, 5)
    assert (ran["contaminated"], ran["n_refused_calls"]) == (True, 0)
    rows = [
        _row("a", "3", "3", details=refused),
        _row("b", "4", "4", details=refused),
        _row("c", "5", "5", details=ran),
        _row("d", "6", "7"),
    ]
    scores = _grade("gaia-grade", _run_dir(tmp_path, rows, [r.id for r in rows]))
    metrics = scores["metrics"]
    assert metrics["n_contaminated"] == 1
    assert metrics["accuracy_strict_uncontaminated"] == pytest.approx(2 / 3)
    assert (metrics["n_rows_with_refused_calls"], metrics["n_refused_calls"]) == (2, 10)
    per = {e["id"]: e["details"] for e in scores["per_task"]}
    assert per["a"]["n_refused_calls"] == 5 and "contaminated" not in per["a"]
    assert "n_refused_calls" not in per["d"]
    assert [w for w in scores["warnings"] if "contaminated" in w] == [
        "1 row(s) are contaminated: the agent ran tools outside its browser MCP server "
        "(e.g. task 'c'); see each row's details.foreign_calls"
    ]


def test_refused_calls_alone_contaminate_nothing(tmp_path: Path) -> None:
    rows = [_row("a", "3", "3", details=_audited_details(tmp_path, "refused_calls"))]
    result = run_cli("gaia-grade", str(_run_dir(tmp_path, rows, ["a"])))
    assert result.returncode == 0, result.stderr
    scores = json.loads((tmp_path / "run" / "scores.json").read_text())
    assert scores["metrics"]["n_rows_with_refused_calls"] == 1
    assert scores["metrics"]["n_refused_calls"] == 5
    assert "n_contaminated" not in scores["metrics"]
    assert not any("contaminated" in w for w in scores["warnings"])
    assert "n_refused_calls" in result.stdout  # the grade table prints the metrics
