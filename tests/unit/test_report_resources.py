"""``compare``'s resource figures per stack: peak memory (median, p90), CPU and memory per
success, each role's share, page weight, reply tokens per call by tool, attempts that fit
in the machine at once; and the Markdown, HTML and terminal output that show them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from agent_benchmarks.records.schema import Fetched, Machine, ResourceUse, RoleUse, ToolCall
from agent_benchmarks.report.compare import compare_runs
from agent_benchmarks.report.html import render_html
from agent_benchmarks.report.load import load_runs
from agent_benchmarks.report.markdown import render_markdown
from agent_benchmarks.report.resources import PEAKS_DIFFER
from agent_benchmarks.report.schema import StackRow
from tests.unit.report_builders import Attempt, make_run, task_ids

MB = 1 << 20
MACHINE = Machine(cpu_model="Xeon", cores=2, memory_bytes=24 << 30, kernel="6.18")
CGROUP = "cgroup-v1 memory.max_usage_in_bytes"


def use(peak_mb: int, cpu: float, source: str = CGROUP, pss_mb: int | None = None) -> ResourceUse:
    return ResourceUse(
        peak_bytes=peak_mb * MB,
        peak_source=source,
        pss_peak_bytes=(pss_mb if pss_mb is not None else peak_mb) * MB,
        cpu_user_s=cpu * 0.75,
        cpu_system_s=cpu * 0.25,
        roles={
            "engine": RoleUse(peak_pss_bytes=peak_mb * MB * 3 // 4, cpu_user_s=cpu / 2),
            "agent": RoleUse(peak_pss_bytes=peak_mb * MB // 4, cpu_user_s=cpu / 2),
        },
        sampler_cpu_s=cpu / 100,
        machine=MACHINE.kind_id,
        fetched=Fetched(source="the localweb site's request log", requests=4, bytes=8192, pages=2),
    )


def stack_rows(*runs: Path) -> dict[str, StackRow]:
    report = compare_runs(load_runs(list(runs)), resamples=100)
    return {Path(r.run_dir).name: r for r in report.groups[0].rows}


def measured_run(tmp_path: Path, name: str, peaks: list[int], **kw) -> Path:
    """Ten tasks, the first eight solved; attempt i peaks at peaks[i] MB and uses 2 s of CPU."""
    outcomes = {
        task: [Attempt(correct=i < 8, resources=use(peaks[i], 2.0, **kw))]
        for i, task in enumerate(task_ids(10))
    }
    return make_run(tmp_path, name, outcomes, machine=MACHINE)


def test_a_stacks_figures_over_its_attempts(tmp_path: Path) -> None:
    peaks = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    row = stack_rows(measured_run(tmp_path, "run", peaks))["run"]
    r = row.resources
    assert r is not None and r.n_measured == r.n_rows == 10
    assert r.peak_source == CGROUP and r.peak_note is None
    assert r.peak_median_bytes == 550 * MB
    assert r.peak_p90_bytes == pytest.approx(910 * MB)  # numpy's linear quantile
    assert r.memory_per_success_bytes == pytest.approx(sum(peaks) * MB / 8)
    assert r.cpu_s_total == pytest.approx(20.0) and r.cpu_s_per_success == pytest.approx(2.5)
    assert r.cpu_s_median == pytest.approx(2.0)
    assert r.sampler_cpu_share == pytest.approx(0.01)
    assert r.machine == MACHINE.kind and r.machine_memory_bytes == 24 << 30
    assert r.fit_at_once == math.floor((24 << 30) / (910 * MB))
    assert [role.role for role in r.roles] == ["agent", "engine"]
    engine = r.roles[1]
    assert engine.n_attempts == 10 and engine.peak_median_bytes == pytest.approx(550 * MB * 3 / 4)
    assert engine.cpu_s_median == pytest.approx(1.0)
    assert r.fetched is not None and r.fetched.requests_median == 4 and r.fetched.pages_median == 2
    assert r.fetched.bytes_per_success == pytest.approx(10 * 8192 / 8)


def test_peaks_counted_two_ways_are_all_shown_as_sampled_pss(tmp_path: Path) -> None:
    capped = measured_run(tmp_path, "capped", [100] * 10, pss_mb=150)
    sampled = measured_run(tmp_path, "sampled", [400] * 10, source="pss-sampled")
    result = stack_rows(capped, sampled)
    for name, pss in (("capped", 150), ("sampled", 400)):
        r = result[name].resources
        assert r is not None and r.peak_source == "pss-sampled" and r.peak_note == PEAKS_DIFFER
        assert r.peak_median_bytes == pss * MB
    alone = stack_rows(capped)["capped"].resources
    assert alone is not None and alone.peak_median_bytes == 100 * MB


def test_runs_from_before_are_not_measured_never_zero(tmp_path: Path) -> None:
    old = make_run(tmp_path, "old")
    new = measured_run(tmp_path, "new", [300] * 10)
    result = stack_rows(old, new)
    assert result["old"].resources is None
    report = compare_runs(load_runs([old, new]), resamples=100)
    markdown = render_markdown(report)
    section = markdown[markdown.index("Resources: memory, CPU and page weight") :]
    line = next(x for x in section.splitlines() if "lightpanda-native" in x and "[old]" in x)
    assert "not measured" in line and " 0 MB" not in line


def test_reply_tokens_per_call_by_tool(tmp_path: Path) -> None:
    """The snapshot weight: each tool's reply tokens per call, median and p90, marked as
    estimates where they are."""

    def call(name: str, tokens: int, estimated: bool) -> ToolCall:
        return ToolCall(
            name=f"mcp__browser__{name}",
            output_chars=tokens * 4,
            output_tokens=tokens,
            output_tokens_estimated=estimated,
        )

    trace = [call("snapshot", n, True) for n in (100, 200, 300, 400, 20_000)]
    trace += [call("click", 10, False), call("click", 30, False)]
    run = make_run(tmp_path, "run", {"task-00": [Attempt(trace=trace)]})
    report = compare_runs(load_runs([run]), resamples=100)
    tools = {t.tool: t for t in report.groups[0].diagnostics[0].tools}
    snapshot, click = tools["snapshot"], tools["click"]
    assert snapshot.reply_tokens_median == 300 and snapshot.n_replies_estimated == 5
    assert snapshot.reply_tokens_p90 == pytest.approx(12_160)
    assert click.reply_tokens_median == 20 and click.n_replies_estimated == 0
    markdown = render_markdown(report)
    assert "| snapshot | 5 | 0 |" in markdown and "300 / 12.2k (est.) |" in markdown
    assert "| click | 2 | 0 |" in markdown and "| 20 / 28 |" in markdown


def test_html_charts_memory_and_cpu_per_success_beside_tokens(tmp_path: Path) -> None:
    measured = measured_run(tmp_path, "measured", [300] * 10)
    old = make_run(tmp_path, "old", backend="claude-mcp/agent-browser")
    runs = load_runs([measured, old])
    page = render_html(compare_runs(runs, resamples=100), runs)
    chart = page[page.index('data-chart="cost-per-success"') :]
    chart = chart[: chart.index("</figure>")]
    for label in ("memory per success (MB)", "CPU seconds per success", "tokens per success"):
        assert label in chart
    # memory and CPU for one stack, tokens for both
    assert chart.count('id="cost-bar-') == 4
    assert chart.count("not measured") == 2  # the old run: no memory, no CPU
    assert "Resources: memory, CPU and page weight" in page
    assert "attempts that fit at once" in page
