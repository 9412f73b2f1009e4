"""Offline "localweb" suite: a deterministic local shop + docs site and its tasks."""

from agent_benchmarks.datasets import LoadedDataset
from agent_benchmarks.prompts import LOCAL_SITE_ASSISTANT, SuitePrompt
from agent_benchmarks.records import DatasetSource
from agent_benchmarks.suite import SuiteDef


def _bundled() -> LoadedDataset:
    from agent_benchmarks.localweb.tasks import as_tasks, contracts_digest

    source = DatasetSource(
        kind="bundled", path="agent_benchmarks.localweb.tasks", sha256=contracts_digest()
    )
    return LoadedDataset(tasks=as_tasks(), source=source, split="bundled")


SUITE = SuiteDef(
    name="localweb",
    title="localweb",
    dataset=None,
    bundled=_bundled,
    grader="agent_benchmarks.localweb.grade:make_grader",
    session="agent_benchmarks.localweb.session:localweb_session",
    options="agent_benchmarks.localweb.session:FaultOptions",
    scripted_model="scripted-oracle",
    serve="agent_benchmarks.localweb.session:serve",
    check="agent_benchmarks.localweb.session:check_run",
    prompt=SuitePrompt(system=LOCAL_SITE_ASSISTANT, answer="raw"),
    default_timeout_s=120.0,
)
