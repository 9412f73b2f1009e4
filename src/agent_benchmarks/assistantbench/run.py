"""What a run of AssistantBench is: its dataset on the Hub, its rows as tasks, what the agent
is told; and the entry of its ``assistantbench-run``, ``assistantbench-mcp-run`` and
``assistantbench-ab-run`` scripts."""

from __future__ import annotations

from typing import Any

from agent_benchmarks.records.schema import Task
from agent_benchmarks.runner.command import run_main
from agent_benchmarks.spec.datasets import DatasetSpec, RowContext
from agent_benchmarks.spec.prompts import HUB_ANSWER_SOURCES, RESEARCH_ASSISTANT, SuitePrompt

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


PROMPT = SuitePrompt(system=RESEARCH_ASSISTANT, answer="envelope")
# URLs that would hand the agent the answer (--block-answer-sources).
ANSWER_SOURCES = (*HUB_ANSWER_SOURCES, "*assistantbench*", "*assistant_bench*")


# The suite's *-run console scripts (pyproject.toml's [project.scripts]): a run of this
# suite on each runner. Making them loads no runner and no backend.
native = run_main("assistantbench", "native")
mcp = run_main("assistantbench", "mcp")
chat = run_main("assistantbench", "chat")
