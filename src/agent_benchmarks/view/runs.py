"""The runs under a results folder: where they are, what state each is in, its figures.

A run folder is a folder holding ``predictions.jsonl`` or ``manifest.json``; the search
does not go into a run folder (its ``attempts/``) nor into the browser's own pages. Each run
is read as the reports read it (:func:`~agent_benchmarks.report.load.load_run`) but never
written to: a run without scores.json is graded in memory, and one whose grader is an LLM
judge (WebBench) and has no current scores is shown not graded.

A run's state:

- ``running``: a run holds its folder's lock (``.run.lock``, runner/claim.py). The lock is
  an ``flock``, so it is looked up in ``/proc/locks`` by the lock file's inode: taking it,
  even for a moment, could refuse a run starting at that instant.
- ``interrupted``: not running, and not every planned attempt has its final row, or a final
  row says ``interrupted`` (Ctrl-C), or its last session never finished (a killed run):
  ``--resume`` continues it.
- ``graded``: complete, with a current scores.json.
- ``not graded``: complete, without current scores (``--no-grade``, or WebBench's judge
  not run yet, or predictions changed since).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import Manifest, TaskScore
from agent_benchmarks.report.compare import cost_summary, token_summary
from agent_benchmarks.report.load import LoadedRun, load_run
from agent_benchmarks.report.schema import CostSummary, Stack, TokenSummary
from agent_benchmarks.report.stacks import stack_of
from agent_benchmarks.runner.claim import LOCK_NAME
from agent_benchmarks.scoring.scorecard import read_manifest

RUN_MARKERS = ("predictions.jsonl", "manifest.json")
# Folders a run folder holds that are never runs themselves.
NOT_RUNS = frozenset({"attempts", "__pycache__"})
STATES = ("running", "interrupted", "graded", "not graded")


def find_runs(root: Path, skip: Path | None = None) -> list[Path]:
    """Every run folder under ``root`` (``root`` itself when it is one), in path order;
    ``skip`` (the browser's own pages) is not searched."""
    found: list[Path] = []
    skip = skip.resolve() if skip is not None else None
    for folder, subfolders, files in os.walk(root):
        here = Path(folder)
        if any(marker in files for marker in RUN_MARKERS):
            found.append(here)
            subfolders.clear()  # a run's attempts are not runs
            continue
        subfolders[:] = sorted(
            name
            for name in subfolders
            if not name.startswith(".")
            and name not in NOT_RUNS
            and (skip is None or (here / name).resolve() != skip)
        )
    return sorted(found)


def lock_holder(run_dir: Path) -> int | None:
    """The process that holds the run folder's lock, or None when no run holds it."""
    path = run_dir / LOCK_NAME
    try:
        st = path.stat()
        locks = Path("/proc/locks").read_text()
    except OSError:
        return None
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    for line in locks.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF" (device numbers in hex); a
        # process waiting for a lock has "->" before FLOCK, and holds nothing.
        parts = line.split()
        if len(parts) < 6 or parts[1] != "FLOCK":
            continue
        pid, device = parts[4], parts[5]
        dev_major, dev_minor, inode = [*device.split(":"), "", "", ""][:3]
        try:
            same = (int(inode), int(dev_major, 16), int(dev_minor, 16)) == (st.st_ino, major, minor)
        except ValueError:
            continue
        if same:
            return int(pid)
    return None


@dataclass
class RunSummary:
    """One run as the browser lists it; ``run`` is None when it has no rows yet (or its
    files cannot be read: ``problem`` says why)."""

    run_dir: Path
    rel: str  # its path under the results folder, "." for the folder itself
    manifest: Manifest | None
    run: LoadedRun | None
    state: str
    holder: int | None = None  # the running run's process
    problem: str | None = None
    graded: list[TaskScore] = field(default_factory=list)  # entries of finished attempts

    @property
    def stack(self) -> Stack | None:
        return stack_of(self.run) if self.run is not None else None

    @property
    def suite(self) -> str:
        if self.run is not None:
            return self.run.suite
        return self.manifest.suite if self.manifest is not None else "?"

    @property
    def mode(self) -> str:
        if self.manifest is not None:
            return self.manifest.mode
        return "imported" if self.run is not None and self.run.imported_from else "unknown"

    @property
    def started(self) -> str:
        """The start, as ``2026-11-27 09:14 UTC``."""
        stamp = self.manifest.started_at if self.manifest is not None else None
        if not stamp:
            return "?"
        try:
            return datetime.fromisoformat(stamp.replace("Z", "+00:00")).strftime(
                "%Y-%m-%d %H:%M UTC"
            )
        except ValueError:
            return stamp

    @property
    def planned(self) -> int:
        if self.manifest is not None and self.manifest.task_ids:
            return len(self.manifest.task_ids) * self.manifest.repeat
        return self.done

    @property
    def done(self) -> int:
        return len(self.run.final) if self.run is not None else 0

    @property
    def successes(self) -> int:
        return sum(1 for e in self.graded if e.correct)

    @property
    def is_graded(self) -> bool:
        return self.run is not None and self.run.scores is not None

    @property
    def tokens(self) -> TokenSummary | None:
        if self.run is None or not self.is_graded:
            return None
        return token_summary(self.run.rows, self.successes)

    @property
    def cost(self) -> CostSummary | None:
        if self.run is None or not self.is_graded:
            return None
        return cost_summary(self.run.rows, self.successes, len(self.graded))


def _state(manifest: Manifest | None, run: LoadedRun | None) -> str:
    """The state of a run no process holds (see the module)."""
    if run is None:
        return "interrupted"  # it stopped before its first row
    done = len(run.final)
    planned = done
    if manifest is not None and manifest.task_ids:
        planned = len(manifest.task_ids) * manifest.repeat
    last = manifest.sessions[-1] if manifest is not None and manifest.sessions else None
    stopped = last is not None and (last.interrupted or last.finished_at is None)
    cut = any(e.error_class == "interrupted" for e in run.entries)
    if done < planned or stopped or cut:
        return "interrupted"
    if run.scores is not None and not run.graded_on_the_fly:
        return "graded"
    return "not graded"


def summarise(run_dir: Path, root: Path) -> RunSummary:
    """Read one run folder (never writing to it) into its summary."""
    rel = run_dir.relative_to(root).as_posix() if run_dir != root else "."
    holder = lock_holder(run_dir)
    problem = None
    try:
        manifest = read_manifest(run_dir)
    except InputError as exc:
        manifest, problem = None, str(exc)
    run: LoadedRun | None = None
    if (run_dir / "predictions.jsonl").is_file():
        try:
            run = load_run(run_dir, grade=False, write_scores=False)
        except InputError as exc:
            problem = problem or str(exc)
    state = "running" if holder is not None else _state(manifest, run)
    graded = []
    if run is not None:
        graded = [e for e in run.entries if e.error_class != "missing_row"]
    return RunSummary(run_dir, rel, manifest, run, state, holder, problem, graded)
