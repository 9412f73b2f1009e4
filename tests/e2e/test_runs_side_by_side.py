"""Runs started at one instant never share a folder, and each folder holds exactly its own
command's rows: the default stamped folders of ``*-run`` and ``*-mcp-run``, a folder named
twice with ``--out-dir``, and sweeps. Every command is the real console script, started
together through a barrier (tests.support.start_at_once), with the real programs and the
localweb oracle as the model.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agent_benchmarks.localweb.tasks import TASKS
from agent_benchmarks.records.schema import Manifest
from tests.support import left_running, no_api_keys, read_rows, start_at_once

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]
TASK_IDS = [t.id for t in TASKS]
ENV = {**no_api_keys(), "LIGHTPANDA_DISABLE_TELEMETRY": "true"}


def _finish(procs: list[subprocess.Popen[str]], timeout: float) -> list[tuple[int, str]]:
    """Each command's exit status and stderr, in order."""
    done = []
    for proc in procs:
        _out, err = proc.communicate(timeout=timeout)
        done.append((proc.returncode, err))
    return done


def _each_folder_is_one_commands(runs_root: Path, task_of: dict[int, str]) -> list[Path]:
    """Every run folder under ``runs_root``: its manifest's command line names one task,
    and its rows are that task's one attempt, nothing of another command."""
    folders = sorted(p.parent for p in runs_root.rglob("manifest.json"))
    seen = []
    for folder in folders:
        manifest = Manifest.model_validate_json((folder / "manifest.json").read_text())
        argv = manifest.sessions[0].argv
        (task,) = [argv[i + 1] for i, a in enumerate(argv) if a == "--task-ids"]
        assert manifest.task_ids == [task]
        rows = read_rows(folder)
        assert [(r.id, r.attempt) for r in rows] == [(task, 1)], folder
        assert rows[0].status == "ok", (folder, rows[0].error)
        assert not left_running(folder)
        seen.append(task)
    assert sorted(seen) == sorted(task_of.values())
    return folders


@pytest.mark.parametrize(("n", "rounds"), [(2, 3), (4, 3), (16, 1)])
def test_native_runs_started_at_once_each_get_their_own_folder(
    tmp_path: Path, n: int, rounds: int
) -> None:
    clashed = 0
    for round_ in range(rounds):
        cwd = tmp_path / f"round{round_}"
        cwd.mkdir()
        clashed += _native_runs_at_once(cwd, n)
    if n == 16:
        # Sixteen start-ups on two cores take a few seconds, not sixteen: names clashed.
        assert clashed


def _native_runs_at_once(cwd: Path, n: int) -> int:
    """``n`` runs started together in ``cwd``, each on its own task; how many got a
    suffixed folder."""
    task_of = dict(enumerate(TASK_IDS[:n]))
    commands = [["localweb-run", "--task-ids", task, "--no-grade"] for task in task_of.values()]
    done = _finish(start_at_once(commands, cwd, ENV), timeout=600)
    for status, err in done:
        assert status == 0, err[-2000:]
        # No run took another's folder for an earlier session of its own.
        assert "temp folder(s) an earlier session" not in err
    folders = _each_folder_is_one_commands(cwd / "results", task_of)
    assert len(folders) == n
    suffixed = [f for f in folders if "-" in f.name]
    assert len({f.name.split("-")[0] for f in folders}) + len(suffixed) == n
    for folder in suffixed:  # the command that got it said so
        assert sum(f"run's folder is {folder.name}" in err for _, err in done) == 1
    return len(suffixed)


def test_mcp_runs_started_at_once_each_get_their_own_folder(tmp_path: Path) -> None:
    task_of = dict(enumerate(TASK_IDS[:4]))
    commands = [
        ["localweb-mcp-run", "--backend", "lightpanda", "--task-ids", task, "--no-grade"]
        for task in task_of.values()
    ]
    for status, err in _finish(start_at_once(commands, tmp_path, ENV), timeout=900):
        assert status == 0, err[-2000:]
    runs_root = tmp_path / "results" / "localweb-mcp" / "lightpanda"
    assert len(_each_folder_is_one_commands(runs_root, task_of)) == 4


def test_one_out_dir_given_twice_at_once_refuses_the_second(tmp_path: Path) -> None:
    """Both name the same folder: one runs, the other is refused with one message naming
    the folder and the running command's process, and writes nothing there."""
    run_dir = tmp_path / "one-folder"
    command = ["localweb-run", "--limit", "2", "--latency-ms", "1500", "--out-dir", str(run_dir)]
    procs = start_at_once([command, command], tmp_path, ENV)
    done = _finish(procs, timeout=600)
    assert sorted(status for status, _ in done) == [0, 2], [err[-1500:] for _, err in done]
    winner = next(p for p, (status, _) in zip(procs, done, strict=True) if status == 0)
    (refusal,) = [err for status, err in done if status == 2]
    lines = [line for line in refusal.splitlines() if line.strip()]
    assert len(lines) == 1, refusal
    assert f"{run_dir} is in use by another run (process {winner.pid}" in lines[0]
    rows = read_rows(run_dir)
    assert sorted((r.id, r.attempt) for r in rows) == sorted((t, 1) for t in TASK_IDS[:2])
    manifest = Manifest.model_validate_json((run_dir / "manifest.json").read_text())
    assert len(manifest.sessions) == 1


def test_a_sweep_started_twice_at_once_runs_once(tmp_path: Path) -> None:
    """The second sweep of one folder is refused before it reads a cell; every cell of the
    first holds its own rows once."""
    sweep = tmp_path / "pair.toml"
    sweep.write_text(
        'name = "pair"\nworkers = 2\n\n[grid]\nsuite = "localweb"\n'
        'stack = ["native"]\nmodel = ["scripted", "scripted:oracle-b"]\n\n'
        "[settings]\nlimit = 2\nno_grade = true\n"
    )
    command = ["agent-benchmarks", "sweep", str(sweep)]
    procs = start_at_once([command, command], tmp_path, ENV)
    done = _finish(procs, timeout=600)
    assert sorted(status for status, _ in done) == [0, 2], [err[-1500:] for _, err in done]
    winner = next(p for p, (status, _) in zip(procs, done, strict=True) if status == 0)
    (refusal,) = [err for status, err in done if status == 2]
    out_dir = tmp_path / "results" / "sweeps" / "pair"
    assert f"{out_dir} is in use by another run (process {winner.pid}" in refusal
    cells = sorted(p.parent for p in out_dir.rglob("manifest.json"))
    assert len(cells) == 2
    for cell in cells:
        rows = read_rows(cell)
        assert sorted((r.id, r.attempt) for r in rows) == sorted((t, 1) for t in TASK_IDS[:2])
