"""``agent-benchmarks compare`` as a user runs it: grading on the fly, what it writes (and
never writes), its outputs, and one clear line with exit 2 for every kind of bad input."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_benchmarks.__main__ import main
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.report.compare import compare_runs
from agent_benchmarks.report.html import render_html
from agent_benchmarks.report.load import load_run, load_runs
from agent_benchmarks.report.markdown import BEGIN_MARKER, END_MARKER, render_markdown
from agent_benchmarks.report.schema import ComparisonReport
from tests.support import run_cli
from tests.unit.report_builders import Attempt, make_run, uniform


def snapshot(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


@pytest.fixture
def cli(capsys):
    """``agent-benchmarks`` in this process (the console script itself is run for real by
    the tests that use ``run_cli``): exit status, stdout and stderr."""

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own refusals
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return call


def one_line_error(result, *needles: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_grades_on_the_fly_writing_only_scores_json(tmp_path: Path) -> None:
    run = make_run(tmp_path, "run")
    before = snapshot(run)
    out = tmp_path / "out"
    result = run_cli(
        "agent-benchmarks", "compare", str(run), "--resamples", "200",
        "--json-out", str(out / "c.json"), "--markdown-out", str(out / "c.md"),
        "--html-out", str(out / "c.html"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    after = snapshot(run)
    assert set(after) == set(before) | {"scores.json"}
    assert all(after[name] == digest for name, digest in before.items())
    assert "grading it with the gaia grader" in result.stderr
    report = ComparisonReport.model_validate_json((out / "c.json").read_text())
    assert report.schema_version == 1 and report.resamples == 200 and report.seed == 0
    assert report.groups[0].rows[0].graded_on_the_fly
    assert "| #1 |" in (out / "c.md").read_text()
    assert (out / "c.html").read_text().startswith("<!DOCTYPE html>")
    assert "headline eligible" in result.stdout

    # Graded now: a second compare reads scores.json and writes nothing.
    graded = snapshot(run)
    result = run_cli("agent-benchmarks", "compare", str(run), "--resamples", "50")
    assert result.returncode == 0 and snapshot(run) == graded
    assert "grading" not in result.stderr


def test_stale_scores_are_regraded_in_memory_and_left_alone(tmp_path: Path) -> None:
    run = make_run(tmp_path, "run")
    load_run(run)  # writes scores.json
    scores = (run / "scores.json").read_bytes()
    with open(run / "predictions.jsonl", "a") as fh:  # a resume added a row since
        fh.write((run / "predictions.jsonl").read_text().splitlines()[0].replace(
            '"task-00"', '"task-10"') + "\n")  # fmt: skip
    loaded = load_run(run)
    assert loaded.graded_on_the_fly and any("stale" in w for w in loaded.warnings)
    assert (run / "scores.json").read_bytes() == scores
    assert loaded.scores is not None and loaded.scores.n_rows == 11


def test_webbench_without_scores_names_the_grading_command(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path, "wb", uniform(3, Attempt()), suite="webbench")
    with pytest.raises(InputError, match=f"webbench-grade {run}"):
        load_run(run)
    result = cli("compare", str(run))
    one_line_error(result, "webbench-grade")
    assert not (run / "scores.json").exists()


def test_missing_folder(cli, tmp_path: Path) -> None:
    result = cli("compare", str(tmp_path / "nope"))
    one_line_error(result, str(tmp_path / "nope"), "no such run folder")


def test_folder_without_predictions(cli, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = cli("compare", str(tmp_path / "empty"))
    one_line_error(result, "empty", "no predictions.jsonl")


def test_a_file_instead_of_a_folder(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path, "run")
    result = cli("compare", str(run / "predictions.jsonl"))
    one_line_error(result, "not a folder")


def test_malformed_row_names_file_and_line(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path, "run")
    with open(run / "predictions.jsonl", "a") as fh:
        fh.write('{"id": "x", "suite": "gaia"}\n')
    result = cli("compare", str(run))
    one_line_error(result, "predictions.jsonl:11", "invalid prediction row")
    with open(run / "predictions.jsonl", "a") as fh:
        fh.write("not json\n{}\n")
    result = cli("compare", str(run))
    one_line_error(result, "predictions.jsonl:11")


def test_malformed_scores_and_manifest(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path, "run")
    (run / "scores.json").write_text('{"suite": "gaia"}')
    one_line_error(cli("compare", str(run)), "scores.json", "invalid")
    (run / "scores.json").unlink()
    (run / "manifest.json").write_text("{}")
    one_line_error(cli("compare", str(run)), "manifest.json", "invalid")


@pytest.mark.parametrize("weights", ["speed=1", "success=x", "success=0", "tokens"])
def test_bad_weights(cli, tmp_path: Path, weights: str) -> None:
    run = make_run(tmp_path, "run")
    result = cli("compare", str(run), "--weights", weights)
    one_line_error(result, "--weights")
    assert not (run / "scores.json").exists()  # refused before anything was graded


def test_the_same_run_twice(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path, "run")
    one_line_error(cli("compare", str(run), str(run)), "given twice")


@pytest.mark.parametrize("name", ["predictions.jsonl", "manifest.json", "scores.json"])
def test_reports_never_overwrite_a_runs_files(cli, tmp_path: Path, name: str) -> None:
    run = make_run(tmp_path, "run")
    assert cli("compare", str(run), "--resamples", "20").returncode == 0  # grades: scores.json
    before = snapshot(run)
    result = cli("compare", str(run), "--json-out", str(run / name))
    one_line_error(result, name, "choose another")
    assert snapshot(run) == before


def test_update_doc_replaces_only_the_marked_block(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path, "run")
    doc = tmp_path / "doc.md"
    doc.write_text(f"# Title\n\nintro\n\n{BEGIN_MARKER}\nold tables\n{END_MARKER}\n\nafter\n")
    result = cli("compare", str(run), "--update-doc", str(doc), "--resamples", "50")
    assert result.returncode == 0, result.stderr
    text = doc.read_text()
    assert text.startswith("# Title\n\nintro\n\n" + BEGIN_MARKER)
    assert text.endswith(END_MARKER + "\n\nafter\n")
    assert "old tables" not in text and "### gaia" in text

    unmarked = tmp_path / "plain.md"
    unmarked.write_text("no markers\n")
    result = cli("compare", str(run), "--update-doc", str(unmarked))
    one_line_error(result, "plain.md", "markers")
    assert unmarked.read_text() == "no markers\n"


def test_help_lists_the_commands() -> None:
    result = run_cli("agent-benchmarks", "--help")
    assert result.returncode == 0
    assert "compare RUN_DIR" in result.stdout and "leak-audit RUN_DIR" in result.stdout
    result = run_cli("agent-benchmarks", "compare", "--help")
    assert result.returncode == 0 and "--weights" in result.stdout


def test_json_output_round_trips(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path, "run", uniform(10, Attempt(), Attempt(correct=False)))
    out = tmp_path / "c.json"
    result = cli("compare", str(run), "--json-out", str(out), "--seed", "3", "--resamples", "100")
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["seed"] == 3
    row = data["groups"][0]["rows"][0]
    assert row["pass_at_k"] == {"1": 0.5, "2": 1.0}
    assert ComparisonReport.model_validate(data).groups[0].rows[0].pass_at_k == {1: 0.5, 2: 1.0}


BIG_OUTPUT_MARK = "tool output that no report reads"


def big_trace(task: int, with_outputs: bool) -> list[ToolCall]:
    """200 calls of several tools, some failing, some without a latency, one visiting a
    mirror (a leak hit), each with an 8,000-character output when ``with_outputs``."""
    calls = []
    for i in range(200):
        name = ("goto", "mcp__browser__markdown", "click")[i % 3]
        calls.append(
            ToolCall(
                name=name,
                args={"url": f"https://example.com/{task}/{i}"} if name == "goto" else {"i": i},
                latency_ms=None if i % 7 == 0 else float((i * 37 + task) % 500),
                page_url=f"https://example.com/{task}/{i}",
                http_status=200,
                error="timed out" if i % 11 == 0 else None,
                output=(BIG_OUTPUT_MARK + "x" * 8_000)[:8_000] if with_outputs else None,
            )
        )
    calls[5] = calls[5].model_copy(update={"page_url": "https://huggingface.co/datasets/a/b"})
    return calls


def strings_in(obj: Any, seen: set[int] | None = None) -> list[str]:
    """Every string an object holds, through models, dataclasses and containers."""
    seen = set() if seen is None else seen
    if isinstance(obj, str):
        return [obj]
    if id(obj) in seen or obj is None or isinstance(obj, int | float | Path):
        return []
    seen.add(id(obj))
    if isinstance(obj, BaseModel):
        children = [getattr(obj, name) for name in type(obj).model_fields]
    elif dataclasses.is_dataclass(obj):
        children = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    elif isinstance(obj, dict):
        children = [*obj.keys(), *obj.values()]
    elif isinstance(obj, list | tuple | set):
        children = list(obj)
    else:
        return []
    return [text for child in children for text in strings_in(child, seen)]


def test_compare_of_rows_with_big_traces_keeps_no_tool_output(tmp_path: Path) -> None:
    """A run whose rows carry real-size traces reports exactly as the same run without
    tool outputs (JSON, Markdown, HTML), and the loaded run holds none of them."""

    def outcomes(with_outputs: bool) -> dict[str, list[Attempt]]:
        result = {}
        for task in range(4):
            ok = Attempt(correct=task != 2, trace=big_trace(task, with_outputs))
            # task-01 was retried after a timeout: its first row counts for tokens and calls.
            retried = Attempt(status="timeout", trace=big_trace(10, with_outputs))
            result[f"task-{task:02d}"] = [ok] if task != 1 else [retried]
        return result

    reports = {}
    loaded = {}
    for name, with_outputs in (("with", True), ("without", False)):
        run = make_run(tmp_path / name, "run", outcomes(with_outputs))
        with open(run / "predictions.jsonl", "a") as fh:  # task-01's retry, after its timeout
            row = json.loads((run / "predictions.jsonl").read_text().splitlines()[1])
            row.update(status="ok", prediction="42", duration_s=3.5)
            fh.write(json.dumps(row) + "\n")
        (run_loaded,) = load_runs([run])
        loaded[name] = run_loaded
        report = compare_runs([run_loaded], resamples=100)
        record = json.loads(report.model_dump_json())
        record.pop("generated_at")
        texts = (
            json.dumps(record, indent=1),
            render_markdown(report).replace(report.generated_at, ""),
            render_html(report, [run_loaded]).replace(report.generated_at, ""),
        )
        reports[name] = [text.replace(str(tmp_path / name), "RUNS") for text in texts]

    assert (tmp_path / "with/run/predictions.jsonl").stat().st_size > 5 * 200 * 8_000
    for with_outputs, without in zip(reports["with"], reports["without"], strict=True):
        assert with_outputs == without
    json_record, _, html_text = reports["with"]
    assert '"n_calls": 1000' in json_record  # every row's calls, the retried one's too
    assert "huggingface.co/datasets/a/b" in json_record  # the leak audit saw the calls
    assert html_text.count("timed out") > 4 * 200 // 11  # the traces are shown call by call
    run = loaded["with"]
    assert len(run.rows) == 5 and len(run.final) == 4
    held = strings_in(run)
    assert held and not [text for text in held if BIG_OUTPUT_MARK in text or len(text) > 1_000]


def test_html_traces_refuse_a_predictions_file_rewritten_after_loading(tmp_path: Path) -> None:
    # The HTML traces read each final row again from where it was: a file rewritten in
    # between is refused, never shown as another attempt's trace.
    run = make_run(tmp_path, "run")
    runs = load_runs([run])
    report = compare_runs(runs, resamples=20)
    lines = (run / "predictions.jsonl").read_text().splitlines(keepends=True)
    (run / "predictions.jsonl").write_text("".join(reversed(lines)))
    with pytest.raises(InputError, match=r"predictions\.jsonl:1: changed since it was read"):
        render_html(report, runs)
