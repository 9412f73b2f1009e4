"""Harness overhead: many tasks the scripted model answers at once, through the real gaia-run.

    uv run python benchmarks/overhead.py [--tasks N] [--workers 1,2,4] [--memory-max-mb MB]
                                         [--no-grade] [--keep]

A GAIA-schema dataset of N tasks is written to a temporary folder, a scripted model server
answers every task on its first turn (``<ANSWER>1</ANSWER>``), and the real ``gaia-run``
console script runs them all with the real ``lightpanda agent``, once per ``--workers``
value. The agent processes then take tens of milliseconds each, so whatever the harness
adds is not hidden behind model latency.

From the run's manifest (its last session): ``wall`` (the engine loop), ``busy`` (summed
time workers spent inside attempts) and ``agent`` (summed time the agent processes ran).

* overhead per task = (wall × workers − agent) / tasks: every worker-second not spent in an
  agent process, i.e. what the harness costs a task;
* of which in-attempt = (busy − agent) / tasks: preparing the attempt, spawning and reaping
  the process, reading its trace, building the row;
* of which idle = (wall × workers − busy) / tasks: workers waiting (the scheduler, writing
  rows, and the tail where fewer tasks than workers remain);
* utilisation = agent / (wall × workers), and busy / (wall × workers).

Each worker has two attempt threads: an attempt's clean-up after its agent (reading what
the agent left, its row) overlaps the next attempt's agent, so busy may exceed
wall × workers and idle may be negative; the agents running at once stay ``workers``.

``agent`` is each attempt's ``ProcessResult.ran_s``: from the call that starts the agent's
program (what the time around a ``subprocess.run`` measures) to the moment it exited.
Preparing the attempt before, and scanning for and killing leftover processes after, are
the harness's work and count as overhead. ``--memory-max-mb``
runs every attempt under the memory cap (a cgroup or an rlimit); joining the cgroup
happens before exec, so its cost shows up inside ``agent``.

The whole command is also timed from launch to exit; what the manifest's wall does not
cover is printed as start-up (launch to the run's first line: imports, dataset loading,
binary check, manifest) and the rest (after the engine loop: grading and exit).

It prints figures, not pass/fail; it exits non-zero only if a run failed (an exit status
other than 0, or a row that is not ``ok``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agent_benchmarks.localweb.models import (
    API_KEY,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
)
from agent_benchmarks.records.schema import Manifest, PredictionRow

MODEL = "scripted-overhead"
REPO = Path(__file__).resolve().parents[1]


def worker_counts(values: list[str]) -> list[int]:
    counts: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            n = int(part)
            if n < 1:
                raise argparse.ArgumentTypeError(f"--workers {n}: must be at least 1")
            counts.append(n)
    return counts or [2]


def write_dataset(path: Path, n: int) -> Path:
    """N GAIA rows (the columns the loader requires), none with an attachment."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            row = {
                "task_id": f"overhead-{i:05d}",
                "Question": f"Task {i}: what is the first positive integer?",
                "Level": str(1 + i % 3),
                "Final answer": "1",
                "file_name": "",
            }
            fh.write(json.dumps(row) + "\n")
    return path


@dataclass
class Lines:
    """When the run printed its first line, its first row and its summary (monotonic)."""

    announce: float | None = None
    first_row: float | None = None
    summary: float | None = None
    text: str = ""


def _read_stderr(stream, lines: Lines) -> None:
    chunks = []
    for line in stream:
        now = time.monotonic()
        chunks.append(line)
        if lines.announce is None and "attempt(s) to run" in line:
            lines.announce = now
        elif lines.first_row is None and line.startswith("[1/"):
            lines.first_row = now
        elif lines.summary is None and " attempt(s) in " in line:
            lines.summary = now
    lines.text = "".join(chunks)


@dataclass
class Result:
    workers: int
    tasks: int
    returncode: int
    rows: int
    ok_rows: int
    wall: float  # the manifest session's wall_seconds (the engine loop)
    busy: float
    agent: float
    command: float  # launch to exit of the whole gaia-run
    startup: float | None  # launch to the announce line
    first_row: float | None  # announce line to the first row's line
    after: float | None  # summary line to exit (grading, exit)
    stderr_tail: str

    @property
    def capacity(self) -> float:
        return self.wall * self.workers

    @property
    def failed(self) -> bool:
        return self.returncode != 0 or self.rows != self.tasks or self.ok_rows != self.tasks

    def per_task_ms(self, seconds: float) -> float:
        return 1000 * seconds / self.rows if self.rows else float("nan")


