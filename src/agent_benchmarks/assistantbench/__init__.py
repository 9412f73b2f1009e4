"""AssistantBench (AssistantBench/AssistantBench): validation (33 tasks), official scorer.

The suite's registration: what a run is lives in :mod:`.run`, its grading in :mod:`.grade`.
"""

from agent_benchmarks.assistantbench.run import ANSWER_SOURCES, DATASET, PROMPT
from agent_benchmarks.spec.suites import SuiteDef

SUITE = SuiteDef(
    name="assistantbench",
    title="AssistantBench",
    dataset=DATASET,
    grader="agent_benchmarks.assistantbench.grade:make_grader",
    prompt=PROMPT,
    answer_sources=ANSWER_SOURCES,
)
