"""GAIA answer checking, behaving exactly like the official leaderboard scorer.

Source of truth: ``question_scorer`` in ``scorer.py`` of the Hugging Face space
``gaia-benchmark/leaderboard`` (verbatim copies are public, e.g. inspect_evals
``src/inspect_evals/gaia/scorer.py``). This is an independent rewrite with the same
observable behaviour; the official prints/warnings are dropped.

How the gold answer (``ground_truth``) picks the comparison:

1. **Number** -- the gold parses with Python ``float()``. The model answer has every
   ``$``, ``%`` and ``,`` deleted and is parsed with ``float()``; an answer that does not
   parse becomes ``inf`` (so it is wrong, unless the gold itself is ``"inf"``). The two
   floats must be equal (``==``; a ``"nan"`` gold never matches).
2. **List** -- otherwise, the gold contains ``,`` or ``;``. Both sides are split on every
   ``,`` and ``;``. Different element counts -> False. Element by element, in order: if the
   gold element parses with ``float()`` (surrounding whitespace allowed), the answer element
   is compared as in (1); otherwise both are compared after deleting all whitespace and
   lowercasing, *keeping* punctuation. All elements must match.
3. **String** -- otherwise, both sides lose all whitespace and all ASCII punctuation
   (``string.punctuation``) and are lowercased, then compared. No article stripping.

A missing answer (``None``) is scored as the literal string ``"None"``.
"""

from __future__ import annotations

import functools
import re
import string
from typing import Any

__all__ = ["question_scorer"]

_LIST_SEPARATORS = re.compile(r"[,;]")
_WHITESPACE = re.compile(r"\s")
_DROP_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)


def _parses_as_float(text: str) -> bool:
    """True when Python ``float()`` accepts ``text`` (official ``is_float``)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _answer_to_float(text: str) -> float:
    """Official ``normalize_number_str``: drop ``$ % ,``; unparseable -> ``inf``."""
    for symbol in ("$", "%", ","):
        text = text.replace(symbol, "")
    try:
        return float(text)
    except ValueError:
        return float("inf")


def _squash(text: str, *, drop_punctuation: bool) -> str:
    """Official ``normalize_str``: remove all whitespace, lowercase, maybe drop punctuation."""
    squashed = _WHITESPACE.sub("", text).lower()
    if drop_punctuation:
        return squashed.translate(_DROP_ASCII_PUNCTUATION)
    return squashed


def _element_matches(answer_part: str, gold_part: tuple[float | None, str]) -> bool:
    number, squashed = gold_part
    if number is not None:
        return _answer_to_float(answer_part) == number
    # Official: punctuation is kept inside list elements.
    return _squash(answer_part, drop_punctuation=False) == squashed


@functools.lru_cache(maxsize=4096)
def _read_gold(ground_truth: str) -> tuple[str, Any]:
    """How the scorer compares against a gold, read once per distinct gold (a run grades
    every task's gold once per attempt): ``("number", value)``, ``("list", parts)`` with
    each part's number or squashed text, or ``("string", squashed)``. Only ever read."""
    if _parses_as_float(ground_truth):
        return "number", float(ground_truth)
    if "," in ground_truth or ";" in ground_truth:
        parts = tuple(
            (float(part), "")
            if _parses_as_float(part)
            else (None, _squash(part, drop_punctuation=False))
            for part in _LIST_SEPARATORS.split(ground_truth)
        )
        return "list", parts
    return "string", _squash(ground_truth, drop_punctuation=True)


def question_scorer(model_answer: str | None, ground_truth: str) -> bool:
    """Return True when ``model_answer`` is correct for ``ground_truth`` under GAIA rules.

    ``None`` is treated as the string ``"None"`` (as the official scorer does). Any other
    non-string answer is converted with ``str()`` (the official code would raise on it).
    """
    if model_answer is None:
        answer = "None"
    elif isinstance(model_answer, str):
        answer = model_answer
    else:
        answer = str(model_answer)

    kind, gold = _read_gold(ground_truth)
    if kind == "number":
        return _answer_to_float(answer) == gold
    if kind == "list":
        answer_parts = _LIST_SEPARATORS.split(answer)
        if len(gold) != len(answer_parts):
            return False
        return all(_element_matches(a, g) for a, g in zip(answer_parts, gold, strict=True))
    return _squash(answer, drop_punctuation=True) == gold
