"""The run engine without a model: planning, classification, the local pool, progress lines,
one attempt end to end with a tiny real process, and the ``<suite>-run`` commands' refusals.

Everything here runs real code on real child processes; the only agent that runs is the real
``lightpanda`` driven by localweb's scripted oracle on 127.0.0.1 (no key, no network).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import sys
import threading
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent_benchmarks import gaia
from agent_benchmarks.assistantbench.run import native as assistantbench_main
from agent_benchmarks.backends.base import AgentOutcome, PreparedTask
from agent_benchmarks.backends.lightpanda import NO_RESPONSE, classify
from agent_benchmarks.common.redact import REDACTED
from agent_benchmarks.gaia.run import native as gaia_main
from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec
from agent_benchmarks.localweb.models import (
    API_KEY,
    Conversation,
    Fault,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
)
from agent_benchmarks.localweb.run import native as localweb_main
from agent_benchmarks.records.pricing import load_price_table
from agent_benchmarks.records.schema import Manifest, PredictionRow, Scores, Task, ToolCall, Usage
from agent_benchmarks.runner.engine import AttemptRunner, execute
from agent_benchmarks.runner.executor import LocalPool
from agent_benchmarks.runner.launch import merge_learned
from agent_benchmarks.runner.plan import AttemptKey, plan_attempts
from agent_benchmarks.runner.progress import Figures, RunProgress, clock, eta, progress_line
from agent_benchmarks.runner.session import TaskSession
from agent_benchmarks.webbench.grade import main as webbench_grade_main
from agent_benchmarks.webbench.run import native as webbench_main
from tests.support import ASSISTANTBENCH_ROWS, write_jsonl
from tests.unit.judge_fakes import FakeJudgeServer
from tests.unit.judge_fakes import yes as judge_yes


def _row(task_id: str = "t1", attempt: int = 1, status: str = "ok", **kw: Any) -> PredictionRow:
    return PredictionRow(
        id=task_id, suite="gaia", task="q", status=status, attempt=attempt, backend="test", **kw
    )


def _read_rows(run_dir: Path) -> list[PredictionRow]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return [PredictionRow.model_validate_json(line) for line in lines]


# --- plan_attempts ---------------------------------------------------------------------------


def test_fresh_plan_is_attempt_major() -> None:
    plan = plan_attempts(["a", "b"], repeat=2)
    assert plan.todo == [
        AttemptKey("a", 1, 1),
        AttemptKey("b", 1, 1),
        AttemptKey("a", 2, 1),
        AttemptKey("b", 2, 1),
    ]
    assert (plan.settled, plan.retried, plan.kept_failures) == (0, 0, 0)


EXISTING = [
    _row("a", 1, "ok"),  # settled
    _row("b", 1, "empty"),  # settled: an empty answer is the agent's, not the infra's
    _row("c", 1, "timeout"),  # one infra row: retried as try 2
    _row("a", 2, "error"),
    _row("a", 2, "timeout"),  # two infra rows: retried as try 3
    _row("b", 2, "error"),
    _row("b", 2, "ok"),  # an infra row then an ok row: the last one settles it
    # (c, 2) has no row: a first try
    _row("gone", 1, "ok"),  # a task no longer selected, ignored
    _row("a", 3, "ok"),  # an attempt beyond --repeat, ignored
]


def test_resume_plan_skips_settled_rows_and_retries_infra_rows() -> None:
    plan = plan_attempts(["a", "b", "c"], repeat=2, existing=EXISTING)
    assert plan.todo == [AttemptKey("c", 1, 2), AttemptKey("a", 2, 3), AttemptKey("c", 2, 1)]
    assert plan.settled == 3
    assert plan.retried == 2
    assert plan.kept_failures == 0


def test_no_retry_errors_keeps_infra_rows_as_final() -> None:
    plan = plan_attempts(["a", "b", "c"], repeat=2, existing=EXISTING, retry_errors=False)
    assert plan.todo == [AttemptKey("c", 2, 1)]
    assert (plan.settled, plan.retried, plan.kept_failures) == (3, 0, 2)


def test_a_finished_run_plans_nothing() -> None:
    rows = [_row(t, a) for a in (1, 2) for t in ("a", "b")]
    plan = plan_attempts(["a", "b"], repeat=2, existing=rows)
    assert plan.todo == []
    assert plan.settled == 4


# --- lightpanda's classify -----------------------------------------------------------------------


def _result(returncode: int | None = 0, stdout: str = "", stderr: str = "", **kw) -> ProcessResult:
    return ProcessResult(returncode=returncode, stdout=stdout, stderr=stderr, duration_s=0.1, **kw)


@pytest.mark.parametrize(
    ("result", "expected_status", "expected_class", "error_part"),
    [
        pytest.param(
            _result(None, start_error="No such file or directory: '/x/lightpanda'"),
            "error",
            "crash",
            "could not start lightpanda: No such file",
            id="start_error",
        ),
        pytest.param(
            _result(-9, "partial", timed_out=True, signal=9),
            "timeout",
            "timeout",
            "deadline",
            id="timed_out-wins-over-signal",
        ),
        pytest.param(
            _result(-9, interrupted=True, signal=9),
            "error",
            "interrupted",
            "Ctrl-C",
            id="interrupted",
        ),
        pytest.param(
            _result(-9, oom=True, signal=9, memory_method="rlimit"),
            "error",
            "oom",
            "memory cap (rlimit)",
            id="oom",
        ),
        pytest.param(
            _result(-11, stderr="info: step 3\nerror: segfault in page\nbye\n", signal=11),
            "error",
            "crash",
            "signal 11: error: segfault in page",
            id="signal",
        ),
        pytest.param(
            _result(1, stderr="info: turn 1\nOpenAI API error (HTTP 500): upstream\n"),
            "error",
            "model_api",
            "exit 1: OpenAI API error (HTTP 500): upstream",
            id="model_api",
        ),
        pytest.param(
            _result(1, stderr="thread panic: index out of bounds\n"),
            "error",
            "agent_error",
            "exit 1: thread panic: index out of bounds",
            id="agent_error",
        ),
    ],
)
def test_classify_failures(
    result: ProcessResult, expected_status: str, expected_class: str, error_part: str
) -> None:
    status, error_class, error = classify(result, result.stdout.strip(), result.stderr)
    assert (status, error_class) == (expected_status, expected_class)
    assert error is not None and error_part in error


@pytest.mark.parametrize(
    ("stdout", "expected"),
    [
        pytest.param("", "empty", id="no-stdout"),
        pytest.param(NO_RESPONSE, "empty", id="no-response-from-model"),
        pytest.param("<ANSWER>7</ANSWER>", "ok", id="answer"),
    ],
)
def test_classify_clean_exits(stdout: str, expected: str) -> None:
    result = _result(0, stdout + "\n", stderr="API error once, retried fine\n")
    assert classify(result, result.stdout.strip(), result.stderr) == (expected, None, None)


# --- LocalPool -----------------------------------------------------------------------------------


def _keys(n: int) -> list[AttemptKey]:
    return [AttemptKey(f"t{i}", 1, 1) for i in range(n)]


def _rows(pool: LocalPool, keys: list[AttemptKey], attempt: Any) -> list[PredictionRow]:
    """Run ``keys`` with one function; the rows, after checking each came back with its own
    work item."""
    finished = list(pool.run([(attempt, key) for key in keys]))
    for (function, key), row in finished:
        assert function is attempt and (key.task_id, key.attempt) == (row.id, row.attempt)
    return [row for _, row in finished]


def test_local_pool_runs_every_key_once_on_n_workers() -> None:
    seen_threads: set[str] = set()
    lock = threading.Lock()

    def attempt(key: AttemptKey, cancel: threading.Event, launch: object) -> PredictionRow:
        with lock:
            seen_threads.add(threading.current_thread().name)
        time.sleep(0.02)
        return _row(key.task_id, key.attempt)

    pool = LocalPool(3)
    rows = _rows(pool, _keys(9), attempt)
    assert Counter(r.id for r in rows) == Counter({f"t{i}": 1 for i in range(9)})
    assert len(seen_threads) > 1
    assert all(name.startswith("attempt-worker-") for name in seen_threads)
    assert pool.busy_seconds >= 9 * 0.02 * 0.9


@pytest.mark.parametrize("workers", [1, 2])
def test_local_pool_overlaps_a_clean_up_with_the_next_agent_and_runs_n_agents_at_once(
    tmp_path: Path, workers: int
) -> None:
    # Each agent is a real process that logs when it ran; each attempt then "cleans up"
    # for 0.3 s. One worker: the next agent starts during that clean-up, never beside
    # another agent. Two workers: never three agents at once.
    script = (
        "import sys, time\n"
        "start = time.time(); time.sleep(0.15)\n"
        "open(sys.argv[1], 'a').write(f'{start} {time.time()}\\n')"
    )
    log = tmp_path / "agents.log"
    cleaned: dict[str, float] = {}

    def attempt(key: AttemptKey, cancel: threading.Event, launch: Any) -> PredictionRow:
        spec = ProcessSpec(
            argv=[sys.executable, "-c", script, str(log)],
            env=dict(os.environ),
            cwd=tmp_path,
            timeout_s=30,
        )
        result = launch(spec, cancel)
        assert result.returncode == 0, result.stderr
        time.sleep(0.3)  # the attempt's clean-up, after its agent
        cleaned[key.task_id] = time.time()
        return _row(key.task_id)

    rows = _rows(LocalPool(workers), _keys(6), attempt)
    assert sorted(r.id for r in rows) == [f"t{i}" for i in range(6)]
    spans = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert len(spans) == 6
    most = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    assert most <= workers
    if workers == 1:
        assert [r.id for r in rows] == [f"t{i}" for i in range(6)]  # still in order
        # The second agent started before the first attempt's clean-up ended.
        assert spans[1][0] < cleaned["t0"]


def _agent_spec(log: Path, name: str) -> ProcessSpec:
    """An agent process that writes its name to ``log``: proof that it ran."""
    script = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + '\\n')"
    return ProcessSpec(
        argv=[sys.executable, "-c", script, str(log), name],
        env=dict(os.environ),
        cwd=log.parent,
        timeout_s=30,
    )


def test_stop_starting_lets_the_running_attempt_finish_and_starts_no_more(
    tmp_path: Path,
) -> None:
    pool = LocalPool(1)
    log = tmp_path / "agents.log"

    def attempt(key: AttemptKey, cancel: threading.Event, launch: Any) -> PredictionRow:
        if key.task_id != "t0":  # set up while t0 runs, waiting for t0's slot
            time.sleep(0.2)
        assert launch(_agent_spec(log, key.task_id), cancel).returncode == 0
        if key.task_id == "t0":
            # The attempts set up meanwhile are refused at their agent's spawn.
            pool.stop_starting()
        return _row(key.task_id)

    rows = _rows(pool, _keys(5), attempt)
    assert [r.id for r in rows] == ["t0"]
    assert log.read_text().split() == ["t0"]  # no other agent ran


def test_kill_running_sets_the_event_running_attempts_see(tmp_path: Path) -> None:
    pool = LocalPool(2)
    waiter_started = threading.Event()
    saw_kill: dict[str, bool] = {}
    log = tmp_path / "agents.log"

    def attempt(key: AttemptKey, cancel: threading.Event, launch: Any) -> PredictionRow:
        if key.task_id == "waiter":
            waiter_started.set()
            saw_kill["waiter"] = cancel.wait(timeout=10)
        elif key.task_id == "killer":
            assert waiter_started.wait(timeout=10)
            pool.kill_running()
        else:  # later: set up, at most, and refused at its agent's spawn
            assert waiter_started.wait(timeout=10)
            while not cancel.is_set():
                time.sleep(0.01)
            launch(_agent_spec(log, key.task_id), cancel)
        return _row(key.task_id)

    keys = [AttemptKey("waiter", 1, 1), AttemptKey("killer", 1, 1), AttemptKey("later", 1, 1)]
    began = time.monotonic()
    rows = _rows(pool, keys, attempt)
    assert time.monotonic() - began < 5  # the waiter did not sit out its 10 s
    assert saw_kill == {"waiter": True}
    assert sorted(r.id for r in rows) == ["killer", "waiter"]
    assert not log.exists()  # later's agent never ran


def test_an_exception_in_an_attempt_reaches_the_caller_of_run() -> None:
    def attempt(key: AttemptKey, cancel: threading.Event, launch: object) -> PredictionRow:
        if key.task_id == "t1":
            raise RuntimeError("harness bug in t1")
        return _row(key.task_id)

    pool = LocalPool(2)
    with pytest.raises(RuntimeError, match="harness bug in t1"):
        _rows(pool, _keys(3), attempt)


# --- RunProgress ---------------------------------------------------------------------------------


def test_progress_prints_one_line_per_row_when_not_on_a_terminal() -> None:
    out = io.StringIO()
    # As the run commands build theirs: soft_wrap, so a long line stays one line.
    console = Console(file=out, force_terminal=False, soft_wrap=True)
    rows = [
        _row("g1-plain", 1, "ok", duration_s=1.5, usage=Usage(input_tokens=100, output_tokens=20)),
        _row("g1-text", 1, "timeout", error_class="timeout", duration_s=60.0),
        _row("g1-plain", 2, "error", error_class="model_api", duration_s=0.25),
    ]
    with RunProgress(len(rows), "GAIA", console) as progress:
        assert not progress.interactive
        for row in rows:
            progress.advance(row)
    lines = out.getvalue().splitlines()
    # Each line ends with the ETA at the rate observed so far ("0:00" once all are done).
    assert [line.rpartition("; ETA ")[0] for line in lines] == [
        "[1/3] g1-plain: ok in 1.5s, 120 tokens; ok 1 · empty 0 · timeout 0 · error 0",
        "[2/3] g1-text: timeout (timeout) in 60.0s, 0 tokens; ok 1 · empty 0 · timeout 1 · error 0",
        "[3/3] g1-plain attempt 2: error (model_api) in 0.2s, 0 tokens; "
        "ok 1 · empty 0 · timeout 1 · error 1",
    ]
    assert lines[-1].endswith("; ETA 0:00")
    assert progress.done == 3 and progress.tokens == 120
    assert progress.counts == Counter({"ok": 1, "timeout": 1, "error": 1})


def test_progress_line_says_when_the_run_s_fault_fired() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, soft_wrap=True)
    fired = {"fault": {"kind": "stale-dom", "fired": True, "fired_at_call": 2}}
    missed = {"fault": {"kind": "stale-dom", "fired": False, "why": "2 calls only"}}
    with RunProgress(4, "localweb", console) as progress:
        progress.advance(_row("a", details=fired, duration_s=2.0))
        progress.advance(_row("b", details=missed, duration_s=1.0))
        progress.advance(_row("c", 1, "budget"))
        unheld = {"meter": {"cost_budget": "not enforced: no price for m (--prices)"}}
        progress.advance(_row("d", details=unheld))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(
        "[1/4] a: ok in 2.0s, 0 tokens, stale-dom fired after call 2; "
        "ok 1 · empty 0 · timeout 0 · error 0; ETA "
    )
    assert "fired" not in lines[1]
    assert "; ok 2 · empty 0 · budget 1 · timeout 0 · error 0; ETA " in lines[2]
    assert "0 tokens, dollar budget not enforced: no price for m (--prices); ok 3" in lines[3]


def test_progress_cost_is_a_lower_bound_once_a_row_has_tokens_but_no_price() -> None:
    console = Console(file=io.StringIO(), force_terminal=False)
    progress = RunProgress(2, "GAIA", console)
    progress.advance(_row("a", usage=Usage(input_tokens=10, cost_usd=0.5)))
    assert progress.cost_known and progress.figures().spend_text() == "10 tok $0.50"
    progress.advance(_row("b", usage=Usage(input_tokens=5)))
    assert not progress.cost_known
    assert progress.figures().spend_text() == "15 tok ≥$0.50"


def test_progress_default_console_keeps_one_line_per_row(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    progress = RunProgress(1, "GAIA")  # its own Console(stderr=True)
    row = _row("c61d22de-5f6c-4958-a7f6-5e9707bd3466", 2, "error", error_class="model_api")
    progress.advance(row)
    assert len(capsys.readouterr().err.splitlines()) == 1


def _figures(done: int, total: int, elapsed_s: float, tokens: int = 0) -> Figures:
    counts = Counter({"ok": done - 1, "error": 1}) if done else Counter()
    return Figures("assistantbench", done, total, counts, elapsed_s, tokens, 0.0, True)


@pytest.mark.parametrize("width", [40, 60, 80, 100, 120, 200])
def test_progress_line_keeps_its_figures_whole_at_every_width(width: int) -> None:
    line = progress_line(_figures(1_234, 2_000, 3_725.0, tokens=123_456_789), width)
    assert len(line) <= width
    assert "1234/2000" in line  # done / total, never cut
    if width >= 60:
        assert "ETA 38:32" in line  # 766 left at 1,234 in 3,725 s
    if width >= 80:
        # Every count, the time and the spend; the bar takes what is left.
        for figure in ("ok 1233", "1:02:05", "ETA 38:32", "$0.00"):
            assert figure in line
    if width >= 120:
        assert "ok 1233 · empty 0 · timeout 0 · error 1" in line and "123,456,789 tok" in line
        assert line.startswith("assistantbench ━")


def test_eta_is_the_observed_rate_of_finished_attempts() -> None:
    assert eta(0, 10, 30.0) == "–"  # nothing finished: no rate yet
    # 4 workers: the first 4 attempts finish together after 60 s; 36 more at that rate.
    assert eta(4, 40, 60.0) == "9:00"
    assert eta(40, 40, 600.0) == "0:00"
    assert clock(3_725) == "1:02:05"


# --- AttemptRunner with a real process and the real GAIA session --------------------------------

SECRET = "tok-very-secret-123"


@dataclass
class PythonBackend:
    """A backend whose agent is ``python -c CODE`` in the attempt folder."""

    code: str = "print('<ANSWER>7</ANSWER>')"
    fail: Exception | None = None
    trace: tuple[ToolCall, ...] = ()
    # Backend facts for the row (what a real backend reads from its agent's output).
    details: dict[str, Any] = field(default_factory=dict)
    name: str = "python-fake"

    def programs(self) -> dict[str, str]:
        return {"python": sys.version.split()[0]}

    def settings(self) -> dict[str, Any]:
        return {"code": self.code}

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        if self.fail is not None:
            raise self.fail
        return ProcessSpec(
            argv=[sys.executable, "-c", self.code],
            env={**os.environ, **prepared.env},
            cwd=prepared.workdir,
            timeout_s=None,
        )

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        ok = result.returncode == 0
        return AgentOutcome(
            status="ok" if ok else "error",
            output=result.stdout.strip(),
            error_class=None if ok else "agent_error",
            error=None if ok else f"exit {result.returncode}",
            trace=list(self.trace),
            usage=Usage(input_tokens=3, output_tokens=2, turns=1),
            details={"seen_text": prepared.text[:40], **self.details},
        )


def _gaia_task(task_id: str = "g1-plain") -> Task:
    return Task(
        suite="gaia", id=task_id, question="How many albums before 2000?", gold="7", level=1
    )


def _runner(run_dir: Path, backend: PythonBackend, *tasks: Task) -> AttemptRunner:
    tasks = tasks or (_gaia_task(),)
    return AttemptRunner(
        run_dir=run_dir,
        tasks={t.id: t for t in tasks},
        session=TaskSession(gaia.SUITE, "scaffold"),
        backend=backend,
        timeout_s=30,
        memory_max_mb=None,
        prices=load_price_table(None),
        price_model=None,
    )


def test_attempt_runner_turns_a_process_into_a_row(tmp_path: Path) -> None:
    code = "import os, sys; print(os.getcwd(), file=sys.stderr); print('<ANSWER>7</ANSWER>')"
    runner = _runner(tmp_path, PythonBackend(code))
    row = runner(AttemptKey("g1-plain", 2, 3), threading.Event())
    assert row.id == "g1-plain" and row.suite == "gaia" and row.level == 1
    assert row.task == "How many albums before 2000?"
    assert row.gold == "7"
    assert row.prediction == "7"
    assert row.status == "ok" and row.error_class is None and row.error is None
    assert row.details["answer_envelope"] == "found"
    assert row.details["n_envelopes"] == 1
    assert row.details["try"] == 3
    assert row.details["seen_text"].startswith(row.task[:20])
    assert row.details["process"] == {"stray_killed": 0, "memory_method": None}
    assert row.attempt == 2 and row.returncode == 0 and not row.timed_out
    assert row.backend == "python-fake"
    assert row.usage.total_tokens == 5
    workdir = tmp_path / "attempts" / "g1-plain.2.3"
    assert workdir.is_dir()
    assert row.stderr_tail.strip() == str(workdir)  # the agent ran inside it
    assert runner.agent_seconds > 0


def test_an_empty_envelope_is_an_empty_row(tmp_path: Path) -> None:
    row = _runner(tmp_path, PythonBackend("print('<ANSWER> </ANSWER>')"))(
        AttemptKey("g1-plain", 1, 1), threading.Event()
    )
    assert row.status == "empty"


def test_a_backend_that_raises_gives_a_harness_error_row(tmp_path: Path) -> None:
    runner = _runner(tmp_path, PythonBackend(fail=RuntimeError("no binary configured")))
    row = runner(AttemptKey("g1-plain", 1, 1), threading.Event())
    assert row.status == "error"
    assert row.error_class == "harness"
    assert row.error == "RuntimeError: no binary configured"
    assert "Traceback" in row.details["traceback"]
    assert row.prediction is None and row.returncode is None and row.stderr_tail == ""
    assert row.gold == "7" and row.details["try"] == 1


def test_execute_writes_every_row_even_when_one_attempt_is_a_harness_fault(
    tmp_path: Path,
) -> None:
    class FailsOnOne(PythonBackend):
        def command(self, prepared: PreparedTask) -> ProcessSpec:
            if prepared.task.id == "bad":
                raise ValueError("cannot build the command")
            return super().command(prepared)

    runner = _runner(tmp_path, FailsOnOne(), _gaia_task("good"), _gaia_task("bad"))
    keys = plan_attempts(["good", "bad"], repeat=1).todo
    out = io.StringIO()
    outcome = execute(
        keys,
        runner,
        LocalPool(2),
        tmp_path / "predictions.jsonl",
        "GAIA",
        Console(file=out, force_terminal=False, soft_wrap=True),
    )
    assert outcome.written == 2 and not outcome.interrupted
    assert outcome.counts == Counter({"ok": 1, "error": 1})
    assert outcome.busy_seconds > 0 and outcome.agent_seconds > 0
    rows = {r.id: r for r in _read_rows(tmp_path)}
    assert (rows["good"].status, rows["good"].prediction) == ("ok", "7")
    assert (rows["bad"].status, rows["bad"].error_class) == ("error", "harness")
    assert len(out.getvalue().splitlines()) == 2


def test_every_attempt_has_its_own_folder_directly_under_attempts(tmp_path: Path) -> None:
    ids = ["a", "a.1", "a.1.1", "a/1", "a_1"]
    runner = _runner(tmp_path, PythonBackend("print(1)"), *map(_gaia_task, ids))
    keys = [AttemptKey(i, attempt, t) for i in ids for attempt in (1, 2) for t in (1, 2)]
    folders = [runner.workdir(key) for key in keys]
    assert len(set(folders)) == len(keys)
    assert {folder.parent for folder in folders} == {tmp_path / "attempts"}
    assert runner.workdir(AttemptKey("a.1", 2, 1)).name == "a.1.2.1"


def test_a_task_id_with_slashes_gets_a_safe_workdir(tmp_path: Path) -> None:
    task = _gaia_task("../../etc/passwd")
    runner = _runner(tmp_path, PythonBackend("import os; print(os.getcwd())"), task)
    key = AttemptKey(task.id, 1, 1)
    workdir = runner.workdir(key)
    assert workdir.parent == tmp_path / "attempts"
    assert "/" not in workdir.name and workdir.name.endswith(".1.1")
    row = runner(key, threading.Event())
    assert row.id == "../../etc/passwd"
    assert row.status == "ok"
    ran_in = Path(row.prediction or "")
    assert ran_in == workdir and ran_in.resolve().is_relative_to(tmp_path / "attempts")
    assert sorted(p.name for p in (tmp_path / "attempts").iterdir()) == [workdir.name]


def test_distinct_task_ids_get_distinct_workdirs(tmp_path: Path) -> None:
    runner = _runner(tmp_path, PythonBackend(), _gaia_task("a/b"), _gaia_task("a_b"))
    assert runner.workdir(AttemptKey("a/b", 1, 1)) != runner.workdir(AttemptKey("a_b", 1, 1))


def test_env_secrets_are_redacted_from_the_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    code = (
        "import os, sys\n"
        "print('auth with', os.environ['MY_SERVICE_TOKEN'], file=sys.stderr)\n"
        "print('Authorization: Bearer abcdefgh12345678', file=sys.stderr)\n"
        "print('<ANSWER>7</ANSWER>')\n"
    )
    call = ToolCall(name="markdown", output=f"page says {SECRET}", error=f"bad {SECRET} here")
    # What a backend copies from its agent into details (a refused call's arguments, a
    # search query) is the agent's text too.
    details = {"refused_calls": [{"name": "WebSearch", "args": {"query": f"q {SECRET}"}}]}
    runner = _runner(tmp_path, PythonBackend(code, trace=(call,), details=details))
    row = runner(AttemptKey("g1-plain", 1, 1), threading.Event())
    assert row.status == "ok" and row.prediction == "7"
    assert SECRET not in row.stderr_tail
    assert f"auth with {REDACTED}" in row.stderr_tail
    assert f"Bearer {REDACTED}" in row.stderr_tail and "abcdefgh12345678" not in row.stderr_tail
    assert row.trace[0].output == f"page says {REDACTED}"
    assert row.trace[0].error == f"bad {REDACTED} here"
    assert row.details["refused_calls"][0]["args"]["query"] == f"q {REDACTED}"
    assert SECRET not in row.model_dump_json()


def test_a_failing_agent_error_text_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)

    class ErrorEchoes(PythonBackend):
        def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
            return AgentOutcome(
                status="error", output="", error_class="agent_error", error=result.stderr
            )

    code = "import os, sys; sys.exit('denied for ' + os.environ['MY_SERVICE_TOKEN'])"
    row = _runner(tmp_path, ErrorEchoes(code))(AttemptKey("g1-plain", 1, 1), threading.Event())
    assert row.status == "error" and row.returncode == 1
    assert row.error is not None and f"denied for {REDACTED}" in row.error
    assert SECRET not in row.model_dump_json()


def test_a_harness_fault_does_not_leak_a_secret_through_the_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)
    failure = RuntimeError(f"auth refused for {SECRET}")
    row = _runner(tmp_path, PythonBackend(fail=failure))(
        AttemptKey("g1-plain", 1, 1), threading.Event()
    )
    assert row.error_class == "harness"
    assert row.error == f"RuntimeError: auth refused for {REDACTED}"
    assert SECRET not in row.model_dump_json()


def test_a_tool_call_quoting_an_api_key_header_is_redacted_without_ending_the_run(
    tmp_path: Path,
) -> None:
    """A page that documents ``x-api-key: ...``, the value ending the page text."""

    class DocsPage(PythonBackend):
        def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
            outcome = super().outcome(prepared, result)
            if prepared.task.id == "reads-docs":
                page = "Send the header x-api-key: abc123"
                outcome.trace = [ToolCall(name="markdown", output=page)]
            return outcome

    runner = _runner(tmp_path, DocsPage(), _gaia_task("reads-docs"), _gaia_task("other"))
    keys = plan_attempts(["reads-docs", "other"], repeat=1).todo
    console = Console(file=io.StringIO(), force_terminal=False, soft_wrap=True)
    outcome = execute(keys, runner, LocalPool(1), tmp_path / "predictions.jsonl", "GAIA", console)
    assert outcome.written == 2
    rows = {r.id: r for r in _read_rows(tmp_path)}
    assert rows["reads-docs"].trace[0].output == f"Send the header x-api-key: {REDACTED}"


# --- <suite>-run: refusals, one line on stderr, exit 2, no agent started -------------------------


@pytest.fixture(scope="module")
def localweb_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    """A real localweb run: two tasks, twice each, the scripted oracle as the model."""
    run_dir = tmp_path_factory.mktemp("localweb") / "run"
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = localweb_main(
            ["--task-ids", "home-links,catalogue-price", "--repeat", "2", "--out-dir", str(run_dir)]
        )
    return run_dir, rc, out.getvalue() + err.getvalue()


def _refused(capsys: pytest.CaptureFixture[str], rc: int, *parts: str) -> str:
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    for part in parts:
        assert part in err
    return err


@pytest.fixture
def gaia_args(
    gaia_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[str], Path]:
    """A gaia-run command line that would pass every check (a fake key, a fresh out dir)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")
    monkeypatch.setenv("GOOGLE_API_KEY", "google-test-not-a-real-key")
    out_dir = tmp_path / "gaia-out"
    return ["--dataset-file", str(gaia_file), "--timeout", "5", "--out-dir", str(out_dir)], out_dir


