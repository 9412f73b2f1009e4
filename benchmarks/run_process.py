"""The run process, ours against upstream's: start-up, wall time of a run of instant tasks,
and the runner's own memory at 16 workers.

    uv run python benchmarks/run_process.py [--parts help,run,rss] [--tasks N]
        [--workers N] [--phases | --ours-without GUARANTEES] [--rounds R] [--help-rounds R]
        [--upstream SRC] [--baseline FILE] [--record FILE]

    # offline, from the mirror:
    uv run python benchmarks/run_process.py \
        --upstream /work/.mirror/lightpanda-io+agent-benchmarks/repo

Three parts, each A B A B:

* ``help``: ``SCRIPT --help`` of six console scripts both harnesses have, median of
  ``--help-rounds`` (default 5): what importing a command costs before it does anything.
* ``run``: ``webbench-run`` on the WebBench READ tasks (all 1,637, or the first ``--tasks``)
  with 4 workers (``--workers``), the same lightpanda binary (the ``lightpanda`` package's)
  and one scripted model server in this process that answers every request at once, so the
  agent processes take tens of milliseconds and the harness's own work per attempt shows.
  Both read the same tasks: ours its bundled CSV (``--sample-per-site all``), upstream its
  bundled JSONL.
  No grading (``--no-grade``). Printed: wall time launch to exit, the runner's own peak
  RSS, the runner's own CPU time (its threads', user and system, from /proc/PID/stat
  polled every 5 ms: the agents' CPU excluded, so it is the harness's work, start-up
  included, and much steadier than the wall time on a shared machine), and for ours the
  utilisation from the manifest (agent seconds ÷ (engine wall × workers), as
  benchmarks/overhead.py computes it; 100% means workers never wait on the harness), and
  for both the agents' share of the whole command (agent seconds ÷ (launch-to-exit wall ×
  workers); upstream's agent seconds are its rows' ``duration_s``, the time around each
  agent's subprocess): there a ratio below 1.00x means more of our command is harness.
* ``rss``: the same run at 16 workers; the peak RSS of the runner's main process alone
  (its ``VmHWM``), the agent processes excluded.

Upstream's runner wraps each agent in ``systemd-run --user --scope`` whenever systemd-run is
on PATH, which fails where there is no user session bus (containers): there upstream runs
with ``LIGHTPANDA_MEMORY_MAX_MB=0`` (no cap), and the note says so. Ours runs with its
defaults (its memory cap included) unless ``--ours-memory-max-mb`` is given.

Run folders are kept until the script ends, not removed between runs: on ext4 without a
journal (this machine's disk) every new inode is allocated past those deleted in the last
one to six minutes, so removing one run's 1,637 attempt folders made the next run's
folders several times slower to create (52 µs per attempt undisturbed, up to 1.2 ms just
after such a removal; upstream's runner creates no file per attempt). Deletions made on
the machine shortly before the script still weigh on our side. The run folders (and our
attempts' temp folders) go in the system temp folder: ``TMPDIR=/dev/shm`` puts both sides'
on tmpfs, which leaves the disk out of the comparison.

Upstream runs uncapped here, so ``--ours-memory-max-mb 0`` gives the like-for-like figure;
the default compares our capped runs with its uncapped ones.

``--phases`` runs ours through ``benchmarks/phase_timer.py``, which counts the CPU time of
each phase of its attempts in the thread running it (``time.thread_time``: waiting is not
counted), and prints them per attempt: the sweep, the fsync, the scrub, the private temp
folder (guarantees upstream's runner does not have), the attempt folder, the trace read and
the typed row (records it does not keep), and the work both do (the spawn, watching the
agent, the row's write, the slots, the command; capped, the memory cap's cgroup is a phase
of its own and its members are the sweep). Beside them, the runner's whole CPU per
attempt and the sum of the phases upstream's runner has none of, both against upstream's
whole runner CPU per attempt (its start-up included, which only makes it larger): when
that sum alone is above it, ours cannot match upstream's wall time on a machine the agents
keep busy without giving up one of them. Its timers are in ours' figures of that run.

``--workers N`` sets the run part's workers (default 4).

``--ours-without fsync,sweep,scrub`` (any of them) is an ablation: ours runs through
``benchmarks/ablate.py`` with those per-attempt guarantees patched out (no fsync per row,
no stray-process sweep beyond the process group, no redaction of the attempt folder),
which upstream's runner does not have, to measure what they cost. Its figures are labelled
and are never results of the harness.

Ratios are ours ÷ upstream's: below 1.00x ours is faster or smaller. Exits 1 only if a run
fails (an exit status other than 0, or fewer answered rows than tasks).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import lightpanda
from ablate import GUARANTEES
from measuring import (
    OURS_BIN,
    REPO,
    Figure,
    Measurement,
    RunFailed,
    add_report_args,
    compare_runs,
    main_guard,
    median,
    ours_env,
    positive,
    run_measured,
    start_report,
    upstream_or_baseline,
)
from phase_timer import PHASES
from upstream_env import Upstream, add_upstream_args

from agent_benchmarks.localweb.models import (
    API_KEY,
    FinalAnswer,
    ScriptedModelServer,
    ScriptedPolicy,
)
from agent_benchmarks.records.schema import Manifest

MODEL = "scripted-run-process"
ANSWER = "The page lists the requested details: item one, item two and item three."
HELP_SCRIPTS = [
    "gaia-run",
    "gaia-grade",
    "assistantbench-run",
    "assistantbench-grade",
    "webbench-run",
    "webbench-grade",
]
WEBBENCH_CSV = REPO / "src" / "agent_benchmarks" / "webbench" / "data" / "webbench_read.csv"
LIGHTPANDA = Path(lightpanda.__file__).parent / "lightpanda"
PARTS = ("help", "run", "rss")


class WebBenchRuns:
    """Builds each side's webbench-run against one scripted model server, in fresh folders,
    and checks every run answered every task."""

    def __init__(self, server: ScriptedModelServer, tmp: Path, args: argparse.Namespace):
        self.base_url = server.base_url()
        self.tmp = tmp
        self.args = args
        self.count = 0
        # workers -> per run: agent seconds ÷ (engine wall × workers), ours' manifest
        self.utilisation: dict[int, list[float]] = {}
        # (side, workers) -> per run: agent seconds ÷ (command wall × workers)
        self.command_utilisation: dict[tuple[str, int], list[float]] = {}
        # workers -> per run of ours with --phases: phase_timer.py's report
        self.phases: dict[int, list[dict]] = {}

    def _out_dir(self, side: str, workers: int) -> Path:
        self.count += 1
        return self.tmp / f"{side}-w{workers}-{self.count}"

    def ours(self, workers: int):
        def run() -> Measurement:
            out = self._out_dir("ours", workers)
            argv = [
                *self._wrapper(),
                str(OURS_BIN / "webbench-run"),
                "--dataset-file",
                str(WEBBENCH_CSV),
                "--sample-per-site",
                "all",
                "--provider",
                "openai_compatible",
                "--model",
                MODEL,
                "--base-url",
                self.base_url,
                "--scaffold",
                "--workers",
                str(workers),
                "--timeout",
                "60",
                "--lightpanda",
                str(LIGHTPANDA),
                "--out-dir",
                str(out),
                "--no-grade",
            ]
            if self.args.tasks:
                argv += ["--limit", str(self.args.tasks)]
            if self.args.ours_memory_max_mb is not None:
                argv += ["--memory-max-mb", str(self.args.ours_memory_max_mb)]
            env = ours_env(OPENAI_API_KEY=API_KEY)
            phases_file = self.tmp / f"phases-{self.count}.json"
            if self.args.phases:
                env["PHASES_OUT"] = str(phases_file)
            m = run_measured(argv, env=env, own_memory=True, cwd=REPO)
            m.check("webbench-run (ours)")
            if self.args.phases:
                self.phases.setdefault(workers, []).append(json.loads(phases_file.read_text()))
            answered = sum(1 for row in _rows(out) if row.get("status") == "ok")
            self._expect(answered, out)
            session = Manifest.model_validate_json((out / "manifest.json").read_text()).sessions[-1]
            if session.agent_seconds and session.wall_seconds:
                self.utilisation.setdefault(workers, []).append(
                    session.agent_seconds / (session.wall_seconds * workers)
                )
                self.command_utilisation.setdefault(("ours", workers), []).append(
                    session.agent_seconds / (m.wall_s * workers)
                )
            return m

        return run

    def _wrapper(self) -> list[str]:
        """With --ours-without, ours runs through benchmarks/ablate.py; with --phases,
        through benchmarks/phase_timer.py."""
        here = Path(__file__).parent
        if self.args.ours_without:
            return [sys.executable, str(here / "ablate.py"), self.args.ours_without]
        if self.args.phases:
            return [sys.executable, str(here / "phase_timer.py")]
        return []

    def upstream(self, upstream: Upstream, workers: int):
        def run() -> Measurement:
            out = self._out_dir("upstream", workers)
            argv = [
                str(upstream.script("webbench-run")),
                "--provider",
                "openai_compatible",
                "--model",
                MODEL,
                "--workers",
                str(workers),
                "--timeout",
                "60",
                "--lightpanda",
                str(LIGHTPANDA),
                "--out-dir",
                str(out),
                "--no-grade",
            ]
            if self.args.tasks:
                argv += ["--limit", str(self.args.tasks)]
            # lightpanda's openai_compatible provider reads its endpoint from the environment;
            # upstream passes no --base-url.
            env = ours_env(
                OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=self.base_url, LIGHTPANDA_MEMORY_MAX_MB="0"
            )
            m = run_measured(argv, env=env, own_memory=True, cwd=upstream.root)
            m.check("webbench-run (upstream)")
            rows = _rows(out)
            answered = sum(1 for row in rows if (row.get("prediction") or "").strip())
            self._expect(answered, out)
            # Upstream's duration_s is the agent's subprocess.run, as ours' agent seconds.
            agent_seconds = sum(row.get("duration_s") or 0 for row in rows)
            self.command_utilisation.setdefault(("upstream", workers), []).append(
                agent_seconds / (m.wall_s * workers)
            )
            return m

        return run

    def _expect(self, answered: int, out: Path) -> None:
        tasks = self.args.tasks or 1637
        if answered != tasks:
            raise RunFailed(f"{out}: {answered} of {tasks} tasks answered")


def _rows(run_dir: Path) -> list[dict]:
    path = run_dir / "predictions.jsonl"
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def phase_figures(reports: list[dict], attempts: int, upstream_cpu_s: float | None) -> list[Figure]:
    """Each phase's CPU per attempt (the median over ours' runs), the rest of the runner's
    CPU after its start-up, and the phases upstream's runner does not have at all beside
    the whole of upstream's runner CPU per attempt (its start-up included)."""

    def per_attempt_ms(seconds: list[float]) -> float:
        return median(seconds) / attempts * 1000

    figures = []
    for name, kind in PHASES.items():
        spent = [r["phases"][name]["cpu_s"] for r in reports]
        figures.append(Figure(f"  {name}", "ms", per_attempt_ms(spent), note=kind))
    after_startup = [r["process_cpu_s"] - (r["startup_cpu_s"] or 0.0) for r in reports]
    in_phases = [sum(p["cpu_s"] for p in r["phases"].values()) for r in reports]
    figures.append(
        Figure(
            "  the rest (the attempt threads' other work, the main thread)",
            "ms",
            per_attempt_ms([a - p for a, p in zip(after_startup, in_phases, strict=True)]),
        )
    )
    upstream_ms = None if upstream_cpu_s is None else upstream_cpu_s / attempts * 1000
    figures.append(
        Figure(
            "the runner's CPU per attempt (upstream's: start-up included)",
            "ms",
            per_attempt_ms(after_startup),
            upstream_ms,
        )
    )
    missing = [
        sum(
            r["phases"][name]["cpu_s"]
            for name, kind in PHASES.items()
            if kind in ("guarantee", "record")
        )
        for r in reports
    ]
    figures.append(
        Figure(
            "the phases upstream's runner has none of (guarantee, record), beside all of it",
            "ms",
            per_attempt_ms(missing),
            upstream_ms,
            note="above 1.00x: ours would be slower were all its other work free",
        )
    )
    figures.append(
        Figure(
            "the start-up (launch to the first attempt)",
            "s",
            median([r["startup_cpu_s"] or 0.0 for r in reports]),
        )
    )
    return figures


