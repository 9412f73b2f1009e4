"""The engine benchmark's pieces that need no browser: configurations, tasks, the programs
the script drivers run, and the report made from a raw file (statistics, validity gate,
discarded executions, the same bytes each time)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.enginebench import configs, programs, tasks
from agent_benchmarks.enginebench.processes import _exits_within
from agent_benchmarks.enginebench.raw import load
from agent_benchmarks.enginebench.report import report_markdown, summarise, write_report
from agent_benchmarks.localweb.oracle import ORACLES, Follow, Go, Press, Read, ReadHtml
from agent_benchmarks.localweb.site import data

# --- configurations ------------------------------------------------------------------------


def test_the_catalogue_crosses_every_driver_with_the_engines_it_runs_on() -> None:
    names = [c.name for c in configs.ALL]
    assert names[:7] == [
        "pandascript/lightpanda",
        "puppeteer/lightpanda",
        "puppeteer/chromium",
        "playwright/lightpanda",
        "playwright/chromium",
        "playwright-py/lightpanda",
        "playwright-py/chromium",
    ]
    mcp = {c.name: c.server for c in configs.ALL if c.kind == "mcp"}
    assert mcp == {
        "mcp:lightpanda/lightpanda": "lightpanda",
        "mcp:agent-browser/chromium": "agent-browser",
        "mcp:agent-browser/lightpanda": "agent-browser-lightpanda",
        "mcp:browser-use/chromium": "browser-use",
        "mcp:playwright/chromium": "playwright",
        "mcp:chrome-devtools/chromium": "chrome-devtools",
    }


def test_selection_takes_patterns_in_catalogue_order_and_adds_slowed_variants() -> None:
    chosen = configs.select(["*/chromium", "pandascript/*"], {"puppeteer/lightpanda": 250})
    assert chosen[0].name == "pandascript/lightpanda"
    assert all(c.engine == "chromium" for c in chosen[1:-1])
    slowed = chosen[-1]
    assert slowed.name == "puppeteer/lightpanda+slow250ms"
    assert slowed.slug == "puppeteer-lightpanda-slow250ms"
    assert slowed.base == "puppeteer/lightpanda"


@pytest.mark.parametrize(
    ("patterns", "slow", "message"),
    [
        (["webkit/*"], {}, "names no configuration"),
        (["*"], {"nope/lightpanda": 10}, "no configuration 'nope/lightpanda'"),
        (["*"], {"puppeteer/lightpanda": 0}, "above 0 ms"),
    ],
)
def test_a_bad_selection_is_one_clear_error(patterns, slow, message) -> None:
    with pytest.raises(InputError, match=message):
        configs.select(patterns, slow)


# --- tasks -------------------------------------------------------------------------------


def test_the_login_task_has_upstreams_login_fx_steps() -> None:
    (login,) = tasks.resolve_tasks(["login"], 1, 1)
    (steps,) = login.workers
    kinds = [type(s).__name__ for s in steps]
    assert kinds == ["Go", "Fill", "Fill", "Press", "WaitFor", "Go", "Read"]
    assert steps[3] == Press("#password", "Enter")
    assert login.answer(["| Points | 250 |"]) == str(data.ACCOUNT_POINTS)
    names = login.contract.describe()
    assert "server saw POST /account/login -> 303" in names
    assert "server saw GET /account/profile -> 200" in names


def test_a_crawl_deals_its_pages_to_its_workers_and_wants_every_one_served() -> None:
    (crawl,) = tasks.resolve_tasks(["crawl"], 7, 3)
    assert [len(w) // 2 for w in crawl.workers] == [3, 2, 2]
    paths = sorted(s.path for w in crawl.workers for s in w if isinstance(s, Go))
    assert len(set(paths)) == 7
    assert crawl.page_loads == 7
    assert len(crawl.contract.clauses) == 1 + 7  # the answer, then each page served
    pages = [f"SKU {p.sku} Price {p.price}" for p in data.PRODUCTS[:7]]
    assert crawl.answer(list(reversed(pages))) == crawl.contract.clauses[0].accepted[0]
    assert crawl.answer([*pages[:6], "nothing"]) is None


@pytest.mark.parametrize(
    ("names", "message"),
    [(["localweb:nope"], "no task 'localweb:nope'"), (["login", "login"], "named twice")],
)
def test_a_bad_task_list_is_one_clear_error(names: list[str], message: str) -> None:
    with pytest.raises(InputError, match=message):
        tasks.resolve_tasks(names, 3, 1)


def test_a_crawl_needs_no_more_workers_than_pages() -> None:
    with pytest.raises(InputError, match="parallel <= pages"):
        tasks.crawl_task(2, 3)


# --- the programs ------------------------------------------------------------------------


def test_the_pandascript_is_the_tasks_steps_as_page_methods_with_placeholders() -> None:
    (login,) = tasks.resolve_tasks(["login"], 1, 1)
    script = programs.pandascript(login, "domcontentloaded")
    assert 'await page.goto("$LP_BASE_URL/account/login", { waitUntil: "domcontentloaded" });' in (
        script
    )
    assert 'page.press("#password", "Enter");' in script
    assert 'page.waitForSelector("#logout");' in script
    assert "return { reads };" in script


def test_a_follow_runs_its_pattern_in_the_page_over_the_previous_reads_element() -> None:
    task = tasks.localweb_task("product-warranty")
    ops = programs.program(task, "load")["workers"][0]
    follow = next(op for op in ops if op["op"] == "follow")
    assert '"#product-list"' in follow["script"]  # the read before it
    assert "Kestrel\\\\ Binoculars" in follow["script"]  # re.escape, which JS reads too
    steps = ORACLES["iframe-pickup"].steps
    assert isinstance(steps[1], ReadHtml) and isinstance(steps[2], Follow)
    raw_follow = programs.program(tasks.localweb_task("iframe-pickup"), "load")["workers"][0][2]
    assert "if (!true)" in raw_follow["script"]  # a raw read's HTML, not its links


def test_readings_turn_each_read_into_the_oracles_reading_form() -> None:
    task = tasks.localweb_task("iframe-pickup")
    html = '<iframe id="warehouse-frame" src="/t/x/frame/warehouse"></iframe>'
    texts = programs.readings(task, [[html, "<p>Pickup point: Dock 14, <b>North</b></p>"]])
    assert texts[0] == html  # ReadHtml: as it came
    assert texts[1].strip() == "Pickup point: Dock 14, **North**"  # Read: markdown
    assert task.answer(texts) == "Dock 14"
    with pytest.raises(ValueError, match="read 1 elements, its steps read 2"):
        programs.readings(task, [[html]])
    assert isinstance(task.workers[0][-1], Read)


# --- the report --------------------------------------------------------------------------


def _meta(**settings: Any) -> dict[str, Any]:
    return {
        "kind": "meta",
        "started_utc": "2026-11-27T00:00:00Z",
        "harness": {"commit": "abc", "dirty": False},
        "settings": {
            "runs": 4,
            "warmup": 1,
            "pace_s": 0.0,
            "wait": "load",
            "modes": ["cold", "warm"],
            "min_valid_share": 0.8,
            "give_up_after": 3,
        }
        | settings,
        "configurations": [{"name": n} for n in ("fast/x", "slow/x", "broken/x")],
        "tasks": [
            {"name": "t", "title": "a task", "workers": 1, "page_loads": 1, "contract": ["x"]}
        ],
        "binaries": {"lightpanda": {"version": "1.0.2", "sha256": "0" * 64}},
        "packages": {"npm": {}, "pypi": {}},
        "mcp_servers": {},
        "machine": {
            "cpu_model": "cpu",
            "cpus": 2,
            "memory_gb": 1.0,
            "cpu_governor": None,
            "kernel": "6",
        },
        "measuring": {"method": "cgroup-v1", "sample_ms": 50},
    }


def _execution(config: str, rotation: int, ms: float | None, mode: str = "cold") -> dict:
    ok = ms is not None
    record = {
        "kind": "execution", "task": "t", "config": config, "mode": mode,
        "rotation": rotation, "warmup": rotation == 0, "ok": ok, "ms": ms,
        "launch_ms": 10.0 if ok else None, "cpu_s": 0.5 if ok else None,
        "peak_pss_mb": 40.0 if ok else None, "cgroup_peak_mb": 50.0 if ok else None,
        "requests": 3,
    }  # fmt: skip
    if not ok:
        record |= {"error": "contract failed", "failed_clauses": ["answer is '1': got '2'"]}
    return record


def _raw(tmp_path: Path) -> Path:
    lines = [_meta()]
    fast = [None, 100.0, 110.0, 120.0, 400.0]  # rotation 0 is a warm-up (and discarded)
    for rotation, ms in enumerate(fast):
        lines.append(_execution("fast/x", rotation, ms))
    for rotation, ms in enumerate([300.0, 300.0, None, 330.0, 360.0]):
        lines.append(_execution("slow/x", rotation, ms))
    for rotation in range(3):
        lines.append(_execution("broken/x", rotation, None))
    lines.append({"kind": "given_up", "task": "t", "config": "broken/x", "mode": "cold",
                  "rotation": 2, "failed_in_a_row": 3})  # fmt: skip
    path = tmp_path / "run" / "raw.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_summary_takes_upstreams_statistics_over_valid_measured_executions(tmp_path) -> None:
    rows = {r["config"]: r for r in summarise(load(_raw(tmp_path)))}
    fast = rows["fast/x"]
    assert (fast["n_measured"], fast["n_valid"], fast["n_discarded"]) == (4, 4, 0)
    q = statistics.quantiles([100.0, 110.0, 120.0, 400.0], n=4)
    assert (fast["p25_ms"], fast["median_ms"], fast["p75_ms"]) == (q[0], 115.0, q[2])
    assert fast["iqr_ms"] == round(q[2] - q[0], 1)
    assert (fast["min_ms"], fast["max_ms"], fast["x_fastest"]) == (100.0, 400.0, 1.0)
    assert fast["gate"]
    slow = rows["slow/x"]
    # Three valid of four measured (the warm-up's 300 ms is not reported): below 80%.
    assert (slow["n_measured"], slow["n_valid"], slow["n_discarded"]) == (4, 3, 1)
    assert slow["median_ms"] == 330.0 and slow["x_fastest"] == round(330 / 115, 2)
    assert not slow["gate"]
    broken = rows["broken/x"]
    assert broken["given_up"] and not broken["gate"] and broken["n_discarded"] == 2
    assert "median_ms" not in broken  # never timed


def test_the_markdown_says_what_was_discarded_and_why(tmp_path) -> None:
    raw = load(_raw(tmp_path))
    text = report_markdown(raw, summarise(raw), [])
    assert "`slow/x` (gate failed)" in text
    assert "FAIL (cold 0/2 given up)" in text
    why = "contract failed: answer is '1': got '2'"
    assert f"`t` `broken/x` cold, rotation 2 (measured): {why}" in text
    assert "rotation 0 (warm-up)" in text


def test_the_report_is_the_same_bytes_each_time(tmp_path) -> None:
    raw = _raw(tmp_path)
    write_report(raw)
    first = {p.name: p.read_bytes() for p in (raw.parent).rglob("*") if p.is_file()}
    other = tmp_path / "again"
    write_report(raw, other)
    again = {p.name: p.read_bytes() for p in other.rglob("*") if p.is_file()}
    assert set(first) - {"raw.jsonl"} == set(again)
    assert all(first[name] == again[name] for name in again)
    assert "t.svg" in again and "memory.svg" in again


def test_a_file_that_is_not_a_raw_file_is_refused_and_a_torn_last_line_left_out(
    tmp_path,
) -> None:
    raw = _raw(tmp_path)
    with raw.open("a") as fh:
        fh.write('{"kind": "execution", "task"')
    assert len(load(raw).executions) == 13
    other = tmp_path / "other.jsonl"
    other.write_text('{"kind": "execution"}\n')
    with pytest.raises(InputError, match="no meta record first"):
        load(other)
    with pytest.raises(InputError, match="cannot read it"):
        load(tmp_path / "missing.jsonl")


# --- an execution's end --------------------------------------------------------------------


def test_an_executions_end_is_seen_when_its_process_exits_and_not_before() -> None:
    done = subprocess.Popen(["sleep", "0.2"])
    assert _exits_within(done.pid, 30)
    # It had exited (a zombie, not yet reaped) when the wait returned: no polling loop.
    assert os.waitid(os.P_PID, done.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    assert done.wait() == 0
    running = subprocess.Popen(["sleep", "30"])
    try:
        assert not _exits_within(running.pid, 0.1)
        assert running.poll() is None
    finally:
        running.kill()
        running.wait()
