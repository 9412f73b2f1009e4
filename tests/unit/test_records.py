"""Typed, versioned records: round trips, and the gold answer kept away from backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent_benchmarks.records.schema import (
    SCHEMA_VERSION,
    DatasetSource,
    Manifest,
    PredictionRow,
    Task,
    TaskInput,
    ToolCall,
    Usage,
)


def _task() -> Task:
    return Task(
        suite="gaia",
        id="t1",
        question="What is the capital of France?",
        gold="Paris",
        level=1,
        file_name="notes.txt",
        attachment_path=Path("/tmp/notes.txt"),
    )


def test_task_input_cannot_carry_the_gold() -> None:
    task = _task()
    given = task.to_input()
    assert "gold" not in TaskInput.model_fields
    assert not hasattr(given, "gold")
    assert "Paris" not in given.model_dump_json()
    assert given.level == 1 and given.file_name == "notes.txt"
    assert given.attachment_path == Path("/tmp/notes.txt")
    with pytest.raises(ValidationError, match="gold"):
        TaskInput(suite="gaia", id="t1", question="q", gold="Paris")  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        given.gold = "Paris"  # type: ignore[attr-defined]


def test_prediction_row_round_trip() -> None:
    row = PredictionRow(
        id="t1",
        suite="webbench",
        task="Find the price",
        prediction="$5",
        status="ok",
        duration_s=12.5,
        returncode=0,
        attempt=2,
        backend="lightpanda",
        trace=[
            ToolCall(
                name="goto",
                args={"url": "https://a.example"},
                latency_ms=120.0,
                page_url="https://a.example",
                http_status=200,
                output="# A",
            )
        ],
        usage=Usage(input_tokens=100, cache_read_tokens=50, output_tokens=20, turns=3),
        start_url="https://a.example",
        web_name="a.example",
        category="READ",
        details={"answer_extraction": "envelope"},
    )
    line = row.model_dump_json()
    back = PredictionRow.model_validate_json(line)
    assert back == row
    obj = json.loads(line)
    assert obj["schema_version"] == SCHEMA_VERSION
    assert obj["web_name"] == "a.example"  # suite fields are flat in the row
    assert back.usage.total_tokens == 170


def test_row_validation_rejects_unknown_status_and_fields() -> None:
    base = {"id": "t", "suite": "gaia", "task": "q", "status": "ok", "backend": "b"}
    PredictionRow.model_validate(base)
    with pytest.raises(ValidationError, match="status"):
        PredictionRow.model_validate({**base, "status": "maybe"})
    with pytest.raises(ValidationError, match="surprise"):
        PredictionRow.model_validate({**base, "surprise": 1})
    with pytest.raises(ValidationError, match="attempt"):
        PredictionRow.model_validate({**base, "attempt": 0})


def test_manifest_round_trip() -> None:
    manifest = Manifest(
        suite="assistantbench",
        split="validation",
        dataset=DatasetSource(kind="hub", hf_id="AssistantBench/AssistantBench", revision="abc"),
        task_ids=["a", "b"],
        backend="lightpanda",
        argv=["assistantbench-run", "--limit", "2"],
        started_at="2026-11-21T00:00:00Z",
        harness_version="0.1.0",
        mode="scaffold",
    )
    assert Manifest.model_validate_json(manifest.model_dump_json()) == manifest
    with pytest.raises(ValidationError, match="mode"):
        Manifest.model_validate({**manifest.model_dump(), "mode": "mock"})
