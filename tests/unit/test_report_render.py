"""The Markdown and HTML renderers: what they show, and that run text cannot break them."""

from __future__ import annotations

from pathlib import Path

from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.report import fmt
from agent_benchmarks.report.compare import compare_runs
from agent_benchmarks.report.html import render_html
from agent_benchmarks.report.load import LoadedRun, load_runs
from agent_benchmarks.report.markdown import render_markdown
from agent_benchmarks.report.schema import ComparisonReport
from tests.unit.report_builders import Attempt, make_run, task_ids, uniform

HOSTILE = '<script>alert("x")</script> | pipe\nnew line'


def build(tmp_path: Path, **kw) -> tuple[ComparisonReport, list[LoadedRun]]:
    outcomes = uniform(10, Attempt())
    outcomes["task-00"] = [
        Attempt(
            correct=False,
            prediction=HOSTILE,
            trace=[
                ToolCall(
                    name="goto",
                    args={"url": "https://example.com/?q=<img src=x onerror=alert(1)>"},
                    latency_ms=12,
                    page_url='https://example.com/"><b>',
                    http_status=404,
                    error="<i>boom</i>",
                    output="<script>document.title='pwned'</script>",
                )
            ],
        )
    ]
    a = make_run(tmp_path, "a", outcomes, **kw)
    b = make_run(tmp_path, "b", uniform(10, Attempt(correct=False)), model="m|2")
    runs = load_runs([a, b])
    return compare_runs(runs, resamples=100), runs


def test_markdown_tables_survive_pipes_and_newlines(tmp_path: Path) -> None:
    report, _ = build(tmp_path)
    text = render_markdown(report)
    table_lines = [line for line in text.splitlines() if line.startswith("| #")]
    assert table_lines, text
    # Every row of the scoreboard has as many cells as its head.
    head = next(line for line in text.splitlines() if line.startswith("| # | stack"))
    for line in table_lines[:2]:
        assert line.replace("\\|", "").count("|") == head.count("|")
    assert "m\\|2" in text


def test_markdown_flags_non_results(tmp_path: Path) -> None:
    report, _ = build(tmp_path, mode="scaffold")
    text = render_markdown(report)
    # The scaffold run (9 of 10 right) ranks #1; the live one (#2) stays eligible.
    assert "**Not benchmark results.** #1: not headline eligible (modes: scaffold)" in text
    report, _ = build(tmp_path / "live")
    text = render_markdown(report)
    assert "Not benchmark results" not in text
    assert "headline eligible: **yes**" in text


def test_html_escapes_everything_from_runs(tmp_path: Path) -> None:
    report, runs = build(tmp_path)
    page = render_html(report, runs)
    assert "<script" not in page and "<img" not in page and "<i>boom" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "https://example.com/&#34;&gt;&lt;b&gt;" in page
    # Tool outputs (page text) are not shown at all.
    assert "pwned" not in page


def test_html_is_self_contained_with_its_charts(tmp_path: Path) -> None:
    report, runs = build(tmp_path)
    page = render_html(report, runs)
    for chart in ("scatter", "cost-per-success", "durations", "heatmap"):
        assert f'data-chart="{chart}"' in page
    assert page.count("<svg") == 3
    # Nothing to fetch: no scripts, external styles, images or fonts; the charts' url()s
    # are their own clip paths, in the page.
    for needle in ("<script", '<link rel="stylesheet"', "<img", "@import"):
        assert needle not in page
    assert page.count("url(") == page.count("url(#")
    assert 'href="http' not in page and 'src="' not in page


def test_html_shows_answers_grades_and_traces_but_not_gold(tmp_path: Path) -> None:
    report, runs = build(tmp_path)
    page = render_html(report, runs)
    assert 'attempt 1: <b class="no">wrong</b>' in page
    assert 'attempt 1: <b class="yes">correct</b>' in page
    assert "<td>404</td>" in page and "<td>12</td>" in page
    # Gold answers never travel with a report (a wrong attempt shows only its own answer).
    assert "gold" not in page.lower()


def test_the_agent_stack_matrix_puts_tokens_per_success_first_and_never_pools(
    tmp_path: Path,
) -> None:
    """benchcmp's grid: a browser stack per line, an agent per column; each cell is one
    run's tokens per success, then its successes / attempts."""
    half = {t: [Attempt(correct=i % 2 == 0)] for i, t in enumerate(task_ids(4))}
    runs = load_runs(
        [
            make_run(tmp_path, "c-pw", uniform(4, Attempt()), backend="claude-mcp/playwright"),
            make_run(tmp_path, "x-pw", half, backend="codex-mcp/playwright"),
            make_run(
                tmp_path, "c-lp", uniform(4, Attempt(tokens=500)), backend="claude-mcp/lightpanda"
            ),
        ]
    )
    report = compare_runs(runs, resamples=50)
    head, lines = fmt.agent_stack_matrix(report.groups[0])
    assert head == ["stack × agent", "claude-mcp", "codex-mcp"]
    cells = {line[0].split(" · ")[0]: line[1:] for line in lines}
    # claude: 4 successes of 1,000 tokens each; codex: 2 successes for 4,000 tokens
    assert cells["playwright"] == ["1,000 (4/4)", "2,000 (2/4)"]
    assert cells["lightpanda"] == ["500 (4/4)", "–"]
    markdown = render_markdown(report)
    assert "Agent × stack: tokens per success" in markdown
    assert "| playwright · strict surface · chromium | 1,000 (4/4) | 2,000 (2/4) |" in markdown
    assert "2,000 (2/4)" in render_html(report, runs)
