"""AssistantBench answer scoring, behaving like the official leaderboard evaluator.

Source of truth: the ``evaluation/`` package of the Hugging Face space
``AssistantBench/leaderboard``, as copied by the benchmark's first author into
ServiceNow/BrowserGym ``browsergym/assistantbench/src/browsergym/assistantbench/evaluation/``
(``evaluator.py``, ``evaluate_utils/{evaluate_factory,evaluate_strings,evaluate_numbers,
evaluate_dicts,utils}.py``). This module is an independent rewrite of that code with the same
data flow, including its quirks; it never prints and never raises on a prediction.

How a task is scored (official ``question_scorer(prediction, gold) -> (accuracy, has_ans)``):

* The prediction string is first tried with ``json.loads`` (so ``"5"`` becomes the int 5,
  ``"[...]"`` a list, ``"{...}"`` a dict, ``"null"`` None); if that fails it stays a string.
* The gold decides the type. Its non-blank lines are taken. One line: if it is a number after
  deleting ``$``, ``%`` and ``sqft``, turning ``,`` into ``.`` and deleting
  ``" square kilometers"`` -> ``"number"``; else if it parses as JSON (after a crude
  single-to-double-quote fix) -> ``"json"``; else ``"string"``. Several lines: all JSON ->
  ``"json"``, else ``"string list"``.
* ``number``: ``max(0, 1 - ln(larger / smaller))`` (``pred/gold`` or ``gold/pred``, whichever
  is >= 1 for positive numbers); both zero -> 1; a single zero is replaced by ``1e-4``. String
  predictions get the same ``$``/``%``/``sqft``/comma treatment, so ``"1,000"`` means 1.0 and
  ``"$5"`` means 5.0.
* ``string`` / ``string list``: DROP bag-of-words F1 (lowercase, punctuation and articles
  removed, numbers canonicalised with ``str(float(x))``), where a gold bag containing numbers
  scores 0 against a predicted bag that shares none of them (the "number gate"). Lists are
  aligned one-to-one with the Hungarian algorithm and the summed F1 is divided by the length
  of the longer side.
* ``json``: predictions are one JSON object per line (or a JSON list of objects); objects are
  aligned one-to-one with the Hungarian algorithm; each pair scores the F1 of a per-key recall
  (over gold keys) and precision (over predicted keys), each key scored with the number or
  string metric by the gold value's type (a type mismatch scores 0).

Leaderboard metrics and "no answer": the official scorer also returns ``has_ans``, which is 0
for an empty prediction (``""``, ``[]``, ``{}``, a list of empty strings, NaN) and 1 otherwise
(a whitespace-only string counts as answered). The AssistantBench paper/leaderboard report
*accuracy* (mean score over all tasks, unanswered tasks scoring 0), *answer rate* (mean
``has_ans``), *precision* (mean score over answered tasks only) and *exact match* (share of
tasks answered fully correctly). Here ``answered`` is ``has_ans`` and ``exact_match`` is
``score == 1.0`` -- the official ``question_scorer`` has no separate exact-match output (its
DROP ``get_metrics`` exact match is unused), so this is our reading of the leaderboard, not
code we could read.

Where the official code would raise (``None``/``null``/``true`` predictions, ``[5]`` against
a numeric gold, an empty object against a JSON gold, a list mixing objects and other values,
...) or would return a value outside ``[0, 1]`` (two negative numbers, infinities), this
module gives score 0 and puts the reason in ``error``.
"""

from __future__ import annotations

import functools
import json
import math
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["AssistantBenchScore", "evaluate"]


@dataclass(frozen=True)
class AssistantBenchScore:
    """Result of scoring one AssistantBench task."""

    score: float
    """Official accuracy for the task, in [0, 1] (0 when ``error`` is set)."""
    exact_match: bool
    """``score == 1.0``."""
    answered: bool
    """Official ``has_ans``: False for a missing/empty prediction."""
    gold_type: str
    """``"number"``, ``"string"``, ``"string list"`` or ``"json"``, decided by the gold."""
    error: str | None
    """Why 0 was given where the official code would raise (or leave [0, 1]); else None."""


