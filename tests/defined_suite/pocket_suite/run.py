"""What a run of the pocket suite is: its bundled tasks and what the agent is told; and the
entry of its run scripts."""

from __future__ import annotations

import hashlib
import json

from agent_benchmarks.records.schema import DatasetSource, Task
from agent_benchmarks.runner.command import run_main
from agent_benchmarks.spec.datasets import LoadedDataset
from agent_benchmarks.spec.prompts import SuitePrompt

QUESTIONS = {
    "pocket-1": ("What is 6 times 7?", "42"),
    "pocket-2": ("What is 10 minus 3?", "7"),
    "pocket-3": ("What is 2 to the power of 5?", "32"),
}

PROMPT = SuitePrompt(
    system="You answer arithmetic questions. Reply with the number alone.", answer="plain"
)


def bundled_tasks() -> LoadedDataset:
    digest = hashlib.sha256(json.dumps(QUESTIONS, sort_keys=True).encode()).hexdigest()
    tasks = [
        Task(suite="pocket", id=task_id, question=question, gold=gold)
        for task_id, (question, gold) in QUESTIONS.items()
    ]
    source = DatasetSource(kind="bundled", path="pocket_suite.run", sha256=digest)
    return LoadedDataset(tasks=tasks, source=source, split="bundled")


native = run_main("pocket", "native")
mcp = run_main("pocket", "mcp")
