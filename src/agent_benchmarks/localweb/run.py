"""What a run of localweb is: its bundled tasks on the local site (:mod:`.tasks`), the site and
the scripted model a run serves (:mod:`.session`), what the agent is told; and the entry of
its ``localweb-run``, ``localweb-mcp-run`` and ``localweb-ab-run`` scripts."""

from __future__ import annotations

from agent_benchmarks.records.schema import DatasetSource
from agent_benchmarks.runner.command import run_main
from agent_benchmarks.spec.datasets import LoadedDataset
from agent_benchmarks.spec.prompts import SuitePrompt


def bundled_tasks() -> LoadedDataset:
    from agent_benchmarks.localweb.tasks import as_tasks, contracts_digest

    source = DatasetSource(
        kind="bundled", path="agent_benchmarks.localweb.tasks", sha256=contracts_digest()
    )
    return LoadedDataset(tasks=as_tasks(), source=source, split="bundled")


LOCAL_SITE_ASSISTANT = """\
You are a careful assistant with a web browser, working on a local test website. Do \
exactly what the task asks on that site (read, click, fill in, submit), then reply with \
only the answer, in exactly the format the task gives. No explanation."""

PROMPT = SuitePrompt(system=LOCAL_SITE_ASSISTANT, answer="raw")


# The suite's *-run console scripts (pyproject.toml's [project.scripts]): a run of this
# suite on each runner. Making them loads no runner and no backend.
native = run_main("localweb", "native")
mcp = run_main("localweb", "mcp")
chat = run_main("localweb", "chat")