# --------------------------------------------------------------------------------------
# Number conversion (official evaluator.fix_number and evaluate_dicts.fix_number)
# --------------------------------------------------------------------------------------


def _strip_units(text: str) -> str:
    # Every "$", "%" and "sqft" becomes a space; then trim.
    for token in ("$", "%", "sqft"):
        if token in text:
            text = " ".join(text.split(token))
    return text.strip()


def _coerce_number(value: Any) -> tuple[Any, bool]:
    """Official ``evaluator.fix_number``: returns ``(value, is_number)``.

    Strings: units removed, ``,`` -> ``.``, ``" square kilometers"`` removed, then ``float``.
    Exact ``int`` -> float. Anything else (float, bool, list, dict, None, ...) is returned
    unchanged with ``True`` (sic).
    """
    if type(value) is str:
        text = _strip_units(value).replace(",", ".").replace(" square kilometers", "")
        try:
            return float(text), True
        except ValueError:
            return value, False
    if type(value) is int:
        return float(value), True
    return value, True


def _coerce_dict_value(value: Any) -> Any:
    """Official ``evaluate_dicts.fix_number`` (no ``" square kilometers"`` rule)."""
    if type(value) is str:
        text = _strip_units(value).replace(",", ".")
        try:
            return float(text)
        except ValueError:
            return value
    if type(value) is int:
        return float(value)
    return value


# --------------------------------------------------------------------------------------
# Gold and prediction parsing (official evaluator.py)
# --------------------------------------------------------------------------------------


def _single_to_double_quotes(text: str) -> str:
    """Official ``fix_ans``: crude repair of Python-style dict literals into JSON."""
    text = (
        text.replace("{'", '{"').replace("', '", '", "').replace("': '", '": "').replace("'}", '"}')
    )
    return text.replace("': ", '": ')


def _parse_gold(lines: list[str]) -> tuple[Any, str]:
    """Official ``parse_answer``: the gold value and its evaluator name."""
    if len(lines) == 1:
        value, is_number = _coerce_number(lines[0])
        if is_number:
            return value, "number"
        try:
            return [json.loads(_single_to_double_quotes(lines[0]))], "json"
        except Exception:
            return lines[0], "string"
    try:
        return [json.loads(_single_to_double_quotes(line)) for line in lines], "json"
    except Exception:
        return lines, "string list"


@functools.lru_cache(maxsize=4096)
def _parsed_gold(gold: str) -> tuple[Any, str]:
    """The gold's value and evaluator, parsed once per distinct gold (a run grades every
    task's gold once per attempt). The value is only ever read."""
    return _parse_gold([line for line in gold.split("\n") if len(line.strip()) > 0])


# What a JSON text can start with, after JSON's whitespace (Python's json also reads NaN,
# Infinity and -Infinity). Most answers are prose: json.loads would fail on them, and its
# exception costs more than the rest of their decoding.
_JSON_STARTS = frozenset('"{[-0123456789tfnNI')
_JSON_WHITESPACE = " \t\n\r"


def _decode_prediction(prediction: Any) -> Any:
    """Official first step: ``json.loads`` the prediction, keeping it as-is on failure."""
    if type(prediction) is str and prediction.lstrip(_JSON_WHITESPACE)[:1] not in _JSON_STARTS:
        return prediction
    if isinstance(prediction, str | bytes | bytearray):
        try:
            return json.loads(prediction)
        except Exception:
            return prediction
    return prediction  # json.loads would raise TypeError, which the official code swallows


def _prepare_prediction(prediction: Any, gold: Any, gold_type: str) -> tuple[Any, bool]:
    """Official ``fix_prediction``: returns ``(prediction, run_eval)``."""
    if (
        type(prediction) is list
        and len(prediction) == 1
        and (
            type(prediction[0]) is int or (type(prediction[0]) is str and prediction[0].isnumeric())
        )
    ):
        # Quirk kept: the official code stores the whole (value, is_number) tuple here.
        prediction = _coerce_number(prediction[0])

    if type(prediction) is not list:
        prediction, _ = _coerce_number(prediction)
        if gold_type == "json":
            try:
                prediction = [json.loads(line) for line in prediction.split("\n")]
            except Exception:
                prediction = [prediction]

    if hasattr(type(prediction), "__len__") and len(prediction) == 0:
        return prediction, False
    if type(prediction) is list and len(prediction) > 1 and type(gold) is float:
        return prediction, False
    return prediction, True


