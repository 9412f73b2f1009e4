"""``agent-benchmarks engine`` for real: every driver (Lightpanda's script replay, Puppeteer
and Playwright for Node, Playwright for Python, each browser MCP server through the scripted
MCP client) on the real engines (``lightpanda serve``, Debian's Chromium), on the bundled
site, through the command a user types. The tests check the method and the records, never
a speed: small rotation counts, and ratios only where a difference was put there on purpose.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_benchmarks.enginebench.configs import ALL
from agent_benchmarks.enginebench.raw import load
from agent_benchmarks.enginebench.report import summarise
from tests.e2e.offline import offline_argv
from tests.support import REPO, check_time_limit, chromium_binary, start_at_once

pytestmark = pytest.mark.e2e

# The run of every configuration (a module fixture) counts toward whichever of its tests
# sets it up: each of them has the time limit that covers it.
EVERY_CONFIGURATION_S = 1200
covers_every_configuration = pytest.mark.timeout(EVERY_CONFIGURATION_S + 180)


def engine(*args: str, timeout: float, wrap=None) -> subprocess.CompletedProcess[str]:
    """``agent-benchmarks engine ARGS``, as a user runs it (``wrap`` makes it offline); its
    ``timeout`` counts toward the test's time limit."""
    check_time_limit("agent-benchmarks engine", timeout)
    command = [sys.executable, "-m", "agent_benchmarks", "engine", *args]
    done = subprocess.run(
        wrap(command) if wrap else command,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done


def run(out: Path, *flags: str, timeout: float) -> Path:
    engine("run", "--out-dir", str(out), "--pace", "0", *flags, timeout=timeout)
    return out / "raw.jsonl"


def rows_by(raw_path: Path) -> dict[tuple[str, str, str], dict]:
    return {(r["task"], r["config"], r["mode"]): r for r in summarise(load(raw_path))}


@pytest.fixture(scope="module")
def every_configuration(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 13 configurations, cold and warm, on the sign-in and a localweb page: one
    measured rotation each."""
    chromium_binary()
    out = tmp_path_factory.mktemp("engine") / "all"
    return run(
        out,
        "--tasks", "login,localweb:catalogue-price", "--runs", "1", "--warmup", "0",
        timeout=EVERY_CONFIGURATION_S,
    )  # fmt: skip


@covers_every_configuration
def test_every_configuration_passes_its_validity_gate_on_at_least_two_tasks(
    every_configuration: Path,
) -> None:
    rows = rows_by(every_configuration)
    for config in ALL:
        passed = [
            task
            for task in ("login", "localweb:catalogue-price")
            if all(rows[(task, config.name, mode)]["gate"] for mode in ("cold", "warm"))
        ]
        assert len(passed) >= 2, (config.name, [r for k, r in rows.items() if k[1] == config.name])


@covers_every_configuration
def test_each_execution_records_its_time_and_its_whole_trees_cpu_and_memory(
    every_configuration: Path,
) -> None:
    raw = load(every_configuration)
    cgroup = raw.meta["measuring"]["method"].startswith("cgroup")
    for record in raw.executions:
        assert record["ok"], record
        assert record["ms"] > 0 and record["requests"] >= 1
        if cgroup:
            assert record["cpu_s"] > 0 and record["cgroup_peak_mb"] > 0, record
        if record["driver"] in ("puppeteer", "playwright", "playwright-py"):
            assert (record["launch_ms"] is not None) == (record["mode"] == "cold"), record
    # The meta record: every binary's version and hash, the drivers', the machine's.
    meta = raw.meta
    for binary in ("lightpanda", "chromium", "node"):
        assert len(meta["binaries"][binary]["sha256"]) == 64
        assert meta["binaries"][binary]["version"]
    assert meta["binaries"]["lightpanda"]["version"] == "1.0.2"
    assert meta["packages"]["npm"] == {"puppeteer-core": "24.43.1", "playwright-core": "1.65.1"}
    assert {"playwright", "lightpanda", "mcp"} <= set(meta["packages"]["pypi"])
    assert "playwright-mcp" in meta["mcp_servers"]["playwright"]
    assert meta["machine"]["kernel"] and meta["machine"]["cpus"] >= 1
    assert "cpu_governor" in meta["machine"]
    assert len(meta["tasks"]) == 2 and all(t["pandascript_sha256"] for t in meta["tasks"])


@covers_every_configuration
def test_the_report_regenerates_byte_for_byte_from_the_raw_file(
    every_configuration: Path, tmp_path: Path
) -> None:
    folder = every_configuration.parent
    made_by_the_run = {
        p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }
    assert Path("report.md") in made_by_the_run and Path("figures/login.svg") in made_by_the_run
    engine("report", str(every_configuration), "--out", str(tmp_path / "again"), timeout=60)
    again = {
        p.relative_to(tmp_path / "again"): p.read_bytes()
        for p in (tmp_path / "again").rglob("*")
        if p.is_file()
    }
    assert set(again) == set(made_by_the_run) - {Path("raw.jsonl")}
    for name, content in again.items():
        assert content == made_by_the_run[name], name
    assert b"<svg" in again[Path("figures/memory.svg")]


@covers_every_configuration
def test_a_run_leaves_no_process_and_no_cgroup_behind(every_configuration: Path) -> None:
    marked = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if b"AGENT_BENCHMARKS_ATTEMPT=engine-" in environ:
            marked.append(entry)
    assert marked == []
    meter_groups = [
        path for path in Path("/sys/fs/cgroup").rglob("agent-benchmarks-engine-*") if path.is_dir()
    ]
    assert meter_groups == []


@pytest.mark.timeout(660)
def test_a_configuration_slowed_on_purpose_is_reported_slower_by_about_that_much(
    tmp_path: Path,
) -> None:
    slow_ms = 300
    raw = run(
        tmp_path / "slow",
        "--tasks", "login", "--configs", "pandascript/lightpanda,mcp:lightpanda/lightpanda",
        "--slow", f"pandascript/lightpanda={slow_ms}",
        "--slow", f"mcp:lightpanda/lightpanda={slow_ms}",
        "--modes", "cold", "--runs", "3", "--warmup", "1",
        timeout=600,
    )  # fmt: skip
    rows = rows_by(raw)
    records = load(raw).executions
    for base in ("pandascript/lightpanda", "mcp:lightpanda/lightpanda"):
        slowed = f"{base}+slow{slow_ms}ms"
        # The site slowed each page of the slowed variant's episodes (not its static files):
        # the sign-in's form, its POST, the account page it leads to, and the profile.
        pages = {r["pages"] for r in records if r["config"] == slowed and r["ok"]}
        assert pages == {4}, pages
        expected = slow_ms * 4
        extra = (
            rows[("login", slowed, "cold")]["median_ms"]
            - rows[("login", base, "cold")]["median_ms"]
        )
        assert 0.75 * expected <= extra <= 1.5 * expected, (base, extra, expected)
        assert rows[("login", slowed, "cold")]["gate"]


@pytest.mark.timeout(660)
def test_a_task_whose_contract_fails_is_discarded_counted_and_never_timed(
    tmp_path: Path,
) -> None:
    # A whole-page read is the page's HTML, which leaves the shadow root's text out: the
    # answer is missing, the contract fails.
    raw = run(
        tmp_path / "discarded",
        "--tasks", "localweb:shadow-battery,localweb:catalogue-price",
        "--configs", "pandascript/lightpanda,puppeteer/lightpanda",
        "--modes", "cold", "--runs", "2", "--warmup", "0", "--give-up-after", "2",
        timeout=600,
    )  # fmt: skip
    loaded = load(raw)
    rows = rows_by(raw)
    for config in ("pandascript/lightpanda", "puppeteer/lightpanda"):
        row = rows[("localweb:shadow-battery", config, "cold")]
        assert (row["n_measured"], row["n_valid"], row["n_discarded"]) == (2, 0, 2)
        assert not row["gate"] and row["given_up"] and "median_ms" not in row
        assert rows[("localweb:catalogue-price", config, "cold")]["gate"]
    failed = [e for e in loaded.executions if e["task"] == "localweb:shadow-battery"]
    assert len(failed) == 4
    for record in failed:
        assert not record["ok"] and record["ms"] is None and record["cpu_s"] is None
        assert record["failed_clauses"] == ["answer is '38 hours': got None"]
    assert len(loaded.given_up) == 2
    report = (raw.parent / "report.md").read_text()
    assert "## Discarded executions" in report
    assert report.count("`localweb:shadow-battery` `pandascript/lightpanda` cold") == 2


@pytest.mark.timeout(960)
def test_cold_includes_the_browsers_launch_for_the_cdp_drivers(tmp_path: Path) -> None:
    raw = run(
        tmp_path / "coldwarm",
        "--tasks", "localweb:catalogue-price",
        "--configs", "puppeteer/*,playwright/*,playwright-py/*",
        "--runs", "3", "--warmup", "1",
        timeout=900,
    )  # fmt: skip
    rows = rows_by(raw)
    for driver in ("puppeteer", "playwright", "playwright-py"):
        # Chromium's launch (hundreds of ms here) is far above the noise of a driver's
        # start; Lightpanda's (tens of ms) is not, so its medians are not compared.
        config = f"{driver}/chromium"
        cold = rows[("localweb:catalogue-price", config, "cold")]
        warm = rows[("localweb:catalogue-price", config, "warm")]
        assert cold["median_ms"] > warm["median_ms"], (cold, warm)
    for record in load(raw).executions:
        if record["mode"] == "cold":
            assert 0 < record["launch_ms"] < record["ms"], record
        else:
            assert record["launch_ms"] is None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.timeout(960)
def test_tasks_replayed_from_a_recorded_archive_offline(tmp_path: Path) -> None:
    port = str(_free_port())
    archive = tmp_path / "archive"
    common = ["--tasks", "login,localweb:add-to-cart", "--site-port", port, "--warmup", "0"]
    recorded = run(
        tmp_path / "record", "--web", "record", str(archive), *common,
        "--configs", "puppeteer/chromium", "--modes", "cold", "--runs", "1",
        timeout=300,
    )  # fmt: skip
    assert all(e["ok"] for e in load(recorded).executions)
    out = tmp_path / "replay"
    report = engine(
        "run", "--out-dir", str(out), "--pace", "0", "--web", "replay", str(archive), *common,
        "--configs", "pandascript/*,playwright/lightpanda,mcp:lightpanda/*", "--runs", "1",
        wrap=lambda command: offline_argv((int(port),), command), timeout=600,
    )  # fmt: skip
    counted = json.loads(report.stdout.strip().splitlines()[-1])
    assert counted["returncode"] == 0
    assert counted["bypass"] == 0  # nothing reached the site's address but through the proxy
    replayed = load(out / "raw.jsonl").executions
    assert len(replayed) == 2 * 3 * 2  # tasks x configurations x modes
    for record in replayed:
        assert record["ok"], record
        assert record["web"]["n_misses"] == 0 and record["web"]["n_requests"] >= 1, record
        # The site re-enacted what the archive answered: the contract saw the sign-in.
        assert record["requests"] >= 1
    assert len({e["episode"] for e in replayed}) == 2  # the recorded URLs, one set per task


SMALL_RUN = [
    "agent-benchmarks", "engine", "run", "--tasks", "login", "--configs",
    "pandascript/lightpanda", "--modes", "cold", "--runs", "1", "--warmup", "0", "--pace", "0",
]  # fmt: skip


@pytest.mark.timeout(360)
def test_two_runs_started_in_the_same_instant_get_a_folder_each(tmp_path: Path) -> None:
    check_time_limit("agent-benchmarks engine (two at once)", 300)
    procs = start_at_once([SMALL_RUN, SMALL_RUN], cwd=tmp_path)
    done = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], done
    folders = sorted((tmp_path / "results" / "engine").iterdir())
    assert len(folders) == 2, folders
    for folder in folders:
        assert len(load(folder / "raw.jsonl").executions) == 1
        assert not (folder / ".run.lock").exists()  # released at the end
    if folders[1].name == f"{folders[0].name}-2":  # the same second: the second one says so
        said = [err for _, err in done if "was taken by another run" in err]
        assert len(said) == 1 and folders[1].name in said[0], done


def _marked(owner_pid: int) -> list[int]:
    """Processes carrying the engine marker of the run whose harness is ``owner_pid``."""
    needle = f"AGENT_BENCHMARKS_ATTEMPT=engine-{owner_pid}-".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if needle in Path(f"/proc/{entry}/environ").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.timeout(660)
def test_what_a_run_killed_with_sigkill_left_is_swept_by_the_next_run(tmp_path: Path) -> None:
    check_time_limit("agent-benchmarks engine (killed)", 300)
    out = tmp_path / "killed"
    # A held Chromium and an MCP server: what a killed run leaves running.
    killed = subprocess.Popen(
        [sys.executable, "-m", "agent_benchmarks", "engine", "run", "--out-dir", str(out),
         "--tasks", "login", "--configs", "puppeteer/chromium", "--runs", "20",
         "--warmup", "0", "--pace", "0"],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and killed.poll() is None:
        if out.joinpath("raw.jsonl").exists() and len(load(out / "raw.jsonl").executions) >= 2:
            break
        time.sleep(0.2)
    assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
    killed.kill()
    killed.wait()
    assert _marked(killed.pid), "the held browser outlives its harness"
    groups = [p for p in Path("/sys/fs/cgroup").rglob(f"agent-benchmarks-engine-{killed.pid}-*")]
    assert groups, "its meters' cgroups stay"
    next_run = run(
        tmp_path / "next", "--tasks", "login", "--configs", "pandascript/lightpanda",
        "--modes", "cold", "--runs", "1", "--warmup", "0", timeout=300,
    )  # fmt: skip
    assert len(load(next_run).executions) == 1
    assert _marked(killed.pid) == []
    assert not [p for p in groups if p.exists()]
    # What the killed run measured stays, and its report can still be made.
    assert len(load(out / "raw.jsonl").executions) >= 2
    engine("report", str(out), timeout=60)
    assert (out / "report.md").exists()
