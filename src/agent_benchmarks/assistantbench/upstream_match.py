"""Upstream's AssistantBench matching, for the upstream-comparable view
(:mod:`agent_benchmarks.scoring.upstream_view`): lightpanda-io/agent-benchmarks' own
``assistantbench/grade.py`` rule, written from what its code does. The official evaluator
(:mod:`.official_scorer`) stays the headline.

AssistantBench (:func:`assistantbench_score`): the gold's shape picks the rule.

- an empty prediction scores 1 against an empty gold, else 0;
- a gold that is a JSON list or object (or several lines each of JSON) is a list or a dict;
  a gold of two or more non-blank lines is a list; a gold from which a number can be read
  and that has at least as many digits as letters is a **number**; anything else a string;
- number: read the prediction's number (commas, a trailing ``%`` or ``$`` removed; if that
  does not parse, the first number in the text, so ``3 miles`` = ``3``); equal (to 1e-9)
  scores 1, else ``max(0, 1 - |p - g| / max(|g|, 1))`` (``50`` against ``100`` = 0.5,
  ``1,000`` = ``1000``);
- string: token F1 after lowercasing and removing ASCII punctuation (no article removal);
- list: the prediction as a JSON list, else its non-blank lines, else itself as one item;
  every pair scored by these same rules, pairs taken greedily from the best score down
  (each item used once, stopping at a score of 0), F1 of the matched total over both
  lengths;
- dict: the prediction as a JSON object (else empty), the mean over the gold's keys of the
  value scores (a key the prediction lacks scores 0, unless the gold's value is blank too).

``correct`` is a score of at least 0.5; ``accuracy_soft`` is the mean score and
``accuracy_strict`` the share correct.
"""

from __future__ import annotations

import functools
import json
import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

from agent_benchmarks.scoring.grades import mean
from agent_benchmarks.scoring.upstream_view import Graded, UpstreamGrade, UpstreamLayout

_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)


_FIRST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _ab_number(text: str) -> float | None:
    """The number in an AssistantBench answer: the whole text once cleaned, else the first
    number written in it."""
    cleaned = text.strip().replace(",", "").rstrip("%").rstrip("$")
    try:
        return float(cleaned)
    except ValueError:
        found = _FIRST_NUMBER.search(cleaned)
        return float(found.group(0)) if found else None


def _ab_json(text: str) -> Any:
    """The text as JSON, or as one JSON value per non-blank line; None when neither."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    if "\n" not in text:
        return None
    values = []
    for line in (ln.strip() for ln in text.splitlines()):
        if not line:
            continue
        try:
            values.append(json.loads(line))
        except ValueError:
            return None
    return values or None


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _ab_kind(gold: Any) -> str:
    if isinstance(gold, list | tuple):
        return "list"
    if isinstance(gold, dict):
        return "dict"
    if isinstance(gold, int | float) and not isinstance(gold, bool):
        return "number"
    if not isinstance(gold, str):
        return "string"
    as_json = _ab_json(gold)
    if isinstance(as_json, list):
        return "list"
    if isinstance(as_json, dict):
        return "dict"
    if len(_lines(gold)) >= 2:
        return "list"
    digits = sum(ch.isdigit() for ch in gold)
    letters = sum(ch.isalpha() for ch in gold)
    if digits and _ab_number(gold) is not None and digits >= letters:
        return "number"
    return "string"


def _ab_as(value: Any, kind: str) -> Any:
    """The value read as the kind the gold decided."""
    if kind == "list":
        if isinstance(value, list):
            return value
        if isinstance(value, str):
            as_json = _ab_json(value)
            return as_json if isinstance(as_json, list) else _lines(value)
        return [value]
    if kind == "dict":
        if isinstance(value, dict):
            return value
        as_json = _ab_json(value) if isinstance(value, str) else None
        return as_json if isinstance(as_json, dict) else {}
    if kind == "number":
        if isinstance(value, int | float):
            return float(value)
        return _ab_number(str(value))
    return "" if value is None else str(value)


def _tokens(text: str) -> list[str]:
    return text.lower().translate(_ASCII_PUNCTUATION).split()


def _f1(matched: float, n_said: int, n_wanted: int) -> float:
    if matched <= 0:
        return 0.0
    precision, recall = matched / n_said, matched / n_wanted
    return 2 * precision * recall / (precision + recall)


@functools.lru_cache(maxsize=4096)
def _gold_tokens(gold: str) -> tuple[Counter[str], int]:
    """A gold answer's token counts and length, counted once per distinct gold."""
    tokens = _tokens(gold)
    return Counter(tokens), len(tokens)


