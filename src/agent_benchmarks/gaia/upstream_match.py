"""Upstream's GAIA matching, for the upstream-comparable view
(:mod:`agent_benchmarks.scoring.upstream_view`): lightpanda-io/agent-benchmarks' own
``gaia/grade.py`` rule, written from what its code does. The official scorer
(:mod:`.official_scorer`) stays the headline.

GAIA (:func:`gaia_score`), per (prediction, gold), both stripped:

- an empty gold matches only an empty prediction; otherwise an empty prediction is wrong;
- a gold with two or more non-empty comma-separated items is a **list**: the prediction is
  split on commas and newlines, must have as many non-empty items, and every gold item must
  equal a distinct prediction item, in any order (each gold item takes the first unused
  prediction item it equals, so ``b, a`` = ``a, b``); items compare as numbers or strings by
  the gold item. Only commas separate gold items, so gold ``1,000`` is a two-item list;
- a gold that is a number once commas, trailing ``%`` and leading ``$ € £ ¥`` are removed is
  a **number**: the prediction, cleaned the same way, must parse (no digits are dug out of
  prose) and be equal (``€1.5`` = ``1.5``, ``5%`` = ``5``); in the soft score, within 1% of
  the gold scores 0.5;
- otherwise a **string**: equal after lowercasing, removing ASCII punctuation (quotes
  included) and the words a, an and the (``Beatles`` = ``The Beatles``), or else equal as
  the run of letters and digits alone (``New-York`` = ``new york``).

A row's ``score`` is 0 or 1, ``correct`` when it is 1; ``score_soft`` is the larger of the
score and the soft score (0, 0.5 or 1). ``accuracy`` and ``accuracy_soft`` are their means.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Sequence
from typing import Any, NamedTuple

from agent_benchmarks.scoring.grades import mean
from agent_benchmarks.scoring.upstream_view import Graded, UpstreamGrade, UpstreamLayout

_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)
_CURRENCY_SIGNS = "$€£¥"
_ARTICLES = frozenset({"a", "an", "the"})


def _gaia_number(text: str) -> float | None:
    """The number a GAIA answer states, after the clean-up upstream allows; None otherwise."""
    cleaned = text.strip().replace(",", "").rstrip("%").lstrip(_CURRENCY_SIGNS)
    try:
        return float(cleaned)
    except ValueError:
        return None


def _gaia_words(text: str) -> str:
    kept = text.lower().translate(_ASCII_PUNCTUATION).split()
    return " ".join([word for word in kept if word not in _ARTICLES])


_NOT_LETTER_OR_DIGIT = re.compile(r"[\W_]")  # \w is str.isalnum() and "_"


def _letters_and_digits(text: str) -> str:
    kept = _NOT_LETTER_OR_DIGIT.sub("", text)
    # Each character lowercased alone: str.lower() of the whole text would give a final
    # sigma its word-final form.
    return kept.lower() if "Σ" not in kept else "".join(map(str.lower, kept))


class _GaiaText(NamedTuple):
    """What upstream compares of a gold answer (or of one item of a gold list)."""

    number: float | None
    words: str
    letters: str


def _gaia_text(text: str) -> _GaiaText:
    return _GaiaText(_gaia_number(text), _gaia_words(text), _letters_and_digits(text))


@functools.lru_cache(maxsize=4096)
def _gaia_gold(gold: str) -> tuple[str, Any]:
    """A gold answer's kind and what is compared of it, read once per distinct gold (a run
    grades every task's gold once per attempt): ``("empty", None)``, ``("list", items)``,
    ``("number", value)`` or ``("string", text)``. Only ever read."""
    wanted = gold.strip()
    if not wanted:
        return "empty", None
    items = [item.strip() for item in wanted.split(",") if item.strip()]
    if len(items) >= 2:
        return "list", tuple(_gaia_text(item) for item in items)
    number = _gaia_number(wanted)
    if number is not None:
        return "number", number
    return "string", _gaia_text(wanted)


def _gaia_number_score(said: float | None, wanted: float, soft: bool) -> float:
    if said is None:
        return 0.0
    if said == wanted:
        return 1.0
    close = wanted != 0 and abs(said - wanted) / abs(wanted) <= 0.01
    return 0.5 if soft and close else 0.0


def _gaia_string_matches(prediction: str, gold: _GaiaText) -> bool:
    if _gaia_words(prediction) == gold.words:
        return True
    squeezed = _letters_and_digits(prediction)
    return bool(squeezed) and squeezed == gold.letters


def _gaia_item_matches(prediction: str, gold: _GaiaText) -> bool:
    if gold.number is not None:
        return _gaia_number_score(_gaia_number(prediction), gold.number, soft=False) == 1.0
    return _gaia_string_matches(prediction, gold)


_GAIA_ITEM_SEPARATORS = re.compile(r"[,\n]")


def _gaia_list_score(prediction: str, gold_items: Sequence[_GaiaText]) -> float:
    said = [item.strip() for item in _GAIA_ITEM_SEPARATORS.split(prediction) if item.strip()]
    if len(said) != len(gold_items):
        return 0.0
    free = list(range(len(said)))
    for wanted in gold_items:
        taken = next((i for i in free if _gaia_item_matches(said[i], wanted)), None)
        if taken is None:
            return 0.0
        free.remove(taken)
    return 1.0


def _gaia_pair(prediction: str | None, gold: str | None) -> tuple[float, float]:
    """Upstream's score of one answer, and its soft score (numbers within 1% count 0.5)."""
    said = (prediction or "").strip()
    kind, wanted = _gaia_gold(gold or "")
    if kind == "empty":
        score = 1.0 if not said else 0.0
        return score, score
    if not said:
        return 0.0, 0.0
    if kind == "list":
        score = _gaia_list_score(said, wanted)
        return score, score
    if kind == "number":
        number = _gaia_number(said)
        score = _gaia_number_score(number, wanted, soft=False)
        return score, max(score, _gaia_number_score(number, wanted, soft=True))
    score = 1.0 if _gaia_string_matches(said, wanted) else 0.0
    return score, score


def gaia_score(prediction: str | None, gold: str | None) -> UpstreamGrade:
    """Upstream's GAIA grade of one answer (see the module docstring)."""
    score, soft = _gaia_pair(prediction, gold)
    return UpstreamGrade(score=score, correct=score == 1.0, score_soft=soft)


def _gaia_metrics(items: Sequence[Graded]) -> dict[str, Any]:
    return {
        "accuracy": mean([i.grade.score for i in items]),
        "accuracy_soft": mean(
            [i.grade.score if i.grade.score_soft is None else i.grade.score_soft for i in items]
        ),
    }


UPSTREAM_LAYOUT = UpstreamLayout("level", "by_level", "?", _gaia_metrics, True)
