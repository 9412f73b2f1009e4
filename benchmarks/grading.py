"""Grading 100,000 rows: ``gaia-grade`` and ``assistantbench-grade``, ours against upstream's.

    uv run python benchmarks/grading.py [--rows N] [--rounds R]
        [--upstream SRC] [--upstream-ref REF] [--baseline FILE] [--record FILE]

    # offline, from the mirror:
    uv run python benchmarks/grading.py --upstream /work/.mirror/lightpanda-io+agent-benchmarks/repo

The same N rows per suite (the same answers, golds, timeouts, durations and token counts)
are written twice: as our PredictionRow and as the row upstream's runner writes (the keys of
its gaia/run.py and assistantbench/run.py). The rows mix the answer shapes each scorer
branches on (numbers, lists, strings, JSON objects for AssistantBench) and some timeouts.
Then each side's console script grades its own file as a subprocess, A B A B, timed from
launch to exit (start-up, reading, scoring, writing scores.json, exit) with its peak RSS.
An extra line has our grader on upstream's file (the rows imported as upstream's).

Read the ``ours/upstream`` column: below 1.00x ours is faster or smaller. Upstream's
graders are not the official scorers, ours are; the ratio is what that costs.
The rows/s note is N divided by our median wall time. Exits 1 only if a grader fails or
does not grade every row.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from measuring import (
    OURS_BIN,
    Measurement,
    add_report_args,
    check_graded,
    compare_runs,
    main_guard,
    positive,
    run_measured,
    start_report,
    upstream_or_baseline,
)
from upstream_env import add_upstream_args

from agent_benchmarks.records import PredictionRow, Usage

GAIA_PAIRS = [
    ("$1,250", "1250"),
    ("1300", "1250"),
    ("blue, red, yellow", "Blue, Red, Yellow"),
    ("blue; red", "blue, red, green"),
    ("The Ada Lovelace", "Ada Lovelace"),
    ("ada lovelace", "Ada Lovelace"),
    (None, "3"),
]
AB_PAIRS = [
    ("55", "55"),
    ("50", "55"),
    ("crunch fitness gym", "Crunch Fitness"),
    ("The answer is 3 apples", "3 apples"),
    ('["a", "b", "c"]', '["a", "c"]'),
    ('{"sender": "DHL", "price (usd)": "55"}', '{"sender": "DHL", "price (usd)": "60"}'),
    ("null", '{"sender": "DHL"}'),
    (None, "Crunch Fitness"),
]
SUITES = {"gaia": GAIA_PAIRS, "assistantbench": AB_PAIRS}


@dataclass(frozen=True)
class RowSpec:
    """One graded attempt, before it is written in either harness's format."""

    id: str
    prediction: str | None
    gold: str
    timed_out: bool
    duration_s: float
    input_tokens: int
    output_tokens: int
    level: int | None
    difficulty: str | None


def row_specs(suite: str, n: int) -> list[RowSpec]:
    rng = random.Random(0)
    specs = []
    for i in range(n):
        prediction, gold = rng.choice(SUITES[suite])
        timed_out = rng.random() < 0.02
        specs.append(
            RowSpec(
                id=f"t{i}",
                prediction=None if timed_out else prediction,
                gold=gold,
                timed_out=timed_out,
                duration_s=round(rng.uniform(5, 60), 2),
                input_tokens=rng.randint(1000, 9000),
                output_tokens=200,
                level=rng.choice([1, 2, 3]) if suite == "gaia" else None,
                difficulty=rng.choice(["Easy", "Medium", "Hard"])
                if suite == "assistantbench"
                else None,
            )
        )
    return specs


def ours_row(suite: str, spec: RowSpec) -> str:
    status = "timeout" if spec.timed_out else ("ok" if spec.prediction else "empty")
    return PredictionRow(
        id=spec.id,
        suite=suite,
        task="q",
        gold=spec.gold,
        prediction=spec.prediction,
        status=status,
        backend="synthetic",
        duration_s=spec.duration_s,
        usage=Usage(input_tokens=spec.input_tokens, output_tokens=spec.output_tokens),
        level=spec.level,
        difficulty=spec.difficulty,
    ).model_dump_json()


def upstream_row(suite: str, spec: RowSpec) -> str:
    """The row upstream's native runner appends (its gaia/run.py or assistantbench/run.py)."""
    row = {
        "id": spec.id,
        "task": "q",
        "gold": spec.gold,
        "prediction": spec.prediction or "",
        "duration_s": spec.duration_s,
        "timed_out": spec.timed_out,
        "returncode": None if spec.timed_out else 0,
    }
    if suite == "gaia":
        row.update(level=spec.level, file_name=None, retried=False)
    else:
        row["difficulty"] = spec.difficulty
    row.update(
        trace=[],
        usage={
            "input_tokens": spec.input_tokens,
            "output_tokens": spec.output_tokens,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "num_turns": 0,
            "final_turn_input_tokens": 0,
            "total_cost_usd": None,
        },
        stderr_tail="",
    )
    return json.dumps(row)


def synthesize(path: Path, suite: str, n: int, fmt=ours_row) -> Path:
    """N rows of the suite in one harness's format (``ours_row`` or ``upstream_row``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # Plain writes, not PredictionsWriter: its fsync per row is a run's cost, not grading's.
    with open(path, "w", encoding="utf-8") as fh:
        for spec in row_specs(suite, n):
            fh.write(fmt(suite, spec) + "\n")
    return path


def grader(script: Path, predictions: Path, out: Path, rows: int):
    def run() -> Measurement:
        m = run_measured([str(script), str(predictions), "--out", str(out)]).check(script.name)
        check_graded(out, rows, script.name)
        out.unlink()
        return m

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=positive, default=100_000, help="rows per suite")
    add_report_args(parser)
    add_upstream_args(parser)
    args = parser.parse_args()

    upstream, baseline = upstream_or_baseline(args)
    report = start_report("benchmarks/grading.py", upstream, baseline)
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as tmp:
        for suite in SUITES:
            title = f"{suite}-grade, {args.rows:,} rows"
            ours_file = synthesize(Path(tmp, suite, "ours", "predictions.jsonl"), suite, args.rows)
            up_file = Path(tmp, suite, "upstream", "predictions.jsonl")
            synthesize(up_file, suite, args.rows, upstream_row)
            script = f"{suite}-grade"
            figures = compare_runs(
                title,
                script,
                grader(OURS_BIN / script, ours_file, ours_file.with_name("scores.json"), args.rows),
                grader(upstream.script(script), up_file, up_file.with_name("up.json"), args.rows)
                if upstream
                else None,
                rounds=args.rounds,
                baseline=baseline,
            )
            # The extra line: our grader importing upstream's rows.
            imported = compare_runs(
                title,
                f"{script} on upstream's rows",
                grader(OURS_BIN / script, up_file, up_file.with_name("ours.json"), args.rows),
                None,
                rounds=args.rounds,
                baseline=None,
            )
            imported[0].upstream, imported[1].upstream = figures[0].upstream, figures[1].upstream
            for figure in (figures[0], imported[0]):
                rate = f"ours {args.rows / figure.ours:,.0f} rows/s"
                figure.note = "; ".join(part for part in (rate, figure.note) if part)
            report.add(title, figures + imported)
    report.finish(args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main_guard(main))
