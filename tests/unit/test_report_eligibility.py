"""Headline eligibility: an eligible pair, then every reason triggered on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

from agent_benchmarks.records.schema import Machine, ResourceUse, ToolCall
from agent_benchmarks.report.compare import compare_runs
from agent_benchmarks.report.eligibility import MAX_MISS_RATE, UNCAPPED, budgets_of
from agent_benchmarks.report.load import load_run, load_runs
from agent_benchmarks.report.schema import ReasonCode, StackRow
from tests.unit.report_builders import Attempt, make_run, task_ids, uniform


def rows(*dirs: Path) -> dict[str, StackRow]:
    """Compare the runs; rows by run folder name."""
    report = compare_runs(load_runs(list(dirs)), resamples=200)
    assert len(report.groups) == 1
    return {Path(r.run_dir).name: r for r in report.groups[0].rows}


def codes(row: StackRow) -> set[str]:
    return {r.code for r in row.eligibility.reasons}


def baseline_pair(tmp_path: Path, **b_kw) -> dict[str, StackRow]:
    a = make_run(tmp_path, "a")
    b = make_run(tmp_path, "b", **({"backend": "claude-mcp/agent-browser"} | b_kw))
    return rows(a, b)


def test_an_eligible_pair(tmp_path: Path) -> None:
    result = baseline_pair(tmp_path)
    for row in result.values():
        assert row.eligibility.headline, row.eligibility.reasons
        assert row.eligibility.reasons == []
        # One attempt per task: enough for the aggregate, not for a per-task chart.
        assert not row.eligibility.per_task_chart
        assert [r.code for r in row.eligibility.per_task_reasons] == ["too_few_attempts"]


def test_mode_scaffold_and_missing_manifest(tmp_path: Path) -> None:
    result = baseline_pair(tmp_path, mode="scaffold")
    assert codes(result["b"]) == {"mode"}
    assert "scaffold" in result["b"].eligibility.reasons[0].message
    assert result["a"].eligibility.headline

    bare = make_run(tmp_path, "bare", write_manifest=False)
    (row,) = rows(bare).values()
    assert "mode" in codes(row)
    assert row.mode == "unknown"
    assert "no manifest.json" in next(
        r.message for r in row.eligibility.reasons if r.code == "mode"
    )


def test_task_set_differs(tmp_path: Path) -> None:
    a = make_run(tmp_path, "a")
    b = make_run(tmp_path, "b", uniform(11, Attempt()), backend="claude-mcp/agent-browser")
    result = rows(a, b)
    assert codes(result["a"]) == {"task_set"} and codes(result["b"]) == {"task_set"}
    assert "1 only there" in result["a"].eligibility.reasons[0].message


def test_contracts_differ(tmp_path: Path) -> None:
    result = baseline_pair(tmp_path, revision="r2")
    assert codes(result["a"]) == {"contracts"} and codes(result["b"]) == {"contracts"}
    assert "dataset" in result["a"].eligibility.reasons[0].message


def test_system_prompt_is_part_of_the_contract(tmp_path: Path) -> None:
    other_prompt = {"session": {"system_prompt_sha256": "q" * 64, "answer_format": "envelope"}}
    result = baseline_pair(tmp_path, extra_settings=other_prompt)
    assert codes(result["b"]) == {"contracts"}
    assert "system_prompt_sha256" in result["b"].eligibility.reasons[0].message


def test_programs_unpinned(tmp_path: Path) -> None:
    programs = {"claude-code": "2.1.330", "agent-browser": "", "python": "3.11"}
    result = baseline_pair(tmp_path, programs=programs)
    assert codes(result["b"]) == {"programs_unpinned"}
    message = result["b"].eligibility.reasons[0].message
    assert "agent-browser" in message and "chromium" in message and "claude-code" not in message


def test_model_unpinned(tmp_path: Path) -> None:
    result = baseline_pair(tmp_path, model="claude-sonnet-latest")
    assert "model_unpinned" in codes(result["b"])
    a = make_run(tmp_path, "nomodel", model=None)
    (row,) = rows(a).values()
    assert codes(row) == {"model_unpinned"}  # provider set: an LLM row without its model id


def test_an_alias_is_pinned_only_by_the_one_id_the_run_recorded_running_as(
    tmp_path: Path,
) -> None:
    """Claude Code's ``sonnet`` (upstream's MCP default) moves with Claude Code's release;
    the run records the ids its attempts ran as, and only one such id pins it."""

    def alias_run(name: str, resolved: list[str] | None) -> StackRow:
        backend = {"model": "sonnet", "model_is_alias": True} | (
            {} if resolved is None else {"resolved_models": resolved}
        )
        run = make_run(tmp_path, name, model="sonnet", extra_settings={"backend": backend})
        (row,) = rows(run).values()
        return row

    pinned = alias_run("one", ["claude-sonnet-5-5"])
    assert codes(pinned) == set()
    assert pinned.stack.model == "sonnet (claude-sonnet-5-5)"
    unrecorded = alias_run("none", None)
    assert codes(unrecorded) == {"model_unpinned"}
    assert "recorded no model id" in unrecorded.eligibility.reasons[0].message
    several = alias_run("two", ["claude-sonnet-5-5", "claude-sonnet-4-6"])
    assert codes(several) == {"model_unpinned"}
    assert "claude-sonnet-5-5, claude-sonnet-4-6" in several.eligibility.reasons[0].message
    # A scripted model that answered under the alias (a scaffold run) is named as itself.
    scripted = make_run(
        tmp_path,
        "scripted",
        model="scripted-oracle",
        extra_settings={
            "backend": {
                "model": "sonnet",
                "model_is_alias": True,
                "resolved_models": ["claude-sonnet-5-5"],
            }
        },
    )
    (row,) = rows(scripted).values()
    assert row.stack.model == "scripted-oracle" and codes(row) == set()


def test_too_few_tasks(tmp_path: Path) -> None:
    run = make_run(tmp_path, "small", uniform(9, Attempt()))
    (row,) = rows(run).values()
    assert codes(row) == {"too_few_tasks"}
    assert "9 task(s)" in row.eligibility.reasons[0].message


def test_budgets_unrecorded(tmp_path: Path) -> None:
    run = make_run(tmp_path, "nobudget", budgets={"max_turns": 60})
    (row,) = rows(run).values()
    assert codes(row) == {"budgets_unrecorded"}
    assert "tokens, cost_usd" in row.eligibility.reasons[0].message


def test_budgets_recorded_in_backend_settings_count(tmp_path: Path) -> None:
    # A backend that records its budgets among its own settings (as claude-mcp's max_turns).
    backend = {"backend": {"max_turns": 60, "max_tokens": 2_000_000, "max_cost_usd": 5.0}}
    run = make_run(tmp_path, "inbackend", budgets={}, extra_settings=backend)
    (row,) = rows(run).values()
    assert row.eligibility.headline, row.eligibility.reasons


def test_a_declared_absent_cap_counts_as_recorded(tmp_path: Path) -> None:
    # As the backends write it: Claude Code and Lightpanda have no token cap, and say so.
    backend = {"backend": {"budgets": {"max_turns": 60, "max_tokens": None, "max_cost_usd": None}}}
    run = make_run(tmp_path, "declared", budgets={}, extra_settings=backend)
    (row,) = rows(run).values()
    assert row.eligibility.headline, row.eligibility.reasons
    loaded = load_run(run)
    assert budgets_of(loaded) == {
        "timeout_s": loaded.manifest.timeout_s,
        "steps": 60.0,
        "tokens": UNCAPPED,
        "cost_usd": UNCAPPED,
    }
    # a key that is merely absent is still unrecorded
    backend = {"backend": {"budgets": {"max_turns": 60, "max_tokens": None}}}
    run = make_run(tmp_path, "partial", budgets={}, extra_settings=backend)
    (row,) = rows(run).values()
    assert codes(row) == {"budgets_unrecorded"}
    assert "cost_usd" in row.eligibility.reasons[0].message


def test_budgets_differ(tmp_path: Path) -> None:
    result = baseline_pair(tmp_path, timeout_s=900.0)
    assert codes(result["a"]) == {"budgets_differ"} and codes(result["b"]) == {"budgets_differ"}
    assert "timeout_s 1800.0 vs 900.0" in result["a"].eligibility.reasons[0].message


def test_contaminated(tmp_path: Path) -> None:
    outcomes = uniform(10, Attempt())
    outcomes["task-03"] = [Attempt(details={"contaminated": True, "foreign_calls": ["Bash"]})]
    run = make_run(tmp_path, "dirty", outcomes, backend="claude-mcp/lightpanda")
    (row,) = rows(run).values()
    assert row.n_contaminated == 1
    assert codes(row) == {"contaminated"}


def test_leak(tmp_path: Path) -> None:
    outcomes = uniform(10, Attempt())
    leak = ToolCall(
        name="goto", args={"url": "https://huggingface.co/datasets/gaia-benchmark/GAIA"}
    )
    outcomes["task-05"] = [Attempt(trace=[leak])]
    run = make_run(tmp_path, "leaky", outcomes)
    (row,) = rows(run).values()
    assert codes(row) == {"leak"}
    assert row.leak.flagged_tasks == ["task-05"]


def test_per_task_chart_needs_twenty_attempts(tmp_path: Path) -> None:
    run = make_run(tmp_path, "many", uniform(10, *[Attempt()] * 20))
    (row,) = rows(run).values()
    assert row.eligibility.headline and row.eligibility.per_task_chart
    run = make_run(tmp_path, "fewer", uniform(10, *[Attempt()] * 19))
    (row,) = rows(run).values()
    assert row.eligibility.headline and not row.eligibility.per_task_chart
    assert "19 attempt(s) per task" in row.eligibility.per_task_reasons[0].message


UPSTREAM = {"backend": {"surface": "upstream"}}


def test_a_different_tool_surface_is_a_different_contract(tmp_path: Path) -> None:
    upstream = make_run(tmp_path, "up", backend="claude-mcp/lightpanda", extra_settings=UPSTREAM)
    strict = make_run(
        tmp_path,
        "strict",
        backend="claude-mcp/lightpanda",
        extra_settings={"backend": {"surface": "strict"}},
    )
    result = rows(upstream, strict)
    assert codes(result["up"]) == {"surface"} and codes(result["strict"]) == {"surface"}
    assert result["up"].stack.label.startswith("claude-mcp/lightpanda · upstream surface · ")
    assert "tool surface upstream vs strict" in result["up"].eligibility.reasons[0].message
    # a loop with no choice of surface (Lightpanda's own agent) compares with either
    native = make_run(tmp_path, "native")
    assert codes(rows(upstream, native)["up"]) == set()


REPLAY_WEB = {"mode": "replay", "archive": {"path": "/archives/a", "sha256": "a" * 64}}


def _replayed(tmp_path: Path, name: str, n_misses: int, web: dict[str, Any] | None = None) -> Path:
    """A run of 10 tasks replayed from an archive: 10 requests per row, ``n_misses`` of
    them in the first row."""
    outcomes = uniform(10, Attempt(details={"web": {"mode": "replay", "n_requests": 10}}))
    missed = {"mode": "replay", "n_requests": 10, "n_misses": n_misses, "misses": ["http://x/"]}
    outcomes["task-00"] = [Attempt(details={"web": missed})]
    return make_run(
        tmp_path,
        name,
        outcomes,
        backend="claude-mcp/lightpanda",
        extra_settings=UPSTREAM | {"web": web or REPLAY_WEB},
    )


def test_runs_replaying_one_archive_compare_and_show_their_miss_rate(tmp_path: Path) -> None:
    """Two stacks replaying the same archive, each under the stated miss rate, are eligible;
    their rows carry the archive and the misses over every request."""
    result = rows(_replayed(tmp_path, "one", 1), _replayed(tmp_path, "two", 0))
    one = result["one"]
    assert codes(one) == set() and one.eligibility.headline is True
    assert one.web.mode == "replay" and one.web.archive_sha256 == "a" * 64
    assert (one.web.n_requests, one.web.n_misses, one.web.miss_rate) == (100, 1, 0.01)
    assert one.mode == "live"  # make_run's; a replayed real-model run's manifest says recorded


def test_a_replay_beside_the_live_web_or_another_archive_is_another_web(tmp_path: Path) -> None:
    live = make_run(tmp_path, "live", backend="claude-mcp/lightpanda", extra_settings=UPSTREAM)
    other = {"mode": "replay", "archive": {"path": "/archives/b", "sha256": "b" * 64}}
    result = rows(live, _replayed(tmp_path, "one", 0), _replayed(tmp_path, "other", 0, other))
    assert codes(result["live"]) == {"web"}
    assert codes(result["one"]) == {"web"}
    messages = [r.message for r in result["one"].eligibility.reasons]
    assert any("archive aaaaaaaaaaaa vs the live web" in m for m in messages), messages
    assert any("archive aaaaaaaaaaaa vs archive bbbbbbbbbbbb" in m for m in messages), messages


def test_a_replay_missing_more_than_the_threshold_is_not_eligible(tmp_path: Path) -> None:
    """3 misses in 100 requests is over MAX_MISS_RATE (2%); 2 in 100 is not."""
    assert MAX_MISS_RATE == 0.02
    result = rows(_replayed(tmp_path, "over", 3), _replayed(tmp_path, "at", 2))
    assert codes(result["over"]) == {"web_misses"}
    assert "3.0% (3 of 100 requests)" in result["over"].eligibility.reasons[0].message
    assert codes(result["at"]) == set()


def test_every_reason_code_can_fire_at_once(tmp_path: Path) -> None:
    """A run wrong in every way gets every reason; a new reason code must join this test."""
    outcomes = uniform(8, Attempt())  # and one imported row below: 9 tasks, too few
    leak = ToolCall(name="goto", args={"url": "https://huggingface.co/spaces/gaia/leaderboard"})
    outcomes["task-00"] = [Attempt(trace=[leak])]
    outcomes["task-01"] = [Attempt(details={"contaminated": True})]
    # Replayed from an archive the good run did not browse, missing half its requests.
    outcomes["task-02"] = [
        Attempt(details={"web": {"mode": "replay", "n_requests": 4, "n_misses": 2}})
    ]
    bad = make_run(
        tmp_path,
        "bad",
        outcomes,
        backend="claude-mcp/agent-browser",
        mode="scaffold",
        model="sonnet-latest",
        programs={},
        budgets={},
        revision="r9",
        timeout_s=60.0,
        extra_settings={"backend": {"search_setting": "none"}, "web": REPLAY_WEB},
    )
    # A row upstream's harness wrote, read as it is: the run is imported.
    upstream_row = {"id": "task-up", "task": "Q?", "gold": "1", "prediction": "1", "level": 1}
    with open(bad / "predictions.jsonl", "a") as fh:
        fh.write(json.dumps({**upstream_row, "timed_out": False, "returncode": 0}) + "\n")
    # bad records no surface: a run from before --surface, so strict
    good = make_run(
        tmp_path,
        "good",
        backend="claude-mcp/agent-browser",
        extra_settings=UPSTREAM,
        machine=MACHINE,
    )
    # bad's figures come from another kind of machine
    manifest = json.loads((bad / "manifest.json").read_text())
    manifest["machine"] = OTHER_MACHINE.model_dump()
    (bad / "manifest.json").write_text(json.dumps(manifest))
    result = rows(good, bad)
    fired = codes(result["bad"]) | {r.code for r in result["bad"].eligibility.per_task_reasons}
    assert fired == set(get_args(ReasonCode))


MACHINE = Machine(cpu_model="Xeon", cores=2, memory_bytes=24 << 30, kernel="6.18")
OTHER_MACHINE = MACHINE.model_copy(update={"cores": 16})


def test_resource_figures_from_different_machines_are_not_comparable(tmp_path: Path) -> None:
    """The machine record decides: different kinds of machine make both rows ineligible;
    the same kind, or a run that records none (from before), does not."""
    a = make_run(tmp_path, "a", machine=MACHINE)
    b = make_run(tmp_path, "b", backend="claude-mcp/agent-browser", machine=OTHER_MACHINE)
    result = rows(a, b)
    assert codes(result["a"]) == codes(result["b"]) == {"machine"}
    message = result["a"].eligibility.reasons[0].message
    assert "16 cores" in message and "2 cores" in message and "not comparable" in message
    same = make_run(tmp_path, "same", backend="claude-mcp/agent-browser", machine=MACHINE)
    old = make_run(tmp_path, "old", backend="claude-mcp/lightpanda")
    assert all(codes(row) == set() for row in rows(a, same, old).values())


def test_a_run_whose_attempts_ran_on_several_kinds_of_machine_says_so(tmp_path: Path) -> None:
    node = ResourceUse(peak_bytes=1 << 30, cpu_user_s=1.0, cpu_system_s=0.1, machine="0" * 12)
    outcomes = {t: [Attempt(resources=node)] for t in task_ids(10)}
    mixed = make_run(tmp_path, "mixed", outcomes, machine=MACHINE)
    assert codes(rows(mixed)["mixed"]) == {"machine"}
    assert "2 kinds of machine" in rows(mixed)["mixed"].eligibility.reasons[0].message


def test_refused_calls_are_counted_and_never_make_a_row_ineligible(tmp_path: Path) -> None:
    """Calls Claude Code refused reached nothing: the row counts them (rows with any, and
    calls) and stays headline eligible; a contaminated row beside still does not."""
    refused = {
        "contaminated": False,
        "foreign_calls": [],
        "refused_calls": [
            {"name": "WebSearch", "args": {"query": "q"}, "why": "No such tool available"},
            {"name": "Bash", "args": {"command": "ls"}, "why": "No such tool available"},
        ],
        "n_refused_calls": 2,
    }
    outcomes = uniform(10, Attempt())
    outcomes["task-01"] = [Attempt(details=refused)]
    outcomes["task-02"] = [Attempt(details=refused | {"n_refused_calls": 1})]
    clean = make_run(tmp_path, "refused", outcomes, backend="claude-mcp/lightpanda")
    outcomes["task-03"] = [Attempt(details={"contaminated": True, "n_refused_calls": 0})]
    dirty = make_run(tmp_path, "dirty", outcomes, backend="claude-mcp/lightpanda")
    result = rows(clean, dirty)
    row = result["refused"]
    assert (row.n_rows_with_refused_calls, row.n_refused_calls) == (2, 3)
    assert row.n_contaminated == 0
    assert row.eligibility.headline is True and codes(row) == set()
    assert (result["dirty"].n_refused_calls, result["dirty"].n_contaminated) == (3, 1)
    assert codes(result["dirty"]) == {"contaminated"}