def help_figures(args, upstream: Upstream | None, baseline) -> list[Figure]:
    title = "start-up: SCRIPT --help"
    figures = []
    for script in HELP_SCRIPTS:
        ours = [str(OURS_BIN / script), "--help"]
        up = [str(upstream.script(script)), "--help"] if upstream else None
        figures += compare_runs(
            title,
            f"{script} --help",
            lambda argv=ours: run_measured(argv, env=ours_env(), cwd=REPO),
            (lambda argv=up: run_measured(argv, env=ours_env(), cwd=upstream.root))
            if upstream
            else None,
            rounds=args.help_rounds,
            baseline=baseline,
        )
    return figures


def parts(value: str) -> list[str]:
    chosen = [part.strip() for part in value.split(",") if part.strip()]
    unknown = sorted(set(chosen) - set(PARTS))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"--parts: choose from {', '.join(PARTS)}")
    return chosen


def ablated(value: str) -> str:
    chosen = [part.strip() for part in value.split(",") if part.strip()]
    unknown = sorted(set(chosen) - set(GUARANTEES))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"--ours-without: choose from {', '.join(GUARANTEES)}")
    return ",".join(chosen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=parts, default=list(PARTS), help="help,run,rss (all)")
    parser.add_argument(
        "--tasks", type=positive, help="only the first N WebBench tasks (all 1,637)"
    )
    parser.add_argument(
        "--workers",
        type=positive,
        default=4,
        help="the run part's workers (default 4; the rss part always runs 16)",
    )
    parser.add_argument("--help-rounds", type=positive, default=5, help="--help rounds (default 5)")
    parser.add_argument("--ours-memory-max-mb", type=int, help="our runner's --memory-max-mb")
    parser.add_argument(
        "--ours-without",
        type=ablated,
        metavar="GUARANTEES",
        help="an ablation: ours with some of fsync,sweep,scrub patched out "
        "(benchmarks/ablate.py), to measure what they cost",
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="ours runs through benchmarks/phase_timer.py and the CPU of each phase of its "
        "attempts is printed (a measurement: its timers are in ours' figures)",
    )
    add_report_args(parser)
    add_upstream_args(parser)
    args = parser.parse_args()
    if args.phases and args.ours_without:
        parser.error("--phases and --ours-without measure different runners: choose one")

    upstream, baseline = upstream_or_baseline(args)
    report = start_report("benchmarks/run_process.py", upstream, baseline)
    if "help" in args.parts:
        report.add("start-up: SCRIPT --help", help_figures(args, upstream, baseline))

    policy = ScriptedPolicy([FinalAnswer(ANSWER)])
    with (
        tempfile.TemporaryDirectory(prefix="run-process-bench-") as tmp,
        ScriptedModelServer(lambda task_id: policy, models=[MODEL]) as server,
    ):
        runs = WebBenchRuns(server, Path(tmp), args)
        tasks = f"{args.tasks:,}" if args.tasks else "1,637"
        note = "upstream without its memory cap (systemd-run fails here)"
        if args.ours_without:
            note += f"; ours WITHOUT {args.ours_without} (an ablation, not a result)"
        if args.phases:
            note += "; ours timed phase by phase (benchmarks/phase_timer.py)"
        for part, workers in (("run", args.workers), ("rss", 16)):
            if part not in args.parts:
                continue
            title = f"webbench-run, {tasks} instant tasks, {workers} workers"
            figures = compare_runs(
                title,
                "webbench-run",
                runs.ours(workers),
                runs.upstream(upstream, workers) if upstream else None,
                rounds=args.rounds,
                baseline=baseline,
                own_memory=True,
            )
            if upstream:
                figures[0].note = "; ".join(part for part in (figures[0].note, note) if part)
            utilisation = runs.utilisation.get(workers)
            if utilisation:
                figures.append(
                    Figure(
                        "webbench-run: utilisation (agent ÷ engine wall × workers)",
                        "%",
                        median(utilisation),
                        note="ours, from the manifest",
                    )
                )
            ours_share = runs.command_utilisation.get(("ours", workers))
            upstream_share = runs.command_utilisation.get(("upstream", workers))
            if ours_share:
                figures.append(
                    Figure(
                        "webbench-run: agent share of the command (agent ÷ wall × workers)",
                        "%",
                        median(ours_share),
                        median(upstream_share) if upstream_share else None,
                        note="launch to exit; upstream's agent time: its rows' duration_s",
                    )
                )
            report.add(title, figures)
            if runs.phases.get(workers):
                upstream_cpu = next(
                    (f.upstream for f in figures if f.label == "webbench-run: own CPU"), None
                )
                report.add(
                    f"{title}: our runner's CPU per attempt, by phase",
                    phase_figures(runs.phases[workers], args.tasks or 1637, upstream_cpu),
                )
    report.finish(args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main_guard(main))
