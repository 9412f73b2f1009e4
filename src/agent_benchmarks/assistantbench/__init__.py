"""AssistantBench (AssistantBench/AssistantBench): validation (33 tasks), official scorer."""

from __future__ import annotations

from typing import Any

from agent_benchmarks.datasets import DatasetSpec, RowContext
from agent_benchmarks.prompts import HUB_ANSWER_SOURCES, RESEARCH_ASSISTANT, SuitePrompt
from agent_benchmarks.records import Task
from agent_benchmarks.suite import SuiteDef

_TABLES = {
    "validation": "assistant_bench_v1.0_dev.jsonl",
    "test": "assistant_bench_v1.0_test.jsonl",
}


def to_task(row: dict[str, Any], ctx: RowContext) -> Task:
    answer = row.get("answer")
    return Task(
        suite="assistantbench",
        id=str(row["id"]),
        question=str(row["task"]),
        gold=None if answer is None or str(answer) == "" else str(answer),
        difficulty=(str(row["difficulty"]) if row.get("difficulty") is not None else None),
    )


DATASET = DatasetSpec(
    suite="assistantbench",
    hub_repo="AssistantBench/AssistantBench",
    splits=("validation", "test"),
    default_split="validation",
    required_columns=("id", "task", "answer", "difficulty"),
    hub_table=lambda split, config: _TABLES[split],
    to_task=to_task,
)

SUITE = SuiteDef(
    name="assistantbench",
    title="AssistantBench",
    dataset=DATASET,
    grader="agent_benchmarks.assistantbench.grade:make_grader",
    prompt=SuitePrompt(system=RESEARCH_ASSISTANT, answer="envelope"),
    answer_sources=(*HUB_ANSWER_SOURCES, "*assistantbench*", "*assistant_bench*"),
)
