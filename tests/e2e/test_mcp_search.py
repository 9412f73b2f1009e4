"""``--search tavily`` through the real Claude Code and each real MCP backend, with the
``web_search`` server asking a local Tavily stand-in; only the model is scripted (it
searches, opens the first result it was shown with the backend's browser, then answers).

Every stack reads the very same results; a result pointing at a dataset page or holding
the task id is dropped before the agent sees it; Lightpanda's own ``search`` is not among
the allowed tools; and the Tavily key (a stand-in value) is in no file of the run."""

from __future__ import annotations

import gzip
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.localweb.models import API_KEY, Conversation, FinalAnswer, StepPolicy
from agent_benchmarks.localweb.oracle import tool_text
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.localweb.tavily import TavilyStandIn
from agent_benchmarks.records.schema import Manifest, PredictionRow
from agent_benchmarks.search import BASE_URL_ENV, SEARCH_PARAMETERS
from agent_benchmarks.search.server import format_results
from agent_benchmarks.web.archive import WebArchive
from tests.fixtures.record import CapturingServer
from tests.support import left_running, run_cli

pytestmark = pytest.mark.e2e

KEY = f"tvly-e2e-{uuid.uuid4().hex}"
TASK = "g1-plain"
# Each backend's tool that loads a URL, and its argument.
OPEN_TOOL = {
    "lightpanda": "goto",
    "agent-browser": "open",
    "agent-browser-lightpanda": "open",
    "browser-use": "browser_navigate",
}


def _results(page: str) -> list[dict[str, str]]:
    return [
        {
            "title": "GAIA validation",
            "url": "https://huggingface.co/datasets/gaia-benchmark/GAIA/viewer/2023/validation",
            "content": "The question and its final answer.",
        },
        {"title": "The catalogue", "url": page, "content": "Studio albums, by year."},
        {
            "title": "Answers, task by task",
            "url": f"https://answers.example.net/{TASK}.html",
            "content": "The answer to this very task.",
        },
        {"title": "Band history", "url": "https://bands.example.org/history", "content": "1990s."},
    ]


def _mcp_run(
    gaia_file: Path, run_dir: Path, model_url: str, search: str, env: dict[str, str], *extra: str
):
    """gaia-mcp-run on the lightpanda backend with --search, the one task, a scripted model."""
    return run_cli(
        "gaia-mcp-run", "--backend", "lightpanda", "--search", search,
        "--dataset-file", str(gaia_file), "--task-ids", TASK, "--auth", "api-key",
        "--base-url", model_url, "--scaffold", "--no-grade", "--out-dir", str(run_dir), *extra,
        env=env, timeout=300,
    )  # fmt: skip


class SearchThenOpen(StepPolicy):
    """web_search, then open the first URL the results showed, then answer."""

    def __init__(self, open_tool: str) -> None:
        self.open_tool = open_tool

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return self.call(conv, "web_search", query="band studio albums before 2000")
        if conv.turn == 1:
            # Codex puts a line of its own before the tool's text; the model reads past it
            shown = tool_text(conv.last_tool_text or "")
            first = re.search(r"^1\. .*\n\s+(\S+)", shown, re.MULTILINE)
            assert first is not None, conv.last_tool_text
            return self.call(conv, self.open_tool, url=first.group(1))
        return FinalAnswer("<ANSWER>3</ANSWER>")


