"""What measuring costs: the resource sampler's own CPU per attempt, and its effect on an
attempt's wall time, A B against sampling off.

    uv run python benchmarks/sampler.py [--stack native|SERVER] [--tasks IDS] [--rounds N]
                                        [--workers N] [--interval-ms MS]

The real ``localweb-run`` (``--stack native``: the Lightpanda agent) or ``localweb-mcp-run
--backend SERVER`` (Claude Code on that MCP server: ``playwright`` has Chromium's dozen
processes to sample) runs the localweb tasks with the scripted model, once with sampling
on (``--resource-sample-ms``, default 200) and once off (``0``) per round; the order
alternates from round to round, so the machine's drift hits both sides alike.

Figures, medians over the rounds:

* the sampler's own CPU per attempt: its thread's CPU time, which every row records
  (``resources.sampler_cpu_s``), and its share of the CPU the attempt's processes used;
* the run process's own CPU (its threads, the sampler's included; the agents excluded,
  polled from /proc): on ÷ off, and the difference per attempt (the sampler as the run
  process pays for it, the thread start and the row's bigger record included);
* an attempt's wall time (the rows' ``duration_s``) and the whole run's (launch to exit):
  on ÷ off. On this 2-core VM shared with other work these move by several percent from
  run to run on their own; the per-round range says how much.

It prints figures, not pass/fail; it exits non-zero only when a run fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from measuring import OURS_BIN, REPO, Measurement, RunFailed, main_guard, ours_env, run_measured

from agent_benchmarks.localweb.tasks import TASKS


def _command(stack: str, tasks: str, workers: int, out: Path, interval_ms: int) -> list[str]:
    if stack == "native":
        argv = [str(OURS_BIN / "localweb-run")]
    else:
        argv = [str(OURS_BIN / "localweb-mcp-run"), "--backend", stack]
    return [
        *argv,
        "--task-ids", tasks,
        "--workers", str(workers),
        "--resource-sample-ms", str(interval_ms),
        "--no-grade",
        "--out-dir", str(out),
    ]  # fmt: skip


class Side:
    """One side's runs: each run's measurement and rows."""

    def __init__(self, name: str, interval_ms: int):
        self.name = name
        self.interval_ms = interval_ms
        self.runs: list[Measurement] = []
        self.rows: list[list[dict]] = []

    def run(self, stack: str, tasks: str, workers: int, scratch: Path) -> None:
        out = scratch / f"{self.name.replace(' ', '-')}-{len(self.runs)}"
        argv = _command(stack, tasks, workers, out, self.interval_ms)
        measured = run_measured(argv, env=ours_env(), cwd=REPO, own_memory=True)
        measured.check(f"{self.name} run")
        rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
        failed = [r["id"] for r in rows if r["status"] != "ok"]
        if failed:
            raise RunFailed(f"{self.name} run: attempts not ok: {', '.join(failed)} ({out})")
        self.runs.append(measured)
        self.rows.append(rows)
        shutil.rmtree(out)
        print(
            f"  {self.name}: {measured.wall_s:.2f} s, own CPU {measured.own_cpu_s or 0:.2f} s",
            file=sys.stderr,
        )

    def attempt_seconds(self) -> list[float]:
        """Each run's median attempt wall time."""
        return [statistics.median(r["duration_s"] for r in rows) for rows in self.rows]

    def own_cpu(self) -> list[float]:
        return [m.own_cpu_s or 0.0 for m in self.runs]

    def walls(self) -> list[float]:
        return [m.wall_s for m in self.runs]


def _ratio_line(label: str, unit: str, on: Sequence[float], off: Sequence[float]) -> str:
    ratios = [a / b for a, b in zip(on, off, strict=True) if b]
    spread = f"per round {min(ratios):.3f}-{max(ratios):.3f}x" if len(ratios) > 1 else ""
    on_m, off_m = statistics.median(on), statistics.median(off)
    return (
        f"  {label:<44} {on_m:>9.3f} {unit:<3} {off_m:>9.3f} {unit:<3} "
        f"{on_m / off_m if off_m else float('nan'):>7.3f}x  {spread}"
    )


def run(args: argparse.Namespace) -> int:
    tasks = args.tasks or ",".join(t.id for t in TASKS)
    n_tasks = len(tasks.split(","))
    on, off = Side("sampling on", args.interval_ms), Side("sampling off", 0)
    with tempfile.TemporaryDirectory(prefix="bench-sampler-") as scratch:
        for round_no in range(1, args.rounds + 1):
            print(f"round {round_no}:", file=sys.stderr)
            order = (on, off) if round_no % 2 else (off, on)
            for side in order:
                side.run(args.stack, tasks, args.workers, Path(scratch))
    sampled = [r["resources"] for rows in on.rows for r in rows]
    own = [r["sampler_cpu_s"] for r in sampled]
    cpu = [r["cpu_user_s"] + r["cpu_system_s"] for r in sampled]
    samples = [r["samples"] for r in sampled]
    extra = [(a - b) / n_tasks * 1000 for a, b in zip(on.own_cpu(), off.own_cpu(), strict=True)]
    print(
        f"\nlocalweb, stack {args.stack}: {n_tasks} tasks x {args.rounds} rounds, "
        f"{args.workers} worker(s), sampling every {args.interval_ms} ms against off"
    )
    print("\nthe sampler's own CPU, per attempt (its thread's, from every row)")
    print(f"  median {statistics.median(own) * 1000:.2f} ms, mean "
          f"{statistics.mean(own) * 1000:.2f} ms, max {max(own) * 1000:.2f} ms; "
          f"{statistics.median(samples):.0f} samples per attempt (median)")  # fmt: skip
    print(f"  {sum(own) / sum(cpu):.2%} of the CPU the attempts' processes used "
          f"({sum(own):.3f} s of {sum(cpu):.2f} s)")  # fmt: skip
    print(f"\n  {'':<44} {'on':>13} {'off':>13} {'on/off':>8}")
    print(_ratio_line("the run process's own CPU", "s", on.own_cpu(), off.own_cpu()))
    print(f"  {'  of which, per attempt (on - off)':<44} {statistics.median(extra):>9.2f} ms")
    print(_ratio_line("an attempt's wall time (median)", "s", on.attempt_seconds(),
                      off.attempt_seconds()))  # fmt: skip
    print(_ratio_line("the whole run's wall time", "s", on.walls(), off.walls()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--stack",
        default="native",
        help="native (localweb-run), or an MCP server for localweb-mcp-run --backend "
        "(playwright, lightpanda, ...); default native",
    )
    parser.add_argument("--tasks", help="comma-separated localweb task ids (default: all 21)")
    parser.add_argument("--rounds", type=int, default=3, help="A B rounds (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="the runs' workers (default 2)")
    parser.add_argument(
        "--interval-ms", type=int, default=200, help="the sampling interval on (default 200)"
    )
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.workers < 1 or args.interval_ms < 1:
        parser.error("--rounds, --workers and --interval-ms must be at least 1")
    return main_guard(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
