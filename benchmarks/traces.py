"""Real-size traces: ``localweb-grade`` and ``agent-benchmarks compare`` on runs whose rows
carry hundreds of tool calls with 8,000-character outputs.

    uv run python benchmarks/traces.py [--calls 600[,1200...]] [--rounds R] [--record FILE]

Two real localweb runs are made first (``localweb-run --scaffold``: the bundled site, the
scripted model, the real Lightpanda agent; a few seconds each). Each of their rows is then
rewritten with N tool calls (its own calls repeated in order), every output
filled to 8,000 characters, upstream's cap per call: upstream reports 600-800 calls in a
30-minute GAIA task, so one row reaches megabytes. The calls stay in the row, as every run
folder written so far has them, so this also checks that old folders still grade and compare.

For each N it prints, median of R rounds: ``localweb-grade`` of one inflated run,
``agent-benchmarks compare A B`` of the two once graded (compare's own work), and the same
compare before they are graded (it grades them first: grading and comparing in one
process), each with wall time, peak RSS and peak RSS per MB of predictions.jsonl (for
compare, of both files). Memory that follows the file shows as a steady MB per MB; a
streaming reader keeps peak RSS flat as N grows (give several N: ``--calls 600,1200``).

Upstream has no localweb suite nor compare: there is no upstream column. Exits 1 only if a
run, a grading or a compare fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from measuring import (
    OURS_BIN,
    REPO,
    Figure,
    Measurement,
    add_report_args,
    check_graded,
    compare_runs,
    main_guard,
    ours_env,
    run_measured,
    start_report,
)

OUTPUT_CHARS = 8_000  # upstream keeps each call's output up to this many characters
MB = 1024 * 1024


def localweb_run(out_dir: Path) -> Path:
    argv = [str(OURS_BIN / "localweb-run"), "--scaffold", "--no-grade", "--out-dir", str(out_dir)]
    run_measured(argv, env=ours_env(), cwd=REPO).check("localweb-run --scaffold")
    return out_dir


def filled(text: str, call_no: int) -> str:
    """``text`` repeated to exactly OUTPUT_CHARS characters, marked with the call's number so
    no two outputs are the same string."""
    unit = f"[call {call_no}] {text or 'page text'}\n"
    return (unit * (OUTPUT_CHARS // len(unit) + 1))[:OUTPUT_CHARS]


def inflate_row(row: dict, calls: int) -> dict:
    own = row.get("trace") or [{"name": "markdown", "args": {}, "output": ""}]
    trace = []
    for n in range(calls):
        call = dict(own[n % len(own)])
        call["output"] = filled(call.get("output") or "", n)
        call["result_bytes"] = OUTPUT_CHARS
        trace.append(call)
    return {**row, "trace": trace}


def inflate_run(source: Path, dest: Path, calls: int) -> Path:
    """A copy of the run folder whose every row has ``calls`` tool calls."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("predictions.jsonl", "scores*"))
    with (
        open(source / "predictions.jsonl", encoding="utf-8") as src,
        open(dest / "predictions.jsonl", "w", encoding="utf-8") as out,
    ):
        for line in src:
            if line.strip():
                out.write(json.dumps(inflate_row(json.loads(line), calls)) + "\n")
    return dest


def command(argv: list[str]):
    def run() -> Measurement:
        return run_measured(argv, env=ours_env(), cwd=REPO)

    return run


def compare_ungraded(argv: list[str], run_dirs: list[Path]):
    """compare of runs that have no scores.json yet: it grades them first, in memory."""

    def run() -> Measurement:
        for run_dir in run_dirs:
            (run_dir / "scores.json").unlink(missing_ok=True)
        return run_measured(argv, env=ours_env(), cwd=REPO)

    return run


def localweb_grade(run_dir: Path, rows: int):
    """localweb-grade of the run, checked to have graded every row."""

    def run() -> Measurement:
        argv = [str(OURS_BIN / "localweb-grade"), str(run_dir / "predictions.jsonl")]
        m = run_measured(argv, env=ours_env(), cwd=REPO).check("localweb-grade")
        check_graded(run_dir / "scores.json", rows, "localweb-grade")
        return m

    return run


def row_count(run_dir: Path) -> int:
    with open(run_dir / "predictions.jsonl", encoding="utf-8") as fh:
        return sum(1 for line in fh if line.strip())


def per_mb(figure: Figure, predictions_mb: float) -> Figure:
    return Figure(
        figure.label.replace("peak RSS", "peak RSS per MB of predictions"),
        "MB/MB",
        figure.ours / predictions_mb,
    )


def call_counts(value: str) -> list[int]:
    counts = [int(part) for part in value.split(",") if part.strip()]
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"--calls {value}: positive numbers, comma-separated")
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls", type=call_counts, default=[600], help="tool calls per row (default 600)"
    )
    add_report_args(parser)
    args = parser.parse_args()
    report = start_report("benchmarks/traces.py", None, None)
    with tempfile.TemporaryDirectory(prefix="traces-bench-") as tmp:
        runs = [localweb_run(Path(tmp, name)) for name in ("run-a", "run-b")]
        for calls in args.calls:
            a, b = (inflate_run(run, Path(tmp, f"{calls}", run.name), calls) for run in runs)
            size_a = (a / "predictions.jsonl").stat().st_size / MB
            size_b = (b / "predictions.jsonl").stat().st_size / MB
            title = (
                f"{calls} calls per row of {OUTPUT_CHARS:,} chars: predictions.jsonl "
                f"{size_a:.0f} MB and {size_b:.0f} MB"
            )
            compare_argv = [
                str(OURS_BIN / "agent-benchmarks"),
                "compare",
                str(a),
                str(b),
                "--markdown-out",
                str(Path(tmp, f"compare-{calls}.md")),
            ]
            ungraded = compare_runs(
                title,
                "compare A B, ungraded",
                compare_ungraded(compare_argv, [a, b]),
                None,
                rounds=args.rounds,
                baseline=None,
            )
            grade = compare_runs(
                title,
                "localweb-grade",
                localweb_grade(a, row_count(a)),
                None,
                rounds=args.rounds,
                baseline=None,
            )
            localweb_grade(b, row_count(b))()
            compare = compare_runs(
                title,
                "compare A B",
                command(compare_argv),
                None,
                rounds=args.rounds,
                baseline=None,
            )
            both = size_a + size_b
            report.add(
                title,
                [
                    *grade,
                    per_mb(grade[1], size_a),
                    *compare,
                    per_mb(compare[1], both),
                    *ungraded,
                    per_mb(ungraded[1], both),
                ],
            )
    report.finish(args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main_guard(main))