@pytest.mark.parametrize(
    ("extra", "parts"),
    [
        pytest.param(
            ["--lightpanda", "/nonexistent"],
            ["--lightpanda /nonexistent: no such file"],
            id="lightpanda-missing",
        ),
        pytest.param(
            ["--provider", "bogus"],
            ["--provider bogus: not a Lightpanda provider", "anthropic"],
            id="provider-bogus",
        ),
        pytest.param(
            ["--no-retry-errors"],
            ["--no-retry-errors only applies with --resume"],
            id="no-retry-errors-without-resume",
        ),
        pytest.param(
            ["--task-ids", "nope"], ["--task-ids: unknown task id 'nope'"], id="unknown-task-id"
        ),
        pytest.param(
            ["--task-ids", "g2-money"],
            ["--task-ids: task 'g2-money' is excluded by the other selection flags"],
            id="task-id-filtered-out-by-level",
        ),
    ],
)
def test_gaia_run_refuses_bad_flags(
    gaia_args: tuple[list[str], Path],
    extra: list[str],
    parts: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    args, out_dir = gaia_args
    _refused(capsys, gaia_main([*args, *extra]), *parts)
    assert not out_dir.exists()


def test_gaia_run_refuses_a_lightpanda_that_is_not_executable(
    gaia_args: tuple[list[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, out_dir = gaia_args
    binary = tmp_path / "lightpanda"
    binary.write_text("#!/bin/sh\necho 1.0\n")
    binary.chmod(0o644)
    _refused(capsys, gaia_main([*args, "--lightpanda", str(binary)]), "not an executable file")
    binary.chmod(0o755)
    binary.write_text("#!/bin/sh\nexit 3\n")
    _refused(capsys, gaia_main([*args, "--lightpanda", str(binary)]), "`version` failed (exit 3)")
    _refused(capsys, gaia_main([*args, "--lightpanda", str(tmp_path)]), "not an executable file")
    assert not out_dir.exists()


def test_gaia_run_needs_the_provider_key(
    gaia_args: tuple[list[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args, out_dir = gaia_args
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    rc = gaia_main([*args, "--provider", "anthropic"])
    _refused(capsys, rc, "--provider anthropic needs ANTHROPIC_API_KEY", "localweb-run")
    monkeypatch.delenv("GOOGLE_API_KEY")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    # gemini is the default provider, as upstream's
    _refused(capsys, gaia_main(args), "--provider gemini needs GOOGLE_API_KEY or GEMINI_API_KEY")
    assert not out_dir.exists()


def test_gaia_run_openai_compatible_needs_a_base_url(
    gaia_args: tuple[list[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args, out_dir = gaia_args
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    rc = gaia_main([*args, "--provider", "openai_compatible", "--model", "m"])
    _refused(capsys, rc, "--provider openai_compatible needs --base-url or OPENAI_BASE_URL")
    assert not out_dir.exists()


def test_gaia_run_refuses_an_out_dir_that_holds_a_run(
    gaia_args: tuple[list[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args, out_dir = gaia_args
    out_dir.mkdir()
    (out_dir / "predictions.jsonl").write_text("")
    _refused(capsys, gaia_main(args), "already holds a run", f"--resume {out_dir}")
    assert (out_dir / "predictions.jsonl").read_text() == ""
    assert sorted(p.name for p in out_dir.iterdir()) == ["predictions.jsonl"]


def test_gaia_run_refuses_a_bad_system_prompt_file(
    gaia_args: tuple[list[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, out_dir = gaia_args
    missing = tmp_path / "missing.txt"
    rc = gaia_main([*args, "--system-prompt-file", str(missing)])
    _refused(capsys, rc, f"--system-prompt-file {missing}: No such file or directory")
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n\n")
    rc = gaia_main([*args, "--system-prompt-file", str(empty)])
    _refused(capsys, rc, f"--system-prompt-file {empty}: the file is empty")
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    rc = gaia_main([*args, "--system-prompt-file", str(binary)])
    _refused(capsys, rc, "not UTF-8 text")
    assert not out_dir.exists()


def test_gaia_run_refuses_a_bad_price_file(
    gaia_args: tuple[list[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, out_dir = gaia_args
    prices = tmp_path / "prices.json"
    prices.write_text("{not json")
    _refused(capsys, gaia_main([*args, "--prices", str(prices)]), f"price file {prices}: not JSON")
    prices.write_text(json.dumps({"version": "x", "models": {"m": {"input": -1}}}))
    _refused(capsys, gaia_main([*args, "--prices", str(prices)]), f"price file {prices}: models.m")
    assert not out_dir.exists()


def test_gaia_run_refuses_to_resume_what_is_not_a_gaia_run(
    localweb_run: tuple[Path, int, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    missing = tmp_path / "no-such-run"
    _refused(capsys, gaia_main(["--resume", str(missing)]), f"--resume {missing}: no such run")
    bare = tmp_path / "bare"
    bare.mkdir()
    _refused(capsys, gaia_main(["--resume", str(bare)]), "no manifest.json there")
    (bare / "manifest.json").write_text("{}")
    _refused(capsys, gaia_main(["--resume", str(bare)]), "invalid manifest")
    run_dir = localweb_run[0]
    before = (run_dir / "predictions.jsonl").read_text()
    rc = gaia_main(["--resume", str(run_dir)])
    _refused(capsys, rc, f"--resume {run_dir}: a localweb run, not gaia")
    assert (run_dir / "predictions.jsonl").read_text() == before


@pytest.mark.parametrize(
    ("extra", "parts"),
    [
        pytest.param(
            ["--limit", "2"],
            ["--limit 2: this run was started with none", "a resumed run keeps the tasks"],
            id="limit",
        ),
        pytest.param(
            ["--task-ids", "home-links"],
            ["--task-ids home-links: this run was started with home-links,catalogue-price"],
            id="task-ids",
        ),
        pytest.param(
            ["--dataset-file", "tasks.jsonl"],
            ["--dataset-file", "this run was started with the bundled dataset"],
            id="dataset-file",
        ),
        pytest.param(
            ["--timeout", "999"],
            ["--timeout 999.0: this run was started with 120.0", "start a new run"],
            id="timeout",
        ),
        pytest.param(["--repeat", "3"], ["--repeat 3: this run was started with 2"], id="repeat"),
        pytest.param(["--model", "other"], ["--model other: this run was started"], id="model"),
        pytest.param(
            ["--out-dir", "elsewhere"],
            ["--out-dir elsewhere: this run's folder is", "stays in its folder"],
            id="out-dir",
        ),
        pytest.param(
            ["--user-agent", "Other/1.0"],
            ["--user-agent Other/1.0: this run was started with none"],
            id="user-agent",
        ),
    ],
)
def test_localweb_resume_refuses_changed_flags(
    localweb_run: tuple[Path, int, str],
    extra: list[str],
    parts: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir = localweb_run[0]
    before = [(run_dir / n).read_text() for n in ("predictions.jsonl", "manifest.json")]
    _refused(capsys, localweb_main(["--resume", str(run_dir), *extra]), *parts)
    after = [(run_dir / n).read_text() for n in ("predictions.jsonl", "manifest.json")]
    assert after == before


# --- localweb-run end to end, in process ----------------------------------------------------------


def test_localweb_repeat_runs_each_attempt_on_its_own_episode(
    localweb_run: tuple[Path, int, str],
) -> None:
    run_dir, rc, output = localweb_run
    assert rc == 0, output[-3000:]
    rows = _read_rows(run_dir)
    assert [(r.id, r.attempt) for r in rows] == [
        ("home-links", 1),
        ("catalogue-price", 1),
        ("home-links", 2),
        ("catalogue-price", 2),
    ]
    assert [r.details["episode"] for r in rows] == [
        "home-links.a1",
        "catalogue-price.a1",
        "home-links.a2",
        "catalogue-price.a2",
    ]
    assert all(r.status == "ok" and r.details["try"] == 1 for r in rows)
    assert all(r.backend == "lightpanda-native" for r in rows)
    assert all(f"/t/{r.details['episode']}/" in r.details["start_url"] for r in rows)
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert scores.accuracy_strict == 1.0
    assert (scores.n_tasks, scores.n_rows) == (2, 4)
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.mode == "scaffold" and manifest.repeat == 2
    assert manifest.task_ids == ["home-links", "catalogue-price"]
    assert (manifest.sessions[0].planned, manifest.sessions[0].completed) == (4, 4)


def test_localweb_resume_of_a_finished_run_runs_nothing(
    localweb_run: tuple[Path, int, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "copy"
    shutil.copytree(localweb_run[0], run_dir)
    before = (run_dir / "predictions.jsonl").read_text()
    rc = localweb_main(["--resume", str(run_dir), "--timeout", "120"])  # same timeout: allowed
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "resuming: 4 done, 0 to retry" in err
    assert "0 attempt(s) to run" in err
    assert (run_dir / "predictions.jsonl").read_text() == before
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert [(s.planned, s.completed) for s in manifest.sessions] == [(4, 4), (0, 0)]
    assert not (run_dir / "attempts" / "home-links.1.2").exists()


@pytest.mark.parametrize(
    "resume",
    [
        pytest.param(["--resume"], id="switch-with-out-dir"),
        pytest.param(["--resume", "RUN"], id="folder-and-the-same-out-dir"),
    ],
)
def test_resume_takes_the_whole_original_command_line(
    localweb_run: tuple[Path, int, str],
    tmp_path: Path,
    resume: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Upstream's habit: the command that started the run, plus --resume. The same values
    of the selection, run and folder flags are fine."""
    run_dir = tmp_path / "copy"
    shutil.copytree(localweb_run[0], run_dir)
    before = (run_dir / "predictions.jsonl").read_text()
    original = ["--task-ids", "home-links,catalogue-price", "--repeat", "2"]
    resume = [str(run_dir) if part == "RUN" else part for part in resume]
    rc = localweb_main([*original, "--timeout", "120", "--out-dir", str(run_dir), *resume])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "resuming: 4 done, 0 to retry" in err and "0 attempt(s) to run" in err
    assert (run_dir / "predictions.jsonl").read_text() == before
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.sessions[-1].argv[-1] == resume[-1]


def test_resume_without_a_folder_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    _refused(capsys, localweb_main(["--resume"]), "--resume needs the run folder", "--out-dir")


def test_resume_refuses_a_system_prompt_file_that_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("You are a careful browsing agent. Answer in <ANSWER></ANSWER>.\n")
    run_dir = tmp_path / "run"
    rc = localweb_main(
        [
            *("--task-ids", "home-links,catalogue-price"),
            *("--system-prompt-file", str(prompt)),
            *("--out-dir", str(run_dir), "--no-grade"),
        ]
    )
    assert rc == 0, capsys.readouterr().err[-2000:]
    # A crash lost the last row; meanwhile someone edited the prompt file.
    lines = (run_dir / "predictions.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "predictions.jsonl").write_text(lines[0])
    prompt.write_text("A different prompt that changes the measurement.\n")
    capsys.readouterr()
    rc = localweb_main(["--resume", str(run_dir), "--no-grade"])
    err = capsys.readouterr().err
    assert len(_read_rows(run_dir)) == 1, "an attempt ran under the edited prompt"
    assert rc == 2 and "system-prompt-file" in err


# --- grading at the end of a run (WebBench: an LLM judge), and old WebBench ids ------------------

WB_MODEL = "scripted-webbench"
JUDGE_KEY = "sk-ant-judge-test-not-a-real-key"


class AnswerAtOnce(StepPolicy):
    """Answers without browsing: the run's subject here is what happens after the agent."""

    def step(self, conv: Conversation) -> object:
        return FinalAnswer("The Glacier Water Bottle costs $12.")


@pytest.fixture
def webbench_table(tmp_path: Path) -> Path:
    """Two READ tasks of WebBench's schema on one site (the agent never opens it)."""
    table = tmp_path / "webbench.csv"
    table.write_text(
        "ID,Starting URL,Category,Task\n"
        '7001,http://127.0.0.1:9/,READ,"What does the Glacier Water Bottle cost?"\n'
        '7002,http://127.0.0.1:9/,READ,"What does the Summit Mug cost?"\n',
        encoding="utf-8",
    )
    return table


@pytest.fixture
def scripted_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's key for the scripted model; the judge's key is each test's business."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    monkeypatch.setenv("LIGHTPANDA_DISABLE_TELEMETRY", "true")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


def _webbench_args(table: Path, server: ScriptedModelServer, run_dir: Path) -> list[str]:
    return [
        *("--dataset-file", str(table), "--sample-per-site", "all"),
        *("--provider", "openai_compatible", "--model", WB_MODEL, "--scaffold"),
        *("--base-url", f"{server.root_url}/task/{{task_id}}/v1", "--timeout", "60"),
        *("--out-dir", str(run_dir)),
    ]


def _closed_port_url() -> str:
    """A judge endpoint that is down: nothing listens there."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_run_with_tasks_it_could_not_grade_is_refused_before_its_first_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A task with no gold (a test split hides them) could never be graded at the end."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    table = write_jsonl(
        tmp_path / "ab.jsonl",
        [
            {**ASSISTANTBENCH_ROWS[0], "id": "ab-gold"},
            {**ASSISTANTBENCH_ROWS[0], "id": "ab-hidden", "answer": None},
        ],
    )
    run_dir = tmp_path / "ab"
    rc = assistantbench_main(
        [
            *("--dataset-file", str(table), "--out-dir", str(run_dir)),
            *("--provider", "openai_compatible", "--model", "m"),
            *("--base-url", "http://127.0.0.1:9/v1", "--scaffold"),
        ]
    )
    _refused(
        capsys,
        rc,
        "assistantbench-run grades at the end against gold answers, and 1 selected task(s) "
        "have none (e.g. 'ab-hidden'",
        "pass --no-grade",
    )
    assert not run_dir.exists()


def test_webbench_run_refuses_before_its_first_task_when_the_judge_has_no_key(
    webbench_table: Path,
    scripted_env: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir = tmp_path / "wb"
    with ScriptedModelServer(lambda task_id: AnswerAtOnce(), models=[WB_MODEL]) as server:
        args = _webbench_args(webbench_table, server, run_dir)
        err = _refused(capsys, webbench_main(args), "webbench-run", "ANTHROPIC_API_KEY")
        assert "--no-grade" in err and "webbench-grade" in err
        err = _refused(
            capsys,
            webbench_main([*args, "--judge-model", "gemini-2.5-flash"]),
            "the gemini-2.5-flash judge, which needs GEMINI_API_KEY or GOOGLE_API_KEY",
        )
        assert server.task_ids() == []  # no agent asked the model anything
        assert not run_dir.exists()
        # --no-grade: no judge to check; the run runs and says how to grade it later.
        rc = webbench_main([*args, "--no-grade"])
    err = capsys.readouterr().err
    assert rc == 0, err[-2000:]
    assert len(_read_rows(run_dir)) == 2 and not (run_dir / "scores.json").exists()
    assert f"not graded (--no-grade); grade with: webbench-grade {run_dir}" in err


@pytest.mark.parametrize(
    "protocol",
    [
        pytest.param([], id="upstream-protocol-a-failed-call-is-invalid"),
        pytest.param(
            ["--judge-protocol", "strict", "--judge-max-attempts", "1"],
            id="strict-protocol-judge-error",
        ),
    ],
)
def test_webbench_run_grades_at_the_end_and_a_failed_grade_leaves_the_run_whole(
    webbench_table: Path,
    scripted_env: None,
    tmp_path: Path,
    protocol: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", JUDGE_KEY)
    run_dir = tmp_path / "wb"
    with ScriptedModelServer(lambda task_id: AnswerAtOnce(), models=[WB_MODEL]) as server:
        args = _webbench_args(webbench_table, server, run_dir)
        judge_down = _closed_port_url()
        rc = webbench_main([*args, *protocol, "--judge-base-url", judge_down])
    out, err = capsys.readouterr()
    assert rc == 1, err[-2000:]
    assert "grading incomplete: the judge's API gave no reply for 2 attempt(s)" in err
    # How to grade later: with the judge flags the run was given, so it grades as the run
    # would have.
    grade_later = err[err.index("grade again with: ") :].splitlines()[0]
    assert f"webbench-grade {run_dir} " in grade_later
    for flag in (*protocol, "--judge-base-url", judge_down):
        assert f" {flag}" in grade_later
    rows = _read_rows(run_dir)
    # In the order the attempts finished, which parallel workers do not fix.
    assert sorted((r.id, r.status) for r in rows) == [
        ("webbench-7001", "ok"),
        ("webbench-7002", "ok"),
    ]
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert manifest.sessions[0].completed == 2 and manifest.finished_at is not None

    # The command the message gives, once the judge is back: nothing was cached as failed.
    predictions = (run_dir / "predictions.jsonl").read_bytes()
    with FakeJudgeServer() as judge:
        judge.responder = lambda received: judge_yes()
        rc = webbench_grade_main(
            [str(run_dir), *protocol, "--judge-base-url", judge.base_url("anthropic"), "--json"]
        )
        out, err = capsys.readouterr()
        assert rc == 0, err[-2000:]
        assert len(judge.requests) == 2
    summary = json.loads(out)
    assert summary["accuracy_strict"] == 1.0 and "per_task" not in summary
    assert (run_dir / "predictions.jsonl").read_bytes() == predictions
    assert JUDGE_KEY not in "".join(p.read_text() for p in run_dir.glob("*.json*"))


def test_resuming_a_webbench_run_recorded_with_bare_ids(
    webbench_table: Path,
    scripted_env: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run of ours from before WebBench ids were upstream's ``webbench-N``: rows and
    manifest say ``N``. Resume skips what its rows settled, retries its failure under
    today's id, appends without touching a byte of the old rows, and grades old and new
    rows as the same tasks."""
    run_dir = tmp_path / "wb"
    with (
        ScriptedModelServer(lambda task_id: AnswerAtOnce(), models=[WB_MODEL]) as server,
        FakeJudgeServer() as judge,
    ):
        server.fault_on("webbench-7002", {1: Fault.malformed()})
        rc = webbench_main([*_webbench_args(webbench_table, server, run_dir), "--no-grade"])
        assert rc == 0, capsys.readouterr().err[-2000:]
        # Write the run as the older harness did: bare ids in rows and manifest.
        old_rows = [
            r.model_copy(update={"id": r.id.removeprefix("webbench-")}) for r in _read_rows(run_dir)
        ]
        assert [(r.id, r.status) for r in old_rows] == [("7001", "ok"), ("7002", "error")]
        old_text = "".join(r.model_dump_json() + "\n" for r in old_rows)
        (run_dir / "predictions.jsonl").write_text(old_text)
        manifest = json.loads((run_dir / "manifest.json").read_text())
        manifest["task_ids"] = ["7001", "7002"]
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
        asked_7001 = server.request_count("webbench-7001")
        capsys.readouterr()

        # The judge's key is checked on resume too, before any attempt.
        _refused(capsys, webbench_main(["--resume", str(run_dir)]), "ANTHROPIC_API_KEY")
        assert (run_dir / "predictions.jsonl").read_text() == old_text

        monkeypatch.setenv("ANTHROPIC_API_KEY", JUDGE_KEY)
        judge.responder = lambda received: judge_yes()
        rc = webbench_main(
            ["--resume", str(run_dir), "--judge-base-url", judge.base_url("anthropic")]
        )
        err = capsys.readouterr().err
        assert rc == 0, err[-2000:]
        assert server.request_count("webbench-7001") == asked_7001  # its old ok row stands
        assert len(judge.requests) == 2
    assert "resuming: 1 done, 1 to retry" in err
    text = (run_dir / "predictions.jsonl").read_text()
    assert text.startswith(old_text)  # not a byte of the old rows changed
    (new,) = [
        PredictionRow.model_validate_json(line) for line in text[len(old_text) :].splitlines()
    ]
    assert (new.id, new.status, new.details["try"]) == ("webbench-7002", "ok", 2)
    scores = Scores.model_validate_json((run_dir / "scores.json").read_text())
    assert sorted((e.id, e.status, e.correct) for e in scores.per_task) == [
        ("webbench-7001", "ok", True),
        ("webbench-7002", "ok", True),
    ]
    assert scores.n_tasks == 2 and scores.metrics["n_superseded_rows"] == 1
    assert scores.warnings == []


def test_what_a_resumed_run_learns_joins_what_its_earlier_sessions_learned() -> None:
    """Claude Code's alias resolved to one id in the first session and another after an
    upgrade: the manifest lists both, so compare sees the run did not run as one model."""
    settings: dict[str, Any] = {"resolved_models": ["claude-sonnet-5-5"], "surface": "upstream"}
    merge_learned(settings, {"resolved_models": ["claude-sonnet-5-6"], "note": "x"})
    assert settings == {
        "resolved_models": ["claude-sonnet-5-5", "claude-sonnet-5-6"],
        "surface": "upstream",
        "note": "x",
    }
