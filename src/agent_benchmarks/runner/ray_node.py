"""The node's side of the Ray executor (:mod:`.ray_executor`): what a Ray worker runs.

A module of its own, importing only the process isolation: every Ray worker of a run
imports it before its first attempt, so what it imports is paid once per worker, per run.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec, reap, run_process

# How often a node's attempt looks for Ray's cancel while its process runs.
_POLL_S = 0.2


def pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        if folder.is_dir():
            for child in sorted(folder.iterdir()):
                archive.add(child, arcname=child.name)
    return buffer.getvalue()


def unpack(data: bytes, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if not data:
        return
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as archive:
        archive.extractall(folder, filter="tar")


def _rewrite_files(folder: Path, moves: dict[str, str]) -> None:
    """Replace paths in the attempt's own files and links: the driver writes absolute
    paths into them (Claude Code's MCP config, agent-browser chat's attempt.json, Codex's
    sessions folder linked into the attempt folder), and what the agent leaves names the
    node's folders; each side reads its own."""
    pairs = [(old.encode(), new.encode()) for old, new in moves.items()]
    for path in folder.rglob("*"):
        if path.is_symlink():
            target = os.readlink(path)
            if (moved := _move(target, moves)) != target:
                path.unlink()
                path.symlink_to(moved)
            continue
        if not path.is_file():
            continue
        data = path.read_bytes()
        changed = data
        for old, new in pairs:
            changed = changed.replace(old, new)
        if changed != data:
            path.write_bytes(changed)


def _move(text: str, moves: dict[str, str]) -> str:
    for old, new in moves.items():
        text = text.replace(old, new)
    return text


def _moved(spec: ProcessSpec, moves: dict[str, str]) -> ProcessSpec:
    """``spec`` with the driver's folders replaced by the node's in every string."""

    def move(text: str) -> str:
        return _move(text, moves)

    return replace(
        spec,
        argv=[move(a) for a in spec.argv],
        env={k: move(v) for k, v in spec.env.items()},
        cwd=Path(move(str(spec.cwd))),
        stdin_text=move(spec.stdin_text) if spec.stdin_text is not None else None,
    )


def _moved_result(result: ProcessResult, moves: dict[str, str]) -> ProcessResult:
    """What the agent printed, with the node's folders named as the driver's."""
    return replace(result, stdout=_move(result.stdout, moves), stderr=_move(result.stderr, moves))


# A node's staging folder for one attempt (short: Chromium's and agent-browser's socket
# paths in its temp folder must stay under 108 bytes), the attempt's marker in a file in it.
STAGING_PREFIX = "agent-benchmarks-node-"
_MARKER_FILE = "marker"
# The guard's code (see _guard); its argv names the staging folder, which is how a later
# probe tells a staging folder whose guard is gone (see clear_dead_staging).
# It imports the harness only once its worker is gone: an attempt pays for a bare Python's
# start-up alone (python -S: no site packages to scan).
_GUARD_CODE = (
    "import os, sys, time\n"
    "parent = int(sys.argv[1])\n"
    "while os.getppid() == parent:\n"
    "    time.sleep(0.5)\n"
    "import shutil, site\n"
    "site.main()\n"
    "from agent_benchmarks.isolation.process import reap\n"
    "reap(sys.argv[2])\n"
    "shutil.rmtree(sys.argv[3], ignore_errors=True)\n"
)


def _staging_with_guard(marker: str) -> tuple[Path, subprocess.Popen[bytes]]:
    """A new staging folder (private, its marker in a file) and its guard, started first."""
    while True:
        staging = Path(tempfile.gettempdir()) / f"{STAGING_PREFIX}{uuid.uuid4().hex[:8]}"
        guard = _guard(marker, staging)
        try:
            staging.mkdir(mode=0o700)
            (staging / _MARKER_FILE).write_text(marker)
        except FileExistsError:
            guard.kill()
            guard.wait()
            continue
        except BaseException:
            guard.kill()
            guard.wait()
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return staging, guard


