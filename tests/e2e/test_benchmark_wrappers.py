"""The wrappers benchmarks/run_process.py runs our ``webbench-run`` through, on the real
console script and the real ``lightpanda agent`` (a scripted model): each must still find
every function it wraps in today's code and run the command to its end, or the figures it
exists for silently stop being measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_benchmarks.isolation.process import CGROUP_V1, CGROUP_V2, memory_cap_method
from agent_benchmarks.localweb.models import (
    API_KEY,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
)
from tests.support import REPO, lightpanda_binary, read_rows

pytestmark = pytest.mark.e2e
MODEL = "scripted-wrappers"
TASKS = 3
WEBBENCH_CSV = REPO / "src" / "agent_benchmarks" / "webbench" / "data" / "webbench_read.csv"


def _run_through(
    wrapper: list[str], run_dir: Path, env: dict[str, str], memory_max_mb: int = 0
) -> subprocess.CompletedProcess[str]:
    policy = ScriptedPolicy([FinalAnswer("Three items are listed.")])
    with ScriptedModelServer(lambda task_id: policy, models=[MODEL]) as server:
        return subprocess.run(
            [
                sys.executable,
                *wrapper,
                str(Path(sys.executable).parent / "webbench-run"),
                *("--dataset-file", str(WEBBENCH_CSV), "--sample-per-site", "all"),
                *("--limit", str(TASKS), "--workers", "2", "--no-grade", "--scaffold"),
                *("--provider", "openai_compatible", "--model", MODEL),
                *("--base-url", server.base_url(), "--lightpanda", lightpanda_binary()),
                *("--memory-max-mb", str(memory_max_mb), "--out-dir", str(run_dir)),
            ],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(run_dir.parent), **env},
            cwd=REPO,
            timeout=120,
        )


def _phases(tmp_path: Path, memory_max_mb: int) -> dict:
    """The phase report of a run of TASKS attempts through phase_timer.py, its rows checked."""
    out = tmp_path / "phases.json"
    run_dir = tmp_path / "run"
    proc = _run_through(
        [str(REPO / "benchmarks" / "phase_timer.py")],
        run_dir,
        {"OPENAI_API_KEY": API_KEY, "PHASES_OUT": str(out)},
        memory_max_mb,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [row.status for row in read_rows(run_dir)] == ["ok"] * TASKS
    report = json.loads(out.read_text())
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from phase_timer import PHASES
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    assert set(report["phases"]) == set(PHASES)
    assert 0 < report["startup_cpu_s"] < report["process_cpu_s"]
    in_phases = sum(counted["cpu_s"] for counted in report["phases"].values())
    assert in_phases < report["process_cpu_s"] - report["startup_cpu_s"]
    return report["phases"]


# What only one way of finding an attempt's processes does: the cap's cgroup, or /proc.
CGROUP_ONLY = {
    "the sweep: the cgroup's members",
    "the memory cap's cgroup (made, its OOM count read, removed)",
}
PROC_ONLY = {"the sweep: reading /proc"}


def test_phase_timer_counts_every_phase_of_every_attempt(tmp_path: Path) -> None:
    """Uncapped (run_process.py's like-for-like runs): the sweep reads /proc."""
    phases = _phases(tmp_path, memory_max_mb=0)
    # Each phase ran once per attempt at least (the slots, the temp folder and the command
    # are two calls each; the manifest is fsynced too).
    for name, counted in phases.items():
        if name in CGROUP_ONLY:
            assert counted["calls"] == 0, (name, counted)
        else:
            assert counted["calls"] >= TASKS, (name, counted)
        assert counted["cpu_s"] >= 0, (name, counted)
    assert phases["the typed, redacted row"]["calls"] == TASKS
    assert phases["the slots"]["calls"] == 2 * TASKS
    # Counted from the engine's start: the start-up's `lightpanda version` is not an attempt.
    assert phases["spawning the agent (Popen)"]["calls"] == TASKS


def test_phase_timer_puts_the_memory_caps_work_in_its_own_phases(tmp_path: Path) -> None:
    """Capped: under a cgroup its making and removal are the cap's phase and its members
    are the sweep; under an rlimit (no usable cgroup) the sweep reads /proc as uncapped."""
    phases = _phases(tmp_path, memory_max_mb=2048)
    under_cgroup = memory_cap_method() in (CGROUP_V2, CGROUP_V1)
    for name in CGROUP_ONLY:
        assert (phases[name]["calls"] >= TASKS) is under_cgroup, (name, phases[name])
    for name in PROC_ONLY:
        assert (phases[name]["calls"] >= TASKS) is not under_cgroup, (name, phases[name])


def test_ablate_still_finds_what_it_patches_and_runs_the_command(tmp_path: Path) -> None:
    """ablate.py refuses to start when a function it replaces has gone (assigning it would
    ablate nothing), so a run to its end means today's code has all three."""
    run_dir = tmp_path / "run"
    proc = _run_through(
        [str(REPO / "benchmarks" / "ablate.py"), "fsync,sweep,scrub"],
        run_dir,
        {"OPENAI_API_KEY": API_KEY},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [row.status for row in read_rows(run_dir)] == ["ok"] * TASKS
