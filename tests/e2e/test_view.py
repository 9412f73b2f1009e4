"""The run browser as a person meets it: ``agent-benchmarks view`` over a results folder with
a run in every state, its pages opened in real headless Chromium (Debian's, driven by
Playwright), and ``--serve`` live on 127.0.0.1."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.report.load import load_runs
from tests.support import PAGE_WIDTH, assert_fits, run_cli
from tests.unit.report_builders import Attempt, make_run, manifest_for, task_ids

pytestmark = pytest.mark.e2e

HOSTILE_ANSWER = "<script>alert('answer')</script>"
HOSTILE_OUTPUT = "<script>alert('output')</script><img src=x onerror=alert(1)>"
LONG_OUTPUT = "row " * 2_000 + "THE END OF A LONG REPLY"


def _calls(n: int) -> list[ToolCall]:
    """A trace of ``n`` calls, one of them hostile and one with a long reply."""
    calls = [
        ToolCall(
            name=f"mcp__browser__tool{i}",
            args={"url": f"https://example.com/{i}"},
            latency_ms=10.0 * i,
            page_url=f"https://example.com/{i}",
            http_status=200,
            output=f"reply {i}",
            output_chars=len(f"reply {i}"),
        )
        for i in range(n)
    ]
    calls[1] = calls[1].model_copy(update={"output": HOSTILE_OUTPUT, "error": "<b>boom</b>"})
    calls[2] = calls[2].model_copy(update={"output": LONG_OUTPUT})
    return calls


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A results folder with a run in each state: graded, not graded (complete, no
    scores.json), interrupted (4 of 10 tasks never ran), and running (a process holds the
    folder's lock, as a run does, with the runner's own lock code)."""
    root = tmp_path_factory.mktemp("results")
    graded_outcomes = {t: [Attempt(correct=i < 7)] for i, t in enumerate(task_ids(10))}
    graded_outcomes["task-00"] = [
        Attempt(prediction=HOSTILE_ANSWER, correct=False, trace=_calls(12))
    ]
    graded = make_run(root / "gaia", "graded", graded_outcomes)
    load_runs([graded])  # graded as compare grades: scores.json written
    assert (graded / "scores.json").exists()
    not_graded = make_run(root / "gaia", "not-graded", {t: [Attempt()] for t in task_ids(10)})
    half = {t: [Attempt(correct=i % 2 == 0, tokens=2_000)] for i, t in enumerate(task_ids(6))}
    interrupted = make_run(
        root / "gaia", "interrupted", half, manifest=manifest_for(task_ids(10), repeat=1)
    )
    running = make_run(
        root / "localweb-ab" / "chrome",
        "running",
        {"task-00": [Attempt()], "task-01": [Attempt(correct=False)]},
        manifest=manifest_for(
            task_ids(10),
            backend="agent-browser-chat/chrome",
            extra_settings={"backend": {"engine": "chrome"}},
        ),
    )
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from agent_benchmarks.runner.claim import lock_folder; "
            "held = lock_folder(Path(sys.argv[1]), ['gaia-run']); print('locked', flush=True); "
            "time.sleep(600)",
            str(running),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield {
            "root": root,
            "graded": graded,
            "not-graded": not_graded,
            "interrupted": interrupted,
            "running": running,
            "holder": holder.pid,
        }
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture(scope="module")
def site(results: dict[str, Any]) -> Path:
    result = run_cli("agent-benchmarks", "view", str(results["root"]), env={"COLUMNS": "120"})
    assert result.returncode == 0, result.stderr
    out = results["root"] / "view"
    assert f"wrote {len(list(out.rglob('*.html')))} page(s) to {out}" in result.stdout
    return out


