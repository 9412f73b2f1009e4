"""What each stack costs the machine, measured on the real programs (only the model is
scripted): the native Lightpanda agent, Claude Code on ``lightpanda mcp`` and Claude Code
on Playwright's server with Chromium, on the same localweb tasks. Each role of each stack
has its memory and CPU; Chromium's engine takes more memory than Lightpanda's; a page that
allocates a known amount raises the engine's peak by that much; a timed-out attempt keeps
its figures; a run from another kind of machine is not comparable; and the tool replies'
sizes are those of the agent's own trace."""

from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
)
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.records.schema import Manifest, PredictionRow
from agent_benchmarks.report.schema import ComparisonReport
from tests.support import (
    ASSISTANTBENCH_ROWS,
    left_running,
    no_api_keys,
    read_rows,
    run_cli,
    write_jsonl,
)

# The module's three runs (a fixture of the first test that needs them) and each test's own
# commands (at most three): 300 s of timeout each, which the limit covers.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1000)]

MB = 1 << 20
TASKS = "deal-price,catalogue-price,home-links"
# Each stack's run command, and the roles its processes must show.
MCP = "localweb-mcp-run"
# Each stack's run of three tasks takes seconds; the three together stay within the module's
# time limit (the first test bears the fixture's commands: tests/support.check_time_limit).
RUN_TIMEOUT_S = 300
STACKS: dict[str, tuple[list[str], set[str]]] = {
    "native": (["localweb-run"], {"engine+agent"}),
    "mcp-lightpanda": ([MCP, "--backend", "lightpanda"], {"agent", "engine+mcp_server"}),
    "mcp-playwright": ([MCP, "--backend", "playwright"], {"agent", "engine", "mcp_server"}),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three stacks on the same tasks, once for the module's tests."""
    root = tmp_path_factory.mktemp("stacks")
    out = {}
    for name, (command, _) in STACKS.items():
        run_dir = root / name
        proc = run_cli(
            *command,
            "--task-ids",
            TASKS,
            "--workers",
            "2",
            "--out-dir",
            str(run_dir),
            env=no_api_keys(),
            timeout=RUN_TIMEOUT_S,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert not left_running(run_dir)
        out[name] = run_dir
    return out


def _engine_peak(row: PredictionRow) -> int:
    assert row.resources is not None
    return next(r.peak_pss_bytes for name, r in row.resources.roles.items() if "engine" in name)


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_every_role_of_every_stack_has_its_memory_and_cpu(
    stack: str, runs: dict[str, Path]
) -> None:
    rows = read_rows(runs[stack])
    assert len(rows) == 3 and all(r.status == "ok" for r in rows)
    for row in rows:
        use = row.resources
        assert use is not None, row.id
        assert set(use.roles) == STACKS[stack][1], (row.id, use.roles)
        for name, role in use.roles.items():
            assert role.peak_pss_bytes > 0 and role.cpu_s > 0, (row.id, name, role)
        assert use.peak_bytes and use.peak_bytes > 0 and use.cpu_s and use.cpu_s > 0
        assert use.cpu_s == pytest.approx(sum(r.cpu_s for r in use.roles.values()), abs=0.01)
        assert use.samples >= 2 and use.sampler_cpu_s is not None
        # The site's own log saw what the browser fetched.
        fetched = use.fetched
        assert fetched is not None and fetched.source == "the localweb site's request log"
        assert fetched.requests and fetched.bytes and fetched.pages
        assert all(c.output_chars is not None and c.output_tokens for c in row.trace)
    one_process = {"native": "engine+agent", "mcp-lightpanda": "engine+mcp_server"}
    if stack in one_process:
        role = rows[0].resources.roles[one_process[stack]]  # type: ignore[union-attr]
        assert role.note and "one process" in role.note and role.programs == ["lightpanda"]
    if stack == "mcp-playwright":
        roles = rows[0].resources.roles  # type: ignore[union-attr]
        assert "chromium" in roles["engine"].programs and roles["mcp_server"].programs == ["node"]
        assert roles["engine"].processes > 3  # the browser, its zygotes, renderers, ...
    manifest = Manifest.model_validate_json((runs[stack] / "manifest.json").read_text())
    assert manifest.machine is not None and manifest.machine.cores > 0
    assert all(r.resources and r.resources.machine == manifest.machine.kind_id for r in rows)
    how = manifest.settings["resources"]
    assert how["sampled"] and how["interval_s"] == 0.2 and "PSS" in how["role_peak"]
    # The native runner caps memory by default: its peak is its cgroup's own.
    if stack == "native" and how["attempt_peak"].startswith("the attempt's own cgroup"):
        assert all(r.resources and "cgroup" in (r.resources.peak_source or "") for r in rows)


def test_chromiums_engine_takes_more_memory_than_lightpandas(runs: dict[str, Path]) -> None:
    """On the same tasks, through the same agent: the order, not a value."""
    lightpanda = {r.id: _engine_peak(r) for r in read_rows(runs["mcp-lightpanda"])}
    chromium = {r.id: _engine_peak(r) for r in read_rows(runs["mcp-playwright"])}
    assert lightpanda.keys() == chromium.keys()
    for task in lightpanda:
        assert chromium[task] > lightpanda[task], (task, chromium[task], lightpanda[task])


def test_compare_shows_each_stacks_cost_and_its_snapshot_weight(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    out, markdown = tmp_path / "cmp.json", tmp_path / "cmp.md"
    proc = run_cli(
        "agent-benchmarks",
        "compare",
        *map(str, runs.values()),
        "--json-out",
        str(out),
        "--markdown-out",
        str(markdown),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Resources: memory, CPU and page weight" in proc.stdout
    assert "attempts that fit at once" in markdown.read_text()
    report = ComparisonReport.model_validate_json(out.read_text())
    rows = {Path(r.run_dir).name: r for r in report.groups[0].rows}
    for name, row in rows.items():
        r = row.resources
        assert r is not None and r.n_measured == 3, name
        assert r.peak_median_bytes and r.cpu_s_per_success and r.fit_at_once
        assert r.fetched is not None and r.fetched.pages_median
        assert all(reason.code != "machine" for reason in row.eligibility.reasons)
    # The native run's peaks are its cgroup's, the others' sampled: all shown as sampled.
    summaries = {name: row.resources for name, row in rows.items() if row.resources}
    assert {r.peak_source for r in summaries.values()} == {"pss-sampled"}
    engine = {
        name: next(x for x in r.roles if "engine" in x.role).peak_median_bytes
        for name, r in summaries.items()
    }
    assert engine["mcp-playwright"] > engine["mcp-lightpanda"]  # type: ignore[operator]
    tools = {d.key: {t.tool: t for t in d.tools} for d in report.groups[0].diagnostics}
    for stack_tools in tools.values():
        assert all(t.n_replies_sized == t.n_calls for t in stack_tools.values())


def test_a_run_from_another_kind_of_machine_is_not_comparable(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    moved = tmp_path / "elsewhere"
    shutil.copytree(runs["native"], moved)
    manifest = json.loads((moved / "manifest.json").read_text())
    manifest["machine"]["cores"] = manifest["machine"]["cores"] * 8
    (moved / "manifest.json").write_text(json.dumps(manifest))
    (moved / "scores.json").unlink()  # graded again, with the manifest as it is now
    proc = run_cli("agent-benchmarks", "compare", str(runs["mcp-lightpanda"]), str(moved))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "machine: resource figures from another kind of machine" in proc.stdout
    assert "not comparable" in proc.stdout


def test_tool_reply_sizes_are_those_of_the_agents_own_trace(runs: dict[str, Path]) -> None:
    for row in read_rows(runs["native"]):
        folder = runs["native"] / "attempts" / f"{row.id}.1.1"
        records = [json.loads(x) for x in (folder / "trace.jsonl").read_text().splitlines() if x]
        replies = [r["result"] for r in records if r["type"] == "tool"]
        assert [c.output_chars for c in row.trace] == [len(r) for r in replies]
        # Read by the model's tokenizer: the provider's count, not an estimate.
        assert all(c.output_tokens_estimated is False for c in row.trace[1:])


# --- a page of known weight, and a timed-out attempt --------------------------------------------


class ReadPage(StepPolicy):
    """Reads one page with markdown, then answers what it said."""

    def __init__(self, url: str):
        self.url = url

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return self.call(conv, "markdown", url=self.url)
        found = re.search(r"Allocated (\d+) MB", conv.last_tool_text or "")
        return FinalAnswer(f"<ANSWER>{found.group(1) if found else 'none'}</ANSWER>")


def test_a_page_that_allocates_raises_the_engines_peak_by_as_much(tmp_path: Path) -> None:
    """The localweb page /lab/allocate keeps a block of the given size in the browser while
    its load is held: the engine's peak grows by at least that much."""
    allocated = 300
    dataset = write_jsonl(
        tmp_path / "ab.jsonl",
        [dict(ASSISTANTBENCH_ROWS[0], id=f"alloc-{mb}") for mb in (0, allocated)],
    )
    with LocalSite() as site:
        urls = {
            f"alloc-{mb}": site.task_url(f"a{mb}", f"/lab/allocate?mb={mb}&hold_ms=1500")
            for mb in (0, allocated)
        }
        with ScriptedModelServer(lambda task: ReadPage(urls[task]), models=["m"]) as server:
            proc = run_cli(
                "assistantbench-run",
                "--dataset-file", str(dataset),
                "--provider", "openai_compatible",
                "--model", "m",
                "--base-url", f"{server.root_url}/task/{{task_id}}/v1",
                "--scaffold",
                "--no-grade",
                "--out-dir", str(tmp_path / "run"),
                env={**no_api_keys(), "OPENAI_API_KEY": API_KEY},
                timeout=300,
            )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {r.id: r for r in read_rows(tmp_path / "run")}
    assert rows[f"alloc-{allocated}"].prediction == str(allocated)  # the page did allocate
    grown = _engine_peak(rows[f"alloc-{allocated}"]) - _engine_peak(rows["alloc-0"])
    assert grown >= allocated * MB, grown / MB


def test_a_timed_out_attempt_keeps_its_figures_up_to_its_end(tmp_path: Path) -> None:
    """Chromium's page never loads: Claude Code waits on the navigation until the attempt
    is killed at its deadline; every role's figures up to then are in its row."""
    run_dir = tmp_path / "hung"
    proc = run_cli(
        "localweb-mcp-run",
        "--backend", "playwright",
        "--task-ids", "deal-price",
        "--hang-path", "/deal",
        "--hang-seconds", "60",
        "--timeout", "12",
        "--out-dir", str(run_dir),
        env=no_api_keys(),
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]  # every attempt failed
    (row,) = read_rows(run_dir)
    assert row.status == "timeout"
    use = row.resources
    assert use is not None and set(use.roles) == {"agent", "engine", "mcp_server"}
    for name, role in use.roles.items():
        assert role.peak_pss_bytes > 0 and role.cpu_s > 0, (name, role)
    assert use.samples > 20  # sampled until the kill, 12 s in
    assert not left_running(run_dir)


# --- what the browser fetched through the recording proxy; --workers auto -----------------------


def _free_port() -> int:
    """A port free now, for the site a recording is keyed by (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_recording_proxy_counts_what_the_browser_fetched(tmp_path: Path) -> None:
    """Recording, the proxy sees every request the site's own log sees, with the same bytes;
    replaying, the archive answers the same requests with the same bytes."""
    archive, site = tmp_path / "archive", ["--site-port", str(_free_port())]
    fetched = {}
    for mode in ("record", "replay"):
        run_dir = tmp_path / mode
        proc = run_cli(
            "localweb-run",
            "--task-ids", "deal-price,catalogue-price",
            "--web", mode, str(archive),
            *site,
            "--out-dir", str(run_dir),
            env=no_api_keys(),
            timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        fetched[mode] = {}
        for row in read_rows(run_dir):
            use = row.resources
            assert use is not None and use.fetched is not None
            assert use.fetched.source == "the web archive's proxy"
            assert use.fetched.requests == len(row.details["site"]["requests"])
            assert use.fetched.bytes and use.fetched.pages == 1
            fetched[mode][row.id] = use.fetched
    assert fetched["record"] == fetched["replay"]


def test_workers_auto_sizes_the_pool_from_a_probe_then_from_the_earlier_run(
    tmp_path: Path,
) -> None:
    def run(name: str, *extra: str):
        return run_cli(
            "localweb-run",
            "--task-ids", TASKS,
            "--workers", "auto",
            "--out-dir", str(tmp_path / name),
            *extra,
            env=no_api_keys(),
            timeout=300,
        )  # fmt: skip

    def sizing(name: str) -> tuple[Manifest, dict]:
        manifest = Manifest.model_validate_json((tmp_path / name / "manifest.json").read_text())
        return manifest, manifest.settings["workers_auto"]

    first = run("first")
    assert first.returncode == 0, first.stderr[-3000:]
    manifest, record = sizing("first")
    assert record["from"].startswith("a probe attempt") and record["attempts_measured"] == 1
    assert (
        manifest.workers
        == record["workers"]
        == min(record["fit_by_memory"], record["fit_by_cpu"], 2)
    )
    assert "--workers auto:" in first.stderr and len(read_rows(tmp_path / "first")) == 3
    second = run("second")
    assert second.returncode == 0, second.stderr[-3000:]
    manifest, record = sizing("second")
    assert record["from"] == f"run {tmp_path / 'first'}" and record["attempts_measured"] == 3
    assert manifest.workers == record["workers"] >= 1
    assert record["peak_bytes_p90"] > 0 and record["cores"] == manifest.machine.cores  # type: ignore[union-attr]
    refused = run("ray", "--executor", "ray")
    assert refused.returncode == 2 and "--workers auto" in refused.stderr
    assert not (tmp_path / "ray").exists()
