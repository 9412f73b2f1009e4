"""What every comparison script in benchmarks/ shares: timing a command with its peak memory,
A B A B rounds, the ratio table, and recorded baselines.

Not a script of its own. The scripts (grading.py, traces.py, run_process.py) run each side's
console script as a subprocess, so both sides pay their own start-up, imports and exit, as a
user does.

Memory is the peak resident set size (high-water mark). :func:`run_measured` gives two:

* ``peak_mb``: GNU time's ``%M``, the largest of the process and every descendant it
  waited for; for a grader, which starts nothing, that is the grader itself;
* ``own_peak_mb``: the main process alone (``VmHWM`` in ``/proc/<pid>/status``, read every
  few milliseconds until it exits), asked for with ``own_memory=True``: a runner's own
  footprint without the agent processes it starts.

Ratios are ours ÷ upstream's: below 1 ours is cheaper or faster, above 1 it costs more.

Recorded baselines: ``--record FILE`` writes every figure (both sides), the commits and the
command line as JSON; where upstream cannot be installed, ``--baseline FILE`` takes the
upstream column from such a file instead of running upstream (the table says so, with the
command that recorded it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from upstream_env import Upstream, UpstreamUnavailable, install_from_args

REPO = Path(__file__).resolve().parents[1]
OURS_BIN = Path(sys.executable).parent
STDERR_TAIL_CHARS = 3000
_POLL_SECONDS = 0.005
GNU_TIME = Path("/usr/bin/time")


class RunFailed(Exception):
    """A measured command exited non-zero (or its output was not what it should be)."""


@dataclass
class Measurement:
    argv: list[str]
    wall_s: float
    peak_mb: float
    own_peak_mb: float | None
    returncode: int
    stderr_tail: str
    # The main process's own CPU (all its threads, user and system; not its children, so
    # not the agents it runs), as last polled (every 5 ms) before it exited; with own_memory.
    own_cpu_s: float | None = None
    # GNU time's user + system CPU of the command and every descendant it waited for
    # (a grader's grading process included); None without GNU time.
    cpu_s: float | None = None

    def check(self, what: str) -> Measurement:
        if self.returncode != 0:
            raise RunFailed(
                f"{what} exited {self.returncode}: {' '.join(self.argv)}\n{self.stderr_tail}"
            )
        return self


def _vm_hwm_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _own_cpu_s(pid: int) -> float | None:
    """utime + stime of /proc/PID/stat: the process's threads, without its children."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # "pid (comm) state ...": comm may hold spaces, so count fields after the last ")";
    # utime and stime are the 14th and 15th fields, the 12th and 13th after comm.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    except (IndexError, ValueError):
        return None