def _is_nan(value: Any) -> bool:
    """Official ``find_isnan``: ``np.isnan`` whose failures (and array ambiguity) mean False."""
    kind = type(value)
    if kind is float:
        return value != value  # what np.isnan says of a float, without numpy's call cost
    if kind is str or kind is int or kind is bool:
        return False  # np.isnan refuses a str (TypeError) and says False of any int
    try:
        with np.errstate(all="ignore"):
            return bool(np.isnan(value))
    except Exception:
        return False


def _has_answer(prediction: Any) -> float:
    """Official ``has_ans`` computation; raises where the official code raises."""
    has_ans = 1.0
    if (type(prediction) is not float and len(prediction) == 0) or _is_nan(prediction):
        has_ans = 0.0
    if type(prediction) is list and all(
        (type(item) not in {float, int} and len(item) == 0) or _is_nan(item) for item in prediction
    ):
        has_ans = 0.0
    return has_ans


# --------------------------------------------------------------------------------------
# Numbers (official evaluate_numbers.py)
# --------------------------------------------------------------------------------------


def _log_distance(pred: float, gold: float) -> float:
    """Official ``distance_function_log``."""
    if pred == gold == 0:
        return 1
    if pred == 0:
        pred = 1e-4
    if gold == 0:
        gold = 1e-4
    ratio = pred / gold if pred > gold else gold / pred
    if ratio > 0:  # the common case, which numpy never warns about
        return max(0, 1 - np.log(ratio))
    with np.errstate(all="ignore"):  # log of a negative ratio is nan -> max() gives 0
        return max(0, 1 - np.log(ratio))


def _score_numbers(pred: Any, gold: Any) -> float:
    """Official ``evaluate_numbers``; ``float()`` TypeErrors propagate as in the original."""
    failed = False
    if type(pred) is not float and type(pred) is not int:
        try:
            pred = float(pred)
        except ValueError:
            failed = True
    if type(gold) is not float and type(gold) is not int:
        try:
            gold = float(gold)
        except ValueError:
            failed = True
    if failed:
        return 0
    return _log_distance(pred, gold)


# --------------------------------------------------------------------------------------
# Strings: DROP bag-of-words F1 (official evaluate_strings.py)
# --------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_TOKEN_SPLIT = re.compile(" |-")
_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)


_DECIMAL_DIGIT = re.compile(r"\d")  # what float() reads as a digit: Unicode decimals
_FLOAT_WORDS = frozenset({"nan", "inf", "infinity"})
# Tokens recur from answer to answer (words, units, numbers, and the gold's tokens against
# every prediction's): each distinct one is normalised, and checked for a number, once.
_TOKEN_CACHE = 1 << 16


@functools.lru_cache(maxsize=_TOKEN_CACHE)
def _looks_numeric(text: str) -> bool:
    """Whether ``float()`` accepts ``text``. Most tokens are words: without a digit, only
    a signed or unsigned nan/inf/infinity can be one, and a failed ``float()`` (an
    exception) costs more than the rest of the token's normalisation."""
    if _DECIMAL_DIGIT.search(text) is None:
        word = text.strip().lower()
        if word[:1] in ("+", "-"):
            word = word[1:]
        if word not in _FLOAT_WORDS:
            return False
    try:
        float(text)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=_TOKEN_CACHE)
def _normalize_token(token: str) -> str:
    token = token.lower()
    if not _looks_numeric(token):
        token = token.translate(_DROP_PUNCTUATION)
    if _looks_numeric(token):
        token = str(float(token))
    token = _ARTICLES.sub(" ", token)
    return " ".join(token.split())


def _normalize_span(text: str) -> str:
    parts = [_normalize_token(token) for token in _TOKEN_SPLIT.split(text)]
    return " ".join(part for part in parts if part.strip()).strip()


