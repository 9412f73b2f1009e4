"""What a run of GAIA is: its dataset on the Hub (gated), its rows as tasks with their
attachments, what the agent is told; and the entry of its ``gaia-run``, ``gaia-mcp-run`` and
``gaia-ab-run`` scripts."""

from __future__ import annotations

from typing import Any

from agent_benchmarks.records.schema import Task
from agent_benchmarks.runner.command import run_main
from agent_benchmarks.spec.datasets import DatasetSpec, RowContext, find_attachment
from agent_benchmarks.spec.prompts import HUB_ANSWER_SOURCES, RESEARCH_ASSISTANT, SuitePrompt

GATED_HELP = (
    "GAIA is gated on the Hugging Face Hub: accept its terms on the dataset page "
    "(huggingface.co/datasets/gaia-benchmark/GAIA), create a read token "
    "(huggingface.co/settings/tokens) and export HF_TOKEN=... or run `hf auth login`; "
    "or pass --dataset-file with a local copy"
)


def hub_table(split: str, config: str | None) -> str:
    """The parquet file the dataset card maps (config, split) to."""
    config = config or "2023_level1"
    if config == "2023_all":
        return f"2023/{split}/metadata.parquet"
    level = config.removeprefix("2023_")
    if level not in ("level1", "level2", "level3"):
        raise ValueError(f"unknown GAIA config {config!r}")
    return f"2023/{split}/metadata.{level}.parquet"


def to_task(row: dict[str, Any], ctx: RowContext) -> Task:
    file_name = (row.get("file_name") or "").strip() or None
    attachment = (
        find_attachment(ctx, file_name, row.get("file_path") or None) if file_name else None
    )
    gold = row["Final answer"]
    # The test split hides its answers behind "?": no gold rather than a wrong one.
    gold = None if gold is None or (ctx.split == "test" and str(gold).strip() == "?") else gold
    return Task(
        suite="gaia",
        id=str(row["task_id"]),
        question=str(row["Question"]),
        gold=None if gold is None else str(gold),
        level=int(row["Level"]),
        file_name=file_name,
        attachment_path=attachment,
    )


DATASET = DatasetSpec(
    suite="gaia",
    hub_repo="gaia-benchmark/GAIA",
    splits=("validation", "test"),
    default_split="validation",
    default_config="2023_level1",
    required_columns=("task_id", "Question", "Level", "Final answer", "file_name"),
    hub_table=hub_table,
    hub_extra_patterns=lambda split: [f"2023/{split}/*"],
    to_task=to_task,
    gated=True,
    gated_help=GATED_HELP,
)


PROMPT = SuitePrompt(system=RESEARCH_ASSISTANT, answer="envelope")
# URLs that would hand the agent the answer (--block-answer-sources).
ANSWER_SOURCES = (*HUB_ANSWER_SOURCES, "*gaia-benchmark*", "*gaia_benchmark*")


# The suite's *-run console scripts (pyproject.toml's [project.scripts]): a run of this
# suite on each runner. Making them loads no runner and no backend.
native = run_main("gaia", "native")
mcp = run_main("gaia", "mcp")
chat = run_main("gaia", "chat")