def _only_child(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            children = fh.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def run_measured(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    own_memory: bool = False,
) -> Measurement:
    """Run argv to its end; its wall time (launch to reaped) and peak memory.

    The command runs under GNU time (``/usr/bin/time -f %M``), whose small process is the
    one that forks it: a child forked from this Python process would inherit its resident
    size into ``ru_maxrss`` (Linux keeps the pre-exec high-water mark), so every small
    command would seem as large as this script. Without GNU time the peak is the command's
    own VmHWM, polled. stdout is dropped; stderr goes to a temporary file, of which the
    tail is kept for error messages (a pipe could fill and stall a chatty runner).
    """
    polled_kb = 0
    polled_cpu_s: float | None = None
    done = threading.Event()
    time_file = tempfile.NamedTemporaryFile(prefix="measure-", suffix=".time", delete=False)  # noqa: SIM115
    time_file.close()
    wrapped = list(argv)
    if GNU_TIME.exists():
        wrapped = [str(GNU_TIME), "-f", "%U %S %M", "-o", time_file.name, *wrapped]
    try:
        with tempfile.TemporaryFile(mode="w+b") as stderr_file:
            started = time.perf_counter()
            proc = subprocess.Popen(
                wrapped, stdout=subprocess.DEVNULL, stderr=stderr_file, env=env, cwd=cwd
            )

            def poll() -> None:
                nonlocal polled_kb, polled_cpu_s
                pid = None if GNU_TIME.exists() else proc.pid
                while not done.is_set():
                    if pid is None:
                        pid = _only_child(proc.pid)
                    if pid is not None:
                        kb = _vm_hwm_kb(pid)
                        if kb is not None:
                            polled_kb = max(polled_kb, kb)
                        cpu_s = _own_cpu_s(pid)
                        if cpu_s is not None:
                            polled_cpu_s = max(polled_cpu_s or 0.0, cpu_s)
                    time.sleep(_POLL_SECONDS)

            # Polling costs a little CPU on a shared machine: only when its figure is used.
            poller = None
            if own_memory or not GNU_TIME.exists():
                poller = threading.Thread(target=poll, daemon=True)
                poller.start()
            returncode = proc.wait()
            wall = time.perf_counter() - started
            done.set()
            if poller:
                poller.join()
            stderr_file.seek(0, os.SEEK_END)
            size = stderr_file.tell()
            stderr_file.seek(max(0, size - 4 * STDERR_TAIL_CHARS))
            tail = stderr_file.read().decode("utf-8", "replace")[-STDERR_TAIL_CHARS:]
        peak_kb = polled_kb
        cpu_s = None
        if GNU_TIME.exists():
            words = Path(time_file.name).read_text(encoding="utf-8").split()
            # Its last words are %U %S %M; before them, "Command exited with non-zero
            # status N".
            if len(words) >= 3 and words[-1].isdigit():
                peak_kb = int(words[-1])
                cpu_s = float(words[-3]) + float(words[-2])
    finally:
        os.unlink(time_file.name)
    return Measurement(
        argv=list(argv),
        wall_s=wall,
        peak_mb=peak_kb / 1024,
        own_peak_mb=polled_kb / 1024 if own_memory else None,
        returncode=returncode,
        stderr_tail=tail,
        own_cpu_s=polled_cpu_s if own_memory else None,
        cpu_s=cpu_s,
    )


def check_graded(scores_path: Path, rows: int, grader: str) -> None:
    """A grader's scores.json must count every row (ours: n_rows; upstream's: n_tasks)."""
    scores = json.loads(scores_path.read_text(encoding="utf-8"))
    graded = scores.get("n_rows", scores.get("n_tasks"))
    if graded != rows:
        raise RunFailed(f"{grader} graded {graded} of {rows} rows ({scores_path})")


def ab_rounds(
    sides: Sequence[tuple[str, Callable[[], Measurement]]], rounds: int
) -> dict[str, list[Measurement]]:
    """Each side once per round, interleaved (A B A B ...), so drift on a shared machine
    hits both sides alike. Each run's figures go to stderr as they come."""
    results: dict[str, list[Measurement]] = {name: [] for name, _ in sides}
    for round_no in range(1, rounds + 1):
        for name, run in sides:
            m = run()
            results[name].append(m)
            own = f", own {m.own_peak_mb:.0f} MB" if m.own_peak_mb is not None else ""
            print(
                f"  round {round_no} {name}: {m.wall_s:.2f} s, peak {m.peak_mb:.0f} MB{own}",
                file=sys.stderr,
            )
    return results


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


@dataclass
class Figure:
    """One line of a ratio table; ``upstream`` None when there is nothing to compare to."""

    label: str
    unit: str
    ours: float
    upstream: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.upstream is None or self.upstream == 0:
            return None
        return self.ours / self.upstream


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if unit == "%":
        return f"{value:.1%}"
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.2f} {unit}" if abs(value) < 10 else f"{value:.1f} {unit}"


@dataclass
class Report:
    """The figures a script prints, and what a baseline file records of them."""

    script: str
    ours_commit: str
    upstream_commit: str | None
    upstream_source: str  # Upstream.describe() or Baseline.describe()
    # The exact command (this interpreter, the script's argv) and where it ran.
    command: str = field(default_factory=lambda: shlex.join([sys.executable, *sys.argv]))
    cwd: str = field(default_factory=os.getcwd)
    machine: str = field(default_factory=lambda: f"{platform.node()}, {os.cpu_count()} CPUs")
    recorded_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    # Both sides inherit it: Python writes no bytecode cache, so start_report makes them.
    no_bytecode_cache: bool = field(
        default_factory=lambda: bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    )
    tables: dict[str, list[Figure]] = field(default_factory=dict)
    # Set when our checkout moved while the script ran (others commit meanwhile).
    ours_commit_at_end: str | None = None

    def add(self, title: str, figures: list[Figure]) -> None:
        self.tables[title] = figures
        print_table(title, figures)

    def finish(self, record: Path | None) -> None:
        """Say whether our checkout changed during the run; write the record if asked."""
        at_end = git_commit(REPO)
        if at_end != self.ours_commit:
            self.ours_commit_at_end = at_end
            print(
                f"note: our checkout changed while this ran ({self.ours_commit} at the start, "
                f"{at_end} at the end): rounds may have measured different code",
                flush=True,
            )
        if record is not None:
            record.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
            print(f"figures recorded in {record}", flush=True)


