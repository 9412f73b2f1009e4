"""webbench-grade end to end: the real command, the real SDK, a local judge endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import DatasetSource, Manifest, PredictionRow, ToolCall
from agent_benchmarks.records.storage import PredictionsWriter
from agent_benchmarks.scoring import scorecard
from agent_benchmarks.scoring.llm_judge import CACHE_FILE_NAME, STRICT, UPSTREAM, JudgeConfig
from agent_benchmarks.scoring.llm_judge.upstream_prompt import EMPTY_ANSWER, SYSTEM_PROMPT
from agent_benchmarks.webbench.grade import WebBenchGrader
from tests.support import run_cli
from tests.unit.judge_fakes import FakeJudgeServer, Reply, no, yes

KEY = "sk-ant-test-0123456789abcdef"


def _row(number: str, prediction: str | None, status: str = "ok", **kw) -> PredictionRow:
    task_id = f"webbench-{number}"
    return PredictionRow(
        id=task_id,
        suite="webbench",
        task=f"Read the price of item {number}",
        prediction=prediction,
        status=status,
        backend="lightpanda",
        start_url="https://shop.example",
        web_name="shop.example",
        category="READ",
        trace=[
            ToolCall(
                name="markdown",
                page_url=f"https://shop.example/{number}",
                output=f"# Item {number}\nPrice: $5",
            )
        ],
        **kw,
    )


def _write_run(tmp_path: Path, rows: list[PredictionRow]) -> Path:
    run = tmp_path / "run"
    with PredictionsWriter(run / "predictions.jsonl") as writer:
        for row in rows:
            writer.append(row)
    manifest = Manifest(
        suite="webbench",
        split="train",
        dataset=DatasetSource(kind="file", path="/data/webbenchfinal.csv", sha256="0" * 64),
        task_ids=sorted({r.id for r in rows}),
        backend="lightpanda",
        started_at="2026-11-21T00:00:00Z",
        harness_version="0.1.0",
        mode="scaffold",
    )
    (run / "manifest.json").write_text(manifest.model_dump_json())
    return run


def _answered_empty_and_timed_out() -> list[PredictionRow]:
    """Three answers, one empty row and one timeout that printed nothing."""
    return [
        _row("1", "The price is $5."),
        _row("2", "It costs $9."),
        _row("3", "Five dollars"),
        _row("4", None, status="empty"),
        _row("5", None, status="timeout", timed_out=True, error_class="timeout"),
    ]


def test_strict_protocol_scores_cache_and_no_secret(tmp_path: Path) -> None:
    run = _write_run(tmp_path, _answered_empty_and_timed_out())
    env = {"ANTHROPIC_API_KEY": KEY}
    with FakeJudgeServer() as server:
        server.script(yes(), no(), Reply(text="I think it is fine."))
        args = [
            "webbench-grade",
            str(run),
            "--judge-protocol",
            "strict",
            "--judge-base-url",
            server.base_url("anthropic"),
            "--judge-workers",
            "1",
        ]
        result = run_cli(*args, env=env)
        assert result.returncode == 0, result.stderr
        assert len(server.requests) == 3  # the empty and the timed-out rows are not judged
        assert "Read the price of item 1" in server.requests[0].prompt
        assert {r.model for r in server.requests} == {"claude-sonnet-4-6"}  # strict's default
        scores = json.loads((run / "scores.json").read_text())
        per = {e["id"]: e for e in scores["per_task"]}
        assert [per[f"webbench-{i}"]["details"].get("verdict") for i in "12345"] == [
            "YES",
            "NO",
            "INVALID",
            None,
            None,
        ]
        assert scores["accuracy_strict"] == 0.2
        metrics = scores["metrics"]
        assert (metrics["n_yes"], metrics["n_no"], metrics["n_invalid"]) == (1, 1, 1)
        assert metrics["n_unanswered"] == 1 and metrics["accuracy_judged"] == 0.5
        assert metrics["accuracy_over_rows"] == 0.2
        assert scores["grader"]["protocol"] == "strict"
        assert scores["grader"]["model"] == "claude-sonnet-4-6"
        assert len(scores["grader"]["prompt_hash"]) == 64
        assert scores["grader"]["judged"]["calls"] == 3
        assert scores["by_group"]["web_name"]["shop.example"]["n"] == 5

        again = run_cli(*args, env=env)  # cached: no new judge call
        assert again.returncode == 0, again.stderr
        assert len(server.requests) == 3
        regraded = json.loads((run / "scores.json").read_text())
        assert regraded["accuracy_strict"] == scores["accuracy_strict"]
        assert regraded["grader"]["judged"]["n_cached"] == 3
    for written in run.iterdir():
        assert KEY not in written.read_text(), written


def test_strict_judge_failing_forever_is_judge_error_not_no(tmp_path: Path) -> None:
    run = _write_run(tmp_path, [_row("1", "The price is $5.")])
    with FakeJudgeServer() as server:
        server.script(*[Reply(status=500)] * 10)
        result = run_cli(
            "webbench-grade",
            str(run),
            "--judge-protocol",
            "strict",
            "--judge-model",
            "gpt-4.1-mini",
            "--judge-base-url",
            server.base_url("openai"),
            "--judge-timeout",
            "5",
            "--judge-max-attempts",
            "3",
            "--judge-backoff",
            "0.01",
            env={"OPENAI_API_KEY": KEY},
        )
        assert len(server.requests) == 3
    assert result.returncode == 0, result.stderr
    scores = json.loads((run / "scores.json").read_text())
    assert scores["per_task"][0]["details"]["verdict"] == "judge_error"
    assert scores["metrics"]["n_judge_error"] == 1 and scores["metrics"]["n_no"] == 0


def test_missing_judge_key_is_one_clear_line(tmp_path: Path) -> None:
    run = _write_run(tmp_path, [_row("1", "The price is $5.")])
    result = run_cli(
        "webbench-grade",
        str(run),
        "--judge-model",
        "claude-sonnet-4-6",
        env={"ANTHROPIC_API_KEY": ""},
    )
    assert result.returncode == 2
    assert "ANTHROPIC_API_KEY" in result.stderr
    assert not (run / "scores.json").exists()


def test_upstream_protocol_is_the_default_and_judges_empty_answers(tmp_path: Path) -> None:
    run = _write_run(tmp_path, _answered_empty_and_timed_out())
    env = {"ANTHROPIC_API_KEY": KEY}
    with FakeJudgeServer() as server:
        server.script(yes(), Reply(text="VERDICT: No.\nREASONING: $9 is not on the page."))
        server.script(Reply(text="Looks fine to me."), no("It gave no answer."))
        args = ["webbench-grade", str(run), "--judge-base-url", server.base_url("anthropic")]
        result = run_cli(*args, "--judge-workers", "0", env=env)
        assert result.returncode == 0, result.stderr
        # The empty answer is judged; the timed-out row never reaches the grader.
        assert len(server.requests) == 4
        assert {r.model for r in server.requests} == {"claude-sonnet-4-5"}
        assert {r.system for r in server.requests} == {SYSTEM_PROMPT}
        assert {r.body["max_tokens"] for r in server.requests} == {256}
        assert "TASK (site: shop.example): Read the price of item 1" in server.requests[0].prompt
        assert f"THE AGENT'S ANSWER:\n{EMPTY_ANSWER}" in server.requests[3].prompt

        scores = json.loads((run / "scores.json").read_text())
        per = {e["id"]: e for e in scores["per_task"]}
        assert [per[f"webbench-{i}"]["details"].get("verdict") for i in "12345"] == [
            "YES",
            "NO",
            "INVALID",
            "NO",
            None,
        ]
        assert per["webbench-4"]["details"]["empty_answer"] is True
        assert "VERDICT:" in per["webbench-3"]["details"]["judge_problem"]
        metrics = scores["metrics"]
        assert (metrics["n_yes"], metrics["n_no"], metrics["n_invalid"]) == (1, 2, 1)
        assert (metrics["n_unanswered"], metrics["n_empty_judged"]) == (0, 1)
        assert metrics["accuracy_over_rows"] == 0.2 and scores["accuracy_strict"] == 0.2
        grader = scores["grader"]
        assert (grader["protocol"], grader["model"], grader["provider"]) == (
            "upstream",
            "claude-sonnet-4-5",
            "anthropic",
        )
        assert grader["prompt_hash"] == UPSTREAM.prompt_hash()
        assert grader["call"]["anthropic_max_tokens"] == 256 and grader["workers"] == 0
        assert grader["n_rows_page_text_not_shown"] == 0

        # The other protocol on the same run: its own calls (only the answered rows), never
        # the upstream verdicts from the cache.
        server.script(no(), no(), no())
        strict = run_cli(*args, "--judge-protocol", "strict", env=env)
        assert strict.returncode == 0, strict.stderr
        assert len(server.requests) == 7
        assert all(r.system is None for r in server.requests[4:])
        rescored = json.loads((run / "scores.json").read_text())
        assert rescored["grader"]["prompt_hash"] == STRICT.prompt_hash()
        assert rescored["metrics"]["n_yes"] == 0 and rescored["metrics"]["n_unanswered"] == 1
    for written in run.iterdir():
        assert KEY not in written.read_text(), written


def test_upstream_failed_call_is_invalid_and_counts_against(tmp_path: Path) -> None:
    run = _write_run(tmp_path, [_row("1", "The price is $5."), _row("2", "It is $5.")])
    with FakeJudgeServer() as server:
        server.script(Reply(status=503), yes())
        result = run_cli(
            "webbench-grade",
            str(run),
            "--judge-model",
            "models/gemini-2.5-flash",
            "--judge-base-url",
            server.base_url("google"),
            "--judge-workers",
            "0",
            env={"GEMINI_API_KEY": KEY},
        )
        assert result.returncode == 0, result.stderr
        assert len(server.requests) == 2  # one call per row, no retry
        assert server.paths()[0] == "/v1beta/models/gemini-2.5-flash:generateContent"
    scores = json.loads((run / "scores.json").read_text())
    first = scores["per_task"][0]["details"]
    assert first["verdict"] == "INVALID"
    assert first["judge_problem"].startswith("judge call failed: HTTP 503")
    metrics = scores["metrics"]
    assert (metrics["n_yes"], metrics["n_invalid"], metrics["n_judge_error"]) == (1, 1, 0)
    assert metrics["accuracy_over_rows"] == 0.5
    assert scores["grader"]["model"] == "models/gemini-2.5-flash"
    assert scores["grader"]["provider"] == "google"
    assert scores["grader"]["judged"]["n_call_failed"] == 1


def test_upstream_warns_when_the_page_text_is_from_tools_it_does_not_show(
    tmp_path: Path,
) -> None:
    row = _row("1", "The price is $5.").model_copy(
        update={"trace": [ToolCall(name="snapshot", output="- heading 'Item 1'\n- text $5")]}
    )
    run = _write_run(tmp_path, [row])
    with FakeJudgeServer() as server:
        server.script(no())
        base = server.base_url("anthropic")
        result = run_cli(
            "webbench-grade", str(run), "--judge-base-url", base, env={"ANTHROPIC_API_KEY": KEY}
        )
        assert result.returncode == 0, result.stderr
        assert "Item 1" not in server.requests[0].prompt
    assert "1 of 1 row(s) read pages only with tools" in " ".join(result.stderr.split())
    scores = json.loads((run / "scores.json").read_text())
    assert scores["grader"]["n_rows_page_text_not_shown"] == 1


def test_retry_flags_are_refused_under_the_upstream_protocol(tmp_path: Path) -> None:
    run = _write_run(tmp_path, [_row("1", "The price is $5.")])
    for flag, value in (("--judge-max-attempts", "3"), ("--judge-backoff", "0.5")):
        result = run_cli("webbench-grade", str(run), flag, value, env={"ANTHROPIC_API_KEY": KEY})
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and flag in lines[0] and "--judge-protocol strict" in lines[0]
    negative = run_cli("webbench-grade", str(run), "--judge-workers", "-1")
    assert negative.returncode == 2 and "--judge-workers" in negative.stderr
    assert not (run / "scores.json").exists()


def test_rows_judged_in_several_batches_add_up(tmp_path: Path, monkeypatch) -> None:
    # A long run reaches the grader a batch at a time; here batches of two rows.
    monkeypatch.setattr(scorecard, "_BATCH_ROWS", 2)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    snapshot_only = [ToolCall(name="snapshot", output="- heading 'Item'\n- text $5")]
    rows = [_row(str(i), f"It is ${i}.") for i in range(1, 6)]
    rows[3] = rows[3].model_copy(update={"trace": snapshot_only})
    rows[4] = rows[4].model_copy(update={"trace": snapshot_only})
    run = _write_run(tmp_path, rows)
    with FakeJudgeServer() as server:
        server.script(yes(), no(), yes(), no(), yes())
        base = server.base_url("anthropic")
        config = JudgeConfig(model="claude-sonnet-4-5", base_url=base, workers=0)
        grader = WebBenchGrader(config, run / CACHE_FILE_NAME)
        scores, _ = scorecard.grade_file(run / "predictions.jsonl", grader)
        assert len(server.requests) == 5
    verdicts = [e.details["verdict"] for e in scores.per_task]
    assert verdicts == ["YES", "NO", "YES", "NO", "YES"]
    judged = scores.grader["judged"]
    assert (judged["n"], judged["calls"], judged["verdicts"]["YES"]) == (5, 5, 3)
    assert scores.grader["n_rows_page_text_not_shown"] == 2
    said = [w for w in scores.warnings if "read pages only with tools" in w]
    assert len(said) == 1 and said[0].startswith("2 of 5 row(s)")


def test_a_file_refused_late_costs_no_judge_call(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(scorecard, "_BATCH_ROWS", 2)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    rows = [_row(str(i), f"It is ${i}.") for i in range(1, 6)]
    run = _write_run(tmp_path, [*rows, rows[0]])  # the last row repeats a settled attempt
    with FakeJudgeServer() as server:
        server.script(yes(), yes(), yes(), yes(), yes())
        config = JudgeConfig(model="claude-sonnet-4-5", base_url=server.base_url("anthropic"))
        grader = WebBenchGrader(config, run / CACHE_FILE_NAME)
        with pytest.raises(InputError, match="duplicate rows for task 'webbench-1'"):
            scorecard.grade_file(run / "predictions.jsonl", grader)
        assert server.requests == []
