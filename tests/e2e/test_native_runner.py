"""``<suite>-run`` end to end: the real console scripts drive the real ``lightpanda agent``
against the localweb site, with the model played by a scripted server on 127.0.0.1.

The dataset suites are run from local dataset files in their real schemas; their model is
a :class:`ScriptedModelServer` reached through ``--base-url .../task/{task_id}/v1``, so each
task gets its own policy and its own token ledger, which the rows must reproduce.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
)
from agent_benchmarks.localweb.site import LocalSite
from agent_benchmarks.localweb.tasks import TASKS
from agent_benchmarks.records.schema import Manifest, Scores
from tests.support import REPO, read_rows, run_cli

pytestmark = pytest.mark.e2e
MODEL = "scripted-runner"
SECRET = "sk-ant-api03-DO-NOT-LEAK-0123456789abcdef"


class ReadThenAnswer(StepPolicy):
    """Reads one page, then answers with ``template`` filled from a regex on what it read."""

    def __init__(self, url: str, pattern: str, template: str):
        self.url, self.pattern, self.template = url, pattern, template

    def step(self, conv: Conversation) -> object:
        if conv.turn == 0:
            return self.call(conv, "markdown", url=self.url)
        found = re.search(self.pattern, conv.last_tool_text or "")
        return FinalAnswer(self.template.format(found.group(1)) if found else "not found")


class AnswerFromAttachment(StepPolicy):
    """Answers from the attachment text the agent put in the user turn: proves it arrived."""

    def __init__(self, compute):
        self.compute = compute

    def step(self, conv: Conversation) -> object:
        return FinalAnswer(self.compute(conv.task_text))


def _sum_amounts(text: str) -> str:
    # The extracted sheet: "<row number>\t<item>\t<amount>" per line.
    amounts = [int(n) for n in re.findall(r"^\d+\t[a-z]\t(\d+)$", text, re.M)]
    return f"<ANSWER>{sum(amounts)}</ANSWER>" if amounts else "<ANSWER>none</ANSWER>"


def _word_after_marker(text: str) -> str:
    found = re.search(r"\b(ocelot)\b", text)
    return f"<ANSWER>{found.group(1) if found else 'missing'}</ANSWER>"


def _runner_env(**extra: str) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": API_KEY,
        "LIGHTPANDA_DISABLE_TELEMETRY": "true",
        "ANTHROPIC_API_KEY": SECRET,  # must never reach the run folder
        **extra,
    }


def _scripted_args(server: ScriptedModelServer) -> list[str]:
    return [
        "--provider",
        "openai_compatible",
        "--model",
        MODEL,
        "--base-url",
        f"{server.root_url}/task/{{task_id}}/v1",
        "--scaffold",
    ]


def _scripted_run(
    script: str, dataset: Path, server: ScriptedModelServer, run_dir: Path, *extra: str
) -> subprocess.CompletedProcess:
    """``<suite>-run`` on a dataset file, its model the scripted server, into ``run_dir``."""
    return run_cli(
        script,
        "--dataset-file",
        str(dataset),
        *_scripted_args(server),
        "--out-dir",
        str(run_dir),
        *extra,
        env=_runner_env(),
    )


def _manifest(run_dir: Path) -> Manifest:
    return Manifest.model_validate_json((run_dir / "manifest.json").read_text())


def _agents_of(run_dir: Path) -> list[psutil.Process]:
    """Live processes whose command line names the run folder (the agent's --trace path)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(str(run_dir) in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _assert_no_secret(run_dir: Path) -> None:
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


# --- GAIA: envelope, attachments, usage against the server's ledger ---------------------------


def _gaia_server(site: LocalSite) -> ScriptedModelServer:
    catalogue = site.task_url("g1-plain", "/catalogue")
    policies = {
        # Two envelopes: the last one wins.
        "g1-plain": ReadThenAnswer(
            catalogue,
            r"Glacier Water Bottle[^\n]*?\$(\d+)\.",
            "Draft: <ANSWER>unsure</ANSWER>. Checked the catalogue. <ANSWER>3</ANSWER> ({})",
        ),
        "g1-text": AnswerFromAttachment(_word_after_marker),
        "g1-sheet": AnswerFromAttachment(_sum_amounts),
        # No envelope at all: the raw output is kept and the row says so. This agent also
        # carries a key in a URL and echoes it: the row must not.
        "g1-list": ReadThenAnswer(
            f"{catalogue}?key={SECRET}", r"(Glacier)", f"blue, red, yellow (key {SECRET})"
        ),
    }
    return ScriptedModelServer(lambda task_id: policies[task_id], models=[MODEL])


def test_gaia_run_from_a_dataset_file(gaia_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "gaia-run"
    with LocalSite() as site, _gaia_server(site) as server:
        proc = _scripted_run(
            "gaia-run", gaia_file, server, run_dir, "--workers", "2", "--timeout", "60"
        )  # graded at the end by default
        assert proc.returncode == 0, proc.stderr[-2000:]
        rows = {row.id: row for row in read_rows(run_dir)}
        assert set(rows) == {"g1-plain", "g1-text", "g1-sheet", "g1-list"}
        for task_id, row in rows.items():
            ledger = server.usage(task_id)
            assert row.usage.input_tokens == ledger.input_tokens, task_id
            assert row.usage.cache_read_tokens == ledger.cache_read_tokens, task_id
            assert row.usage.output_tokens == ledger.output_tokens, task_id
            assert row.usage.turns == ledger.turns, task_id
            assert row.status == "ok", (task_id, row.error, row.stderr_tail[-500:])

    plain = rows["g1-plain"]
    assert plain.prediction == "3"
    assert plain.details["answer_envelope"] == "found"
    assert plain.details["n_envelopes"] == 2
    assert [c.name for c in plain.trace] == ["markdown"]
    assert plain.trace[0].http_status == 200
    assert "Glacier Water Bottle" in (plain.trace[0].output or "")

    listed = rows["g1-list"]
    assert listed.details["answer_envelope"] == "missing"
    assert listed.prediction == "blue, red, yellow (key [REDACTED])"
    assert "[REDACTED]" in (listed.trace[0].page_url or "") + json.dumps(listed.trace[0].args)

    text = rows["g1-text"]
    assert text.prediction == "ocelot"
    assert text.details["attachments"][0]["action"] == "attached"

    sheet = rows["g1-sheet"]
    assert sheet.details["attachments"][0]["action"] == "extracted"
    assert sheet.prediction == "42"

    manifest = _manifest(run_dir)
    assert manifest.mode == "scaffold"
    assert manifest.dataset.kind == "file"
    assert manifest.programs["lightpanda_sha256"]
    assert manifest.settings["session"]["answer_format"] == "envelope"
    assert manifest.sessions[0].completed == 4

    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.n_tasks == 4
    assert scores.accuracy_strict == 0.75  # g1-list's answer carries the redacted key
    _assert_no_secret(run_dir)


# --- AssistantBench and WebBench from local files ---------------------------------------------


def test_assistantbench_run_from_a_dataset_file(assistantbench_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "ab-run"
    answers = {"ab-number": "55", "ab-string": "Crunch Fitness", "ab-json": "DHL 55"}
    with LocalSite() as site:
        url = site.task_url("ab", "/catalogue")

        def policy(task_id: str) -> StepPolicy:
            return ReadThenAnswer(url, r"(Glacier)", f"<ANSWER>{answers[task_id]}</ANSWER>")

        with ScriptedModelServer(policy, models=[MODEL]) as server:
            proc = _scripted_run(
                "assistantbench-run", assistantbench_file, server, run_dir, "--grade"
            )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {row.id: row for row in read_rows(run_dir)}
    assert {r.prediction for r in rows.values()} == set(answers.values())
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.n_tasks == 3
    by_id = {e.id: e for e in scores.per_task}
    assert by_id["ab-number"].score == 1.0 and by_id["ab-string"].score == 1.0


def test_webbench_run_blocks_answer_sources(tmp_path: Path) -> None:
    """The start URL reaches the agent; with --block-answer-sources Lightpanda refuses a
    URL holding the task id, and the manifest records the patterns."""
    run_dir = tmp_path / "wb-run"
    with LocalSite() as site:
        start = site.task_url("wb", "/catalogue")
        table = tmp_path / "webbench.csv"
        table.write_text(
            "ID,Starting URL,Category,Task\n"
            f'7001,{start},READ,"What does the Glacier Water Bottle cost?"\n'
            f'7002,{start},CREATE,"Create an account"\n',
            encoding="utf-8",
        )
        leak = site.task_url("wb", "/specs?task=webbench-7001")  # the task's id: upstream's

        class TryLeakThenRead(StepPolicy):
            def step(self, conv: Conversation) -> object:
                assert start in conv.task_text
                if conv.turn == 0:
                    return self.call(conv, "markdown", url=leak)
                if conv.turn == 1:
                    return self.call(conv, "markdown", url=start)
                found = re.search(r"Glacier Water Bottle[^\n]*?(\$\d+\.\d\d)", conv.last_tool_text)
                return FinalAnswer(f"The Glacier Water Bottle costs {found.group(1)}.")

        with ScriptedModelServer(lambda task_id: TryLeakThenRead(), models=[MODEL]) as server:
            proc = _scripted_run(
                "webbench-run", table, server, run_dir, "--block-answer-sources", "--no-grade"
            )
        assert proc.returncode == 0, proc.stderr[-2000:]
        served = [r.path for r in site.requests_for("wb")]
    (row,) = read_rows(run_dir)
    assert row.id == "webbench-7001" and row.web_name == "127.0.0.1"
    assert row.status == "ok" and row.prediction.startswith("The Glacier Water Bottle costs $")
    assert not any("task=webbench-7001" in path for path in served), served
    assert row.trace[0].error is not None or row.trace[0].http_status != 200
    blocks = _manifest(run_dir).settings["session"]["block_answer_sources"]
    assert "*://huggingface.co/datasets/*" in blocks["patterns"]


# --- localweb: the README's main job -----------------------------------------------------------


def test_localweb_run_needs_no_key_and_passes_every_contract(tmp_path: Path) -> None:
    run_dir = tmp_path / "lw"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "localweb-run"),
            "--workers",
            "2",
            "--out-dir",
            str(run_dir),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.n_tasks == len(TASKS) == 24
    failed = [e.id for e in scores.per_task if not e.correct]
    assert failed == [], [(e.id, e.details.get("failed"), e.prediction) for e in scores.per_task]
    manifest = _manifest(run_dir)
    assert manifest.mode == "scaffold"
    assert manifest.settings["session"]["site"]["faults"]["error_rate"] == 0.0
    assert "localweb contracts" in proc.stdout
    rows = read_rows(run_dir)
    assert all(row.details["site"]["requests"] for row in rows)
    assert all(row.usage.turns >= 2 for row in rows)
    assert not _agents_of(run_dir)


# --- the engine under failure ------------------------------------------------------------------


def test_a_hung_model_is_cut_at_the_timeout(gaia_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "hung"
    with LocalSite() as site, _gaia_server(site) as server:
        server.fault_on("g1-plain", {1: Fault.hang()})
        started = time.monotonic()
        proc = _scripted_run(
            "gaia-run", gaia_file, server, run_dir, "--task-ids", "g1-plain", "--timeout", "4"
        )
        elapsed = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr  # every attempt failed: infrastructure
    (row,) = read_rows(run_dir)
    assert row.status == "timeout" and row.timed_out and row.error_class == "timeout"
    # graded all the same (a failed attempt's printed answer would count): wrong, and said so
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert (scores.accuracy_strict, scores.n_timeouts) == (0.0, 1)
    assert 4 <= row.duration_s < 10
    assert elapsed < 30
    assert not _agents_of(run_dir)


def test_error_rows_are_retried_on_resume(gaia_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "retry"
    with LocalSite() as site, _gaia_server(site) as server:
        server.fault_on("g1-plain", {1: Fault.malformed()})
        first = _scripted_run(
            "gaia-run", gaia_file, server, run_dir, "--task-ids", "g1-plain,g1-list"
        )
        assert first.returncode == 0, first.stderr[-2000:]
        statuses = {r.id: (r.status, r.error_class) for r in read_rows(run_dir)}
        assert statuses == {"g1-plain": ("error", "model_api"), "g1-list": ("ok", None)}

        kept = run_cli("gaia-run", "--resume", str(run_dir), "--no-retry-errors", env=_runner_env())
        assert kept.returncode == 0, kept.stderr[-2000:]
        assert len(read_rows(run_dir)) == 2

        changed = run_cli(
            "gaia-run", "--resume", str(run_dir), "--model", "other", env=_runner_env()
        )
        assert changed.returncode == 2 and "--model other" in changed.stderr

        again = run_cli("gaia-run", "--resume", str(run_dir), "--grade", env=_runner_env())
        assert again.returncode == 0, again.stderr[-2000:]
    rows = read_rows(run_dir)
    assert [(r.id, r.status) for r in rows] == [
        ("g1-plain", "error"),
        ("g1-list", "ok"),
        ("g1-plain", "ok"),
    ]
    assert rows[2].details["try"] == 2
    manifest = _manifest(run_dir)
    assert [s.retried for s in manifest.sessions] == [0, 0, 1]
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert {e.id: e.correct for e in scores.per_task}["g1-plain"]
    assert scores.metrics["n_superseded_rows"] == 1


def _start_localweb(run_dir: Path, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "localweb-run"), "--out-dir", str(run_dir), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _wait_for_rows(run_dir: Path, n: int, timeout: float = 120) -> None:
    path = run_dir / "predictions.jsonl"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"fewer than {n} rows after {timeout}s")


def test_sigkill_mid_run_then_resume_runs_every_task_once(tmp_path: Path) -> None:
    run_dir = tmp_path / "crash"
    harness = _start_localweb(run_dir, "--workers", "1")
    _wait_for_rows(run_dir, 3)
    harness.kill()
    harness.wait(timeout=10)
    # The agent that was running lost its model server with the harness; the OS would
    # reap it on a real crash. Its own process group makes that one kill here.
    for proc in _agents_of(run_dir):
        os.killpg(proc.pid, signal.SIGKILL)
    with open(run_dir / "predictions.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"schema_version": 1, "id": "cookie-off')  # a torn last line
    done_before = len(_rows_without_torn(run_dir))

    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    resumed = subprocess.run(
        [
            str(Path(sys.executable).parent / "localweb-run"),
            "--resume",
            str(run_dir),
            "--workers",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "torn last line" in resumed.stderr
    assert (run_dir / "predictions.jsonl.torn").exists()
    rows = read_rows(run_dir)
    assert Counter(r.id for r in rows) == Counter({t.id: 1 for t in TASKS})
    assert 3 <= done_before < len(TASKS)  # the crash really came mid-run
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.accuracy_strict == 1.0
    assert len(_manifest(run_dir).sessions) == 2


def _rows_without_torn(run_dir: Path) -> list[str]:
    return [line for line in (run_dir / "predictions.jsonl").read_text().split("\n")[:-1]]


def test_ctrl_c_stops_starting_then_resume_finishes(tmp_path: Path) -> None:
    run_dir = tmp_path / "ctrl-c"
    harness = _start_localweb(run_dir, "--workers", "1")
    _wait_for_rows(run_dir, 1)
    harness.send_signal(signal.SIGINT)
    _out, err = harness.communicate(timeout=60)
    assert harness.returncode == 130, err[-2000:]
    assert "--resume" in err
    rows = read_rows(run_dir)
    assert 1 <= len(rows) < len(TASKS)
    assert all(r.status == "ok" for r in rows)  # the running task was allowed to finish
    assert _manifest(run_dir).sessions[0].interrupted
    assert not _agents_of(run_dir)
    # An attempt set up but not yet started when the run stopped left nothing behind.
    folders = {p.name for p in (run_dir / "attempts").iterdir()}
    assert folders == {f"{r.id}.1.1" for r in rows}


def test_second_ctrl_c_kills_running_tasks(gaia_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "ctrl-c-twice"
    with LocalSite() as site, _gaia_server(site) as server:
        server.fault_on("g1-plain", {1: Fault.hang()})
        script = Path(sys.executable).parent / "gaia-run"
        harness = subprocess.Popen(
            [
                str(script),
                "--dataset-file",
                str(gaia_file),
                "--task-ids",
                "g1-plain",
                *_scripted_args(server),
                "--timeout",
                "120",
                "--out-dir",
                str(run_dir),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **_runner_env()},
            cwd=REPO,
        )
        deadline = time.monotonic() + 30
        while server.request_count("g1-plain") < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        harness.send_signal(signal.SIGINT)
        time.sleep(0.5)
        harness.send_signal(signal.SIGINT)
        _out, err = harness.communicate(timeout=30)
    assert harness.returncode == 130, err[-2000:]
    (row,) = read_rows(run_dir)
    assert row.status == "error" and row.error_class == "interrupted"
    assert not _agents_of(run_dir)
    assert json.loads((run_dir / "manifest.json").read_text())["sessions"][0]["interrupted"]