def _ab_token_f1(prediction: str, gold: str) -> float:
    said = _tokens(prediction)
    wanted, n_wanted = _gold_tokens(gold)
    if not said or not n_wanted:
        return 1.0 if not said and not n_wanted else 0.0
    shared = sum(min(n, wanted[token]) for token, n in Counter(said).items() if token in wanted)
    return _f1(shared, len(said), n_wanted)


def _ab_number_score(said: float | None, wanted: float) -> float:
    if said is None:
        return 0.0
    if math.isclose(said, wanted, rel_tol=1e-9, abs_tol=1e-9):
        return 1.0
    return max(0.0, 1.0 - abs(said - wanted) / max(abs(wanted), 1.0))


def _ab_list_score(said: list[Any], wanted: list[Any]) -> float:
    if not wanted:
        return 0.0 if said else 1.0
    if not said:
        return 0.0
    # Every pair, best first; ties stay in prediction-then-gold order (a stable sort).
    pairs = sorted(
        ((_ab_pair(p, g), i, j) for i, p in enumerate(said) for j, g in enumerate(wanted)),
        key=lambda pair: -pair[0],
    )
    used_said: set[int] = set()
    used_wanted: set[int] = set()
    matched = 0.0
    for score, i, j in pairs:
        if score <= 0:
            break
        if i in used_said or j in used_wanted:
            continue
        used_said.add(i)
        used_wanted.add(j)
        matched += score
    return _f1(matched, len(said), len(wanted))


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


@functools.lru_cache(maxsize=4096)
def _ab_gold(gold: str) -> tuple[str, Any]:
    """A gold answer's kind and value, read once per distinct gold; the value is only read."""
    kind = _ab_kind(gold)
    return kind, _ab_as(gold, kind)


def _ab_pair(prediction: Any, gold: Any) -> float:
    if _blank(prediction):
        return 1.0 if _blank(gold) else 0.0
    if isinstance(gold, str):
        kind, wanted = _ab_gold(gold)
    else:
        kind = _ab_kind(gold)
        wanted = _ab_as(gold, kind)
    said = _ab_as(prediction, kind)
    if kind == "number":
        return 0.0 if wanted is None else _ab_number_score(said, wanted)
    if kind == "list":
        return _ab_list_score(said, wanted)
    if kind == "dict":
        if not wanted:
            return 0.0 if said else 1.0
        return sum(_ab_pair(said.get(key), value) for key, value in wanted.items()) / len(wanted)
    return _ab_token_f1(said, wanted)


def assistantbench_score(prediction: str | None, gold: str | None) -> UpstreamGrade:
    """Upstream's AssistantBench grade of one answer (see the module docstring)."""
    score = _ab_pair(prediction, gold)
    return UpstreamGrade(score=score, correct=score >= 0.5)


def _assistantbench_metrics(items: Sequence[Graded]) -> dict[str, Any]:
    return {
        "accuracy_soft": mean([i.grade.score for i in items]),
        "accuracy_strict": mean([1.0 if i.grade.correct else 0.0 for i in items]),
    }


UPSTREAM_LAYOUT = UpstreamLayout(
    "difficulty", "by_difficulty", "unknown", _assistantbench_metrics, True
)
