"""Builders shared by unit and end-to-end tests: small datasets in each suite's real schema.

The GAIA and AssistantBench rows are made up (the real data sets are gated or third-party
and are never copied here); only their shape is real. WebBench tests read small fixture
tables in the real schema (``tests/fixtures/webbench``), and the copy of the READ table
shipped in the package where they need the whole table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agent_benchmarks.records.schema import PredictionRow

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
WEBBENCH_CSV = FIXTURES / "webbench" / "webbench_sample.csv"
WEBBENCH_HITL_CSV = FIXTURES / "webbench" / "webbench_hitl_sample.csv"

GAIA_ROWS = [
    {
        "task_id": "g1-plain",
        "Question": "How many studio albums did the band release before 2000?",
        "Level": "1",
        "Final answer": "3",
        "file_name": "",
        "file_path": "",
        "Annotator Metadata": {"Steps": "look it up", "Tools": "browser"},
    },
    {
        "task_id": "g1-text",
        "Question": "What word is written in the attached file?",
        "Level": "1",
        "Final answer": "ocelot",
        "file_name": "g1-text.txt",
        "file_path": "2023/validation/g1-text.txt",
        "Annotator Metadata": {"Steps": "read file", "Tools": "none"},
    },
    {
        "task_id": "g1-sheet",
        "Question": "What is the total in column B of the attached spreadsheet?",
        "Level": "1",
        "Final answer": "42",
        "file_name": "g1-sheet.xlsx",
        "file_path": "2023/validation/g1-sheet.xlsx",
        "Annotator Metadata": {"Steps": "sum", "Tools": "spreadsheet"},
    },
    {
        "task_id": "g1-list",
        "Question": "List the three primary colours, alphabetically, comma separated.",
        "Level": "1",
        "Final answer": "blue, red, yellow",
        "file_name": "",
        "file_path": "",
        "Annotator Metadata": {"Steps": "recall", "Tools": "none"},
    },
    {
        "task_id": "g2-money",
        "Question": "What did the item cost in USD?",
        "Level": "2",
        "Final answer": "1250",
        "file_name": "",
        "file_path": "",
        "Annotator Metadata": {"Steps": "browse", "Tools": "browser"},
    },
    {
        "task_id": "g3-name",
        "Question": "Who wrote the report?",
        "Level": "3",
        "Final answer": "Ada Lovelace",
        "file_name": "",
        "file_path": "",
        "Annotator Metadata": {"Steps": "browse", "Tools": "browser"},
    },
]

ASSISTANTBENCH_ROWS = [
    {
        "id": "ab-number",
        "set": "dev",
        "task": "How much would I save by buying the season pass?",
        "answer": "55",
        "gold_url": "https://example.org/pass",
        "explanation": "Season pass minus four daily tickets.",
        "metadata": None,
        "difficulty": "Easy",
    },
    {
        "id": "ab-string",
        "set": "dev",
        "task": "Which gym near the park has classes before 7am?",
        "answer": "Crunch Fitness",
        "gold_url": "https://example.org/gyms",
        "explanation": "Only one opens early.",
        "metadata": None,
        "difficulty": "Medium",
    },
    {
        "id": "ab-json",
        "set": "dev",
        "task": "Which carrier is cheapest, and at what price?",
        "answer": '{"sender": "DHL", "price (usd)": "55"}',
        "gold_url": "https://example.org/ship",
        "explanation": "Compare the carriers.",
        "metadata": None,
        "difficulty": "Hard",
    },
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path


def write_gaia_attachments(folder: Path) -> None:
    from openpyxl import Workbook

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "g1-text.txt").write_text("ocelot\n", encoding="utf-8")
    book = Workbook()
    sheet = book.active
    sheet.append(["item", "amount"])
    for item, amount in (("a", 20), ("b", 22)):
        sheet.append([item, amount])
    book.save(folder / "g1-sheet.xlsx")


def write_gaia_parquet(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def make_hub_cache(cache: Path, repo_id: str, files: dict[str, bytes]) -> Path:
    """A Hugging Face hub cache holding one snapshot of a dataset repo, as the real client
    lays it out (refs/main -> commit, snapshots/<commit>/...), for offline loading."""
    repo_dir = cache / ("datasets--" + repo_id.replace("/", "--"))
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(COMMIT)
    snapshot = repo_dir / "snapshots" / COMMIT
    for rel, content in files.items():
        target = snapshot / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    return snapshot


CHROMIUM = Path("/usr/bin/chromium")


def lightpanda_binary() -> str:
    """The real lightpanda binary from the `lightpanda` PyPI package.

    End-to-end tests fail, never skip, when a program they drive is missing: a skipped
    e2e test in CI would hide exactly the breakage it exists to catch.
    """
    import lightpanda

    path = Path(lightpanda.__file__).parent / "lightpanda"
    if not path.exists():
        pytest.fail(f"lightpanda binary missing at {path}: run `uv sync`")
    return str(path)


def chromium_binary() -> str:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} missing: apt-get install -y chromium (.ci/run does this)")
    return str(CHROMIUM)


# The window the report and the run browser must fit with no horizontal scroll.
PAGE_WIDTH = 1280


def assert_fits(page: Any) -> None:
    """No horizontal scroll at ``PAGE_WIDTH``: the page is no wider than its window (a
    table too wide scrolls inside itself)."""
    scroll, client = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert client == PAGE_WIDTH and scroll <= client, (scroll, client)


class RunningTest:
    """The test being run, and the time its commands may take (conftest's autouse fixture
    resets it for each test)."""

    item: pytest.Item | None = None
    commands_s = 0.0


def time_limit(item: pytest.Item) -> float:
    """The test's own time limit: its ``timeout`` mark, else the suite's (pytest-timeout)."""
    mark = item.get_closest_marker("timeout")
    if mark is not None and mark.args:
        return float(mark.args[0])
    return float(item.config.getini("timeout") or 0)


def check_time_limit(command: str, timeout: float | None) -> None:
    """A test's time limit covers the commands it runs: if its commands' own timeouts add
    up to more, a slow machine gets the test killed by pytest mid-command, without the
    command's clean-up or output, where the command should have ended on its own timeout.
    The sum is of the timeouts as written, so the check does not depend on the machine's
    load: such a test fails at once, naming the mark to raise."""
    item = RunningTest.item
    if item is None or timeout is None:
        return
    RunningTest.commands_s += timeout
    limit = time_limit(item)
    if limit and RunningTest.commands_s > limit:
        pytest.fail(
            f"{item.nodeid} runs commands that may take {RunningTest.commands_s:g}s "
            f"(the last, {command}, {timeout:g}s) under a time limit of {limit:g}s: raise "
            "its @pytest.mark.timeout to cover them"
        )


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60
):
    """Run one of the package's console scripts for real, as a user would."""
    check_time_limit(args[0], timeout)
    script = Path(sys.executable).parent / args[0]
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [str(script), *args[1:]],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd or REPO,
        timeout=timeout,
    )


