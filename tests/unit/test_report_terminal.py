"""Tables on a terminal: ``agent-benchmarks compare`` at 80 and 120 columns never wraps a
number (a narrow terminal abbreviates or drops whole columns, and says which), and every
figure it shows reads as the column model says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.report import tables
from agent_benchmarks.report.schema import ComparisonReport
from agent_benchmarks.report.terminal import fit, render
from tests.support import run_cli
from tests.unit.report_builders import Attempt, make_run, task_ids


def _runs(root: Path) -> list[Path]:
    """Three stacks whose figures are long: mixed exact and estimated tokens, unpriced
    rows, errors of two classes, a timeout, refused calls."""
    mixed = {
        t: [Attempt(estimated=i % 2 == 0, cost=None if i == 3 else 0.0123, tokens=123_456)]
        for i, t in enumerate(task_ids(12))
    }
    mixed["task-05"] = [Attempt(status="error", error_class="model_api")]
    mixed["task-06"] = [Attempt(status="error", error_class="agent_error")]
    mixed["task-07"] = [Attempt(status="timeout", error_class="timeout", duration=1800)]
    refused = {"n_refused_calls": 2, "refused_calls": [{"tool": "WebSearch"}]}
    plain = {t: [Attempt(details=refused, duration=12.5)] for t in task_ids(12)}
    cheap = {t: [Attempt(correct=i % 3 != 0, tokens=900)] for i, t in enumerate(task_ids(12))}
    return [
        make_run(root, "mixed", mixed, backend="claude-mcp/agent-browser"),
        make_run(root, "plain", plain, backend="claude-mcp/lightpanda"),
        make_run(root, "cheap", cheap, backend="lightpanda-native", model="gemini-2.5-flash"),
    ]


def _table_rows(lines: list[str], figures: list[bool]) -> list[list[str]]:
    """The body rows of the box table in ``lines`` (top border to bottom border), each
    row's cells with its continuation lines joined to them. A line with a figure starts a
    row: figures never wrap, so a continuation line holds only folded text."""
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("├")) + 1 : -1]
    rows: list[list[list[str]]] = []
    for line in body:
        cells = [c.strip() for c in line.strip("│").split("│")]
        assert len(cells) == len(figures), line
        if any(c for c, figure in zip(cells, figures, strict=True) if figure) or not rows:
            rows.append([[c] if c else [] for c in cells])
        else:
            for parts, more in zip(rows[-1], cells, strict=True):
                parts += [more] if more else []
    return [[" ".join(parts) for parts in row] for row in rows]


@pytest.mark.parametrize("width", [80, 120])
def test_compare_never_wraps_a_number(tmp_path: Path, width: int) -> None:
    record = tmp_path / "report.json"
    result = run_cli(
        "agent-benchmarks", "compare", *map(str, _runs(tmp_path)), "--json-out", str(record),
        "--resamples", "200", env={"COLUMNS": str(width)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = ComparisonReport.model_validate(json.loads(record.read_text()))
    (group,) = report.groups
    lines = result.stdout.splitlines()
    tops = [i for i, line in enumerate(lines) if line.startswith("┌")]
    assert len(tops) == 2  # the scoreboard and the agent × stack grid (no resources measured)
    for spec, top in zip([tables.scoreboard(group), tables.matrix(group)], tops, strict=True):
        bottom = next(i for i in range(top, len(lines)) if lines[i].startswith("└"))
        table_lines = lines[top : bottom + 1]
        assert all(len(line) <= width for line in table_lines), table_lines
        shown, _ = fit(spec, width)
        rows = _table_rows(table_lines, [s.column.figure for s in shown])
        assert len(rows) == len(spec.items), table_lines
        for item, cells in zip(spec.items, rows, strict=True):
            # Every cell is its column's value whole, in the form fit() chose: no figure
            # was cut, wrapped onto a second line or run into another.
            assert cells == [s.cell(item) for s in shown], table_lines
    # The scoreboard's least-kept columns gave way, and the line under it says where they are.
    dropped = [line for line in lines if line.startswith(f"not shown at {width} columns:")]
    assert dropped and "every column: --markdown-out, --html-out" in dropped[0]


def test_fit_abbreviates_before_it_drops_and_keeps_the_most_kept(tmp_path: Path) -> None:
    from agent_benchmarks.report.compare import compare_runs
    from agent_benchmarks.report.load import load_runs

    report = compare_runs(load_runs(_runs(tmp_path)), resamples=100)
    spec = tables.scoreboard(report.groups[0])
    wide, dropped_wide = fit(spec, 400)
    assert not dropped_wide and not any(s.short for s in wide)
    narrow, dropped = fit(spec, 80)
    kept = [s.column.head for s in narrow]
    assert kept[0] == "#" and "headline eligible" in kept
    assert all((c.keep or 0) <= min(s.column.keep or 0 for s in narrow) for c in dropped)
    table, _ = render(spec, 80)
    assert len(table.columns) == len(narrow)
