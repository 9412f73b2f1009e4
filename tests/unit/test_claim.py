"""Run folders are claimed by creating them and held by a lock while a run writes there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agent_benchmarks.runner.claim import (
    LOCK_NAME,
    FolderBusy,
    claim_new_folder,
    lock_folder,
)
from tests.support import REPO

HOLD = """
import sys, time
from pathlib import Path
from agent_benchmarks.runner.claim import lock_folder
lock = lock_folder(Path(sys.argv[1]), ["localweb-run", "--out-dir", sys.argv[1]])
print("held", flush=True)
time.sleep(60)
"""


def _holder(folder: Path) -> subprocess.Popen[str]:
    """Another process holding ``folder``'s lock until it is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_taken_name_gets_the_next_suffix(tmp_path: Path) -> None:
    base = tmp_path / "results" / "localweb" / "20261127T062646Z"
    first, lock1 = claim_new_folder(base, ["a"])
    second, lock2 = claim_new_folder(base, ["b"])
    third, lock3 = claim_new_folder(base, ["c"])
    assert [first.name, second.name, third.name] == [
        "20261127T062646Z",
        "20261127T062646Z-2",
        "20261127T062646Z-3",
    ]
    for lock in (lock1, lock2, lock3):
        lock.release()


def test_sixteen_claims_at_one_instant_each_get_their_own_folder(tmp_path: Path) -> None:
    base = tmp_path / "20261127T062646Z"
    barrier = threading.Barrier(16)
    claimed: list[Path] = []

    def claim() -> None:
        barrier.wait()
        folder, _lock = claim_new_folder(base, ["x"])
        claimed.append(folder)  # the lock stays held: the folder is this thread's run's

    threads = [threading.Thread(target=claim) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(claimed)) == 16
    assert {p.name for p in tmp_path.iterdir()} == {p.name for p in claimed}


def test_a_held_folder_refuses_a_second_run_naming_the_holder(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    holder = _holder(folder)
    try:
        with pytest.raises(FolderBusy) as refused:
            lock_folder(folder, ["localweb-run", "--resume", str(folder)])
        message = str(refused.value)
        assert str(folder) in message and f"process {holder.pid}" in message
        assert "localweb-run --out-dir" in message
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_leaves_the_folder_free(tmp_path: Path) -> None:
    """SIGKILL: the kernel drops the lock; the stale file is taken over and removed when
    the next run releases it."""
    folder = tmp_path / "run"
    folder.mkdir()
    holder = _holder(folder)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert (folder / LOCK_NAME).exists()
    lock = lock_folder(folder, ["localweb-run", "--resume", str(folder)])
    assert str(os.getpid()) in (folder / LOCK_NAME).read_text()
    lock.release()
    assert not (folder / LOCK_NAME).exists()
    assert folder.is_dir()  # not made by this lock: kept, empty or not


def test_release_removes_a_made_folder_left_empty(tmp_path: Path) -> None:
    folder, lock = claim_new_folder(tmp_path / "run", ["x"])
    lock.release()
    assert not folder.exists()
    folder, lock = claim_new_folder(tmp_path / "run", ["x"])
    (folder / "manifest.json").write_text("{}")
    lock.release()
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]


def test_release_removes_the_empty_folders_made_in_a_made_folder(tmp_path: Path) -> None:
    """A refused sweep: its cells' parent folders were made, no cell ran."""
    folder, lock = claim_new_folder(tmp_path / "sweep", ["x"])
    (folder / "localweb" / "native").mkdir(parents=True)
    lock.release()
    assert not folder.exists()
    folder, lock = claim_new_folder(tmp_path / "sweep", ["x"])
    (folder / "localweb" / "native").mkdir(parents=True)
    (folder / "localweb" / "native" / "predictions.jsonl").write_text("")
    lock.release()
    assert (folder / "localweb" / "native" / "predictions.jsonl").exists()


def test_a_lock_file_removed_under_a_waiting_run_is_not_held_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run ends (it removes the lock file and unlocks) just after another opened that
    file and before it locked it: the second then holds a file no longer at the path, so
    it must lock the file at the path instead, or a third run would get the folder too."""
    import agent_benchmarks.runner.claim as claim

    folder = tmp_path / "run"
    folder.mkdir()
    first = lock_folder(folder, ["first"])
    real_flock = claim.fcntl.flock
    calls = []

    def flock_as_the_first_run_ends(fd: int, operation: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            first.release()  # between the second run's open and its lock
        real_flock(fd, operation)

    monkeypatch.setattr(claim.fcntl, "flock", flock_as_the_first_run_ends)
    second = lock_folder(folder, ["second"])
    monkeypatch.undo()
    assert len(calls) == 2  # it locked the removed file, saw so, and locked the new one
    assert "second" in (folder / LOCK_NAME).read_text()
    with pytest.raises(FolderBusy):
        lock_folder(folder, ["third"])
    second.release()