def _searched_run(
    gaia_file: Path,
    run_dir: Path,
    agent: list[str],
    open_tool: str,
    api_suffix: str,
    env: dict[str, str],
) -> tuple[Any, dict[str, str], list[dict[str, str]], list[Any], list[str]]:
    """gaia-mcp-run with --search tavily on the one task: the model searches, opens the
    first result with ``open_tool``, and answers. Returns the process, the environment it
    ran with (the stand-in's base URL added), the results Tavily gave, the requests Tavily
    got and the site paths the browser visited."""
    with LocalSite() as site:
        # A site prefix other than the task id: a URL holding the id is blocked.
        page = site.task_url("searched", "/catalogue")
        results = _results(page)
        with (
            TavilyStandIn(lambda query: results, api_key=KEY) as tavily,
            CapturingServer(lambda _: SearchThenOpen(open_tool)) as model,
        ):
            env = env | {BASE_URL_ENV: tavily.base_url}
            proc = run_cli(
                "gaia-mcp-run", *agent, "--search", "tavily", "--block-answer-sources",
                "--dataset-file", str(gaia_file), "--task-ids", TASK,
                "--base-url", f"{model.root_url}/task/{{task_id}}{api_suffix}",
                "--scaffold", "--no-grade", "--out-dir", str(run_dir), env=env, timeout=300,
            )  # fmt: skip
            searched = list(tavily.requests)
        visits = [v.path for v in site.requests_for("searched")]
    return proc, env, results, searched, visits


def _searched_row(
    run_dir: Path, results: list[dict[str, str]], visits: list[str], open_tool: str
) -> PredictionRow:
    """The run's one row, checked for what every searched run shares: the right answer, one
    search then one page opened with ``open_tool`` (which the real browser fetched), the
    same numbered list read on every backend (the dataset page and the page holding the
    task id dropped), and nothing outside the allowed tools."""
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert (row.status, row.prediction) == ("ok", "3")
    search_call, open_call = row.trace
    assert search_call.name == "mcp__search__web_search" and search_call.error is None
    assert search_call.output == format_results([results[1], results[3]])
    assert open_call.name == f"mcp__browser__{open_tool}"
    assert any(path.startswith("/catalogue") for path in visits)
    assert not row.details["contaminated"]
    return row


@pytest.mark.timeout(500)  # covers the commands it runs (their timeouts)
@pytest.mark.parametrize("backend", sorted(OPEN_TOOL))
def test_one_tavily_search_for_every_backend(gaia_file: Path, tmp_path: Path, backend: str):
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")} | {"TAVILY_API_KEY": KEY}
    run_dir = tmp_path / "run"
    agent = ["--backend", backend, "--auth", "api-key"]
    proc, env, results, searched, visits = _searched_run(
        gaia_file, run_dir, agent, OPEN_TOOL[backend], "", env | {"ANTHROPIC_API_KEY": API_KEY}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    # One request reached Tavily with our key and the fixed parameters.
    (request,) = searched
    assert request.key_matched
    assert request.body["max_results"] == SEARCH_PARAMETERS["max_results"]
    assert request.body["search_depth"] == SEARCH_PARAMETERS["search_depth"]

    row = _searched_row(run_dir, results, visits, OPEN_TOOL[backend])
    search = row.details["search"]
    assert (search["n_calls"], search["credits"], search["errors"]) == (1, 1, 0)
    (logged,) = search["calls"]
    assert logged["urls"] == [results[1]["url"], results[3]["url"]]
    assert [d["url"] for d in logged["dropped"]] == [results[0]["url"], results[2]["url"]]

    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    settings = manifest.settings["backend"]
    assert settings["search_setting"] == manifest.settings["flags"]["search"] == "tavily"
    assert settings["search_parameters"] == SEARCH_PARAMETERS
    assert "search" not in settings["allowed_tools"]
    if backend == "lightpanda":
        assert "search" in settings["excluded_tools"]

    if backend == "lightpanda":
        # A resume keeps the search: another one typed is refused, naming it; none typed
        # keeps tavily (nothing is left to run).
        resume = ("gaia-mcp-run", "--backend", backend, "--resume", str(run_dir))
        changed = run_cli(*resume, "--search", "none", env=env)
        assert changed.returncode == 2, changed.stderr
        (message,) = changed.stderr.strip().splitlines()
        assert message.startswith("error: --search none: this run was started with 'tavily'")
        # A resume checks the key again before it runs anything.
        with TavilyStandIn(lambda query: results, api_key=KEY) as tavily:
            kept = run_cli(*resume, "--no-grade", env=env | {BASE_URL_ENV: tavily.base_url})
        assert kept.returncode == 0, kept.stderr[-2000:]
        manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
        assert len(manifest.sessions) == 2 and manifest.settings["flags"]["search"] == "tavily"

    # The key is in no file the run or the test wrote.
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert not left_running(run_dir)


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
def test_without_a_tavily_key_the_run_does_not_start(gaia_file: Path, tmp_path: Path) -> None:
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    run_dir = tmp_path / "run"
    proc = _mcp_run(gaia_file, run_dir, "http://127.0.0.1:9/never", "tavily", env)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: --search tavily needs TAVILY_API_KEY in the environment (the web_search "
        "server asks Tavily with it)"
    )
    assert not run_dir.exists()
    # A key Tavily refuses is named just as early, by Tavily's own key check (GET /usage).
    with TavilyStandIn(lambda query: [], api_key=KEY) as tavily:
        revoked = {"TAVILY_API_KEY": "tvly-revoked-e2e", BASE_URL_ENV: tavily.base_url}
        proc = _mcp_run(gaia_file, run_dir, "http://127.0.0.1:9/never", "tavily", env | revoked)
        searched = list(tavily.requests)
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "error: --search tavily: Tavily refused TAVILY_API_KEY (HTTP 401 from "
    ), proc.stderr
    assert "tvly-revoked" not in proc.stderr and searched == []
    assert not run_dir.exists()


