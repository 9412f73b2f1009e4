"""Upstream's answer matching and its scores.json summary: the upstream-comparable view.

lightpanda-io/agent-benchmarks grades GAIA and AssistantBench with its own lenient
matching (its ``gaia/grade.py`` and ``assistantbench/grade.py``), not with the benchmarks'
official scorers, and summarises over the rows of its predictions file. This module
reproduces that behaviour, written from what its code does, so a run here can be set beside
a number upstream published. It never replaces the official scorers (``gaia.py``,
``assistantbench.py``): scores.json keeps them as the headline and carries this view apart,
labelled, as ``upstream_view``.

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

WebBench has no matching upstream (an LLM judge decides), so its view takes the official
judge's verdicts as they are.

The summary (:func:`upstream_view`) has upstream's keys and meanings: ``n_tasks`` is the
rows in the file (for a run resumed here, the final row of each attempt: upstream never
wrote two rows for one task), tasks without a row are not counted, ``timeouts`` counts
timed-out rows, ``n_answered`` rows with a non-blank prediction whatever their status,
``avg_duration_s`` and the usage averages are over the rows. Every row is graded on what it
printed, failed attempts too, as upstream does. An attempt that failed without printing
anything scores 0 here as in the official view (upstream would give 1 only if the gold were
empty too, which no GAIA or AssistantBench gold is).
"""

from __future__ import annotations

import functools
import json
import math
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from agent_benchmarks.records import INFRA_STATUSES, TaskScore

__all__ = [
    "UPSTREAM_LABEL",
    "UpstreamGrade",
    "assistantbench_score",
    "gaia_score",
    "has_upstream_view",
    "upstream_view",
]

UPSTREAM_LABEL = "upstream-comparable view"
UPSTREAM_NOTE = (
    "lightpanda-io/agent-benchmarks' own lenient matching and summary, reimplemented: not the "
    "official scorer (the official scores are the headline of this file); the denominator is "
    "the rows in the file, so selected tasks without a row are not counted"
)

_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)
_CURRENCY_SIGNS = "$€£¥"
_ARTICLES = frozenset({"a", "an", "the"})


@dataclass(frozen=True, slots=True)
class UpstreamGrade:
    """One attempt as upstream's grader scores it."""

    score: float
    correct: bool
    # GAIA only: the score with numbers within 1% counted 0.5 (upstream's accuracy_soft).
    score_soft: float | None = None


# --- GAIA ---------------------------------------------------------------------------------------


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


# --- AssistantBench -------------------------------------------------------------------------------

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


# --- the summary ----------------------------------------------------------------------------------


class _Graded(NamedTuple):
    entry: TaskScore  # the official entry: status, group fields, duration, usage, details
    grade: UpstreamGrade


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _gaia_metrics(items: Sequence[_Graded]) -> dict[str, Any]:
    return {
        "accuracy": _mean([i.grade.score for i in items]),
        "accuracy_soft": _mean(
            [i.grade.score if i.grade.score_soft is None else i.grade.score_soft for i in items]
        ),
    }


def _assistantbench_metrics(items: Sequence[_Graded]) -> dict[str, Any]:
    return {
        "accuracy_soft": _mean([i.grade.score for i in items]),
        "accuracy_strict": _mean([1.0 if i.grade.correct else 0.0 for i in items]),
    }


# The official WebBench grader's verdicts that upstream's judge would count as invalid: a
# reply it cannot read, and (upstream retries nothing) a judge call that failed.
_INVALID_VERDICTS = frozenset({"INVALID", "judge_error"})


def _webbench_metrics(items: Sequence[_Graded]) -> dict[str, Any]:
    yes = sum(1 for i in items if i.grade.correct)
    invalid = sum(1 for i in items if i.entry.details.get("verdict") in _INVALID_VERDICTS)
    return {
        "accuracy": yes / len(items) if items else 0.0,
        "yes": yes,
        # Upstream judges every row, an empty answer included, and such a row is a no.
        "no": len(items) - yes - invalid,
        "invalid": invalid,
    }


