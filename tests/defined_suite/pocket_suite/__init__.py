"""The pocket suite: three arithmetic questions bundled with it, graded by exact match.

Its registration: what a run of it is lives in :mod:`.run`, its grading in :mod:`.grade`.
"""

from agent_benchmarks.spec.suites import SuiteDef
from pocket_suite.run import PROMPT, bundled_tasks

SUITE = SuiteDef(
    name="pocket",
    title="Pocket",
    dataset=None,
    bundled=bundled_tasks,
    grader="pocket_suite.grade:make_grader",
    prompt=PROMPT,
    default_timeout_s=120.0,
)
