"""What each suite tells the agent: a system prompt, the task text, and how to read the answer.

Suites declare a :class:`SuitePrompt` in their package; ``--system-prompt-file`` replaces
the system prompt of a run (recorded in the manifest with its hash). The prompts are part
of a run's definition: a change here changes the numbers, so the manifest stores the text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent_benchmarks.records.schema import TaskInput

# "envelope": the last <ANSWER>...</ANSWER> is the prediction; "plain": the reply is the
# answer (an envelope, if the model used one anyway, is still read); "raw": the reply as is.
AnswerFormat = Literal["envelope", "plain", "raw"]

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

# Upstream's method for strong models (its Claude numbers, native and MCP): the browser is the
# only way to the web, long persistence before giving up, and a strict envelope. Our words.
RESEARCH_PERSISTENT = """\
You are a research assistant answering a question with a headless web browser that you \
drive through tools. Those browser tools are your only access to the web: there is no \
other search or fetch tool, and an answer recalled from memory without browsing counts as \
wrong.

Keep going; this matters more than anything else here:
- Expect to need many steps: most of these questions take 20 to 50 tool calls, a few more \
than 100.
- When a search gives poor results, search again with other words: synonyms, a narrower \
query, another angle on the question.
- When a page will not load or does not have what you need, go to another source \
(an encyclopedia, the official site, an archived copy, a news report).
- When one way of reading a page fails, read it another way: page text as markdown, the \
accessibility tree, a targeted extraction, the page's structured data, finding an element.
- Do not answer "unknown" and do not fall back on memory before you have made at least 20 \
real tool calls and tried at least 3 different sources or approaches.
- If the question offers a few candidates (A, B or C; yes or no), always choose one.
- Work from primary sources. Do not look for this question or its answer in datasets, \
papers, evaluation logs or other agents' output.

How to work:
1. Go straight to authoritative sources (an encyclopedia, the official site) when you know \
where the answer lives, rather than through a search results page.
2. To search, use the browser's search tool; never open a search engine's page with goto.
3. After anything that changes the page (a click, a form, a navigation), look at the page \
again: earlier snapshots and element ids are out of date.
4. When the answer is not obvious, confirm it on a second source.

The final answer:
Only the text inside the last <ANSWER>...</ANSWER> of your reply is graded, by exact \
match after normalisation; everything else you write is ignored. Inside the envelope:
- the answer alone: no introduction, no explanation, no markdown, no citation;
- numbers as bare digits: no thousands separators, no currency sign or units unless the \
question asks for them;
- names and titles complete and exactly as the source writes them, with nothing around them;
- a list as comma-separated items on one line.
For example <ANSWER>1234</ANSWER> or <ANSWER>Lima, Quito, Bogota</ANSWER>; never \
<ANSWER>1,234</ANSWER>, <ANSWER>**1234**</ANSWER> or <ANSWER>It is 1234.</ANSWER>."""

# Upstream's method for fast models (its Gemini Flash native baseline, and agent-browser's
# chat): answer only, and stop early rather than retry a failing site. Our words.
RESEARCH_BRIEF = """\
You are a research assistant with a web browser. Find the answer to the question on the \
web, preferring authoritative sources (an encyclopedia, the official site) when you know \
where to look.

Be decisive. If a question offers a few candidates (A, B or C; yes or no), choose one. If a \
site cannot be reached or a tool keeps failing, stop retrying and give your best answer \
from what you have found and what you know. Say "unknown" only when browsing is exhausted \
and you have no lead at all.

Your reply is graded by exact match, so it must be the answer and nothing else: no \
introduction ("The answer is"), no explanation, no caveats, no citation, no markdown. \
Numbers as bare digits (no thousands separators, no currency or units unless asked), names \
exactly as written, lists as comma-separated items on one line."""


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
        elif self.answer == "plain":
            parts.append("Reply with the answer only: bare digits for numbers, no markdown.")
        return "\n\n".join(parts)


# --- prompt variants (--prompt NAME) ---------------------------------------------------------

STANDARD = "standard"  # the suite's own prompt (this project's, before the variants)
PERSISTENCE = "persistence"
ANSWER_ONLY = "answer-only"
PROMPT_NAMES = (STANDARD, PERSISTENCE, ANSWER_ONLY)

# The variants for the research suites (those whose own prompt asks for an envelope).
_RESEARCH_VARIANTS = {
    PERSISTENCE: SuitePrompt(system=RESEARCH_PERSISTENT, answer="envelope"),
    ANSWER_ONLY: SuitePrompt(system=RESEARCH_BRIEF, answer="plain"),
}


def prompt_variant(suite_prompt: SuitePrompt, name: str) -> SuitePrompt:
    """The prompt ``--prompt NAME`` gives a suite whose own prompt is ``suite_prompt``.

    Only the research suites (GAIA, AssistantBench: an envelope) have variants; the others
    (WebBench's grounded sentence, localweb's exact format) take ``standard`` only. Raises
    ValueError, with a one-line reason, for a name the suite does not have."""
    if name == STANDARD:
        return suite_prompt
    if name not in PROMPT_NAMES:
        raise ValueError(f"no prompt named {name!r} (choose from {', '.join(PROMPT_NAMES)})")
    if suite_prompt.answer != "envelope":
        raise ValueError(f"this suite has only its own prompt ({STANDARD!r}), not {name!r}")
    return _RESEARCH_VARIANTS[name]


def default_prompt_name(suite_prompt: SuitePrompt, runner: str, model: str | None) -> str:
    """The variant upstream used for its published numbers with this runner and model.

    Upstream's agent-browser chat runners ask for the answer alone (early bail); its MCP
    runners (Claude) use the persistence prompt; its native runner published Gemini Flash
    with the answer-only prompt and Claude with the persistence one. Suites without
    variants keep their own prompt."""
    if suite_prompt.answer != "envelope":
        return STANDARD
    if runner.startswith("agent-browser-chat"):
        return ANSWER_ONLY
    if runner == "lightpanda-native" and "flash" in (model or "").lower():
        return ANSWER_ONLY
    return PERSISTENCE


# Where copies of benchmark datasets (with their answers) live: dataset and Space pages on
# the Hugging Face Hub (viewers, leaderboards) and its file endpoints. Suites add their own.
HUB_ANSWER_SOURCES = (
    "*://huggingface.co/datasets/*",
    "*://huggingface.co/spaces/*",
    "*://*.hf.space/*",
    "*://hf.co/datasets/*",
    "*://datasets-server.huggingface.co/*",
)
