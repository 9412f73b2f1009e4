"""compare and the search a run gave its agent (--search): part of the contract, named in
the stack, and its Tavily credits shown beside the tokens' cost."""

from __future__ import annotations

from pathlib import Path

from agent_benchmarks.report import fmt
from agent_benchmarks.report.compare import compare_runs
from agent_benchmarks.report.load import load_runs
from agent_benchmarks.report.schema import StackRow
from tests.unit.report_builders import Attempt, make_run, uniform

UPSTREAM = {"surface": "upstream"}


def _rows(*dirs: Path) -> dict[str, StackRow]:
    report = compare_runs(load_runs(list(dirs)), resamples=200)
    (group,) = report.groups
    return {Path(r.run_dir).name: r for r in group.rows}


def _run(root: Path, name: str, backend: str, search: str | None, credits: int = 0) -> Path:
    settings = UPSTREAM | ({"search_setting": search} if search else {})
    if search == "tavily":
        settings["search_parameters"] = {"max_results": 5}  # our web_search server's
    details = {"search": {"n_calls": credits, "credits": credits}} if search == "tavily" else {}
    outcomes = uniform(10, Attempt(details=details))
    outcomes["task-00"] = [Attempt(correct=False, details=details)]
    return make_run(root, name, outcomes, backend=backend, extra_settings={"backend": settings})


def test_a_different_search_is_a_different_contract(tmp_path: Path) -> None:
    tavily = _run(tmp_path, "tavily", "claude-mcp/agent-browser", "tavily", credits=2)
    native = _run(tmp_path, "native", "claude-mcp/lightpanda", None)  # recorded none: native
    result = _rows(tavily, native)
    assert {r.code for r in result["tavily"].eligibility.reasons} == {"search"}
    assert {r.code for r in result["native"].eligibility.reasons} == {"search"}
    assert "search tavily vs native" in result["tavily"].eligibility.reasons[0].message
    assert " · search tavily · chromium · " in result["tavily"].stack.label
    assert "search" not in result["native"].stack.label
    assert result["native"].stack.search == "native"


def test_lightpandas_own_tavily_search_is_not_the_web_search_server(tmp_path: Path) -> None:
    server = _run(tmp_path, "server", "claude-mcp/lightpanda", "tavily", credits=1)
    own = make_run(
        tmp_path,
        "own",
        extra_settings={"backend": {"search_setting": "tavily", "search_engine": "tavily"}},
    )
    result = _rows(server, own)
    assert result["own"].stack.search == "tavily via lightpanda"
    assert "search" in {r.code for r in result["own"].eligibility.reasons}


def test_the_same_search_on_two_backends_is_comparable(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", "claude-mcp/agent-browser", "tavily", credits=1)
    b = _run(tmp_path, "b", "claude-mcp/lightpanda", "tavily", credits=3)
    result = _rows(a, b)
    assert result["a"].eligibility.reasons == [] == result["b"].eligibility.reasons


def test_search_credits_are_shown_beside_the_cost(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", "claude-mcp/agent-browser", "tavily", credits=3)
    b = _run(tmp_path, "b", "claude-mcp/lightpanda", "native")
    result = _rows(a, b)
    cost = result["a"].cost
    assert (cost.search_credits, cost.search_credits_per_attempt) == (30, 3.0)
    assert cost.search_credits_per_success is not None
    assert round(cost.search_credits_per_success, 3) == round(30 / 9, 3)
    assert fmt.cost_per_success(cost) == "$0.0111 + 3.33 search credits"
    assert fmt.cost_per_attempt(cost) == "$0.0100 + 3 search credits"
    # a run without a search log spends no credits it could show
    assert result["b"].cost.search_credits is None
    assert "credits" not in fmt.cost_per_success(result["b"].cost)