def _guard(marker: str, staging: Path) -> subprocess.Popen[bytes]:
    """A process outliving this worker: if the worker dies (its node lost, the raylet
    killed), it kills the attempt's processes, which carry ``marker``, removes their memory
    cgroup and the attempt's staging folder. Killed after that folder is removed."""
    return subprocess.Popen(
        [sys.executable, "-S", "-c", _GUARD_CODE, str(os.getpid()), marker, str(staging)],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def clear_dead_staging(temp_dir: Path | None = None) -> list[Path]:
    """Remove the staging folders on this node whose guard is gone (a guard killed with its
    worker's whole node, say), killing what of their attempts still runs first; the
    folders removed."""
    temp = temp_dir or Path(tempfile.gettempdir())
    folders = list(temp.glob(f"{STAGING_PREFIX}*"))
    if not folders:
        return []
    guarded = set()
    for entry in os.scandir("/proc"):
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if len(argv) > 6 and argv[3] == _GUARD_CODE.encode():
            guarded.add(argv[6].decode(errors="replace"))
    cleared = []
    for folder in folders:
        if str(folder) in guarded:
            continue
        with contextlib.suppress(OSError):
            reap((folder / _MARKER_FILE).read_text())  # none: its attempt never started
        shutil.rmtree(folder, ignore_errors=True)
        cleared.append(folder)
    return cleared


def run_on_node(spec: ProcessSpec, files: bytes, temp_files: bytes) -> tuple[ProcessResult, bytes]:
    """A node's side of an attempt: stage its folder and its temp folder (what the backend
    put there before the start: Claude Code's private HOME with its login, say), run its
    process, send the attempt folder back (the temp folder is removed, as locally).
    Ray's cancel arrives as KeyboardInterrupt: the process is killed and what it left is
    returned, as a local attempt's would be."""
    import ray

    node = f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:12]}"
    # The driver's marker names the run (a resume reaps what is left of it). The guard is
    # started before the folder is made, so no staging folder is ever without one.
    marker = spec.marker or uuid.uuid4().hex
    staging, guard = _staging_with_guard(marker)
    try:
        workdir, tmpdir = staging / "work", staging / "tmp"
        unpack(temp_files, tmpdir)
        unpack(files, workdir)
        moves = {}
        if spec.workdir is not None:
            moves[str(spec.workdir)] = str(workdir)
        if spec.tmpdir is not None:
            moves[str(spec.tmpdir)] = str(tmpdir)
        _rewrite_files(workdir, moves)
        _rewrite_files(tmpdir, moves)
        staged = replace(_moved(spec, moves), tmpdir=tmpdir, workdir=workdir, marker=marker)
        cancel = threading.Event()
        outcome: list[ProcessResult] = []

        def attempt() -> None:
            try:
                outcome.append(run_process(staged, cancel))
            except KeyboardInterrupt:
                # Ray raised the cancel in this thread: run_process killed what it started
                # on its way out, so the attempt is over, interrupted.
                cancel.set()

        started = time.monotonic()
        thread = threading.Thread(target=attempt)
        thread.start()
        while thread.is_alive():
            try:
                thread.join(timeout=_POLL_S)
            except KeyboardInterrupt:
                cancel.set()
        if outcome:
            result = outcome[0]
        else:
            result = ProcessResult(None, "", "", time.monotonic() - started, interrupted=True)
        back = {new: old for old, new in moves.items()}
        _rewrite_files(workdir, back)
        return replace(_moved_result(result, back), node=node), pack(workdir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        guard.kill()
        guard.wait()


def probe_node(probe: Callable[[], dict[str, str]] | None) -> dict[str, Any]:
    """What one node has: its name, CPUs and the pinned programs' versions (or why the
    backend's check failed there). It also clears what attempts killed with their guard
    left on the node (:func:`clear_dead_staging`)."""
    cleared = clear_dead_staging()
    programs: dict[str, str] | str = {}
    if probe is not None:
        try:
            programs = probe()
        except InputError as exc:
            programs = str(exc)
    return {
        "hostname": socket.gethostname(),
        "cpus": os.cpu_count(),
        "programs": programs,
        "cleared": len(cleared),
    }
