"""predictions.jsonl: append-only writes, the torn-line reader, and bad lines named."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import PredictionRow, ToolCall
from agent_benchmarks.records.storage import (
    PredictionsStream,
    PredictionsWriter,
    read_predictions,
    set_aside_torn_tail,
    write_json_atomic,
)


def _row(task_id: str, status: str = "ok") -> PredictionRow:
    return PredictionRow(
        id=task_id, suite="gaia", task="q", gold="g", prediction="p", status=status, backend="b"
    )


def test_writer_appends_and_never_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    with PredictionsWriter(path) as writer:
        writer.append(_row("a"))
        writer.append(_row("b"))
    first = path.read_bytes()
    with PredictionsWriter(path) as writer:
        writer.append(_row("c"))
    assert path.read_bytes().startswith(first)
    assert [r.id for r in read_predictions(path).rows] == ["a", "b", "c"]


def test_torn_last_line_is_reported_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    with PredictionsWriter(path) as writer:
        writer.append(_row("a"))
        writer.append(_row("b"))
    with open(path, "ab") as fh:
        fh.write(_row("c").model_dump_json().encode()[:40])  # a crash mid-write
    loaded = read_predictions(path)
    assert [r.id for r in loaded.rows] == ["a", "b"]
    assert loaded.torn is not None and loaded.torn.line_number == 3
    assert "predictions.jsonl:3: torn last line" in loaded.warnings()[0]


def test_malformed_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text(_row("a").model_dump_json() + "\n{oops\n" + _row("b").model_dump_json() + "\n")
    with pytest.raises(InputError, match=r"predictions\.jsonl:2: not a JSON line"):
        read_predictions(path)
    # A last line that ends with a newline is complete, so it is malformed, not torn.
    path.write_text(_row("a").model_dump_json() + "\n{oops\n")
    with pytest.raises(InputError, match=r":2: not a JSON line"):
        read_predictions(path)


def test_invalid_row_names_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    bad = json.loads(_row("b").model_dump_json())
    del bad["id"]
    path.write_text(_row("a").model_dump_json() + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r":2: invalid prediction row: field 'id'"):
        read_predictions(path)


def test_set_aside_torn_tail_keeps_rows_and_fragment(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    with PredictionsWriter(path) as writer:
        writer.append(_row("a"))
    complete = path.read_bytes()
    path.write_bytes(complete + b'{"id": "half')
    torn = set_aside_torn_tail(path)
    assert torn is not None and torn.line_number == 2
    assert path.read_bytes() == complete
    assert (tmp_path / "predictions.jsonl.torn").read_bytes() == b'{"id": "half\n'
    assert set_aside_torn_tail(path) is None  # nothing more to do


def test_writer_after_a_crash_starts_a_clean_line(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    with PredictionsWriter(path) as writer:
        writer.append(_row("a"))
    with open(path, "ab") as fh:
        fh.write(b'{"id": "b", "sui')
    with PredictionsWriter(path) as writer:
        assert writer.torn_tail is not None
        writer.append(_row("b"))
    loaded = read_predictions(path)
    assert [r.id for r in loaded.rows] == ["a", "b"] and loaded.torn is None


def test_missing_predictions_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="predictions file not found"):
        read_predictions(tmp_path / "none.jsonl")


def test_stream_reads_one_row_at_a_time_and_can_drop_tool_outputs(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    call = ToolCall(name="markdown", args={"url": "https://x"}, output="page text " * 100)
    ours = _row("a").model_copy(update={"trace": [call, call]})
    upstreams = {
        "id": "u1",
        "task": "q",
        "gold": "g",
        "prediction": "p",
        "timed_out": False,
        "trace": [{"tool": "markdown", "args": {"url": "https://y"}, "output": "page"}],
    }
    with PredictionsWriter(path) as writer:
        writer.append(ours)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(upstreams) + "\n" + '{"id": "torn')
    stream = PredictionsStream(path, suite="gaia", tool_outputs=False)
    reads = list(stream.reads())
    assert [r.row.id for r in reads] == ["a", "u1"]
    calls = [c for r in reads for c in r.row.trace]
    assert len(calls) == 3 and all(c.output is None for c in calls)
    assert reads[0].row.trace[0].args == {"url": "https://x"}
    assert (stream.n_rows, stream.n_imported, stream.torn.line_number) == (2, 1, 3)
    assert stream.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    # Read again by its place in the file: the whole row, outputs included.
    again = PredictionsStream(path).row_at(reads[0].offset, reads[0].line_number, ("a", 1))
    assert again == ours
    # A file rewritten since: the line there is another attempt's, and it is refused.
    with pytest.raises(InputError, match=r":2: changed since it was read \(task 'a' attempt 1"):
        PredictionsStream(path, suite="gaia").row_at(reads[1].offset, 2, ("a", 1))


def test_a_document_that_fails_half_way_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "report.html"

    def pieces():
        yield "<html>"
        raise RuntimeError("the run changed under the report")

    with pytest.raises(RuntimeError):
        write_json_atomic(target, pieces())
    assert list(tmp_path.iterdir()) == []


def test_a_line_with_a_byte_order_mark_is_named(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _row("a").model_dump_json().encode() + b"\n")
    with pytest.raises(InputError, match=r"predictions.jsonl:1: not a JSON line"):
        read_predictions(path)
