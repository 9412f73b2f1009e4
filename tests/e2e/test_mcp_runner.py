"""``<suite>-mcp-run``: the real Claude Code, locked to one real browser MCP server, on the
real browsers; only the model is scripted (the Anthropic Messages protocol, streamed)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import (
    Conversation,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
    StepPolicy,
    call,
)
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.records.schema import Manifest, Scores
from tests.support import gaia_mcp_run, left_running, no_api_keys, read_rows, run_cli

pytestmark = pytest.mark.e2e


# Tasks a backend's tool surface cannot do, and why: asserted exactly, so a change either
# way (a regression, or a surface that learned something) shows up.
EXPECTED_FAILURES: dict[str, dict[str, str]] = {
    "lightpanda": {},
    "agent-browser": {},
    "agent-browser-lightpanda": {
        # Lightpanda's accessibility tree over CDP leaves out shadow roots (its own markdown
        # tool includes them), so agent-browser's snapshot on this engine lacks the card.
        "shadow-battery": "not found",
    },
    "browser-use": {
        # browser_get_html serialises no shadow roots and browser_get_state lists only
        # interactive elements: the spec card's text is out of reach.
        "shadow-battery": "not found",
    },
    "playwright": {},
    "chrome-devtools": {},
    "cli-agent-browser": {},
}
# The flags that choose a stack, where its name is not simply --backend's.
STACK_FLAGS = {"cli-agent-browser": ["--backend", "cli", "--cli", "agent-browser"]}


@pytest.mark.timeout(1000)  # covers the commands it runs (their timeouts)
@pytest.mark.parametrize("backend", sorted(EXPECTED_FAILURES))
def test_localweb_end_to_end_on_each_backend(backend: str, tmp_path: Path) -> None:
    """The whole localweb suite through Claude Code on one real MCP server and real
    browser; the site's own record judges the state-changing tasks."""
    run_dir = tmp_path / backend
    proc = run_cli(
        "localweb-mcp-run",
        *STACK_FLAGS.get(backend, ["--backend", backend]),
        "--workers",
        "2",
        "--out-dir",
        str(run_dir),
        env=no_api_keys(),
        timeout=900,  # 24 tasks, each a Claude Code process and a browser
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.n_tasks == 24
    failed = {e.id: e.prediction for e in scores.per_task if not e.correct}
    assert failed == EXPECTED_FAILURES[backend], [
        (e.id, e.details.get("failed")) for e in scores.per_task if not e.correct
    ]
    rows = read_rows(run_dir)
    assert {r.backend for r in rows} == {f"claude-mcp/{backend}"}
    assert all(r.status == "ok" for r in rows)
    assert all(c.name.startswith("mcp__browser__") for r in rows for c in r.trace)
    assert not any(r.details["contaminated"] for r in rows)
    manifest = scores.manifest
    assert manifest is not None and manifest.mode == "scaffold"
    assert manifest.programs["claude-code"].startswith("2.1.")
    settings = manifest.settings["backend"]
    assert settings["mcp_tool_timeout_ms"] > 0
    assert not set(settings["allowed_tools"]) & set(settings["excluded_tools"])
    assert settings["surface"] == "upstream"
    assert settings["built_in_tools"] == ["TodoWrite", "LS"]
    if backend == "lightpanda":
        assert "screenshot" in settings["excluded_tools"] and "goto" in settings["allowed_tools"]
        assert "search" in settings["allowed_tools"]
    if backend.startswith("agent-browser"):
        assert manifest.programs["agent-browser"].startswith("agent-browser 0.")
        # the native binary behind npm's shim, recorded as lightpanda's is
        assert len(manifest.programs["agent-browser_sha256"]) == 64
    if backend == "browser-use":
        assert manifest.programs["browser-use"] == "0.13.14"
        assert {"browser_screenshot", "retry_with_browser_use_agent", "browser_close_all"} <= set(
            settings["excluded_tools"]
        )
        # browser-use ran with its own HOME (nothing of it in Claude Code's), and that HOME
        # with its Chrome profile is removed when the attempt ends
        assert not list(run_dir.glob("attempts/*/home/.config/browseruse"))
        assert not list(run_dir.glob("attempts/*/browser-use-home"))
    if backend in ("playwright", "chrome-devtools"):
        program = f"{backend}-mcp"
        assert manifest.programs[program].endswith(
            {"playwright": "0.0.83", "chrome-devtools": "1.11.0"}[backend]
        )
        assert manifest.programs["chromium"].startswith("Chromium ")
        assert "browser_take_screenshot" in settings["excluded_tools"] or (
            "take_screenshot" in settings["excluded_tools"]
        )
        # the server's files (Playwright's snapshots) stayed in the attempt's temp folder
        assert not list(run_dir.glob("attempts/*/.playwright-mcp"))
    if backend == "cli-agent-browser":
        assert settings["cli"] == "agent-browser" and settings["allowed_tools"] == ["shell"]
        assert manifest.programs["agent-browser"].startswith("agent-browser 0.")
        # every command line the agent ran is in its trace and in the shell's log
        for row in rows:
            commands = [c.args["command"] for c in row.trace]
            assert commands and all(c.startswith("agent-browser ") for c in commands)
            assert row.details["refused_calls"] == []
        assert len(list(run_dir.glob("attempts/*/cli-shell.jsonl"))) == len(rows) == 24
    # Nothing of any attempt runs on: claude, the MCP server, agent-browser daemons and
    # the browsers carry the run folder in their argv or environment.
    assert not left_running(run_dir)


@pytest.mark.parametrize("backend", ["agent-browser", "browser-use"])
def test_a_hanging_backend_is_cut_at_the_timeout_with_nothing_left(
    backend: str, tmp_path: Path
) -> None:
    """The page never finishes loading, so the browser tool call hangs: the attempt is cut
    at --timeout, recorded as a timeout, and the whole tree (browser included) is gone."""
    run_dir = tmp_path / backend
    temp_before = _temp_browser_profiles()
    proc = run_cli(
        "localweb-mcp-run",
        "--backend",
        backend,
        "--task-ids",
        "deal-price",
        "--hang-path",
        "/deal",
        "--hang-seconds",
        "300",
        "--timeout",
        "20",
        "--no-grade",
        "--out-dir",
        str(run_dir),
        env=no_api_keys(),
    )
    assert proc.returncode == 1, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert row.status == "timeout" and 20 <= row.duration_s < 35
    assert not left_running(run_dir)
    # The killed daemon could not delete its Chromium profile; the attempt's private
    # TMPDIR took it along, so the system temp folder gained none.
    assert _temp_browser_profiles() == temp_before


def _temp_browser_profiles() -> set[Path]:
    temp = Path(tempfile.gettempdir())
    return {*temp.glob("agent-browser-chrome-*"), *temp.glob("org.chromium.Chromium.*")}


@pytest.mark.parametrize("backend", ["playwright", "agent-browser"])
def test_a_deep_tmpdir_still_lets_chromium_start(backend: str, tmp_path: Path) -> None:
    """Chromium's singleton socket lives in the attempt's temp folder, and a socket path
    holds 107 bytes: under a TMPDIR as deep as a job scheduler's, Chromium could not start
    and every tool call failed. The attempts' folders go in /tmp then, and the run says so."""
    deep = Path(tempfile.mkdtemp()) / "scheduler" / "job-000123456" / "task-7" / "tmp"
    deep.mkdir(parents=True)
    run_dir = tmp_path / "run"
    try:
        proc = run_cli(
            "localweb-mcp-run", "--backend", backend, "--task-ids", "home-links",
            "--out-dir", str(run_dir), env={**no_api_keys(), "TMPDIR": str(deep)}, timeout=180,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert f"TMPDIR {deep} is {len(str(deep))} characters" in proc.stderr
        (row,) = read_rows(run_dir)
        assert row.status == "ok" and not any(c.error for c in row.trace), row.trace
        scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
        assert scores.accuracy_strict == 1.0
        assert not list(deep.iterdir())
    finally:
        shutil.rmtree(deep.parents[3], ignore_errors=True)


def test_each_backend_names_its_missing_prerequisite(tmp_path: Path) -> None:
    """Checked before anything starts: exit 2 with what is missing and how to install it."""
    proc = run_cli(
        "localweb-mcp-run",
        "--backend",
        "browser-use",
        "--browser-use-python",
        str(tmp_path / "nowhere" / "python"),
        "--out-dir",
        str(tmp_path / "bu"),
        env=no_api_keys(),
    )
    assert proc.returncode == 2
    assert "uv sync --locked --project competitors/browser-use" in proc.stderr
    assert not (tmp_path / "bu").exists()
    # No chromium on PATH (node stays: Claude Code is a node script).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(shutil.which("node") or "/usr/bin/node")
    proc = run_cli(
        "localweb-mcp-run",
        "--backend",
        "agent-browser",
        "--out-dir",
        str(tmp_path / "ab"),
        env={**no_api_keys(), "PATH": str(bin_dir)},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "chromium not found: run `apt-get install -y chromium`" in proc.stderr
    proc = run_cli(
        "localweb-mcp-run",
        "--backend",
        "lightpanda",
        "--claude",
        str(tmp_path / "claude"),
        "--out-dir",
        str(tmp_path / "lp"),
        env=no_api_keys(),
    )
    assert proc.returncode == 2
    assert "--claude" in proc.stderr and "not an executable file" in proc.stderr


class LeaveTheBrowser(StepPolicy):
    """A model that tries a shell, a web search, Lightpanda's search tool (allowed on the
    upstream surface only) and TodoWrite (a built-in upstream left), then answers."""

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return call("Bash", command="cat /etc/passwd")
        if conv.turn == 1:
            return call("WebSearch", query="gaia validation answers")
        if conv.turn == 2:
            return call("mcp__browser__search", query="gaia answers")
        if conv.turn == 3:
            return call("TodoWrite", todos=[])
        return FinalAnswer("<ANSWER>3</ANSWER>")


def _gaia_mcp(gaia_file: Path, server: ScriptedModelServer, run_dir: Path, *extra: str):
    return gaia_mcp_run(gaia_file, server.root_url, run_dir, "--backend", "lightpanda", *extra)


def _listed_tools(listing: str) -> set[str]:
    """The tools ``--list-tools`` says the model is offered, as the model names them."""
    lines = listing.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("allowed MCP tools")) + 1
    end = next(i for i, x in enumerate(lines) if x.startswith("search:"))
    tools = {f"mcp__browser__{x.strip().split('(')[0]}" for x in lines[start:end]}
    assert "built-in Claude Code tools offered: none" in lines
    carried = next(x for x in lines if x.startswith("  its requests also carry "))
    return tools | {carried.split()[4]}


@pytest.mark.timeout(420)  # covers the listing's 60 s and the run's 300 s
@pytest.mark.parametrize("surface", ["upstream", "strict"])
def test_list_tools_shows_what_the_model_is_really_offered(
    gaia_file: Path, tmp_path: Path, surface: str
) -> None:
    # --list-tools said TodoWrite and LS were offered; Claude Code's requests carried only
    # the MCP tools (and its reserved placeholder). The listing is checked against them.
    listing = run_cli(
        "gaia-mcp-run", "--backend", "lightpanda", "--surface", surface, "--list-tools",
        env=no_api_keys(),
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr[-2000:]
    with ScriptedModelServer(lambda task_id: ScriptedPolicy([FinalAnswer("3")])) as server:
        proc = _gaia_mcp(gaia_file, server, tmp_path / "run", "--surface", surface, "--no-grade")
        first = server.model_requests("g1-plain")[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert first.conversation is not None
    assert set(first.conversation.tool_names) == _listed_tools(listing.stdout)


@pytest.mark.parametrize("surface", ["upstream", "strict"])
def test_lockdown_refuses_and_the_audit_reports_the_refused_tools(
    gaia_file: Path, tmp_path: Path, surface: str
) -> None:
    run_dir = tmp_path / "audit"
    with ScriptedModelServer(lambda task_id: LeaveTheBrowser()) as server:
        proc = _gaia_mcp(gaia_file, server, run_dir, "--grade", "--surface", surface)
        offered = server.model_requests("g1-plain")[0]
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CONTAMINATED" not in proc.stderr
    (row,) = read_rows(run_dir)
    names = [c["name"] for c in row.details["refused_calls"]]
    # upstream's surface offers Lightpanda's search and leaves TodoWrite and LS to the
    # model: calling them is within it there; the shell and web search never are. Claude
    # Code refused every call outside the surface, so none contaminates.
    if surface == "upstream":
        assert names == ["Bash", "WebSearch"]
    else:
        assert names == ["Bash", "WebSearch", "mcp__browser__search", "TodoWrite"]
    assert row.details["n_refused_calls"] == len(names)
    assert row.details["contaminated"] is False and row.details["foreign_calls"] == []
    # None of the refused calls ran: Claude Code offered none of those tools, so each came
    # back as an error. (Claude Code 2.1.330 has no TodoWrite: offered by name, it is not
    # there, so that call fails on either surface.)
    calls = {c.name: c for c in row.trace}
    assert all(calls[name].error for name in ("Bash", "WebSearch", "TodoWrite"))
    assert offered.conversation is not None
    tools = offered.conversation.tool_names
    assert not {"Bash", "WebSearch", "TodoWrite", "LS"} & set(tools)
    assert "mcp__browser__goto" in tools
    assert ("mcp__browser__search" in tools) == (surface == "upstream")
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.settings["backend"]["surface"] == surface
    assert manifest.settings["flags"]["surface"] == surface
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.metrics["n_refused_calls"] == len(names)
    assert "n_contaminated" not in scores.metrics
    assert not any("contaminated" in w for w in scores.warnings)


@pytest.mark.parametrize("backend", ["lightpanda", "agent-browser"])
def test_list_tools_prints_the_surface_and_runs_nothing(backend: str, tmp_path: Path) -> None:
    proc = run_cli(
        "localweb-mcp-run",
        "--backend",
        backend,
        "--list-tools",
        "--out-dir",
        str(tmp_path / "never"),
        env=no_api_keys(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert f"backend {backend}, surface upstream" in out
    assert "built-in Claude Code tools offered: none" in out
    assert "--tools names TodoWrite, LS (upstream's)" in out
    if backend == "lightpanda":
        assert "  search(query*" in out and "  goto(url*" in out
        assert "  screenshot: multimodal" in out
    else:
        assert "  snapshot(interactive, urls, compact, depth, selector)" in out
        assert "  find(by*, value*, action*, value_after, name, exact)" in out
        assert "  eval(js*)" in out
    assert not (tmp_path / "never").exists()  # nothing ran
    strict = run_cli(
        "localweb-mcp-run", "--backend", backend, "--surface", "strict", "--list-tools",
        env=no_api_keys(),
    )  # fmt: skip
    assert strict.returncode == 0, strict.stderr[-2000:]
    assert "surface strict" in strict.stdout
    assert "built-in Claude Code tools offered: none" in strict.stdout
    if backend == "lightpanda":
        assert "  search: strict surface" in strict.stdout
        assert "  search(" not in strict.stdout


def test_a_hung_model_is_cut_at_the_timeout_with_nothing_left(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "hung"
    with LocalSite() as site:
        url = site.task_url("g1-plain", "/catalogue")

        class ReadThenHang(StepPolicy):
            def step(self, conv: Conversation) -> object:
                return self.call(conv, "goto", url=url)

        with ScriptedModelServer(lambda task_id: ReadThenHang()) as server:
            server.fault_on("g1-plain", {2: Fault.hang()})
            proc = _gaia_mcp(gaia_file, server, run_dir, "--timeout", "15")
    assert proc.returncode == 1, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert row.status == "timeout" and 15 <= row.duration_s < 25
    assert not left_running(run_dir)


class BrowseForever(StepPolicy):
    """A model that never answers: it reloads the same page turn after turn."""

    def __init__(self, url: str) -> None:
        self.url = url

    def step(self, conv: Conversation) -> object:
        return self.call(conv, "goto", url=self.url)


@pytest.mark.parametrize(
    ("flag", "value", "subtype"),
    [
        ("--max-turns", "3", "error_max_turns"),
        ("--max-budget-usd", "0.0001", "error_max_budget_usd"),
    ],
)
def test_a_spent_budget_is_a_wrong_answer_and_the_row_says_so(
    gaia_file: Path, tmp_path: Path, flag: str, value: str, subtype: str
) -> None:
    run_dir = tmp_path / "budget"
    with LocalSite() as site:
        url = site.task_url("g1-plain", "/catalogue")
        with ScriptedModelServer(lambda task_id: BrowseForever(url)) as server:
            proc = _gaia_mcp(gaia_file, server, run_dir, flag, value)
            requests = len(server.model_requests("g1-plain"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert row.status == "budget" and row.error_class is None
    assert row.details["budget_exhausted"] == subtype
    assert requests < 10  # stopped by the cap, not by the timeout
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    budgets = manifest.settings["backend"]["budgets"]
    if flag == "--max-turns":
        assert budgets["max_turns"] == 3
    else:
        assert budgets["max_cost_usd"] == 0.0001
    assert budgets["max_tokens"] is None  # Claude Code has no token cap: declared, not absent
