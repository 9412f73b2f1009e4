"""The ``<ANSWER>...</ANSWER>`` envelope agents are asked to put their final answer in.

Agents think aloud, and may mention the envelope before using it ("I will wrap the result in
<ANSWER></ANSWER> tags"), so the last complete envelope is the answer. Without one, the whole
output is kept as the prediction, and ``envelope`` says so, letting graders and reports tell
"answered outside the envelope" apart from "answered in it".
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

# An envelope's content may span lines but never holds an opening tag, so in
# "put it in <ANSWER> tags: <ANSWER>42</ANSWER>" the envelope is the second tag's.
_ENVELOPE = re.compile(r"<ANSWER>((?:(?!<ANSWER>).)*?)</ANSWER>", re.IGNORECASE | re.DOTALL)
_OPEN_TAG = re.compile(r"<ANSWER>", re.IGNORECASE)


class ExtractedAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str
    envelope: Literal["found", "missing", "empty"]
    n_envelopes: int  # complete envelopes in the output


def extract_answer(output: str) -> ExtractedAnswer:
    """The content of the last complete envelope, stripped; else the stripped raw output.

    An opening tag after the last complete envelope (or with none) means the output stopped
    inside an answer, cut off by a token or time limit: that answer may be partial, and an
    earlier envelope is not the agent's final word, so the envelope counts as missing.
    """
    envelopes = list(_ENVELOPE.finditer(output))
    last_end = envelopes[-1].end() if envelopes else 0
    if not envelopes or _OPEN_TAG.search(output, last_end):
        return ExtractedAnswer(
            answer=output.strip(), envelope="missing", n_envelopes=len(envelopes)
        )
    answer = envelopes[-1].group(1).strip()
    return ExtractedAnswer(
        answer=answer, envelope="found" if answer else "empty", n_envelopes=len(envelopes)
    )


def extract_plain_answer(output: str) -> ExtractedAnswer:
    """A reply asked to be the answer alone (the answer-only prompt): the whole reply,
    stripped, as upstream reads it. A model that wrapped it in an envelope anyway is read
    as with :func:`extract_answer`, so ``envelope`` still says which happened."""
    extracted = extract_answer(output)
    if extracted.envelope == "found":
        return extracted
    return ExtractedAnswer(
        answer=output.strip(), envelope="missing", n_envelopes=extracted.n_envelopes
    )