def _to_bags(answer: Any) -> list[set[str]]:
    spans = answer if isinstance(answer, list | tuple) else [answer]
    return [set(_normalize_span(span).split()) for span in spans]


def _bag_f1(predicted: set[str], gold: set[str]) -> float:
    common = len(gold & predicted)
    precision = common / float(len(predicted)) if predicted else 1.0
    recall = common / float(len(gold)) if gold else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return (2 * precision * recall) / (precision + recall)


def _numbers_agree(gold: set[str], predicted: set[str]) -> bool:
    """The DROP number gate: gold numbers (if any) must share one with the prediction."""
    gold_numbers = {word for word in gold if _looks_numeric(word)}
    predicted_numbers = {word for word in predicted if _looks_numeric(word)}
    return not gold_numbers or bool(gold_numbers & predicted_numbers)


def _best_alignment(
    predicted: Sequence[Any], gold: Sequence[Any], pair_score: Callable[[Any, Any], float]
) -> Sequence[float]:
    """Official ``_align_bags``: one-to-one Hungarian alignment, per-gold best scores.

    The returned scores (a list for one item on each side, else numpy's array) are
    ``max(len(gold), len(predicted))``, so unmatched items on either side count as 0 when
    averaged.
    """
    if len(gold) == 1 and len(predicted) == 1:
        # One item each: the assignment pairs them (NaN and infinities go on to scipy
        # below, which refuses them as the official code does).
        score = float(pair_score(predicted[0], gold[0]))
        if math.isfinite(score):
            return [max(0.0, score)]
    scores = np.zeros([len(gold), len(predicted)])
    for gi, gold_item in enumerate(gold):
        for pi, pred_item in enumerate(predicted):
            scores[gi, pi] = pair_score(pred_item, gold_item)
    if min(scores.shape) == 1 and np.isfinite(scores).all():
        # One item on a side: the assignment takes its best partner. Which of equal bests
        # it takes moves a value within ``best``, which is only ever averaged. (NaN or an
        # infinity goes to scipy, which refuses some of them as the official code does.)
        rows, cols = np.unravel_index([int(np.argmax(scores))], scores.shape)
    else:
        # Imported here: scipy.optimize takes a second to import, and most answers are one
        # item on a side.
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(-scores)
    best = np.zeros([max(len(gold), len(predicted))])
    for row, col in zip(rows, cols, strict=True):
        best[row] = max(best[row], scores[row, col])
    return best


def _gated_f1(pred_bag: set[str], gold_bag: set[str]) -> float:
    return _bag_f1(pred_bag, gold_bag) if _numbers_agree(gold_bag, pred_bag) else 0.0


def _score_strings(pred: Any, gold: Any) -> float:
    """Official ``evaluate_strings``: any internal failure scores 0.0 (as upstream)."""
    if type(pred) is not list and type(pred) is not str:
        pred = str(pred)
    if type(gold) is not list and type(gold) is not str:
        gold = str(gold)
    try:
        pred_bags = _to_bags(pred)
        gold_bags = _gold_bags(gold if type(gold) is str else tuple(gold))
        best = _best_alignment(pred_bags, gold_bags, _gated_f1)
        return _mean_or_nan(best)
    except Exception:
        return 0.0


@functools.lru_cache(maxsize=4096)
def _gold_bags(gold: str | tuple[Any, ...]) -> list[set[str]]:
    """The gold's bags of words, made once per distinct gold; only ever read."""
    return _to_bags(list(gold) if type(gold) is tuple else gold)


# --------------------------------------------------------------------------------------
# JSON objects (official evaluate_dicts.py)
# --------------------------------------------------------------------------------------

_METRIC_BY_GOLD_TYPE: dict[type, Callable[[Any, Any], float]] = {
    str: _score_strings,
    int: _score_numbers,
    float: _score_numbers,
    bool: _score_strings,
    list: _score_strings,
}