class SearchTwice(StepPolicy):
    def step(self, conv: Conversation) -> object:
        if conv.turn < 2:
            return self.call(conv, "web_search", query=f"albums, try {conv.turn + 1}")
        return FinalAnswer("<ANSWER>3</ANSWER>")


def test_a_tavily_429_reaches_the_agent_as_a_tool_error(gaia_file: Path, tmp_path: Path) -> None:
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    run_dir = tmp_path / "run"
    results = _results("https://bands.example.org/albums")
    with (
        TavilyStandIn(lambda query: results, api_key=KEY, fail_with=[429]) as tavily,
        CapturingServer(lambda _: SearchTwice()) as model,
    ):
        env |= {"TAVILY_API_KEY": KEY, BASE_URL_ENV: tavily.base_url, "ANTHROPIC_API_KEY": API_KEY}
        proc = _mcp_run(gaia_file, run_dir, f"{model.root_url}/task/{{task_id}}", "tavily", env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert (row.status, row.prediction) == ("ok", "3")  # not an infrastructure failure
    refused, answered = row.trace
    assert refused.error is not None and "web search failed (rate_limit)" in refused.error
    assert answered.error is None and answered.output == format_results(results)
    search = row.details["search"]
    assert (search["n_calls"], search["errors"], search["credits"]) == (2, 1, 1)
    assert search["calls"][0]["error_kind"] == "rate_limit"


class AnswerAtOnce(StepPolicy):
    def step(self, conv: Conversation) -> object:
        assert conv.tool_name("web_search") is None and conv.tool_name("search") is None
        assert conv.tool_name("goto") is not None
        return FinalAnswer("<ANSWER>3</ANSWER>")


def test_none_offers_no_search_at_all(gaia_file: Path, tmp_path: Path) -> None:
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")} | {"ANTHROPIC_API_KEY": API_KEY}
    run_dir = tmp_path / "run"
    with CapturingServer(lambda _: AnswerAtOnce()) as model:
        proc = _mcp_run(gaia_file, run_dir, f"{model.root_url}/task/{{task_id}}", "none", env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
    row = PredictionRow.model_validate_json(line)
    assert (row.status, row.prediction) == ("ok", "3"), row.error  # the model saw no search
    assert [s["name"] for s in row.details["mcp_servers"]] == ["browser"]
    assert "search" not in row.details
    settings = Manifest.model_validate_json((run_dir / "manifest.json").read_text()).settings
    assert settings["backend"]["search_setting"] == "none"
    assert "search" in settings["backend"]["excluded_tools"]
    assert "search" not in settings["backend"]["allowed_tools"]


@pytest.mark.timeout(700)  # covers the commands it runs (their timeouts)
def test_web_search_calls_are_recorded_without_the_key_and_replayed(
    gaia_file: Path, tmp_path: Path
) -> None:
    """``--web record``: the web_search server's Tavily call and the page opened go through
    the proxy into the archive, which keeps no trace of the key; ``--web replay`` with
    Tavily and the site stopped gives the agent the same results and page, zero misses."""
    archive = tmp_path / "archive"
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")}
    env |= {"TAVILY_API_KEY": KEY, "ANTHROPIC_API_KEY": API_KEY}
    runs = {}
    with LocalSite() as site:
        # The local page first, so the agent opens what the recording can reach.
        results = _results(site.task_url("searched", "/catalogue"))[1:]
        with TavilyStandIn(lambda query: results, api_key=KEY) as tavily:
            tavily_url = tavily.base_url
            with CapturingServer(lambda _: SearchThenOpen("goto")) as model:
                runs["record"] = _mcp_run(
                    gaia_file, tmp_path / "recorded", f"{model.root_url}/task/{{task_id}}",
                    "tavily", env | {BASE_URL_ENV: tavily_url}, "--web", "record", str(archive),
                )  # fmt: skip
            assert len(tavily.requests) == 1
    # Tavily and the site are gone; the same search and page come from the archive.
    with CapturingServer(lambda _: SearchThenOpen("goto")) as model:
        runs["replay"] = _mcp_run(
            gaia_file, tmp_path / "replayed", f"{model.root_url}/task/{{task_id}}",
            "tavily", env | {BASE_URL_ENV: tavily_url}, "--web", "replay", str(archive),
        )  # fmt: skip
    rows = {}
    for mode, proc in runs.items():
        assert proc.returncode == 0, proc.stderr[-3000:]
        run_dir = tmp_path / ("recorded" if mode == "record" else "replayed")
        (line,) = (run_dir / "predictions.jsonl").read_text().splitlines()
        rows[mode] = PredictionRow.model_validate_json(line)
    recorded, replayed = rows["record"], rows["replay"]
    assert replayed.prediction == recorded.prediction == "3"
    assert [c.output for c in replayed.trace] == [c.output for c in recorded.trace]
    assert replayed.trace[0].output == format_results(results)
    assert '"httpStatus":200,"title":"Catalogue' in (replayed.trace[1].output or "")
    assert replayed.details["web"]["n_misses"] == 0
    assert replayed.details["web"]["n_requests"] == recorded.details["web"]["n_requests"] >= 2
    # The key went to Tavily as a header when recording; the archive kept no copy of it.
    for warc in WebArchive(archive).warcs():
        assert KEY.encode() not in gzip.decompress(warc.read_bytes())


def test_codex_searches_through_the_same_web_search_server(gaia_file: Path, tmp_path: Path):
    """--agent codex gets the very same web_search server, as a second required MCP server
    of its config, its key passed by name (never written into the config)."""
    env = {k: "" for k in os.environ if k.endswith("_API_KEY")} | {"TAVILY_API_KEY": KEY}
    run_dir = tmp_path / "codex"
    agent = ["--agent", "codex", "--backend", "lightpanda", "--model", "scripted-codex"]
    proc, env, results, searched, visits = _searched_run(
        gaia_file, run_dir, agent, "goto", "/v1", env | {"OPENAI_API_KEY": API_KEY}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (request,) = searched
    assert request.key_matched
    row = _searched_row(run_dir, results, visits, "goto")
    assert row.details["refused_calls"] == []
    assert row.details["search"]["n_calls"] == 1
    settings = Manifest.model_validate_json((run_dir / "manifest.json").read_text()).settings
    assert settings["backend"]["agent"] == "codex"
    assert settings["backend"]["search_parameters"] == SEARCH_PARAMETERS
    assert "search" in settings["backend"]["excluded_tools"]  # Lightpanda's own, withheld
    config = next(run_dir.glob("attempts/*/codex-config.toml")).read_text()
    assert "[mcp_servers.search]" in config and '"TAVILY_API_KEY"' in config
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert not left_running(run_dir)