# Each command of start_at_once: says it is ready, waits for the gate to open, then becomes
# the console script (exec: the same pid, so a lock's holder is the pid the test knows).
_GATE = (
    "import os, sys\n"
    "go, ready = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.write(ready, b'.'); os.close(ready)\n"
    "os.read(go, 1); os.close(go)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)


def start_at_once(
    commands: list[list[str]], cwd: Path, env: dict[str, str] | None = None
) -> list[subprocess.Popen[str]]:
    """Start console-script commands at one instant: each is started and waits at a barrier
    (a pipe) until all are ready, then the pipe is closed and all of them go on together."""
    go_read, go_write = os.pipe()
    ready_read, ready_write = os.pipe()
    full_env = {**os.environ, **(env or {})}
    procs = []
    try:
        for args in commands:
            script = Path(sys.executable).parent / args[0]
            gate = [sys.executable, "-c", _GATE, str(go_read), str(ready_write)]
            procs.append(
                subprocess.Popen(
                    [*gate, str(script), *args[1:]],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=full_env,
                    cwd=cwd,
                    pass_fds=(go_read, ready_write),
                )
            )
        os.close(ready_write)
        ready_write = -1
        got = 0
        while got < len(procs):
            chunk = os.read(ready_read, len(procs))
            assert chunk, "a command exited before reaching the barrier"
            got += len(chunk)
    finally:
        for fd in (go_read, ready_read, ready_write, go_write):
            if fd >= 0:
                os.close(fd)  # go_write last: every command goes on now
    return procs


def left_running(run_dir: Path) -> list[str]:
    """Processes still alive that belong to a run: named in their argv or environment
    (agent-browser's daemon and the browsers carry the attempt's HOME, in the run folder)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "environ"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            text = " ".join(proc.info["cmdline"] or []) + str(proc.info["environ"] or {})
            if str(run_dir) in text:
                found.append(" ".join(proc.info["cmdline"] or [])[:120])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def run_processes(*run_dirs: Path) -> list[psutil.Process]:
    """The live processes of these runs' attempts, wherever they run on this machine:
    those whose attempt marker starts with a run's key (the engine's markers do)."""
    from agent_benchmarks.isolation.process import MARKER_ENV
    from agent_benchmarks.isolation.scratch import run_key

    keys = tuple(f"{run_key(run_dir)}-" for run_dir in run_dirs)
    found = []
    for proc in psutil.process_iter(["environ", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if (proc.info["environ"] or {}).get(MARKER_ENV, "").startswith(keys):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def run_cgroups(run_dir: Path) -> list[Path]:
    """The attempts' memory cgroups of a run still on this machine."""
    from agent_benchmarks.isolation.scratch import run_key

    name = f"agent-benchmarks-{run_key(run_dir)}-"
    return [
        Path(root, folder)
        for root, folders, _ in os.walk("/sys/fs/cgroup")
        for folder in folders
        if folder.startswith(name)
    ]


def gaia_mcp_run(
    gaia_file: Path, model_root: str, run_dir: Path, *flags: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``gaia-mcp-run`` on the one task ``g1-plain`` of ``gaia_file``, Claude Code's model
    the scripted server at ``model_root`` (a scaffold run), with the stack's ``flags``."""
    from agent_benchmarks.localweb.models import API_KEY

    return run_cli(
        "gaia-mcp-run",
        *flags,
        "--dataset-file",
        str(gaia_file),
        "--task-ids",
        "g1-plain",
        "--base-url",
        f"{model_root}/task/{{task_id}}",
        "--auth",
        "api-key",
        "--scaffold",
        "--out-dir",
        str(run_dir),
        env={"ANTHROPIC_API_KEY": API_KEY},
        timeout=timeout,
    )


def read_rows(run_dir: Path) -> list[PredictionRow]:
    """Every row of a run folder's predictions.jsonl, in order."""
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return [PredictionRow.model_validate_json(line) for line in lines]


def no_api_keys() -> dict[str, str]:
    """An environment override blanking every ``*_API_KEY``, so a run cannot reach a
    provider with a key the developer's shell happens to hold."""
    return {k: "" for k in os.environ if k.endswith("_API_KEY")}
