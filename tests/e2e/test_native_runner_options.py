"""The runner's options end to end: memory caps, another lightpanda build, the system prompt,
repeats and the price table, each through the real console scripts and the real
``lightpanda agent``, with the model played by a scripted server on 127.0.0.1.

Every assertion is on what a user gets: the rows, the manifest, ``scores.json``, the exit
status, and what the scripted server received.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agent_benchmarks.isolation.process import CGROUP_V1, CGROUP_V2, RLIMIT, memory_cap_method
from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
)
from agent_benchmarks.records.pricing import PRICE_TABLE_VERSION
from agent_benchmarks.records.schema import Manifest, PredictionRow, Scores
from agent_benchmarks.spec.prompts import RESEARCH_PERSISTENT
from tests.support import REPO, lightpanda_binary, read_rows, run_cli

pytestmark = pytest.mark.e2e
MODEL = "scripted-options"
# Lightpanda ends the system prompt it is given with a line of its own: the date and locale.
DATE_LINE = re.compile(r"\nToday is [^\n]*Resolve relative dates against it\.\n")


def _manifest(run_dir: Path) -> Manifest:
    return Manifest.model_validate_json((run_dir / "manifest.json").read_text())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _keyless_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def _localweb(*args: str) -> subprocess.CompletedProcess[str]:
    """``localweb-run --task-ids home-links ...``: one short task, scripted oracle, no key."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "localweb-run"), "--task-ids", "home-links", *args],
        capture_output=True,
        text=True,
        env=_keyless_env(),
        cwd=REPO,
        timeout=120,
    )


def _gaia(server: ScriptedModelServer, *args: str, model: str = MODEL):
    return run_cli(
        "gaia-run",
        "--provider",
        "openai_compatible",
        "--model",
        model,
        "--base-url",
        f"{server.root_url}/task/{{task_id}}/v1",
        "--scaffold",
        "--timeout",
        "60",
        *args,
        env={"OPENAI_API_KEY": API_KEY, "LIGHTPANDA_DISABLE_TELEMETRY": "true"},
    )


class Answer(StepPolicy):
    """Answers on the first turn; ``by_request`` picks the text by the task's request number
    (one model request per attempt here, so request n is the task's n-th attempt)."""

    def __init__(self, *by_request: str):
        self.by_request = by_request

    def step(self, conv: Conversation) -> FinalAnswer:
        text = self.by_request[min(conv.request_number, len(self.by_request)) - 1]
        return FinalAnswer(f"<ANSWER>{text}</ANSWER>")


def _answer_server(models: list[str] | None = None, **by_task: tuple[str, ...]):
    return ScriptedModelServer(
        lambda task_id: Answer(*by_task.get(task_id, ("1",))), models=models or [MODEL]
    )


# --- --memory-max-mb -------------------------------------------------------------------------


def test_memory_cap_is_applied_and_recorded(tmp_path: Path) -> None:
    run_dir = tmp_path / "capped"
    proc = _localweb("--memory-max-mb", "1024", "--out-dir", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert row.status == "ok", (row.error, row.stderr_tail[-500:])
    method = memory_cap_method()
    assert method in (CGROUP_V2, CGROUP_V1, RLIMIT)
    assert row.details["process"]["memory_method"] == method
    assert _manifest(run_dir).settings["flags"]["memory_max_mb"] == 1024


def test_a_cap_too_small_for_lightpanda_is_an_oom_row(tmp_path: Path) -> None:
    """Under a cgroup the kernel OOM-kills lightpanda (it needs about 6 MB for this task on
    the reference machine: 5 MB kills it, 6 MB does not); under an rlimit V8 cannot reserve
    its heap ("Fatal process out of memory") at anything up to ~512 MB."""
    method = memory_cap_method()
    cap = "2" if method in (CGROUP_V2, CGROUP_V1) else "64"
    run_dir = tmp_path / "oom"
    proc = _localweb("--memory-max-mb", cap, "--out-dir", str(run_dir))
    assert proc.returncode == 1, proc.stderr[-2000:]  # every attempt failed: infrastructure
    assert "every attempt failed" in proc.stderr
    (row,) = read_rows(run_dir)
    assert (row.status, row.error_class) == ("error", "oom"), (row.error, row.stderr_tail)
    assert row.error == f"killed for exceeding the memory cap ({method})"
    assert row.details["process"]["memory_method"] == method
    assert row.prediction is None
    if method != RLIMIT:
        assert row.returncode == -9  # the kernel's OOM killer sends SIGKILL


# The same command with the cgroup probe replaced, so the rlimit fallback (what a machine
# without a usable cgroup gets) runs here too: the real localweb-run entry point, in a
# process of its own, driving the real lightpanda.
_FORCE_RLIMIT = """
import sys
from agent_benchmarks.isolation import process
process._memory_cap = lambda: (process.RLIMIT, None)
process.memory_cap_method = lambda: process.RLIMIT
from agent_benchmarks.localweb.run import native as main
sys.exit(main(sys.argv[1:]))
"""


def _localweb_with_rlimit(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _FORCE_RLIMIT, "--task-ids", "home-links", *args],
        capture_output=True,
        text=True,
        env=_keyless_env(),
        cwd=REPO,
        timeout=120,
    )


