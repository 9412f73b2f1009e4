"""GAIA (gaia-benchmark/GAIA): Level 1 validation by default, official exact-match scorer.

The suite's registration: what a run is lives in :mod:`.run`, its grading in :mod:`.grade`.
"""

from agent_benchmarks.gaia.run import ANSWER_SOURCES, DATASET, PROMPT
from agent_benchmarks.spec.suites import SuiteDef

SUITE = SuiteDef(
    name="gaia",
    title="GAIA",
    dataset=DATASET,
    grader="agent_benchmarks.gaia.grade:make_grader",
    selection_flags=("level", "skip_attachments"),
    attachments="agent_benchmarks.gaia.attachments:prepare_attachment",
    prompt=PROMPT,
    answer_sources=ANSWER_SOURCES,
    retry_empty_once=True,
)
