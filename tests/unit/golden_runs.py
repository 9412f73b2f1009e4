"""Run folders whose scores.json was recorded before grading streamed (tests/fixtures/scores/).

Each run is generated from a seed, so the file is small and the folder is rebuilt the same
way every time: every case the scorecard branches on (retried infrastructure failures,
answers printed before a timeout, repeats, missing rows, contamination and refused calls,
estimated usage and cost, every answer shape its scorer reads), and upstream's row shape.
``inflate`` gives the same rows traces as big as upstream keeps (600 calls, 8,000 characters
of output each), which must not change a single score.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from agent_benchmarks.records.schema import DatasetSource, Manifest, PredictionRow, ToolCall, Usage

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "scores"

_GAIA = [
    ("$1,250", "1250"),
    ("1300", "1250"),
    ("blue, red, yellow", "Blue, Red, Yellow"),
    ("blue; red", "blue, red, green"),
    ("The Ada Lovelace", "Ada Lovelace"),
    ("ada lovelace", "Ada Lovelace"),
    ("Ada  Lovelace.", "Ada Lovelace"),
    ("3.0", "3"),
    ("", "3"),
]
_AB = [
    ("55", "55"),
    ("50", "55"),
    ("crunch fitness gym", "Crunch Fitness"),
    ("The answer is 3 apples", "3 apples"),
    ('["a", "b", "c"]', '["a", "c"]'),
    ('{"sender": "DHL", "price (usd)": "55"}', '{"sender": "DHL", "price (usd)": "60"}'),
    ('{"sender": "DHL"}\n{"sender": "UPS"}', '{"sender": "DHL"}\n{"sender": "UPS"}'),
    ("null", '{"sender": "DHL"}'),
    ("", "Crunch Fitness"),
]
SUITES = ("gaia", "assistantbench")
N_TASKS = 60


def _manifest(suite: str, task_ids: list[str], repeat: int) -> Manifest:
    return Manifest(
        suite=suite,
        split="validation",
        dataset=DatasetSource(kind="file", path=f"/data/{suite}.jsonl", sha256="0" * 64),
        task_ids=task_ids,
        backend="lightpanda",
        started_at="2026-11-24T00:00:00Z",
        harness_version="0.1.0",
        mode="scaffold",
        repeat=repeat,
    )


def _row(rng: random.Random, suite: str, task_id: str, attempt: int, status: str) -> PredictionRow:
    prediction, gold = rng.choice(_GAIA if suite == "gaia" else _AB)
    if status in ("timeout", "error") and rng.random() < 0.5:
        prediction = ""  # failed before printing anything
    details: dict = {}
    if rng.random() < 0.05:
        details = {"contaminated": True, "foreign_calls": [{"name": "Bash"}]}
    elif rng.random() < 0.05:
        details = {"n_refused_calls": rng.randint(1, 3)}
    usage = Usage(
        input_tokens=rng.randint(100, 9000),
        cache_read_tokens=rng.randint(0, 500),
        output_tokens=rng.randint(10, 400),
        turns=rng.randint(1, 12),
        cost_usd=round(rng.uniform(0.001, 0.2), 6) if rng.random() < 0.7 else None,
        estimated=rng.random() < 0.1,
    )
    trace = [
        ToolCall(name=rng.choice(["goto", "markdown", "click"]), args={"url": f"https://x/{i}"})
        for i in range(rng.randint(0, 3))
    ]
    return PredictionRow(
        id=task_id,
        suite=suite,
        task=f"question {task_id}",
        gold=gold,
        prediction=prediction or None,
        status="ok" if status == "ok" and prediction else ("empty" if status == "ok" else status),
        error_class={"timeout": "timeout", "error": "crash"}.get(status),
        duration_s=round(rng.uniform(1, 300), 3),
        timed_out=status == "timeout",
        attempt=attempt,
        backend="lightpanda",
        level=rng.choice([1, 2, 3]) if suite == "gaia" else None,
        difficulty=rng.choice(["Easy", "Medium", "Hard"]) if suite == "assistantbench" else None,
        trace=trace,
        usage=usage,
        details=details,
    )


def ours(run_dir: Path, suite: str) -> Path:
    """A run of ours: two attempts per task, retries, missing rows, failures with answers."""
    rng = random.Random(f"{suite}-golden")
    task_ids = [f"{suite}-{i:03d}" for i in range(N_TASKS)]
    rows: list[PredictionRow] = []
    for attempt in (1, 2):
        for task_id in task_ids:
            roll = rng.random()
            if roll < 0.03:
                continue  # no row: an interrupted run
            if roll < 0.10:  # an infrastructure failure a resume retried
                rows.append(_row(rng, suite, task_id, attempt, rng.choice(["timeout", "error"])))
            status = "ok" if rng.random() < 0.85 else rng.choice(["timeout", "error"])
            rows.append(_row(rng, suite, task_id, attempt, status))
    rng.shuffle(rows)  # workers finish in any order; a retry stays after what it retried
    rows.sort(key=lambda r: r.status in ("ok", "empty"))  # failures first, retries later
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(_manifest(suite, task_ids, 2).model_dump_json())
    path = run_dir / "predictions.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(row.model_dump_json() + "\n")
    return path


def upstreams(run_dir: Path) -> Path:
    """A GAIA run upstream's harness wrote: its row shape, no manifest of ours."""
    rng = random.Random("upstream-golden")
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "predictions.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(N_TASKS):
            prediction, gold = rng.choice(_GAIA)
            timed_out = rng.random() < 0.05
            row = {
                "id": f"up-{i:03d}",
                "task": f"question {i}",
                "gold": gold,
                "prediction": prediction,
                "duration_s": round(rng.uniform(1, 300), 2),
                "timed_out": timed_out,
                "returncode": None if timed_out else 0,
                "level": rng.choice([1, 2, 3]),
                "file_name": None,
                "retried": False,
                "trace": [],
                "usage": {"input_tokens": rng.randint(100, 9000), "output_tokens": 50},
                "stderr_tail": "",
            }
            fh.write(json.dumps(row) + "\n")
    return path


def inflate(path: Path, out: Path, calls: int = 600, output_chars: int = 8000) -> Path:
    """The same rows with traces as big as upstream keeps; written beside a copy of the
    manifest."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if (path.parent / "manifest.json").exists():
        (out.parent / "manifest.json").write_bytes((path.parent / "manifest.json").read_bytes())
    page = ("lorem ipsum dolor sit amet " * (output_chars // 27 + 1))[:output_chars]
    with open(path, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for line in src:
            row = json.loads(line)
            row["trace"] = [
                {"name": "markdown", "args": {"url": f"https://x/{i}"}, "output": page}
                for i in range(calls)
            ]
            dst.write(json.dumps(row) + "\n")
    return out


def normalised(scores_json: str) -> dict:
    """scores.json with what names the file on disk taken out."""
    scores = json.loads(scores_json)
    scores.pop("predictions_path")
    scores.pop("predictions_sha256")
    return scores