# 64 MB: V8 dies of "Fatal process out of memory"; 2 MB: Lightpanda's allocator fails at
# start-up and exits 1 with err=SystemResources. Both are out-of-memory kills.
@pytest.mark.parametrize("cap", ["64", "2"])
def test_rlimit_fallback_reports_oom(tmp_path: Path, cap: str) -> None:
    run_dir = tmp_path / "rlimit"
    proc = _localweb_with_rlimit("--memory-max-mb", cap, "--out-dir", str(run_dir))
    (row,) = read_rows(run_dir)
    assert row.details["process"]["memory_method"] == RLIMIT
    assert (row.status, row.error_class) == ("error", "oom"), (row.error, row.stderr_tail)
    assert proc.returncode == 1


# --- --lightpanda PATH -------------------------------------------------------------------------


def test_another_lightpanda_build_is_recorded_and_pinned_on_resume(tmp_path: Path) -> None:
    binary = tmp_path / "lp-copy"
    shutil.copy2(lightpanda_binary(), binary)
    run_dir = tmp_path / "copy-run"
    proc = _localweb("--lightpanda", str(binary), "--out-dir", str(run_dir))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (row,) = read_rows(run_dir)
    assert row.status == "ok"
    manifest = _manifest(run_dir)
    assert manifest.settings["backend"]["binary"] == str(binary)
    assert manifest.settings["flags"]["lightpanda"] == str(binary)
    assert manifest.programs["lightpanda_sha256"] == _sha256(binary)
    version = subprocess.run([str(binary), "version"], capture_output=True, text=True, check=True)
    assert manifest.programs["lightpanda"] == version.stdout.strip().splitlines()[0]

    # The same build: the resume is accepted (nothing is left to run).
    same = _localweb_resume(run_dir)
    assert same.returncode == 0, same.stderr[-2000:]
    assert len(_manifest(run_dir).sessions) == 2

    # Another build at the same path (a byte appended: it still runs, its digest differs).
    with open(binary, "ab") as fh:
        fh.write(b"\0")
    changed = _localweb_resume(run_dir)
    assert changed.returncode == 2, changed.stderr[-2000:]
    assert "lightpanda_sha256" in changed.stderr
    assert "finish it with the same build or start a new run" in changed.stderr
    assert len(read_rows(run_dir)) == 1
    assert len(_manifest(run_dir).sessions) == 2


def _localweb_resume(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "localweb-run"), "--resume", str(run_dir)],
        capture_output=True,
        text=True,
        env=_keyless_env(),
        cwd=REPO,
        timeout=120,
    )


# --- --system-prompt-file ----------------------------------------------------------------------


