"""The HTML report opened in real headless Chromium: it renders, its charts are drawn, it
asks the network for nothing, logs no error, and run text shows as text, never as markup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.records.schema import ResourceUse, ToolCall
from tests.support import PAGE_WIDTH, assert_fits, run_cli
from tests.unit.report_builders import Attempt, make_run, task_ids

pytestmark = pytest.mark.e2e

HOSTILE_ANSWER = "<script>alert('answer')</script>"


def _runs(root: Path) -> list[Path]:
    """Two stacks over 10 tasks, 3 attempts each, with everything a report has to show:
    a leak, a contaminated row, a timeout, estimated tokens and hostile page text."""
    hostile = ToolCall(
        name="mcp__browser__goto",
        args={"url": "https://example.com/<img src=x onerror=alert(1)>"},
        latency_ms=80,
        page_url="https://example.com/</td><script>alert(2)</script>",
        http_status=200,
        output="<script>alert(3)</script>",
    )
    leak = ToolCall(name="goto", args={"url": "https://huggingface.co/datasets/gaia/x"})
    first = {
        t: [Attempt(duration=5 + i), Attempt(correct=i % 2 == 0), Attempt(correct=i % 3 == 0)]
        for i, t in enumerate(task_ids(10))
    }
    first["task-01"][0] = Attempt(prediction=HOSTILE_ANSWER, correct=False, trace=[hostile])
    first["task-02"][1] = Attempt(status="timeout", error_class="timeout", duration=1800)
    first["task-03"][2] = Attempt(details={"contaminated": True, "foreign_calls": ["Bash"]})
    # The second stack's attempts measured what they cost the machine; the first's did not.
    cost = ResourceUse(peak_bytes=300 << 20, cpu_user_s=2.0, cpu_system_s=0.5)
    second = {
        t: [Attempt(correct=i < 7, estimated=True, cost=None, duration=20 + i, resources=cost)] * 3
        for i, t in enumerate(task_ids(10))
    }
    second["task-04"][0] = Attempt(trace=[leak], estimated=True, cost=None, resources=cost)
    return [
        make_run(root, "mcp", first, backend="claude-mcp/lightpanda"),
        make_run(root, "native", second, backend="lightpanda-native", model="gemini-2.5-flash"),
    ]


def test_report_renders_in_chromium(tmp_path: Path, browser: Any) -> None:
    out = tmp_path / "report.html"
    result = run_cli(
        "agent-benchmarks", "compare", *map(str, _runs(tmp_path)), "--html-out", str(out)
    )
    assert result.returncode == 0, result.stderr

    page = browser.new_page(viewport={"width": PAGE_WIDTH, "height": 900})
    problems: list[str] = []
    requests: list[str] = []

    def on_console(message: Any) -> None:
        if message.type in ("error", "warning"):
            problems.append(f"console {message.type}: {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    page.wait_for_load_state("load")

    assert page.title() == "agent-benchmarks comparison"
    assert_fits(page)
    # The scoreboard shows every column, the composite and the verdict at its end included,
    # within the window or by scrolling inside its own box.
    board = page.locator("table.scoreboard")
    heads = board.locator("thead th").all_inner_texts()
    assert "composite" in heads and heads[-1] == "headline eligible", heads
    last = board.locator("thead th").last
    last.scroll_into_view_if_needed()
    box = last.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PAGE_WIDTH, box
    # Three SVG charts and the heat map, each drawn with a real size.
    charts = page.locator("figure.chart")
    assert charts.count() == 4
    for name in ("scatter", "durations", "cost-per-success"):
        box = page.locator(f'figure[data-chart="{name}"] svg').bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 100, name
    assert page.locator('figure[data-chart="scatter"] [id^="scatter-point-"]').count() == 2
    assert page.locator('figure[data-chart="scatter"] [id^="scatter-ci-"]').count() == 2
    assert page.locator('figure[data-chart="durations"] [id^="durations-box-"]').count() == 2
    assert page.locator('figure[data-chart="heatmap"] tbody tr').count() == 10
    assert page.locator('figure[data-chart="heatmap"] div.cell').count() == 20
    # Memory and CPU per success for the stack that measured them, tokens for both.
    cost_chart = page.locator('figure[data-chart="cost-per-success"]')
    assert cost_chart.locator('[id^="cost-bar-"]').count() == 4
    assert cost_chart.inner_text().count("not measured") == 2

    # The evidence the reader needs is on the page.
    body = page.inner_text("body")
    for text in ("headline eligible", "pass@k", "Paired differences", "Leak audit", "contaminated"):
        assert text in body, text
    assert "estimated" in body  # the second stack's tokens are char/4 estimates

    # A task's readable trace: open it, and hostile run text is shown, not executed.
    task = page.locator("details.task", has_text="task-01")
    task.locator("summary").click()
    trace = task.locator("table.trace", has_text="mcp__browser__goto")
    assert trace.is_visible()
    assert HOSTILE_ANSWER in task.inner_text()
    assert "</td><script>alert(2)</script>" in trace.inner_text()
    assert page.locator("script").count() == 0 and page.locator("img").count() == 0
    assert_fits(page)  # an open trace, its long URLs and replies included, fits too

    assert problems == []
    assert requests == [out.as_uri()]  # nothing fetched: no CDN, no font, no favicon
    page.close()
