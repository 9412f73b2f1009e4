"""Offline "localweb" suite: a deterministic local shop + docs site and its tasks.

The suite's registration: what a run is lives in :mod:`.run` and :mod:`.session`, its
grading in :mod:`.grade`.
"""

from agent_benchmarks.localweb.run import PROMPT, bundled_tasks
from agent_benchmarks.spec.suites import SuiteDef

SUITE = SuiteDef(
    name="localweb",
    title="localweb",
    dataset=None,
    bundled=bundled_tasks,
    grader="agent_benchmarks.localweb.grade:make_grader",
    session="agent_benchmarks.localweb.session:localweb_session",
    options="agent_benchmarks.localweb.session:FaultOptions",
    scripted_model="scripted-oracle",
    serve="agent_benchmarks.localweb.session:serve",
    check="agent_benchmarks.localweb.session:check_run",
    prompt=PROMPT,
    default_timeout_s=120.0,
)