@dataclass(frozen=True)
class _Layout:
    """How upstream's scores.json of one suite is laid out."""

    group_field: str  # our field the breakdown is by
    group_key: str  # upstream's name for the breakdown
    no_group: str  # upstream's group name for a row without the field
    metrics: Callable[[Sequence[_Graded]], dict[str, Any]]
    has_usage: bool  # upstream's WebBench summary has no usage averages


_LAYOUTS: dict[str, _Layout] = {
    "gaia": _Layout("level", "by_level", "?", _gaia_metrics, True),
    "assistantbench": _Layout(
        "difficulty", "by_difficulty", "unknown", _assistantbench_metrics, True
    ),
    "webbench": _Layout("web_name", "by_site", "?", _webbench_metrics, False),
}


def has_upstream_view(suite: str) -> bool:
    """Upstream's harness has this suite (localweb is this project's own)."""
    return suite in _LAYOUTS


def _has_usage(entry: TaskScore) -> bool:
    usage = entry.usage
    return usage.turns > 0 or usage.total_tokens > 0 or usage.cost_usd is not None


def _usage_averages(entries: Sequence[TaskScore]) -> dict[str, Any]:
    """Upstream's usage keys, over the rows that recorded usage (its ``n_with_usage``).
    Its ``avg_final_turn_input_tokens`` is left out: no runner here records that figure."""
    with_usage = [e.usage for e in entries if _has_usage(e)]
    if not with_usage:
        return {"n_with_usage": 0}
    costs = [u.cost_usd for u in with_usage if u.cost_usd is not None]
    return {
        "n_with_usage": len(with_usage),
        "avg_input_tokens": _mean([u.input_tokens for u in with_usage]),
        "avg_cache_read_input_tokens": _mean([u.cache_read_tokens for u in with_usage]),
        "avg_cache_creation_input_tokens": _mean([u.cache_write_tokens for u in with_usage]),
        "avg_output_tokens": _mean([u.output_tokens for u in with_usage]),
        "avg_num_turns": _mean([u.turns for u in with_usage]),
        "avg_total_cost_usd": _mean(costs) if costs else None,
        "total_cost_usd": sum(costs) if costs else None,
    }


def upstream_view(
    suite: str, graded: Sequence[tuple[TaskScore, UpstreamGrade]]
) -> dict[str, Any] | None:
    """scores.json's ``upstream_view`` from every final row's official entry and upstream
    grade (no entries for tasks without a row); None for a suite upstream does not have."""
    layout = _LAYOUTS.get(suite)
    if layout is None:
        return None
    field = layout.group_field
    items: list[_Graded] = []
    groups: dict[str, list[_Graded]] = {}
    failed: list[_Graded] = []
    per_task = []
    n_answered = timeouts = 0
    # One pass: this runs once per attempt of a run, a hundred thousand times for a big one.
    for entry, grade in graded:
        item = _Graded(entry, grade)
        items.append(item)
        values = entry.__dict__
        group = values[field]
        groups.setdefault(str(group) if group else layout.no_group, []).append(item)
        status = values["status"]
        answered = bool((values["prediction"] or "").strip())
        n_answered += answered
        timeouts += status == "timeout"
        if answered and status in INFRA_STATUSES:
            failed.append(item)
        line: dict[str, Any] = {
            "id": values["id"],
            "attempt": values["attempt"],
            field: group,
            "score": grade.score,
        }
        if grade.score_soft is not None:
            line["score_soft"] = grade.score_soft
        line["correct"] = grade.correct
        line["status"] = status
        line["timed_out"] = status == "timeout"
        line["duration_s"] = values["duration_s"]
        per_task.append(line)
    return {
        "label": UPSTREAM_LABEL,
        "note": UPSTREAM_NOTE,
        "n_tasks": len(items),
        "n_answered": n_answered,
        "timeouts": timeouts,
        **layout.metrics(items),
        layout.group_key: {
            name: {"n": len(members), **layout.metrics(members)}
            for name, members in sorted(groups.items())
        },
        "avg_duration_s": _mean([i.entry.duration_s for i in items]),
        **(_usage_averages([i.entry for i in items]) if layout.has_usage else {}),
        "failed_with_answer": {
            "n": len(failed),
            "n_correct": sum(1 for i in failed if i.grade.correct),
            "ids": [i.entry.id for i in failed],
        },
        "per_task": per_task,
    }