def _mean_or_nan(values: Sequence[float]) -> float:
    """``np.average`` as the official code takes it: nan for no values (numpy warns). One or
    two values (most objects' keys, most alignments) are averaged here: numpy's sum of two
    is the same one addition, and its call costs more than the rest of scoring a key."""
    if len(values) == 0:
        return math.nan
    if len(values) == 1:
        return float(values[0])
    if len(values) == 2:
        return float((values[0] + values[1]) / 2)
    return float(np.average(values))


def _key_recall(pred: Any, gold: Any, by_gold_value: bool) -> float:
    """Official ``calc_recall``. ``by_gold_value`` picks whose value type selects the metric."""
    per_key: list[float] = []
    for key, gold_value in gold.items():
        pred_value = pred.get(key)
        gold_value = _coerce_dict_value(gold_value)
        pred_value = _coerce_dict_value(pred_value)
        if key not in pred:
            per_key.append(0)
            continue
        selector = type(gold_value) if by_gold_value else type(pred_value)
        try:
            metric = _METRIC_BY_GOLD_TYPE[selector]
        except KeyError:  # upstream raises KeyError here too
            raise TypeError(
                f"no official metric for a JSON value of type {selector.__name__}"
            ) from None
        if type(pred_value) is not type(gold_value):
            per_key.append(0)
            continue
        per_key.append(metric(pred_value, gold_value))
    return _mean_or_nan(per_key)


def _dict_pair_f1(pred: Any, gold: Any) -> float:
    recall = _key_recall(pred, gold, True)
    precision = _key_recall(gold, pred, False)
    if precision + recall == 0:
        return 0
    return 2 * (precision * recall) / (precision + recall)


def _score_dicts(pred: Any, gold: Any) -> float:
    """Official ``evaluate_dicts``."""
    if not (type(pred) is dict or len(pred) == 0 or (type(pred) is list and type(pred[0]) is dict)):
        return 0
    return _mean_or_nan(_best_alignment(pred, gold, _dict_pair_f1))


_METRIC_BY_GOLD_KIND: dict[str, Callable[[Any, Any], float]] = {
    "string": _score_strings,
    "number": _score_numbers,
    "json": _score_dicts,
    "string list": _score_strings,
}


# --------------------------------------------------------------------------------------
# Public entry point
# --------------------------------------------------------------------------------------


def _looks_unanswered(prediction: Any) -> bool:
    """Fallback for ``answered`` when the official has_ans computation would raise."""
    if prediction is None:
        return True
    if type(prediction) is list:
        return all(item is None for item in prediction)
    return False


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def evaluate(prediction: str | None, gold: str) -> AssistantBenchScore:
    """Score one prediction against its gold answer like the official AssistantBench scorer.

    Never raises because of the prediction: where the official code would raise (or return
    a value outside [0, 1]) the task scores 0 and ``error`` says why. ``answered`` mirrors the
    official ``has_ans`` (False for None, ``""``, ``[]``, ``{}``, NaN, ...).
    """
    gold_value, gold_type = _parsed_gold(gold)

    parsed = _decode_prediction(prediction)
    parsed, run_eval = _prepare_prediction(parsed, gold_value, gold_type)

    def failed(reason: str, answered: bool) -> AssistantBenchScore:
        return AssistantBenchScore(0.0, False, answered, gold_type, reason)

    try:
        answered = _has_answer(parsed) == 1.0
    except Exception as exc:
        return failed(
            f"official scorer raises while checking for an answer in {parsed!r} ({_describe(exc)})",
            not _looks_unanswered(parsed),
        )

    if not run_eval:
        return AssistantBenchScore(0.0, False, answered, gold_type, None)

    try:
        raw = _METRIC_BY_GOLD_KIND[gold_type](parsed, gold_value)
    except Exception as exc:
        return failed(
            f"official {gold_type!r} metric raises on prediction {parsed!r} ({_describe(exc)})",
            answered,
        )

    score = float(raw)
    if not 0.0 <= score <= 1.0:  # also catches nan
        return failed(f"official {gold_type!r} metric returned {score!r}, outside [0, 1]", answered)
    return AssistantBenchScore(score, score == 1.0, answered, gold_type, None)