def print_table(title: str, figures: list[Figure]) -> None:
    """Label, ours, upstream, ours/upstream, note; only label, ours and note when no line
    has an upstream figure."""
    with_upstream = any(f.upstream is not None for f in figures)
    rows = [("", "ours", "upstream", "ours/upstream", "")]
    for f in figures:
        ratio = f.ratio
        rows.append(
            (
                f.label,
                _num(f.ours, f.unit),
                _num(f.upstream, f.unit),
                "—" if ratio is None else f"{ratio:.2f}x",
                f.note,
            )
        )
    columns = (1, 2, 3) if with_upstream else (1,)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"\n{title}", flush=True)
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [r[i].rjust(widths[i]) for i in columns]
        print("  " + "  ".join(cells) + (f"  {r[4]}" if r[4] else ""), flush=True)


def git_commit(repo: Path) -> str:
    """HEAD of repo, with '+dirty' when tracked files differ from it (others may be
    editing: the figures are for the working tree as it was)."""
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return head + ("+dirty" if dirty else "")


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return number


def add_report_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rounds", type=positive, default=2, help="A B rounds per comparison (default 2)"
    )
    parser.add_argument("--record", type=Path, metavar="FILE", help="write the figures as JSON")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="take upstream's figures from a file --record wrote, instead of running upstream",
    )


