"""What each suite tells the agent: a system prompt, the task text, and how to read the answer.

Suites declare a :class:`SuitePrompt` in their package; ``--system-prompt-file`` replaces
the system prompt of a run (recorded in the manifest with its hash). The prompts are part
of a run's definition: a change here changes the numbers, so the manifest stores the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent_benchmarks.records import TaskInput

AnswerFormat = Literal["envelope", "raw"]

RESEARCH_ASSISTANT = """\
You are a meticulous research assistant with a web browser. You answer factual questions \
by finding the evidence on the web yourself: open pages, read them, follow links, and \
check what you find before you rely on it. Do not guess; if a page does not load, try \
another source. Keep working until you can answer, then stop.

When you have the answer, end your reply with exactly one line:
<ANSWER>your final answer</ANSWER>
Inside the envelope put only the answer, in the shortest form the question asks for: a \
number without units or thousands separators unless asked, a few words, or a \
comma-separated list. No explanation inside the envelope. If you cannot find the answer, \
give your best-supported guess in the envelope anyway."""

WEB_TASK_ASSISTANT = """\
You are a careful assistant with a web browser. You are given a starting website and a \
task about it. Stay on that website: find the answer on its pages, not elsewhere. Read \
what the pages say rather than guessing, and do not make anything up. When you are done, \
reply with a grounded answer of one or two sentences that states the information the \
task asked for, as found on the site."""

# For agent-browser's own chat loop (``<suite>-ab-run``) on the suites above that ask for an
# envelope: the loop's last reply is told apart by the harness, so it asks for the answer only.
RESEARCH_ANSWER_ONLY = """\
You are a meticulous research assistant with a web browser. You answer factual questions \
by finding the evidence on the web yourself: open pages, read them, follow links, and \
check what you find before you rely on it. Do not guess; if a page does not load, try \
another source. Keep working until you can answer, then stop.

Your final reply is the answer and nothing else: the shortest form the question asks for \
(a number without units or thousands separators unless asked, a few words, or a \
comma-separated list), with no explanation, no preamble and no formatting. If you cannot \
find the answer, reply with your best-supported guess, still only the answer."""

LOCAL_SITE_ASSISTANT = """\
You are a careful assistant with a web browser, working on a local test website. Do \
exactly what the task asks on that site (read, click, fill in, submit), then reply with \
only the answer, in exactly the format the task gives. No explanation."""


@dataclass(frozen=True)
class SuitePrompt:
    """How a suite phrases tasks for an agent and how it reads the reply."""

    system: str
    answer: AnswerFormat  # "envelope": the last <ANSWER>...</ANSWER> is the prediction

    def task_text(self, task: TaskInput, start_url: str | None = None) -> str:
        """The user turn. ``start_url`` overrides the task's own (localweb's live site)."""
        start = start_url or task.start_url
        parts = []
        if start:
            parts.append(f"Starting website: {start}")
        parts.append(task.question.strip())
        if self.answer == "envelope":
            parts.append("Finish with your answer as <ANSWER>...</ANSWER>.")
        return "\n\n".join(parts)


# Where copies of benchmark datasets (with their answers) live: dataset and Space pages on
# the Hugging Face Hub (viewers, leaderboards) and its file endpoints. Suites add their own.
HUB_ANSWER_SOURCES = (
    "*://huggingface.co/datasets/*",
    "*://huggingface.co/spaces/*",
    "*://*.hf.space/*",
    "*://hf.co/datasets/*",
    "*://datasets-server.huggingface.co/*",
)
