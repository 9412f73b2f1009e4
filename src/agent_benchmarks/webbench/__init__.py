"""WebBench READ (Halluminate/WebBench): 1,637 tasks on 448 sites, one per site by default,
judged by an LLM.

The suite's registration: what a run is lives in :mod:`.run` (its task ids too), its
grading in :mod:`.grade`.
"""

from agent_benchmarks.spec.suites import SuiteDef
from agent_benchmarks.webbench.run import ANSWER_SOURCES, DATASET, PROMPT

SUITE = SuiteDef(
    name="webbench",
    title="WebBench READ",
    dataset=DATASET,
    grader="agent_benchmarks.webbench.grade:make_grader",
    grading_options="agent_benchmarks.webbench.grade:JudgeOptions",
    selection_flags=("site",),
    prompt=PROMPT,
    answer_sources=ANSWER_SOURCES,
    default_timeout_s=900.0,
)