class Baseline:
    """Upstream's figures from a recorded file, looked up by table title and line label."""

    def __init__(self, path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        self.path = path
        self.commit = data.get("upstream_commit")
        self.command = data.get("command", "")
        self.machine = data.get("machine", "")
        self.values = {
            (title, f["label"]): f.get("upstream")
            for title, figures in data.get("tables", {}).items()
            for f in figures
        }

    def describe(self) -> str:
        return f"baseline {self.path} (recorded on {self.machine} by: {self.command})"

    def get(self, title: str, label: str) -> float | None:
        return self.values.get((title, label))


def ours_env(**extra: str) -> dict[str, str]:
    """The environment both sides run in: telemetry off, no colour codes in captured output."""
    return {
        **os.environ,
        "LIGHTPANDA_DISABLE_TELEMETRY": "true",
        "NO_COLOR": "1",
        **extra,
    }


def upstream_or_baseline(args: argparse.Namespace) -> tuple[Upstream | None, Baseline | None]:
    """The upstream install the scripts run, or the recorded baseline that stands in for it."""
    if args.baseline is not None:
        return None, Baseline(args.baseline)
    return install_from_args(args), None


def compare_runs(
    title: str,
    label: str,
    ours: Callable[[], Measurement],
    upstream: Callable[[], Measurement] | None,
    *,
    rounds: int,
    baseline: Baseline | None,
    own_memory: bool = False,
    cpu: bool = False,
) -> list[Figure]:
    """A B rounds of one command on each side: the medians of wall time and peak memory
    (the main process alone with ``own_memory``, and then its own CPU time too: the
    harness's work without its children's), as lines of a ratio table; with ``cpu`` also
    the CPU time of the command and its children (steadier than wall time on a busy
    machine). Without ``upstream`` its column comes from the baseline."""
    print(f"{label}:", file=sys.stderr)
    sides = [("ours", ours)] + ([("upstream", upstream)] if upstream else [])
    results = ab_rounds(sides, rounds)
    for name, measurements in results.items():
        for m in measurements:
            m.check(f"{label} ({name})")

    def memory(m: Measurement) -> float:
        return m.own_peak_mb if own_memory and m.own_peak_mb is not None else m.peak_mb

    time_label = f"{label}: time"
    memory_label = f"{label}: {'own ' if own_memory else ''}peak RSS"
    figures = [
        Figure(time_label, "s", median([m.wall_s for m in results["ours"]])),
        Figure(memory_label, "MB", median([memory(m) for m in results["ours"]])),
    ]
    cpu_label = f"{label}: own CPU"
    cpu_figure = None
    if own_memory and all(m.own_cpu_s is not None for m in results["ours"]):
        cpu_figure = Figure(cpu_label, "s", median([m.own_cpu_s or 0.0 for m in results["ours"]]))
        figures.append(cpu_figure)
    all_cpu_label = f"{label}: CPU"
    all_cpu_figure = None
    if cpu and all(m.cpu_s is not None for m in results["ours"]):
        all_cpu_figure = Figure(
            all_cpu_label, "s", median([m.cpu_s or 0.0 for m in results["ours"]])
        )
        figures.append(all_cpu_figure)
    if upstream is not None:
        if all_cpu_figure is not None and all(m.cpu_s is not None for m in results["upstream"]):
            all_cpu_figure.upstream = median([m.cpu_s or 0.0 for m in results["upstream"]])
        figures[0].upstream = median([m.wall_s for m in results["upstream"]])
        figures[1].upstream = median([memory(m) for m in results["upstream"]])
        figures[0].note = _paired_ratios(results["ours"], results["upstream"])
        if cpu_figure is not None and all(m.own_cpu_s is not None for m in results["upstream"]):
            cpu_figure.upstream = median([m.own_cpu_s or 0.0 for m in results["upstream"]])
    elif baseline is not None:
        figures[0].upstream = baseline.get(title, time_label)
        figures[1].upstream = baseline.get(title, memory_label)
        if cpu_figure is not None:
            cpu_figure.upstream = baseline.get(title, cpu_label)
        if all_cpu_figure is not None:
            all_cpu_figure.upstream = baseline.get(title, all_cpu_label)
    return figures


def _paired_ratios(ours: list[Measurement], upstream: list[Measurement]) -> str:
    """Each round's ours ÷ upstream wall time (the two ran next to each other), as a range:
    how far the machine's drift moves the ratio of medians beside it."""
    if len(ours) < 2:
        return ""
    ratios = [o.wall_s / u.wall_s for o, u in zip(ours, upstream, strict=True)]
    return f"per round {min(ratios):.2f}-{max(ratios):.2f}x (median {median(ratios):.2f}x)"


def start_report(script: str, upstream: Upstream | None, baseline: Baseline | None) -> Report:
    """A report headed by both commits and where the upstream column comes from."""
    if upstream is not None:
        upstream_commit, source = upstream.commit, upstream.describe()
    elif baseline is not None:
        upstream_commit, source = baseline.commit, baseline.describe()
    else:
        upstream_commit, source = None, "none"
    report = Report(script, git_commit(REPO), upstream_commit, source)
    print(f"ours: {report.ours_commit} ({REPO}); upstream: {source}", flush=True)
    compile_bytecode(upstream)
    if report.no_bytecode_cache:
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: Python writes no bytecode cache, so both "
            "sides' were made first (compileall), as a first run makes them elsewhere",
            flush=True,
        )
    return report


def compile_bytecode(upstream: Upstream | None) -> None:
    """Bytecode caches for both sides' source and environments, made before anything is
    timed. A machine that lets Python write them has them after a command's first run; one
    with PYTHONDONTWRITEBYTECODE set (as here) has only what its install compiled: our
    environment's (``uv sync --compile-bytecode``) but not our source, and nothing of
    upstream's (``uv sync`` without it). Without this, start-up and run times measured
    which side's modules happened to be compiled, not the commands."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", str(REPO / "src")], check=True
    )
    if upstream is not None:
        upstream.compile_bytecode()


def main_guard(run: Callable[[], int]) -> int:
    """Run a script's body; a failed run or an upstream that cannot be installed is one
    message and exit 1 (figures already printed stay printed)."""
    try:
        return run()
    except (RunFailed, UpstreamUnavailable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        if isinstance(exc, UpstreamUnavailable):
            print(
                "hint: --upstream PATH clones a local copy; --baseline FILE compares with "
                "figures recorded earlier (--record FILE)",
                file=sys.stderr,
            )
        return 1
