"""Grading realistic rows: ``gaia-grade`` and ``assistantbench-grade``, ours against upstream's.

    uv run python benchmarks/grading.py [--rows N] [--rounds R]
        [--upstream SRC] [--upstream-ref REF] [--baseline FILE] [--record FILE]

    # offline, from the mirror:
    uv run python benchmarks/grading.py --upstream /work/.mirror/lightpanda-io+agent-benchmarks/repo

The same N rows per suite (default 100,000: the same answers, golds, timeouts, durations and
token counts) are written twice: as our PredictionRow and as the row upstream's runner
writes (the keys of its gaia/run.py and assistantbench/run.py). Their answers are drawn from
the 400-odd distinct (prediction, gold) pairs per suite of ``answer_shapes.py``: the golds'
shapes (numbers, money, percentages, comma lists, names, dates, long strings; for
AssistantBench also units, lists of lines and JSON objects) and the variants a model writes
for them; 2% of the rows time out. Then each side's console script grades its own file as a
subprocess, A B A B, timed from launch to exit (start-up, reading, scoring, writing
scores.json, exit) with its CPU (the command and its grading process) and peak RSS. An
extra line has our grader on upstream's file (the rows imported as upstream's).

Our graders run the official scorer as well as upstream's matching; upstream runs only its
matching. The last lines split that out: each side's scorers timed in its own interpreter
on the same pairs (CPU, their imports included), and our command's CPU less the official
scorer's beside upstream's whole command: the same work on both sides.

Read the ``ours/upstream`` column: below 1.00x ours is faster or smaller. CPU is steadier
than wall time on a busy machine. The rows/s note is N divided by our median wall time.
Exits 1 only if a grader fails or does not grade every row.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from answer_shapes import realistic_pairs
from measuring import (
    OURS_BIN,
    Baseline,
    Figure,
    Measurement,
    RunFailed,
    add_report_args,
    check_graded,
    compare_runs,
    main_guard,
    median,
    positive,
    run_measured,
    start_report,
    upstream_or_baseline,
)
from upstream_env import Upstream, add_upstream_args

from agent_benchmarks.records.schema import PredictionRow, Usage

SUITES = {suite: realistic_pairs(suite) for suite in ("gaia", "assistantbench")}


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


# Each side's scorers timed inside its own interpreter on the rows' (prediction, gold)
# pairs: the CPU of importing a scorer (numpy and scipy for our official AssistantBench
# scorer, which imports scipy at the first alignment of several items) and of scoring every
# pair, as each side's grader calls it. Our records module is imported before the clock
# starts: every part of the command needs it.
_OURS_PARTS = """
import json, sys, time
import agent_benchmarks.records.schema
pairs = json.load(open(sys.argv[1]))
suite = sys.argv[2]

def official():
    if suite == "gaia":
        from agent_benchmarks.gaia.official_scorer import question_scorer
        return lambda prediction, gold: question_scorer(prediction, gold or "")
    from agent_benchmarks.assistantbench.official_scorer import evaluate
    return lambda prediction, gold: evaluate(prediction or "", gold or "")

def matching():
    import importlib
    module = importlib.import_module(f"agent_benchmarks.{suite}.upstream_match")
    return getattr(module, suite + "_score")
"""
_UPSTREAM_PARTS = """
import json, sys, time
pairs = json.load(open(sys.argv[1]))
suite = sys.argv[2]

def matching():
    if suite == "gaia":
        from agent_benchmarks.gaia.grade import score_pair
        # As its grade_predictions scores a row: strict, then soft.
        return lambda p, g: max(score_pair(p, g), score_pair(p, g, soft=True))
    from agent_benchmarks.assistantbench.grade import score_pair
    return score_pair
"""
_TIME_PARTS = """
def timed(load):
    start = time.process_time()
    score = load()
    for prediction, gold in pairs:
        score(prediction, gold)
    return time.process_time() - start

parts = {"matching": timed(matching)}
if "official" in globals():
    parts["official"] = timed(official)
print(json.dumps(parts))
"""


def scorer_parts(python: Path, code: str, pairs_file: Path, suite: str) -> dict[str, float]:
    argv = [str(python), "-c", code + _TIME_PARTS, str(pairs_file), suite]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RunFailed(f"timing {suite} scorers failed ({python}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.splitlines()[-1])


def parts_figures(
    title: str,
    suite: str,
    specs: list[RowSpec],
    whole_cpu: Figure,
    upstream: Upstream | None,
    baseline: Baseline | None,
    rounds: int,
    tmp: Path,
) -> list[Figure]:
    """What the official scorer costs, which upstream does not run, and the rest of the
    command beside upstream's: the same work (its matching, reading, writing)."""
    pairs_file = tmp / f"{suite}-pairs.json"
    pairs_file.write_text(json.dumps([[s.prediction, s.gold] for s in specs]), encoding="utf-8")
    script = f"{suite}-grade"
    ours_runs, upstream_runs = [], []
    for _ in range(rounds):
        ours_runs.append(scorer_parts(OURS_BIN / "python", _OURS_PARTS, pairs_file, suite))
        ours_runs[-1]["start-up"] = start_up_cpu(OURS_BIN / script)
        if upstream is not None:
            upstream_runs.append(
                scorer_parts(upstream.bin_dir / "python", _UPSTREAM_PARTS, pairs_file, suite)
            )
            upstream_runs[-1]["start-up"] = start_up_cpu(upstream.script(script))

    def both(label: str, part: str, note: str) -> Figure:
        theirs = median([r[part] for r in upstream_runs]) if upstream_runs else None
        if baseline is not None:
            theirs = baseline.get(title, label)
        return Figure(label, "s", median([r[part] for r in ours_runs]), theirs, note)

    official = median([r["official"] for r in ours_runs])
    matching = both(
        f"{suite}: upstream's matching, in-process CPU", "matching", "the same work on both sides"
    )
    start_up = both(
        f"{script} --help: CPU", "start-up", "start-up: imports, argument parsing, exit"
    )
    same_work = Figure(
        f"{script}: CPU without the official scorer",
        "s",
        whole_cpu.ours - official,
        whole_cpu.upstream,
        note="ours: the command's CPU less the official scorer's",
    )
    per_row = Figure(
        f"{script}: CPU without the official scorer and start-up",
        "s",
        same_work.ours - start_up.ours,
        None
        if same_work.upstream is None or start_up.upstream is None
        else same_work.upstream - start_up.upstream,
        note="the work that grows with the rows",
    )
    official_line = Figure(
        f"{suite}: official scorer, in-process CPU",
        "s",
        official,
        note=f"ours only: {official / whole_cpu.ours:.0%} of our command's CPU",
    )
    return [official_line, matching, start_up, same_work, per_row]


def start_up_cpu(script: Path) -> float:
    measured = run_measured([str(script), "--help"]).check(f"{script.name} --help")
    return measured.cpu_s if measured.cpu_s is not None else measured.wall_s


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
                cpu=True,
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
            parts = parts_figures(
                title,
                suite,
                row_specs(suite, args.rows),
                figures[2],
                upstream,
                baseline,
                args.rounds,
                Path(tmp),
            )
            report.add(title, figures + imported + parts)
    report.finish(args.record)
    return 0


if __name__ == "__main__":
    sys.exit(main_guard(main))