def run_once(
    dataset: Path, tasks: int, workers: int, out_dir: Path, grade: bool, memory_max_mb: int | None
) -> Result:
    policy = ScriptedPolicy([FinalAnswer("<ANSWER>1</ANSWER>")])
    with ScriptedModelServer(lambda task_id: policy, models=[MODEL]) as server:
        argv = [
            str(Path(sys.executable).parent / "gaia-run"),
            "--dataset-file",
            str(dataset),
            "--level",
            "all",
            "--provider",
            "openai_compatible",
            "--model",
            MODEL,
            "--base-url",
            f"{server.root_url}/task/{{task_id}}/v1",
            "--scaffold",
            "--workers",
            str(workers),
            "--timeout",
            "60",
            "--out-dir",
            str(out_dir),
            "--grade" if grade else "--no-grade",
        ]
        if memory_max_mb is not None:
            argv += ["--memory-max-mb", str(memory_max_mb)]
        env = {**os.environ, "OPENAI_API_KEY": API_KEY, "LIGHTPANDA_DISABLE_TELEMETRY": "true"}
        lines = Lines()
        started = time.monotonic()
        proc = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
        )
        assert proc.stderr is not None
        reader = threading.Thread(target=_read_stderr, args=(proc.stderr, lines), daemon=True)
        reader.start()
        returncode = proc.wait()
        ended = time.monotonic()
        reader.join()

    rows: list[PredictionRow] = []
    predictions = out_dir / "predictions.jsonl"
    if predictions.exists():
        for line in predictions.read_text(encoding="utf-8").splitlines():
            rows.append(PredictionRow.model_validate_json(line))
    wall = busy = agent = float("nan")
    manifest_path = out_dir / "manifest.json"
    if manifest_path.exists():
        session = Manifest.model_validate_json(manifest_path.read_text()).sessions[-1]
        wall = session.wall_seconds if session.wall_seconds is not None else wall
        busy = session.busy_seconds if session.busy_seconds is not None else busy
        agent = session.agent_seconds if session.agent_seconds is not None else agent
    return Result(
        workers=workers,
        tasks=tasks,
        returncode=returncode,
        rows=len(rows),
        ok_rows=sum(1 for r in rows if r.status == "ok"),
        wall=wall,
        busy=busy,
        agent=agent,
        command=ended - started,
        startup=None if lines.announce is None else lines.announce - started,
        first_row=(
            None
            if lines.announce is None or lines.first_row is None
            else lines.first_row - lines.announce
        ),
        after=None if lines.summary is None else ended - lines.summary,
        stderr_tail=lines.text[-3000:],
    )


def _fmt(value: float | None, spec: str) -> str:
    return "—" if value is None or value != value else format(value, spec)


def report(console: Console, results: list[Result], grade: bool) -> None:
    table = Table(title="Harness overhead per task (scripted model answers on turn 0)")
    for name in (
        "workers",
        "tasks",
        "ok",
        "wall s",
        "tasks/s",
        "agent ms/task",
        "overhead ms/task",
        "in-attempt ms/task",
        "idle ms/task",
        "agent util",
        "busy util",
    ):
        table.add_column(name, justify="right")
    for r in results:
        table.add_row(
            str(r.workers),
            str(r.tasks),
            str(r.ok_rows),
            _fmt(r.wall, ".3f"),
            _fmt(r.rows / r.wall if r.wall else None, ".1f"),
            _fmt(r.per_task_ms(r.agent), ".1f"),
            _fmt(r.per_task_ms(r.capacity - r.agent), ".2f"),
            _fmt(r.per_task_ms(r.busy - r.agent), ".2f"),
            _fmt(r.per_task_ms(r.capacity - r.busy), ".2f"),
            _fmt(r.agent / r.capacity if r.capacity else None, ".1%"),
            _fmt(r.busy / r.capacity if r.capacity else None, ".1%"),
        )
    console.print(table)

    fixed = Table(title="Outside the engine loop (once per command, not per task)")
    rest = "after the loop (grading, exit) s" if grade else "after the loop (exit) s"
    for name in (
        "workers",
        "command wall s",
        "engine wall s",
        "startup + grading s",
        "launch → first line s",
        "first line → first row s",
        rest,
    ):
        fixed.add_column(name, justify="right")
    for r in results:
        fixed.add_row(
            str(r.workers),
            _fmt(r.command, ".3f"),
            _fmt(r.wall, ".3f"),
            _fmt(r.command - r.wall, ".3f"),
            _fmt(r.startup, ".3f"),
            _fmt(r.first_row, ".3f"),
            _fmt(r.after, ".3f"),
        )
    console.print(fixed)

    for r in results:
        if not r.rows or not r.agent:
            continue
        overhead = r.capacity - r.agent
        console.print(
            f"workers {r.workers}: overhead is {overhead / r.agent:.1%} of agent time "
            f"({r.per_task_ms(overhead):.2f} ms on {r.per_task_ms(r.agent):.1f} ms per task); "
            f"workers idle {1 - r.busy / r.capacity:.1%} of the wall time; the command took "
            f"{r.command / r.wall:.1f}× the engine loop"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks per run (default 200)")
    parser.add_argument(
        "--workers",
        action="append",
        default=[],
        metavar="N[,N...]",
        help="workers per run; repeatable or comma-separated (default 2)",
    )
    parser.add_argument(
        "--grade",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="grade at the end of each run, as a user would (default: on)",
    )
    parser.add_argument("--memory-max-mb", type=int, help="run every attempt under this memory cap")
    parser.add_argument("--keep", action="store_true", help="keep the run folders and print them")
    args = parser.parse_args()
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")
    counts = worker_counts(args.workers)
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)  # the tables are wide; don't squeeze them into 80

    tmp = Path(tempfile.mkdtemp(prefix="overhead-"))
    try:
        dataset = write_dataset(tmp / "gaia.jsonl", args.tasks)
        results = []
        for workers in counts:
            out_dir = tmp / f"run-w{workers}-{len(results)}"
            console.print(f"running {args.tasks} task(s) with {workers} worker(s) …")
            result = run_once(dataset, args.tasks, workers, out_dir, args.grade, args.memory_max_mb)
            results.append(result)
            if result.failed:
                console.print(
                    f"[red]run with {workers} worker(s) failed:[/] exit {result.returncode}, "
                    f"{result.ok_rows}/{result.tasks} rows ok",
                )
                console.print(result.stderr_tail, markup=False, highlight=False)
        report(console, results, args.grade)
        if args.memory_max_mb is not None:
            console.print(f"every attempt ran under --memory-max-mb {args.memory_max_mb}")
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            console.print(
                "note: PYTHONDONTWRITEBYTECODE is set, so gaia-run compiles every module it "
                "imports at each start; start-up is slower than with bytecode caches"
            )
        if args.keep:
            console.print(f"run folders kept in {tmp}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 1 if any(r.failed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