def _open(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on(
        "request",
        lambda r: problems.append(f"fetched {r.url}") if not r.url.startswith(url[:7]) else None,
    )
    page.goto(url)
    page.wait_for_load_state("load")
    return page, problems


def _row(page: Any, rel: str) -> dict[str, str]:
    heads = page.locator("table.runs thead th").all_inner_texts()
    row = page.locator("table.runs tbody tr", has=page.locator(f'a:text-is("{rel}")'))
    assert row.count() == 1, rel
    return dict(zip(heads, row.locator("td").all_inner_texts(), strict=True))


def test_the_index_lists_every_run_with_its_state_and_figures(
    site: Path, browser: Any, results: dict[str, Any]
) -> None:
    page, problems = _open(browser, (site / "index.html").as_uri())
    assert page.locator("table.runs tbody tr").count() == 4
    graded = _row(page, "gaia/graded")
    # 6 of 10 right (task-00's hostile answer is wrong); every row 1,000 tokens and $0.01:
    # 10,000 tokens and $0.10 over 6 successes.
    assert graded["state"] == "graded" and graded["attempts"] == "10/10"
    assert graded["success"] == "6/10 = 60.0%"
    assert graded["tokens / success"] == "1,667" and graded["cost / success"] == "$0.0167"
    assert graded["suite"] == "gaia" and graded["mode"] == "live"
    assert graded["stack"] == "lightpanda-native · lightpanda"
    assert graded["model"] == "claude-sonnet-4-6" and graded["agent"] == "lightpanda-native"
    assert graded["date"] == "2026-11-21 00:00 UTC"
    not_graded = _row(page, "gaia/not-graded")
    assert not_graded["state"] == "not graded" and not_graded["success"] == "10/10 = 100.0%"
    interrupted = _row(page, "gaia/interrupted")
    # 6 of 10 planned ran; 3 right; 6 x 2,000 tokens over 3 successes.
    assert interrupted["state"] == "interrupted" and interrupted["attempts"] == "6/10"
    assert interrupted["success"] == "3/6 = 50.0%" and interrupted["tokens / success"] == "4,000"
    running = _row(page, "localweb-ab/chrome/running")
    assert running["state"] == "running" and running["attempts"] == "2/10"
    assert running["success"] == "1/2 = 50.0%"
    assert running["stack"] == "agent-browser-chat/chrome · chromium"
    assert_fits(page)
    # Each run links to its page, which links to its report.
    page.locator('a:text-is("gaia/graded")').click()
    page.wait_for_load_state("load")
    assert "State: graded" in page.inner_text("body")
    assert page.locator("table.attempts tbody tr").count() == 10
    assert_fits(page)
    page.locator('a:text-is("The run\'s report")').click()
    page.wait_for_load_state("load")
    assert page.locator("figure.chart").count() == 4
    assert_fits(page)
    assert problems == []
    page.close()


def test_an_attempt_page_shows_every_tool_call_its_output_and_run_text_as_text(
    site: Path, browser: Any, results: dict[str, Any]
) -> None:
    run_page = site / "runs" / "gaia" / "graded" / "index.html"
    page, problems = _open(browser, run_page.as_uri())
    page.locator('table.attempts a:text-is("task-00")').click()
    page.wait_for_load_state("load")
    calls = page.locator("div.call")
    # Every call of the row, in order, with its name, arguments and output.
    assert calls.count() == 12
    for i in range(12):
        head = calls.nth(i).locator(".head").inner_text()
        assert head == f"#{i + 1} mcp__browser__tool{i}"
        assert f"https://example.com/{i}" in calls.nth(i).inner_text()
    assert "reply 11" in calls.nth(11).inner_text()
    # Run text is shown as text, never run as markup.
    body = page.inner_text("body")
    assert HOSTILE_ANSWER in body and HOSTILE_OUTPUT in body and "<b>boom</b>" in body
    assert page.locator("script").count() == 0 and page.locator("img").count() == 0
    # A long output shows its start; the whole is one click away.
    long_call = calls.nth(2)
    assert "THE END OF A LONG REPLY" not in long_call.inner_text()
    long_call.locator("details.all summary").click()
    assert "THE END OF A LONG REPLY" in long_call.inner_text()
    for text in ("Task", "Answer", "Usage", "Resources", "Provenance", "predictions.jsonl line 1"):
        assert text in body, text
    assert_fits(page)
    assert problems == []
    page.close()


def test_the_report_in_the_view_shows_hostile_text_as_text_and_fits(
    site: Path, browser: Any
) -> None:
    report = site / "runs" / "gaia" / "graded" / "report.html"
    page, problems = _open(browser, report.as_uri())
    task = page.locator("details.task", has_text="task-00")
    task.locator("summary").click()
    assert HOSTILE_ANSWER in task.inner_text()
    assert page.locator("script").count() == 0
    assert_fits(page)
    # The trace links to the attempt's own page.
    task.locator('a:text-is("the attempt\'s page")').click()
    page.wait_for_load_state("load")
    assert page.locator("div.call").count() == 12
    assert problems == []
    page.close()


@pytest.mark.timeout(180)
def test_serve_shows_the_running_run_live(results: dict[str, Any], browser: Any) -> None:
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "agent-benchmarks"),
            "view",
            str(results["root"]),
            "--serve",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    try:
        url = None
        assert server.stdout is not None
        for line in server.stdout:
            found = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
            if found:
                url = found.group(1)
                break
        assert url, "the server never said where it listens"
        page, problems = _open(browser, url)
        assert _row(page, "localweb-ab/chrome/running")["state"] == "running"
        # The live index reloads itself (no script), and so does the running run's page.
        assert page.locator('meta[http-equiv="refresh"]').count() == 1
        page.locator('a:text-is("localweb-ab/chrome/running")').click()
        page.wait_for_load_state("load")
        assert f"held by process {results['holder']}" in page.inner_text("body")
        assert page.locator('meta[http-equiv="refresh"]').count() == 1
        page.goto(url + "runs/../../etc/passwd")
        assert "no such page" in page.inner_text("body")
        assert problems == []
        page.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
