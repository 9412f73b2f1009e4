"""What a run of WebBench READ is: its task table (bundled; the Hub when reachable), one task
per site by default, what the agent is told; and the entry of its ``webbench-run``,
``webbench-mcp-run`` and ``webbench-ab-run`` scripts.

Task ids are upstream's (lightpanda-io/agent-benchmarks): ``webbench-N``, N being the ``ID``
column of WebBench's task table. Why not ``N`` alone, as the table has it:

- the same task has the same id here and in upstream's files: a predictions file or a
  published sample of upstream's lines up with ours task by task, an imported upstream run
  keeps its ids as written, and the per-site draw (``datasets._sample_per_site``, upstream's
  rule) gives the very ids upstream's harness runs for the same seed;
- ``--block-answer-sources`` blocks every URL holding the task id (``*<task id>*``): a bare
  number would block any page whose URL has those digits in it (``*7*``), where
  ``*webbench-7*`` blocks only URLs that name the task;
- ids say their suite wherever they appear (logs, compare tables, URLs of routing proxies).

``--task-ids`` takes either form (``webbench-7`` or ``7``). Runs of ours recorded before
ids took this form list bare ``N`` ids in their rows and manifest. Their files are never
rewritten: the readers give such ids today's form as they read them
(``storage.current_task_id``), so such a run grades, compares and resumes as one of today's
(a resume appends ``webbench-N`` rows, and an old ``N`` row and a new ``webbench-N`` row are
the same task to the resume's skip logic and to grading).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_benchmarks.records.schema import Task
from agent_benchmarks.runner.command import run_main
from agent_benchmarks.spec.datasets import DatasetSpec, RowContext, site_of
from agent_benchmarks.spec.prompts import HUB_ANSWER_SOURCES, SuitePrompt

CATEGORY = "READ"


def to_task(row: dict[str, Any], ctx: RowContext) -> Task:
    start_url = str(row["Starting URL"]).strip()
    difficulty = row.get("Difficulty")
    return Task(
        suite="webbench",
        id=f"webbench-{str(row['ID']).strip()}",
        question=str(row["Task"]),
        gold=None,  # WebBench has no reference answers: a judge grades
        start_url=start_url,
        web_name=site_of(start_url),
        category=str(row["Category"]),
        difficulty=None if difficulty is None else str(difficulty),
    )


DATASET = DatasetSpec(
    suite="webbench",
    hub_repo="Halluminate/WebBench",
    splits=("train",),
    default_split="train",
    required_columns=("ID", "Starting URL", "Category", "Task"),
    hub_table=lambda split, config: "webbenchfinal.csv",
    to_task=to_task,
    keep_row=lambda row: str(row.get("Category", "")).strip().upper() == CATEGORY,
    default_per_site=1,
    # The READ rows of the Hub table (MIT; data/README.md says where they came from), so
    # that a run works offline as upstream's does; the Hub stays the source when reachable.
    bundled_copy=Path(__file__).parent / "data" / "webbench_read.csv",
)


WEB_TASK_ASSISTANT = """\
You are a careful assistant with a web browser. You are given a starting website and a \
task about it. Stay on that website: find the answer on its pages, not elsewhere. Read \
what the pages say rather than guessing, and do not make anything up. When you are done, \
reply with a grounded answer of one or two sentences that states the information the \
task asked for, as found on the site."""

PROMPT = SuitePrompt(system=WEB_TASK_ASSISTANT, answer="raw")
# URLs that would hand the agent the answer (--block-answer-sources).
ANSWER_SOURCES = (*HUB_ANSWER_SOURCES, "*halluminate*")


# The suite's *-run console scripts (pyproject.toml's [project.scripts]): a run of this
# suite on each runner. Making them loads no runner and no backend.
native = run_main("webbench", "native")
mcp = run_main("webbench", "mcp")
chat = run_main("webbench", "chat")
