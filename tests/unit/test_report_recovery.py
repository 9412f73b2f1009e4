"""The recovery view of ``compare`` (report/recovery.py): each run that injected a fault
beside the same stack's clean run on the same tasks and budget, its pass rate over the
attempts in which the fault fired, what recovering cost, and the evidence policy's labels
(N >= 10 fired attempts for a claim, >= 20 per task for a per-task chart, live or recorded
runs, a clean pair), else diagnostic. And the scoreboard's no-progress and budget counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.records.schema import ToolCall
from agent_benchmarks.report.compare import compare_runs
from agent_benchmarks.report.html import render_html
from agent_benchmarks.report.load import load_runs
from agent_benchmarks.report.markdown import render_markdown
from agent_benchmarks.report.recovery import MIN_FIRED, MIN_FIRED_PER_TASK
from agent_benchmarks.report.schema import SuiteComparison
from tests.support import run_cli
from tests.unit.report_builders import Attempt, make_run, task_ids

SESSION = {"system_prompt_sha256": "p" * 64, "answer_format": "envelope"}


def fault_settings(kind: str | None) -> dict[str, Any]:
    session = dict(SESSION)
    if kind is not None:
        session["fault"] = {"kind": kind, "at": None if kind == "none" else "call:2"}
    return {"session": session}


def fired(correct: bool, duration: float = 15.0, tokens: int = 1500, *, fire: bool = True):
    return Attempt(
        correct=correct,
        duration=duration,
        tokens=tokens,
        details={"fault": {"kind": "engine-crash", "fired": fire, "fired_at_call": 2}},
    )


def runs(
    tmp_path: Path,
    faulted: dict[str, list[Attempt]],
    clean: dict[str, list[Attempt]] | None,
    *,
    mode: str = "live",
    clean_kind: str | None = "none",
    **clean_kw: Any,
) -> SuiteComparison:
    dirs = [
        make_run(
            tmp_path, "faulted", faulted, mode=mode, extra_settings=fault_settings("engine-crash")
        )
    ]
    if clean is not None:
        settings = fault_settings(clean_kind)
        dirs.append(
            make_run(tmp_path, "clean", clean, mode=mode, extra_settings=settings, **clean_kw)
        )
    (group,) = compare_runs(load_runs(dirs), resamples=200).groups
    return group


def test_a_faulted_run_sits_beside_its_clean_pair_with_what_recovery_cost(
    tmp_path: Path,
) -> None:
    # 10 tasks x 2 attempts: under the fault 7 tasks recover (14 of 20), each attempt 5 s
    # and 500 tokens dearer; the clean run passes everything
    faulted = {t: [fired(i < 7), fired(i < 7)] for i, t in enumerate(task_ids(10))}
    clean = {t: [Attempt(), Attempt()] for t in task_ids(10)}
    group = runs(tmp_path, faulted, clean)
    [cell] = group.recovery
    keys = {row.run_dir.rsplit("/", 1)[-1]: row.key for row in group.rows}
    assert (cell.key, cell.clean_key) == (keys["faulted"], keys["clean"])
    assert (cell.fault, cell.at) == ("engine-crash", "call:2")
    assert (cell.n_fired, cell.n_attempts, cell.n_tasks) == (20, 20, 10)
    assert cell.pass_rate == pytest.approx(0.7) and cell.n_successes == 14
    assert cell.clean_rate == 1.0 and cell.clean_attempts == 20
    assert cell.extra_duration_s == pytest.approx(5.0) and cell.extra_tokens == pytest.approx(500)
    # live, paired, 20 >= 10 fired: a claim; 2 per task is no per-task chart
    assert cell.label == "recovery claim" and cell.reasons == []
    assert cell.per_task_chart is False and "fewer than 20" in cell.per_task_reasons[0]
    # the two runs answer different questions: neither is a headline against the other
    for row in group.rows:
        assert "contracts" in {r.code for r in row.eligibility.reasons}
    assert {row.fault for row in group.rows} == {"engine-crash", "none"}
    text = render_markdown(compare_runs(load_runs([tmp_path / "faulted", tmp_path / "clean"])))
    assert "Recovery under injected faults" in text and "70.0% (14/20)" in text
    # and in the terminal, at 80 columns: the table, and each cell's label on its own line
    shown = run_cli(
        "agent-benchmarks", "compare", str(tmp_path / "faulted"), str(tmp_path / "clean"),
        env={"COLUMNS": "80"},
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert "Recovery under injected faults" in shown.stdout and "(14/20)" in shown.stdout
    number = [row.key for row in group.rows].index(cell.key) + 1
    assert f"#{number} recovery: recovery claim\n" in shown.stdout


def test_the_sample_count_labels_follow_the_policy(tmp_path: Path) -> None:
    few = {t: [fired(True)] for t in task_ids(MIN_FIRED - 1)}
    clean = {t: [Attempt(), Attempt()] for t in task_ids(MIN_FIRED - 1)}
    [cell] = runs(tmp_path / "few", few, clean).recovery
    assert cell.label == "diagnostic"
    assert cell.reasons == [f"the fault fired in {MIN_FIRED - 1} attempt(s); a claim needs 10"]
    # the clean rate is an aggregate too: 10 fired attempts against 5 clean ones
    twice = {t: [fired(True)] * 2 for t in task_ids(5)}
    [cell] = runs(tmp_path / "thin-clean", twice, {t: [Attempt()] for t in task_ids(5)}).recovery
    assert cell.label == "diagnostic" and cell.n_fired == MIN_FIRED
    assert cell.reasons == ["the clean run has 5 attempt(s) on these tasks; a claim needs 10"]
    # scripted runs are never a claim, however many
    many = {t: [fired(True)] * 2 for t in task_ids(10)}
    [cell] = runs(tmp_path / "scaffold", many, {t: [Attempt()] for t in task_ids(10)},
                  mode="scaffold").recovery  # fmt: skip
    assert cell.label == "diagnostic"
    assert any("mode is scaffold" in r for r in cell.reasons)
    # a per-task chart: 20 fired and 20 clean attempts on every task
    chart = {t: [fired(True)] * MIN_FIRED_PER_TASK for t in task_ids(2)}
    clean_chart = {t: [Attempt()] * MIN_FIRED_PER_TASK for t in task_ids(2)}
    [cell] = runs(tmp_path / "chart", chart, clean_chart).recovery
    assert cell.label == "recovery claim" and cell.per_task_chart is True


def test_attempts_in_which_the_fault_did_not_fire_are_not_recovery(tmp_path: Path) -> None:
    faulted = {t: [fired(False), fired(True, fire=False)] for t in task_ids(10)}
    clean = {t: [Attempt(), Attempt()] for t in task_ids(10)}
    [cell] = runs(tmp_path, faulted, clean).recovery
    assert (cell.n_fired, cell.n_attempts, cell.n_successes) == (10, 20, 0)
    assert cell.pass_rate == 0.0


def test_a_clean_pair_needs_the_same_budget_and_prefers_fault_none(tmp_path: Path) -> None:
    faulted = {t: [fired(True)] for t in task_ids(10)}
    clean = {t: [Attempt()] for t in task_ids(10)}
    other_budget = {"max_turns": 5, "max_tokens": 2_000_000, "max_cost_usd": 5.0}
    [cell] = runs(tmp_path / "budget", faulted, clean, budgets=other_budget).recovery
    assert cell.clean_key is None and cell.clean_rate is None
    assert cell.reasons[0] == "no clean run of this stack on the same tasks and budget"
    # a run made without --fault is a clean pair too (runs from before faults existed)
    [cell] = runs(tmp_path / "old", faulted, clean, clean_kind=None).recovery
    assert cell.clean_key is not None and cell.label == "recovery claim"


def test_the_scoreboard_counts_no_progress_and_budget_endings_old_rows_included(
    tmp_path: Path,
) -> None:
    looping = [ToolCall(name="click", args={"selector": "#x"}) for _ in range(9)]
    outcomes = {
        # a row from before the signal existed: read from its trace
        "task-00": [Attempt(trace=looping)],
        "task-01": [Attempt(correct=False, status="budget")],
        **{t: [Attempt()] for t in task_ids(8, prefix="more")},
    }
    (group,) = compare_runs(load_runs([make_run(tmp_path, "r", outcomes)])).groups
    [row] = group.rows
    assert (row.n_no_progress, row.n_budget) == (1, 1)
    assert group.recovery == [] and group.recovery_rule == ""
    assert "1/10; budget 1" in render_markdown(compare_runs(load_runs([tmp_path / "r"])))
    shown = run_cli("agent-benchmarks", "compare", str(tmp_path / "r"))
    assert shown.returncode == 0, shown.stderr
    assert "#1 no progress: 1/10; budget 1" in shown.stdout


def test_the_html_report_shows_the_recovery_table_and_each_attempts_fault(
    tmp_path: Path,
) -> None:
    """The HTML report (templates over the column model) has the same recovery table as
    the Markdown and the terminal, and each attempt of a faulted run says when it fired."""
    faulted = {t: [fired(i < 7)] for i, t in enumerate(task_ids(10))}
    clean = {t: [Attempt()] for t in task_ids(10)}
    runs(tmp_path, faulted, clean)
    loaded = load_runs([tmp_path / "faulted", tmp_path / "clean"])
    page = render_html(compare_runs(loaded, resamples=200), loaded)
    assert "<h3>Recovery under injected faults</h3>" in page
    assert "70.0% (7/10)" in page and "engine-crash (call:2)" in page
    assert page.count("fault engine-crash fired after call 2") == 10  # each faulted attempt
    assert "no progress" in page  # the scoreboard's column
