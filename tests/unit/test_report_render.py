"""The Markdown and HTML renderers: what they show, and that run text cannot break them."""

from __future__ import annotations

from pathlib import Path

from agent_benchmarks.records import ToolCall
from agent_benchmarks.report.compare import compare_runs
from agent_benchmarks.report.html import render_html
from agent_benchmarks.report.load import LoadedRun, load_runs
from agent_benchmarks.report.markdown import render_markdown
from agent_benchmarks.report.schema import ComparisonReport
from tests.unit.report_builders import Attempt, make_run, uniform

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
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "https://example.com/&quot;&gt;&lt;b&gt;" in page
    # Tool outputs (page text) are not shown at all.
    assert "pwned" not in page


def test_html_is_self_contained_with_its_charts(tmp_path: Path) -> None:
    report, runs = build(tmp_path)
    page = render_html(report, runs)
    for chart in ("scatter", "durations", "heatmap"):
        assert f'data-chart="{chart}"' in page
    assert page.count("<svg") == 2
    # Nothing to fetch: no scripts, external styles, images or fonts.
    for needle in ("<script", '<link rel="stylesheet"', "<img", "@import", "url("):
        assert needle not in page
    assert 'href="http' not in page and 'src="' not in page


def test_html_shows_answers_grades_and_traces_but_not_gold(tmp_path: Path) -> None:
    report, runs = build(tmp_path)
    page = render_html(report, runs)
    assert 'attempt 1: <b class="no">wrong</b>' in page
    assert 'attempt 1: <b class="yes">correct</b>' in page
    assert "<td>404</td>" in page and "<td>12</td>" in page
    # Gold answers never travel with a report (a wrong attempt shows only its own answer).
    assert "gold" not in page.lower()
