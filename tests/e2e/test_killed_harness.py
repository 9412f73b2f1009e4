"""A harness killed outright (SIGKILL: nothing of it runs any more), then resumed at once:
the real ``localweb-run`` with the real ``lightpanda agent`` under the memory cap, and
nothing of the killed session outlives the resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from agent_benchmarks.isolation.process import memory_cap_method
from agent_benchmarks.records.schema import PredictionRow
from tests.support import REPO, run_cgroups, run_cli, run_processes

pytestmark = pytest.mark.e2e

ENV = {"LIGHTPANDA_DISABLE_TELEMETRY": "true"}


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _stopped_shells(run_dir: Path) -> list[psutil.Process]:
    """The run's capped agents still waiting for their slot: a shell stopped (state T) under
    the cap, which the harness lets go when the slot frees."""
    return [p for p in run_processes(run_dir) if p.status() == psutil.STATUS_STOPPED]


def test_a_sigkilled_harness_leaves_nothing_after_the_next_resume(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    # One worker and slow pages: one agent runs while the next attempt's capped shell,
    # spawned before its slot, waits stopped.
    harness = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "localweb-run"), "--workers", "1", "--limit", "4",
            "--latency-ms", "400", "--memory-max-mb", "2000", "--out-dir", str(run_dir),
        ],
        cwd=REPO, env={**os.environ, **ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait_for(lambda: _stopped_shells(run_dir), 120, "a capped attempt waiting for its slot")
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    finally:
        harness.kill()
        harness.wait()
    # What the killed harness left: a stopped shell that nothing will ever continue, the
    # agent that was running, and their memory cgroups (where the cap is one).
    time.sleep(0.5)
    assert _stopped_shells(run_dir)
    if memory_cap_method() in ("cgroup-v1", "cgroup-v2"):
        assert run_cgroups(run_dir)

    resumed = run_cli("localweb-run", "--resume", str(run_dir), env=ENV, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "an earlier session of this run left" in resumed.stderr
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    rows = {(r.id, r.attempt): r for r in map(PredictionRow.model_validate_json, lines)}
    assert len(rows) == 4 and all(r.status == "ok" for r in rows.values())
    # Nothing of either session is left: no process of the run, no cgroup of the run.
    assert not run_processes(run_dir)
    assert not run_cgroups(run_dir)