@pytest.mark.parametrize("from_file", [True, False], ids=["prompt-file", "suite-prompt"])
def test_the_system_prompt_reaches_the_model(
    gaia_file: Path, tmp_path: Path, from_file: bool
) -> None:
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text(
        "You are a terse test agent.\nAnswer in the envelope — ünïcode kept.\n", encoding="utf-8"
    )
    # Without a file: the persistence variant, the native runner's default for a non-Flash
    # model (the scripted one here).
    prompt = prompt_file.read_text(encoding="utf-8") if from_file else RESEARCH_PERSISTENT
    run_dir = tmp_path / "prompt-run"
    with _answer_server(**{"g1-plain": ("3",)}) as server:
        extra = ["--system-prompt-file", str(prompt_file)] if from_file else []
        proc = _gaia(
            server,
            "--dataset-file",
            str(gaia_file),
            "--task-ids",
            "g1-plain",
            "--out-dir",
            str(run_dir),
            *extra,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        requests = server.model_requests("g1-plain")
    assert len(requests) == 1
    conversation = requests[0].conversation
    assert conversation is not None
    assert conversation.system.startswith(prompt)
    assert DATE_LINE.fullmatch(conversation.system[len(prompt) :]), conversation.system
    session = _manifest(run_dir).settings["session"]
    assert session["system_prompt"] == prompt
    assert session["prompt"] == "persistence"
    assert session["system_prompt_source"] == ("file" if from_file else "variant")
    assert session["system_prompt_sha256"] == hashlib.sha256(prompt.encode()).hexdigest()
    if from_file:
        assert session["system_prompt_sha256"] == _sha256(prompt_file)
        assert _manifest(run_dir).settings["flags"]["system_prompt_file"] == str(prompt_file)
    (row,) = read_rows(run_dir)
    assert row.status == "ok" and row.prediction == "3"


# --- --repeat ----------------------------------------------------------------------------------


def test_repeat_runs_every_task_k_times_and_grades_each_attempt(
    gaia_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "repeat"
    # g1-plain is right both times; g1-list is right on attempt 1 and wrong on attempt 2.
    answers = {"g1-plain": ("3", "3"), "g1-list": ("blue, red, yellow", "green")}
    with _answer_server(**answers) as server:
        proc = _gaia(
            server,
            "--dataset-file",
            str(gaia_file),
            "--task-ids",
            "g1-plain,g1-list",
            "--repeat",
            "2",
            "--workers",
            "1",  # attempt-major order, so request n of a task is its attempt n
            "--out-dir",
            str(run_dir),
            "--grade",
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert server.request_count("g1-plain") == server.request_count("g1-list") == 2
    rows = read_rows(run_dir)
    assert sorted((r.id, r.attempt) for r in rows) == [
        ("g1-list", 1),
        ("g1-list", 2),
        ("g1-plain", 1),
        ("g1-plain", 2),
    ]
    assert [r.attempt for r in rows] == [1, 1, 2, 2]  # every attempt 1 before any attempt 2
    assert all(r.status == "ok" for r in rows)
    predictions = {(r.id, r.attempt): r.prediction for r in rows}
    assert predictions[("g1-list", 2)] == "green"
    assert _manifest(run_dir).repeat == 2

    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.n_tasks == 2 and scores.n_rows == 4
    assert scores.attempts == {
        "n_attempts": 2,
        "per_attempt": {
            "1": {"n": 2, "accuracy_strict": 1.0},
            "2": {"n": 2, "accuracy_strict": 0.5},
        },
        "mean_accuracy_strict": 0.75,
    }
    assert scores.accuracy_strict == 0.75
    assert sorted((e.id, e.attempt, e.correct) for e in scores.per_task) == [
        ("g1-list", 1, True),
        ("g1-list", 2, False),
        ("g1-plain", 1, True),
        ("g1-plain", 2, True),
    ]


# --- the price table ---------------------------------------------------------------------------

SONNET = "claude-sonnet-4-6"


def _cost(row: PredictionRow, input: float, cache_read: float, cache_write: float, output: float):
    u = row.usage
    return (
        u.input_tokens * input
        + u.cache_read_tokens * cache_read
        + u.cache_write_tokens * cache_write
        + u.output_tokens * output
    ) / 1_000_000


@pytest.mark.parametrize("price_file", [False, True], ids=["built-in", "prices-file"])
def test_row_cost_follows_the_price_table(
    gaia_file: Path, tmp_path: Path, price_file: bool
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "version": "test-prices-1",
                "models": {SONNET: {"input": 1, "cache_read": 0.25, "cache_write": 2, "output": 7}},
            }
        ),
        encoding="utf-8",
    )
    run_dir = tmp_path / "priced"
    with _answer_server(models=[SONNET], **{"g1-plain": ("3",), "g1-list": ("red",)}) as server:
        proc = _gaia(
            server,
            "--dataset-file",
            str(gaia_file),
            "--task-ids",
            "g1-plain,g1-list",
            "--workers",
            "2",
            "--out-dir",
            str(run_dir),
            *(["--prices", str(prices)] if price_file else []),
            model=SONNET,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        ledgers = {task_id: server.usage(task_id) for task_id in ("g1-plain", "g1-list")}
    rows = read_rows(run_dir)
    assert len(rows) == 2
    per_million = (1, 0.25, 2, 7) if price_file else (3, 0.30, 3.75, 15)
    for row in rows:
        ledger = ledgers[row.id]
        assert (row.usage.input_tokens, row.usage.cache_read_tokens, row.usage.output_tokens) == (
            ledger.input_tokens,
            ledger.cache_read_tokens,
            ledger.output_tokens,
        )
        assert row.usage.input_tokens > 0 and row.usage.output_tokens > 0
        assert row.usage.cache_read_tokens > 0  # the scripted server caches the prompt prefix
        assert row.usage.cost_usd is not None
        assert row.usage.cost_usd == pytest.approx(_cost(row, *per_million), abs=1e-6)
    manifest = _manifest(run_dir)
    assert manifest.model == SONNET
    recorded = manifest.settings["prices"]
    if price_file:
        assert recorded["version"] == "test-prices-1"
        assert str(prices) in recorded["source"]
        assert _sha256(prices) in recorded["source"]
        assert manifest.settings["flags"]["prices"] == str(prices)
    else:
        assert recorded == {"version": PRICE_TABLE_VERSION, "source": "built-in"}


def test_a_relative_out_dir_works_from_any_directory(tmp_path: Path) -> None:
    """Each agent runs inside its attempt folder, so the run folder must not stay relative."""
    proc = run_cli(
        "localweb-run",
        "--task-ids",
        "catalogue-price,deal-price",
        "--out-dir",
        "runs/relative",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    scores = Scores.model_validate_json((tmp_path / "runs/relative/scores.json").read_text())
    assert scores.n_tasks == 2 and all(e.correct for e in scores.per_task)
