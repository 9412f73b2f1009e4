"""The scoreboard over run folders: composite arithmetic, tokens (exact, estimated, mixed,
missing), failures in the denominator, repeats, paired differences, costs, stacks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import Manifest, Scores, TaskScore, Usage, UsageSummary
from agent_benchmarks.report.compare import (
    CompositeInput,
    compare_runs,
    composite_scores,
    parse_weights,
)
from agent_benchmarks.report.load import load_runs
from agent_benchmarks.report.markdown import render_markdown
from agent_benchmarks.report.schema import SCORE_VIEWS as VIEWS
from agent_benchmarks.report.schema import VIEW_TITLES, ComparisonReport, StackRow
from agent_benchmarks.report.stacks import driven_programs, engine_of, stack_of
from tests.support import run_cli
from tests.unit.report_builders import Attempt, make_run, row_for, task_ids, uniform

DEFAULTS = parse_weights("success=0.5,tokens=0.25,duration=0.15,tool_calls=0.1")


def report(*dirs: Path, **kw) -> ComparisonReport:
    return compare_runs(load_runs(list(dirs)), resamples=kw.pop("resamples", 300), **kw)


def only_row(run: Path) -> StackRow:
    (group,) = report(run).groups
    (row,) = group.rows
    return row


# --- the composite, by hand -------------------------------------------------------------------

# Three stacks; the composite normalises each component across them (best 1, worst 0):
#
#            success  tokens/success  median s  median calls
#   A          0.9        3000           20          10
#   B          0.6        1000           10          20
#   C          0.3        2000           40          15
#
# success (higher is better, 0.3..0.9):  A 1      B 0.3/0.6 = 0.5   C 0
# tokens (lower is better, 1000..3000):  A 0      B 1               C 1000/2000 = 0.5
# duration (lower, 10..40):              A 20/30  B 1               C 0
# tool calls (lower, 10..20):            A 1      B 0               C 5/10 = 0.5
#
# A = 0.5*1   + 0.25*0   + 0.15*(2/3) + 0.10*1   = 0.5 + 0 + 0.1 + 0.1     = 0.700
# B = 0.5*0.5 + 0.25*1   + 0.15*1     + 0.10*0   = 0.25 + 0.25 + 0.15      = 0.650
# C = 0.5*0   + 0.25*0.5 + 0.15*0     + 0.10*0.5 = 0.125 + 0.05            = 0.175
HAND = {"A": 0.700, "B": 0.650, "C": 0.175}


def test_composite_arithmetic_by_hand() -> None:
    inputs = [
        CompositeInput("A", 0.9, 3000, "exact", 20, 10),
        CompositeInput("B", 0.6, 1000, "exact", 10, 20),
        CompositeInput("C", 0.3, 2000, "exact", 40, 15),
    ]
    results, info = composite_scores(inputs, DEFAULTS)
    assert info.left_out == {}
    for key, expected in HAND.items():
        assert results[key][0] == pytest.approx(expected)
    assert results["A"][1] == pytest.approx(
        {"success": 1.0, "tokens": 0.0, "duration": 2 / 3, "tool_calls": 1.0}
    )


def test_composite_from_run_folders_matches_the_hand_computation(tmp_path: Path) -> None:
    # 10 tasks each. Tokens per success = all tokens / successes: A 10*2700/9 = 3000,
    # B 10*600/6 = 1000, C 10*600/3 = 2000.
    def run(name: str, correct: int, tokens: int, duration: float, calls: int) -> Path:
        outcomes = {
            t: [Attempt(correct=i < correct, tokens=tokens, duration=duration, calls=calls)]
            for i, t in enumerate(task_ids(10))
        }
        return make_run(tmp_path, name, outcomes, model=f"model-{name}")

    runs = [run("A", 9, 2700, 20, 10), run("B", 6, 600, 10, 20), run("C", 3, 600, 40, 15)]
    (group,) = report(*runs).groups
    by_name = {Path(r.run_dir).name: r for r in group.rows}
    assert by_name["A"].tokens.per_success == pytest.approx(3000)
    for name, expected in HAND.items():
        assert by_name[name].composite == pytest.approx(expected)
    assert [Path(r.run_dir).name for r in group.rows] == ["A", "B", "C"]  # ranked
    assert group.overall_winner is not None and group.overall_winner.key == by_name["A"].key

    # Success alone: the composite is the normalised success rate.
    (group,) = report(*runs, weights=parse_weights("success=1")).groups
    assert [r.composite for r in group.rows] == pytest.approx([1.0, 0.5, 0.0])


def test_tokens_left_out_when_rows_count_them_differently() -> None:
    inputs = [
        CompositeInput("exact", 0.9, 3000, "exact", 20, 10),
        CompositeInput("est", 0.6, 1000, "estimated", 10, 20),
    ]
    results, info = composite_scores(inputs, DEFAULTS)
    assert "tokens" in info.left_out
    # The other weights are scaled to sum 1: 0.5/0.75, 0.15/0.75, 0.10/0.75.
    assert info.weights == pytest.approx(
        {"success": 2 / 3, "tokens": 0.0, "duration": 0.2, "tool_calls": 0.1 / 0.75}
    )
    # exact: success 1, duration 0, calls 1 -> 2/3 + 0 + 0.1333
    assert results["exact"][0] == pytest.approx(2 / 3 + 0.1 / 0.75)


def test_missing_values_score_zero_and_equal_values_score_one() -> None:
    inputs = [
        CompositeInput("none", 0.0, None, "exact", 5, 3),  # no success: no tokens per success
        CompositeInput("some", 0.5, 800, "exact", 5, 3),
    ]
    results, _ = composite_scores(inputs, DEFAULTS)
    assert results["none"][1] == {"success": 0.0, "tokens": 0.0, "duration": 1.0, "tool_calls": 1.0}
    assert results["some"][0] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text",
    ["success", "speed=1", "success=-1", "success=abc", "success=0", "success=1,success=2", ""],
)
def test_bad_weights(text: str) -> None:
    from agent_benchmarks.common.errors import InputError

    with pytest.raises(InputError, match="--weights"):
        parse_weights(text)


def test_weights_are_scaled_to_sum_one() -> None:
    assert parse_weights("success=50,tokens=50") == {
        "success": 0.5,
        "tokens": 0.5,
        "duration": 0.0,
        "tool_calls": 0.0,
    }


# --- tokens and cost ------------------------------------------------------------------------------


def test_mixed_exact_and_estimated_tokens_are_kept_apart(tmp_path: Path) -> None:
    outcomes = {t: [Attempt(tokens=1000, estimated=i % 2 == 1)] for i, t in enumerate(task_ids(10))}
    row = only_row(make_run(tmp_path, "mixed", outcomes))
    t = row.tokens
    assert (t.basis, t.exact, t.estimated, t.total) == ("mixed", 5000, 5000, 10000)
    assert (t.n_exact_rows, t.n_estimated_rows) == (5, 5)
    assert t.per_success_exact == 500 and t.per_success_estimated == 500
    text = render_markdown(report(tmp_path / "mixed"))
    assert "1,000 mixed: 500 exact + 500 estimated" in text


def test_all_estimated_tokens_are_labelled(tmp_path: Path) -> None:
    row = only_row(make_run(tmp_path, "est", uniform(10, Attempt(estimated=True))))
    assert row.tokens.basis == "estimated"
    assert "1,000 (estimated)" in render_markdown(report(tmp_path / "est"))


def test_rows_without_usage_are_counted_not_guessed(tmp_path: Path) -> None:
    outcomes = uniform(10, Attempt(tokens=1000))
    outcomes["task-00"] = [Attempt(tokens=0, turns=0, cost=None)]
    outcomes["task-01"] = [Attempt(tokens=0, turns=0, cost=None)]
    row = only_row(make_run(tmp_path, "partial", outcomes))
    assert row.tokens.n_usage_missing_rows == 2
    assert row.tokens.basis == "exact" and row.tokens.total == 8000
    assert row.tokens.per_success == 800
    assert "2 row(s) without usage" in render_markdown(report(tmp_path / "partial"))

    none = only_row(make_run(tmp_path, "none", uniform(10, Attempt(tokens=0, turns=0, cost=None))))
    assert none.tokens.basis == "missing" and none.tokens.per_success is None
    assert none.cost.total_usd is None


def test_costs_per_success_and_per_attempt(tmp_path: Path) -> None:
    outcomes = {t: [Attempt(correct=i < 4, cost=0.02)] for i, t in enumerate(task_ids(10))}
    row = only_row(make_run(tmp_path, "cost", outcomes))
    assert row.cost.total_usd == pytest.approx(0.2)
    assert row.cost.per_success_usd == pytest.approx(0.05)  # 0.20 / 4 successes
    assert row.cost.per_attempt_usd == pytest.approx(0.02)  # failures included
    assert row.cost.complete

    outcomes["task-09"] = [Attempt(correct=False, cost=None)]  # tokens spent, no price
    row = only_row(make_run(tmp_path, "partial-cost", outcomes))
    assert not row.cost.complete and row.cost.n_rows_without_cost == 1
    assert "≥ $0.0450 (1 row(s) unpriced)" in render_markdown(report(tmp_path / "partial-cost"))

    row = only_row(make_run(tmp_path, "no-price", uniform(10, Attempt(cost=None))))
    assert row.cost.total_usd is None
    assert "unknown (no price)" in render_markdown(report(tmp_path / "no-price"))


def test_retried_attempts_spend_tokens_but_are_not_attempts(tmp_path: Path) -> None:
    outcomes = uniform(10, Attempt(tokens=1000))
    outcomes["task-00"] = [Attempt(status="error", error_class="model_api", tokens=400)]
    final = row_for(
        "task-00", 1, Attempt(tokens=1000), suite="gaia", backend="lightpanda-native", level=1
    )
    row = only_row(make_run(tmp_path, "retried", outcomes, extra_rows=[final]))
    assert row.n_attempts == 10 and row.n_successes == 10
    assert row.errors_by_class == {}  # the error was retried; the final row succeeded
    assert row.tokens.total == 10_400 and row.tokens.n_rows == 11


# --- failures, repeats, pairs -------------------------------------------------------------------


def test_infra_failures_stay_in_the_denominator(tmp_path: Path) -> None:
    outcomes = uniform(11, Attempt())
    outcomes["task-00"] = [Attempt(status="timeout", error_class="timeout")]
    outcomes["task-01"] = [Attempt(status="timeout", error_class="timeout")]
    outcomes["task-02"] = [Attempt(status="error", error_class="model_api")]
    outcomes["task-03"] = [Attempt(status="error", error_class="crash")]
    run = make_run(tmp_path, "infra", outcomes)
    # The manifest selected 12 tasks; task-99 has no row at all.
    manifest = (run / "manifest.json").read_text().replace('"task-10"', '"task-10", "task-99"')
    (run / "manifest.json").write_text(manifest)
    row = only_row(run)
    assert row.n_attempts == 12 and row.n_successes == 7
    assert row.success_rate == pytest.approx(7 / 12)
    assert row.n_timeouts == 2
    assert row.errors_by_class == {"crash": 1, "missing_row": 1, "model_api": 1}


def test_repeats_give_pass_at_k_and_pass_hat_k(tmp_path: Path) -> None:
    run = make_run(
        tmp_path, "rep", uniform(10, Attempt(), Attempt(correct=False), Attempt(correct=False))
    )
    row = only_row(run)
    assert (row.attempts_per_task_min, row.n_attempts) == (3, 30)
    # Each task: 1 of 3 right. pass@2 = 1 - C(2,2)/C(3,2) = 2/3; pass^2 = C(1,2)/C(3,2) = 0.
    assert row.pass_at_k == pytest.approx({1: 1 / 3, 2: 2 / 3, 3: 1.0})
    assert row.pass_hat_k == pytest.approx({1: 1 / 3, 2: 0.0, 3: 0.0})
    assert row.success.estimate == pytest.approx(1 / 3)
    text = render_markdown(report(run))
    assert "pass@k and pass^k" in text


def test_paired_difference_tells_a_gap_from_noise(tmp_path: Path) -> None:
    good = make_run(tmp_path, "good", uniform(12, Attempt()), model="m1")
    bad = make_run(tmp_path, "bad", uniform(12, Attempt(correct=False)), model="m2")
    half = {t: [Attempt(correct=i % 2 == 0)] for i, t in enumerate(task_ids(12))}
    other_half = {t: [Attempt(correct=i % 2 == 1)] for i, t in enumerate(task_ids(12))}
    h1 = make_run(tmp_path, "h1", half, model="m3")
    h2 = make_run(tmp_path, "h2", other_half, model="m4")
    (group,) = report(good, bad).groups
    (pair,) = group.paired
    assert pair.diff.estimate == pytest.approx(1.0) and pair.distinguishable
    assert pair.verdict.endswith("ahead") and pair.n_common_tasks == 12
    (group,) = report(h1, h2).groups
    (pair,) = group.paired
    # Same success rate, opposite tasks: mean difference 0, an interval straddling it.
    assert pair.diff.estimate == pytest.approx(0.0) and not pair.distinguishable
    assert pair.diff.low is not None and pair.diff.low < 0 < (pair.diff.high or 0)


def test_confidence_interval_is_reproducible_and_seed_is_recorded(tmp_path: Path) -> None:
    outcomes = {t: [Attempt(correct=i % 3 != 0)] for i, t in enumerate(task_ids(12))}
    run = make_run(tmp_path, "ci", outcomes)
    first, again = report(run, seed=5), report(run, seed=5)
    assert first.seed == 5 and first.resamples == 300
    assert first.groups[0].rows[0].success == again.groups[0].rows[0].success


# --- stacks, keys, groups, tables -------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "settings", "engine"),
    [
        ("lightpanda-native", {}, "lightpanda"),
        ("claude-mcp/lightpanda", {}, "lightpanda"),
        ("claude-mcp/agent-browser", {}, "chromium"),
        ("claude-mcp/agent-browser-lightpanda", {}, "lightpanda"),
        ("claude-mcp/browser-use", {}, "chromium"),
        ("agent-browser-chat/lightpanda", {"backend": {"engine": "lightpanda"}}, "lightpanda"),
        ("agent-browser-chat/chrome", {"backend": {"engine": "chrome"}}, "chromium"),
        ("claude-mcp/playwright", {}, "chromium"),
        ("claude-mcp/chrome-devtools", {}, "chromium"),
        ("claude-mcp/cli-agent-browser", {}, "chromium"),
        ("codex-mcp/lightpanda", {}, "lightpanda"),
        ("codex-mcp/playwright", {}, "chromium"),
        ("something-else", {}, "unknown"),
    ],
)
def test_engine_derivation(backend: str, settings: dict, engine: str) -> None:
    assert engine_of(backend, settings) == engine


def test_driven_programs(tmp_path: Path) -> None:
    run = make_run(tmp_path, "ab", backend="claude-mcp/agent-browser-lightpanda")
    (loaded,) = load_runs([run])
    stack = stack_of(loaded)
    assert (stack.agent, stack.engine) == ("claude-mcp", "lightpanda")
    assert driven_programs(stack) == ("claude-code", "agent-browser", "lightpanda")


def test_codex_and_the_newer_servers_pin_their_own_programs(tmp_path: Path) -> None:
    run = make_run(tmp_path, "cx", backend="codex-mcp/chrome-devtools")
    (loaded,) = load_runs([run])
    stack = stack_of(loaded)
    assert (stack.agent, stack.engine) == ("codex-mcp", "chromium")
    assert stack.surface == "strict"  # an MCP agent's run has a surface, whichever agent
    assert driven_programs(stack) == ("codex", "chrome-devtools-mcp", "chromium")


def test_agent_browser_chat_stack(tmp_path: Path) -> None:
    # agent-browser's own chat loop: the loop is agent-browser, the engine from settings.
    run = make_run(
        tmp_path,
        "chat",
        backend="agent-browser-chat/chrome",
        programs={"agent-browser": "0.41.2", "chromium": "Chromium 140"},
        budgets={"max_tokens": 1e6, "max_cost_usd": 5},
        extra_settings={"backend": {"engine": "chrome", "limits": {"max_model_requests": 50}}},
    )
    (loaded,) = load_runs([run])
    stack = stack_of(loaded)
    assert (stack.agent, stack.engine) == ("agent-browser-chat", "chromium")
    assert driven_programs(stack) == ("agent-browser", "chromium")
    row = only_row(run)
    assert row.budgets["steps"] == 50  # its hard-coded cap, recorded under limits
    assert row.eligibility.headline, row.eligibility.reasons


def test_winner_per_agent_and_model(tmp_path: Path) -> None:
    a = make_run(tmp_path, "lp", uniform(10, Attempt()), backend="claude-mcp/lightpanda")
    b = make_run(
        tmp_path, "ab", uniform(10, Attempt(correct=False)), backend="claude-mcp/agent-browser"
    )
    c = make_run(tmp_path, "native", uniform(10, Attempt()), backend="lightpanda-native")
    (group,) = report(a, b, c).groups
    winners = {(w.agent, w.model): w for w in group.winners}
    claude = winners[("claude-mcp", "claude-sonnet-4-6")]
    assert claude.n_candidates == 2 and claude.key.startswith("claude-mcp/lightpanda")
    assert winners[("lightpanda-native", "claude-sonnet-4-6")].n_candidates == 1
    assert "Winner per agent and model" in render_markdown(report(a, b, c))


def test_same_stack_twice_is_told_apart_by_folder(tmp_path: Path) -> None:
    a = make_run(tmp_path, "monday")
    b = make_run(tmp_path, "tuesday")
    (group,) = report(a, b).groups
    assert sorted(r.key for r in group.rows) == [
        "lightpanda-native · lightpanda · claude-sonnet-4-6 [monday]",
        "lightpanda-native · lightpanda · claude-sonnet-4-6 [tuesday]",
    ]


def test_suites_are_compared_apart(tmp_path: Path) -> None:
    gaia = make_run(tmp_path, "gaia")
    ab = make_run(tmp_path, "ab", suite="assistantbench")
    result = report(gaia, ab)
    assert [g.suite for g in result.groups] == ["gaia", "assistantbench"]
    assert any("each suite is compared on its own" in w for w in result.warnings)


def test_per_task_table_and_breakdowns(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a", uniform(10, Attempt(duration=12.0)))
    b = make_run(tmp_path, "b", uniform(11, Attempt(correct=False)), model="m2")
    (group,) = report(a, b).groups
    lines = {t.task_id: t for t in group.tasks}
    key_a = next(r.key for r in group.rows if r.run_dir.endswith("/a"))
    key_b = next(r.key for r in group.rows if r.run_dir.endswith("/b"))
    assert lines["task-10"].cells[key_a] is None  # only b ran it
    cell = lines["task-00"].cells[key_a]
    assert cell is not None and (cell.successes, cell.attempts) == (1, 1)
    assert cell.duration_median_s == 12.0 and cell.tokens_mean == 1000
    assert lines["task-00"].fields == {"level": "1"}
    (level,) = group.breakdowns
    assert level.field == "level"
    # Levels alternate 1, 2, 1, ...: b's 11 tasks are 6 at level 1 and 5 at level 2.
    assert level.groups["1"][key_a].n == 5 and level.groups["1"][key_b].n == 6


def test_tool_call_diagnostics(tmp_path: Path) -> None:
    # Every attempt: goto at 100, 200, 300 ms; 10 attempts of 10 s = 100 s for 30 calls.
    row_dir = make_run(tmp_path, "diag")
    (group,) = report(row_dir).groups
    (diag,) = group.diagnostics
    (goto,) = diag.tools
    assert goto.n_calls == 30 and goto.latency_median_ms == 200
    assert goto.calls_per_minute == pytest.approx(60_000 / 200)
    assert diag.calls_per_minute == pytest.approx(30 / (100 / 60))
    assert group.rows[0].tool_calls_median == 3


def test_mcp_tool_names_line_up_across_stacks(tmp_path: Path) -> None:
    from agent_benchmarks.records.schema import ToolCall

    call = ToolCall(name="mcp__browser__goto", args={"url": "https://example.com"}, latency_ms=5)
    run = make_run(
        tmp_path, "mcp", uniform(10, Attempt(trace=[call])), backend="claude-mcp/lightpanda"
    )
    (group,) = report(run).groups
    assert [t.tool for t in group.diagnostics[0].tools] == ["goto"]


# --- score views --------------------------------------------------------------------------------


def _view_run(tmp_path: Path) -> Path:
    """Ten tasks (gold "42"): 6 answered "42", 2 answered "€42" (wrong for the official
    scorer, right for upstream's matching), one printed "42" and then timed out (right in
    both views), one timed out silently; and an eleventh selected task with no row."""
    outcomes = uniform(6, Attempt())
    outcomes |= uniform(2, Attempt(prediction="€42"), prefix="euro")
    outcomes["late"] = [Attempt(status="timeout", error_class="timeout", prediction="42")]
    outcomes["silent"] = [Attempt(status="timeout", error_class="timeout")]
    run = make_run(tmp_path, "views", outcomes)
    manifest = (run / "manifest.json").read_text().replace('"silent"', '"silent", "no-row"')
    (run / "manifest.json").write_text(manifest)
    return run


def test_the_official_view_counts_every_selected_task(tmp_path: Path) -> None:
    result = report(_view_run(tmp_path))
    assert result.view == "official" and result.groups[0].view == "official"
    (row,) = result.groups[0].rows
    assert (row.n_successes, row.n_attempts) == (7, 11)  # 6 + the late answer; no-row counts
    assert row.n_timeouts == 2
    assert row.errors_by_class == {"missing_row": 1}


def test_the_upstream_view_counts_upstreams_way(tmp_path: Path) -> None:
    run = _view_run(tmp_path)
    result = compare_runs(load_runs([run], view="upstream"), resamples=300)
    assert result.view == "upstream" and result.groups[0].view == "upstream"
    (row,) = result.groups[0].rows
    assert (row.n_successes, row.n_attempts) == (9, 10)  # the euros count; no-row is left out
    assert row.n_timeouts == 2
    assert row.errors_by_class == {}
    assert row.leak.accuracy_strict == pytest.approx(9 / 10)
    # The official view of the same folder is unchanged by having been read the other way.
    (official,) = report(run).groups[0].rows
    assert (official.n_successes, official.n_attempts) == (7, 11)


def test_views_are_never_mixed_in_one_report(tmp_path: Path) -> None:
    official = load_runs([make_run(tmp_path, "a")])
    upstream = load_runs([make_run(tmp_path, "b", model="m2")], view="upstream")
    with pytest.raises(InputError, match="different score views"):
        compare_runs([*official, *upstream])


def test_compare_view_flag_names_the_view_in_every_table_header(tmp_path: Path) -> None:
    run = _view_run(tmp_path)
    outputs = {view: (tmp_path / f"{view}.md", tmp_path / f"{view}.html") for view in VIEWS}
    for view, (markdown, html) in outputs.items():
        result = run_cli(
            "agent-benchmarks", "compare", str(run), "--view", view, "--resamples", "200",
            "--markdown-out", str(markdown), "--html-out", str(html),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert f"Scores: {VIEW_TITLES[view]}." in result.stdout  # above the terminal table
    official_md, upstream_md = (outputs[v][0].read_text() for v in VIEWS)
    assert "| success, official scorers (95% CI) |" in official_md
    assert "upstream's matching" not in official_md
    assert "| success, upstream's matching (95% CI) |" in upstream_md
    assert "official scorers (95% CI)" not in upstream_md
    assert "9/10 = " in upstream_md and "7/11 = " in official_md
    assert "not by the official scorers" in upstream_md
    upstream_html = outputs["upstream"][1].read_text()
    assert "<th>success, upstream&#39;s matching (95% CI)</th>" in upstream_html
    result = run_cli("agent-benchmarks", "compare", str(run), "--view", "both")
    assert result.returncode == 2 and "--view" in result.stderr


def test_upstream_view_of_scores_written_before_it_existed(tmp_path: Path) -> None:
    run = _view_run(tmp_path)
    report(run)  # grades it: scores.json written with both views
    scores = json.loads((run / "scores.json").read_text())
    del scores["upstream_view"], scores["failed_with_answer"]
    (run / "scores.json").write_text(json.dumps(scores))
    before = (run / "scores.json").read_bytes()
    (loaded,) = load_runs([run], view="upstream")
    assert loaded.graded_on_the_fly
    # Its rows hold attempts that failed after printing an answer, which it never graded.
    assert any(
        "graded before attempts that failed after printing an answer were graded" in w
        for w in loaded.warnings
    )
    assert sum(e.correct for e in loaded.entries) == 9
    assert (run / "scores.json").read_bytes() == before  # the file is left as it is
    # The official view does not take its numbers as today's either.
    (official,) = load_runs([run])
    assert official.graded_on_the_fly and sum(e.correct for e in official.entries) == 7
    # Without such attempts an old file still lacks the upstream view, and says so.
    scores["failed_with_answer"] = {"n": 0, "n_correct": 0, "ids": []}
    (run / "scores.json").write_text(json.dumps(scores))
    (loaded,) = load_runs([run], view="upstream")
    assert any("graded before scores had an upstream view" in w for w in loaded.warnings)


def test_an_old_webbench_scores_file_names_its_tasks_as_its_rows_do(tmp_path: Path) -> None:
    """Written when WebBench ids were bare N: its entries are read as webbench-N, the
    form its rows and manifest are read in, so entries and rows meet."""
    ids = ["7001", "7002"]
    run = make_run(tmp_path, "wb", {i: [Attempt()] for i in ids}, suite="webbench")
    scores = Scores(
        manifest=Manifest.model_validate_json((run / "manifest.json").read_text()),
        suite="webbench",
        predictions_path=str(run / "predictions.jsonl"),
        predictions_sha256=hashlib.sha256((run / "predictions.jsonl").read_bytes()).hexdigest(),
        n_tasks=2,
        n_rows=2,
        accuracy_strict=1.0,
        n_answered=2,
        n_timeouts=0,
        accuracy_on_completed=1.0,
        n_completed=2,
        usage=UsageSummary(totals=Usage(), per_task_mean=Usage()),
        failed_with_answer={"n": 0, "n_correct": 0, "ids": []},
        per_task=[
            TaskScore(id=i, score=1.0, correct=True, status="ok", details={"verdict": "YES"})
            for i in ids
        ],
    )
    (run / "scores.json").write_text(scores.model_dump_json())
    (loaded,) = load_runs([run])
    assert not loaded.graded_on_the_fly
    assert [e.id for e in loaded.entries] == ["webbench-7001", "webbench-7002"]
    assert {r.id for r in loaded.final} == {e.id for e in loaded.entries}


def test_localweb_has_no_upstream_view(tmp_path: Path) -> None:
    run = make_run(tmp_path, "lw", {"home-links": [Attempt()]}, suite="localweb")
    assert load_runs([run])[0].scores is not None  # the official view loads
    with pytest.raises(InputError, match="upstream's harness has no localweb suite"):
        load_runs([run], view="upstream")


def test_compare_shows_refused_calls_beside_contamination(tmp_path: Path) -> None:
    """Per stack: the terminal's lockdown-audit line, the Markdown and HTML column, and the
    JSON record's counts; a stack without any shows 0 and no line."""
    refused = {"contaminated": False, "n_refused_calls": 2, "refused_calls": [{}, {}]}
    outcomes = uniform(10, Attempt())
    outcomes["task-04"] = [Attempt(details=refused)]
    outcomes["task-07"] = [Attempt(details=refused | {"n_refused_calls": 1})]
    audited = make_run(tmp_path, "audited", outcomes, backend="claude-mcp/lightpanda")
    plain = make_run(tmp_path, "plain", uniform(10, Attempt()), backend="claude-mcp/agent-browser")
    markdown, html, record = (tmp_path / f"out.{x}" for x in ("md", "html", "json"))
    result = run_cli(
        "agent-benchmarks", "compare", str(audited), str(plain), "--resamples", "200",
        "--markdown-out", str(markdown), "--html-out", str(html), "--json-out", str(record),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    numbers = {
        line.split()[0]: line for line in result.stdout.splitlines() if "claude-mcp/" in line
    }
    audited_no = next(n for n, line in numbers.items() if "audited" in line)
    lines = [line for line in result.stdout.splitlines() if "lockdown audit" in line]
    assert lines == [
        f"{audited_no} lockdown audit: 0 contaminated row(s); refused calls (nothing ran): "
        "3 in 2 row(s)"
    ]
    text = markdown.read_text()
    assert "| contaminated | refused calls | leak hits |" in text
    assert "| 0 | 3 in 2 row(s) | 0 |" in text and "| 0 | 0 | 0 |" in text
    assert "<th>refused calls</th>" in html.read_text()
    assert '<td class="fig">3 in 2 row(s)</td>' in html.read_text()
    rows = {
        Path(r.run_dir).name: r
        for r in ComparisonReport.model_validate_json(record.read_text()).groups[0].rows
    }
    assert (rows["audited"].n_rows_with_refused_calls, rows["audited"].n_refused_calls) == (2, 3)
    assert (rows["plain"].n_rows_with_refused_calls, rows["plain"].n_refused_calls) == (0, 0)
    assert rows["audited"].eligibility.headline is rows["plain"].eligibility.headline is True
