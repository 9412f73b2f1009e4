"""Run folders for the report tests, written with the harness's own records and writer.

:func:`make_run` writes ``predictions.jsonl`` (through :class:`PredictionsWriter`) and
``manifest.json`` the way a run does; the defaults describe a run that is headline
eligible (live, pinned, budgets recorded, 10 GAIA tasks), so a test changes exactly the one
thing it is about. GAIA rows are graded by the real scorer: gold "42", and an attempt is
correct when it answers "42".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_benchmarks.records.schema import (
    DatasetSource,
    Machine,
    Manifest,
    PredictionRow,
    ResourceUse,
    ToolCall,
    Usage,
)
from agent_benchmarks.records.storage import PredictionsWriter

GOLD = "42"


@dataclass
class Attempt:
    correct: bool = True
    status: str = "ok"
    error_class: str | None = None
    tokens: int = 1_000  # split as input 700, output 300
    estimated: bool = False
    turns: int = 2
    cost: float | None = 0.01
    duration: float = 10.0
    calls: int = 3
    trace: list[ToolCall] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    prediction: str | None = None  # overrides the answer implied by ``correct``
    resources: ResourceUse | None = None  # what it cost the machine (None: not measured)


def task_ids(n: int, prefix: str = "task") -> list[str]:
    return [f"{prefix}-{i:02d}" for i in range(n)]


def programs_for(backend: str) -> dict[str, str]:
    base = {"agent-benchmarks": "0.1.0", "python": "3.11.7"}
    if backend == "lightpanda-native":
        return base | {"lightpanda": "1.0.2", "lightpanda_sha256": "ab" * 32}
    if backend == "claude-mcp/lightpanda":
        return base | {"lightpanda": "1.0.2", "claude-code": "2.1.330 (Claude Code)"}
    if backend == "claude-mcp/agent-browser":
        return base | {
            "claude-code": "2.1.330 (Claude Code)",
            "agent-browser": "agent-browser 0.9.1",
            "chromium": "Chromium 140.0",
        }
    return base


BUDGETS = {"max_turns": 60, "max_tokens": 2_000_000, "max_cost_usd": 5.0}


def manifest_for(
    ids: list[str],
    *,
    suite: str = "gaia",
    backend: str = "lightpanda-native",
    model: str | None = "claude-sonnet-4-6",
    provider: str | None = "anthropic",
    mode: str = "live",
    repeat: int = 1,
    programs: dict[str, str] | None = None,
    budgets: dict[str, Any] | None = None,
    timeout_s: float = 1800.0,
    revision: str = "r1",
    extra_settings: dict[str, Any] | None = None,
    machine: Machine | None = None,
) -> Manifest:
    settings: dict[str, Any] = {
        "budgets": dict(BUDGETS if budgets is None else budgets),
        "session": {"system_prompt_sha256": "p" * 64, "answer_format": "envelope"},
    }
    settings |= extra_settings or {}
    return Manifest(
        suite=suite,  # type: ignore[arg-type]
        split="validation",
        dataset=DatasetSource(
            kind="hub", hf_id="gaia-benchmark/GAIA", config="2023_level1", revision=revision
        ),
        task_ids=ids,
        backend=backend,
        provider=provider,
        model=model,
        started_at="2026-11-21T00:00:00Z",
        harness_version="0.1.0",
        programs=programs_for(backend) if programs is None else programs,
        timeout_s=timeout_s,
        repeat=repeat,
        mode=mode,  # type: ignore[arg-type]
        settings=settings,
        machine=machine,
    )


def row_for(task_id: str, attempt_no: int, a: Attempt, *, suite: str, backend: str, level: int):
    if a.prediction is not None:
        prediction: str | None = a.prediction
    elif a.status in ("timeout", "error"):
        prediction = None
    else:
        prediction = GOLD if a.correct else "7"
    trace = a.trace
    if trace is None:
        trace = [
            ToolCall(
                name="goto",
                args={"url": f"https://example.com/{i}"},
                latency_ms=100.0 * (i + 1),
                page_url=f"https://example.com/{i}",
                http_status=200,
            )
            for i in range(a.calls)
        ]
    usage = Usage(
        input_tokens=a.tokens * 7 // 10,
        output_tokens=a.tokens - a.tokens * 7 // 10,
        turns=a.turns,
        cost_usd=a.cost,
        estimated=a.estimated,
    )
    return PredictionRow(
        id=task_id,
        suite=suite,  # type: ignore[arg-type]
        task=f"question {task_id}",
        gold=GOLD,
        prediction=prediction,
        status=a.status,  # type: ignore[arg-type]
        error_class=a.error_class,
        duration_s=a.duration,
        attempt=attempt_no,
        backend=backend,
        trace=trace,
        usage=usage,
        details=a.details,
        level=level,
        resources=a.resources,
    )


def make_run(
    root: Path,
    name: str,
    outcomes: dict[str, list[Attempt]] | None = None,
    *,
    manifest: Manifest | None = None,
    write_manifest: bool = True,
    extra_rows: list[PredictionRow] | None = None,
    **manifest_kw: Any,
) -> Path:
    """A run folder. ``outcomes`` maps task id -> its attempts (default: 10 tasks, 1 correct
    attempt each); ``manifest_kw`` go to :func:`manifest_for`."""
    if outcomes is None:
        outcomes = {t: [Attempt()] for t in task_ids(10)}
    suite = manifest_kw.get("suite", "gaia")
    backend = manifest_kw.get("backend", "lightpanda-native")
    if manifest is None:
        repeat = max(len(v) for v in outcomes.values())
        manifest_kw.setdefault("repeat", repeat)
        manifest = manifest_for(list(outcomes), **manifest_kw)
    run = root / name
    with PredictionsWriter(run / "predictions.jsonl") as writer:
        for index, (task_id, attempts) in enumerate(outcomes.items()):
            for number, attempt in enumerate(attempts, start=1):
                writer.append(
                    row_for(
                        task_id, number, attempt, suite=suite, backend=backend, level=index % 2 + 1
                    )
                )
        for row in extra_rows or []:
            writer.append(row)
    if write_manifest:
        (run / "manifest.json").write_text(manifest.model_dump_json(indent=2))
    return run


def uniform(n_tasks: int, *attempts: Attempt, prefix: str = "task") -> dict[str, list[Attempt]]:
    """Every task gets the same attempts."""
    return {t: list(attempts) for t in task_ids(n_tasks, prefix)}
