"""``agent-benchmarks sweep FILE``: a grid of runs through one executor, then compared.

Every cell of the sweep file (:mod:`agent_benchmarks.runner.sweep`) is an ordinary run command
line with its own run folder. Cells already done are skipped; cells started are resumed.
Every cell still to run is prepared first (backend, keys, programs, tasks, grader), so a
cell that cannot start is named before any runs; then all their attempts go through one
executor, under one progress view, each row into its own cell's folder. The cells are
graded as their runs end, and ``compare`` puts every cell side by side in the sweep's
folder (``compare.md``, ``compare.json``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

from rich.console import Console

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.runner.claim import lock_folder
from agent_benchmarks.runner.command import parse_run
from agent_benchmarks.runner.engine import Lane, execute_lanes
from agent_benchmarks.runner.launch import (
    PreparedRun,
    attach_executor,
    close_run,
    conclude,
    make_executor,
    open_run,
    prepare,
    release,
)
from agent_benchmarks.runner.sweep import Cell, Sweep, load_sweep
from agent_benchmarks.spec.args import entry
from agent_benchmarks.spec.run_spec import ExecutorSpec


def _prepare_cells(sweep: Sweep, cells: Sequence[Cell]) -> list[PreparedRun]:
    """Every cell still to run, checked; one error naming every cell that cannot start."""
    prepared: list[PreparedRun] = []
    problems: list[str] = []
    for cell in cells:
        argv = cell.run_argv()
        try:
            spec, prog = parse_run(cell.suite, cell.runner, argv, strict=True)
            spec.workers = sweep.workers
            spec.executor = ExecutorSpec(kind=sweep.executor, address=sweep.ray_address)
            prepared.append(prepare(spec, prog, argv))
        except InputError as exc:
            problems.append(f"cell {cell.label}: {exc}")
    if problems:
        for run in prepared:
            release(run)
        raise InputError(
            f"{len(problems)} cell(s) of the sweep cannot start; nothing was run:\n  "
            + "\n  ".join(problems)
        )
    return prepared


def run_sweep(path: Path, console: Console) -> int:
    sweep = load_sweep(path)
    # One sweep of a folder at a time: a second is refused, naming the first's process,
    # before it reads a cell's state (the first may be writing it).
    made = not sweep.out_dir.exists()
    sweep.out_dir.mkdir(parents=True, exist_ok=True)
    hold = lock_folder(sweep.out_dir, ["agent-benchmarks", "sweep", str(path)], made=made)
    prepared: list[PreparedRun] = []
    try:
        prepared = _prepare_cells(sweep, [c for c in sweep.cells() if c.state() != "done"])
        return _run_cells(sweep, path, prepared, console)
    finally:
        for run in prepared:
            release(run)
        hold.release()


def _run_cells(sweep: Sweep, path: Path, prepared: list[PreparedRun], console: Console) -> int:
    """Run the prepared cells through one executor, then compare every cell."""
    cells = sweep.cells()
    console.print(
        f"sweep {path}: {len(cells)} cell(s), {len(cells) - len(prepared)} done, "
        f"{len(prepared)} to run → {sweep.out_dir}"
    )
    outcome_status = 0
    sweep.write_record(cells)  # once every cell can start: a refused sweep writes nothing
    if prepared:
        executor = make_executor(prepared[0].spec, sweep.out_dir)
        with executor, ExitStack() as running:
            runs = [
                running.enter_context(open_run(p, console, attach_executor(executor, p)))
                for p in prepared
            ]
            lanes = [
                Lane(p.plan.todo, run.runner, p.predictions_path)
                for p, run in zip(prepared, runs, strict=True)
            ]
            outcomes = execute_lanes(lanes, executor, f"sweep {sweep.name}", console)
            for run, outcome in zip(runs, outcomes, strict=True):
                close_run(run, outcome)
        statuses = [conclude(console, p, o) for p, o in zip(prepared, outcomes, strict=True)]
        if any(o.interrupted for o in outcomes):
            console.print(
                f"[yellow]sweep interrupted.[/] continue it with: agent-benchmarks sweep {path}"
            )
            return 130
        outcome_status = max(statuses)
    from agent_benchmarks.commands.report import compare_command

    folders = [str(cell.out_dir) for cell in cells]
    compare_status = compare_command(
        [
            *folders,
            "--markdown-out",
            str(sweep.out_dir / "compare.md"),
            "--json-out",
            str(sweep.out_dir / "compare.json"),
        ]
    )
    return outcome_status or compare_status


@entry
def sweep_command(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="agent-benchmarks sweep",
        description="Run a grid of runs (a TOML sweep file) through one executor, then "
        "compare them; running it again resumes what is unfinished and skips what is done.",
    )
    parser.add_argument("file", type=Path, help="the sweep file (TOML)")
    parser.add_argument(
        "--list", action="store_true", help="list the cells, their state and command lines"
    )
    args = parser.parse_args(argv)
    console = Console(stderr=True, soft_wrap=True)
    if args.list:
        print(load_sweep(args.file).listing())
        return 0
    return run_sweep(args.file, console)
