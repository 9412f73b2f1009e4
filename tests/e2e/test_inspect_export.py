"""``agent-benchmarks export --inspect`` as a user meets it: the log is read back by
inspect-ai, and Inspect's own viewer (``inspect view``, started on 127.0.0.1) opens it in
real headless Chromium, where the sample's answer and score are on the page."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.report.load import load_runs
from tests.support import PAGE_WIDTH, run_cli
from tests.unit.report_builders import Attempt, make_run

pytestmark = pytest.mark.e2e

ANSWER = "Xenon Turntable costs $249.00"
VIEWER_START_S = 90


def _run(root: Path) -> Path:
    trace = [
        ToolCall(name="mcp__browser__goto", args={"url": "https://example.com/shop"}, output="ok"),
        ToolCall(
            name="mcp__browser__markdown",
            args={"selector": "table"},
            output="| SKU | Price |",
            error=None,
        ),
    ]
    outcomes = {
        "task-00": [Attempt(prediction=ANSWER, correct=False, trace=trace)],
        "task-01": [Attempt()],
        "task-02": [Attempt(status="timeout", error_class="timeout", duration=1800)],
    }
    run = make_run(root, "run", outcomes)
    load_runs([run])  # graded: scores.json written
    return run


def test_export_writes_a_log_inspect_reads_back(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    run = _run(tmp_path)
    out = tmp_path / "logs"
    result = run_cli("agent-benchmarks", "export", "--inspect", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    (path,) = out.glob("*.eval")
    assert f"{run}: 3 sample(s) → {path}" in result.stdout
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.task == "gaia"
    assert log.eval.model == "anthropic/claude-sonnet-4-6"
    assert log.eval.solver == "lightpanda-native"
    assert log.eval.packages["lightpanda"] == "1.0.2"
    assert log.results is not None and log.results.scores[0].metrics["accuracy"].value == 1 / 3
    samples = {(s.id, s.epoch): s for s in log.samples or []}
    first = samples[("task-00", 1)]
    assert first.input == "question task-00" and first.target == ""  # no gold in a log
    assert first.output.completion == ANSWER
    # The official scorer's grade, and upstream's matching beside it (scores.json has both).
    official, upstream = first.scores.values()
    assert official.value == 0 and official.metadata == {"correct": False}
    assert list(first.scores)[1] == "upstream_match" and upstream.value == 0
    calls = [m.tool_calls[0].function for m in first.messages if getattr(m, "tool_calls", None)]
    assert calls == ["mcp__browser__goto", "mcp__browser__markdown"]
    replies = [m.content for m in first.messages if m.role == "tool"]
    assert replies == ["ok", "| SKU | Price |"]
    usage = first.model_usage["anthropic/claude-sonnet-4-6"]
    assert (usage.input_tokens, usage.output_tokens, usage.total_cost) == (700, 300, 0.01)
    timed_out = samples[("task-02", 1)]
    assert timed_out.limit is not None and timed_out.limit.type == "time"
    assert timed_out.metadata["status"] == "timeout"


def test_a_folder_that_is_not_a_run_is_one_clear_error(tmp_path: Path) -> None:
    result = run_cli("agent-benchmarks", "export", "--inspect", str(tmp_path))
    assert result.returncode == 2
    assert f"{tmp_path}: no predictions.jsonl in it: not a run folder" in result.stderr


def _free_port() -> int:
    """A port the system picks. `inspect view` refuses port 0, so the port is picked here
    and handed to it; another program could take it in between, so the viewer is started
    again on another port when it cannot listen."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_viewer(log_dir: Path) -> tuple[subprocess.Popen[str], str]:
    inspect = str(Path(sys.executable).parent / "inspect")
    for _ in range(3):
        port = _free_port()
        viewer = subprocess.Popen(
            [
                inspect,
                "view",
                "--log-dir",
                str(log_dir),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            start_new_session=True,
        )
        deadline = time.monotonic() + VIEWER_START_S
        assert viewer.stdout is not None
        for line in viewer.stdout:
            if f"http://127.0.0.1:{port}" in line:
                return viewer, f"http://127.0.0.1:{port}/"
            if time.monotonic() > deadline:
                break
        viewer.kill()
        viewer.wait()
    pytest.fail("inspect view did not start on 127.0.0.1")


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[str]:
    run = _run(tmp_path)
    out = tmp_path / "logs"
    result = run_cli("agent-benchmarks", "export", "--inspect", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    process, url = _start_viewer(out)
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.timeout(300)
def test_inspect_view_opens_the_exported_run(viewer: str, browser: Any) -> None:
    page = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    outside: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(viewer) else outside.append(r.url))
    page.goto(viewer)
    # The log list, then the log, then the sample.
    page.get_by_text("claude-sonnet-4-6").first.click(timeout=60_000)
    page.get_by_text("task-00", exact=True).first.click(timeout=60_000)
    page.wait_for_url("**/samples/sample/task-00/1/**", timeout=60_000)
    page.wait_for_function(
        "text => document.body.innerText.includes(text)", arg="Sample task-00", timeout=60_000
    )
    body: Any = page.inner_text("body")
    # The sample's header: its input, the answer and the official scorer's score (0: a
    # wrong answer), headed by the scorer's name.
    assert re.search(r"INPUT\s+question task-00", body), body[:2000]
    assert re.search(r"ANSWER\s+" + re.escape(ANSWER), body), body[:2000]
    assert re.search(r"GAIA-GRADE\s+0\b", body, re.IGNORECASE), body[:2000]
    # The tool calls are in the sample's messages (the tab renders them when it opens).
    page.get_by_role("tab", name=re.compile("messages", re.IGNORECASE)).first.click()
    page.wait_for_function(
        "names => names.every(name => document.body.innerText.includes(name))",
        arg=["mcp__browser__goto", "mcp__browser__markdown"],
        timeout=60_000,
    )
    assert outside == []  # the viewer is served whole from 127.0.0.1
    page.close()
