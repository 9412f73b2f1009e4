"""Tests for the AssistantBench scorer re-implementation.

Expected values come from reading the official evaluator (AssistantBench leaderboard
``evaluation/``, as copied into ServiceNow/BrowserGym ``browsergym/assistantbench/.../
evaluation/``) and computing by hand; the first table is the upstream regression data
``tests/assistantbench/data/fallback_gpt4_seeplanact_predictions.jsonl`` from BrowserGym,
which records the official ``(score, has_ans)`` for real predictions.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agent_benchmarks.assistantbench.official_scorer import AssistantBenchScore, evaluate


def _as_text(answer: Any) -> str:
    # The upstream file stores some answers as JSON values; the official scorer runs
    # json.loads on a string prediction first, so json.dumps(x) is scored exactly like x.
    return answer if isinstance(answer, str) else json.dumps(answer)


# (answer, gold, official score, official has_ans) from BrowserGym's regression data.
UPSTREAM_VECTORS: list[tuple[Any, str, float, float]] = [
    (r"\( \frac{2}{7} \times 100 \approx 28.57 \)", "14.2", 0, 1.0),
    (800000.0, "1010000", 0.7669061178326222, 1.0),
    ([], "Adrenalinpark K\u00f6ln", 0.0, 0),
    ("Knives Out", "Glass Onion: A Knives Out Mystery", 0.5714285714285715, 1.0),
    ("-$108", "45", 0, 1.0),
    (
        [{"sender": "dhl", "price (usd)": "50"}, {"sender": "fedex", "price (usd)": "60"}],
        '{"sender": "DHL", "price (usd)": "55-70"}\n{"sender": "Fedex", "price (usd)": "62-95"}\n'
        '{"sender": "USPS", "price (usd)": "73.4-78.15"}',
        0.3333333333333333,
        1.0,
    ),
    ("oshrat binyamin", "Shiran Nawi, Yoni Osherov, Daniel Lereya", 0.0, 1.0),
    ("vgt", "VGT", 1.0, 1.0),
    ("Oko, Thief of Crowns", "Oko, Thief of Crowns", 1.0, 1.0),
    ("", "1148 sqft", 0.0, 0.0),
    (
        ['\'{"sender": "usps", "price (usd)": 25}\''],
        '{"sender": "USPS", "price (usd)": "41.75"}',
        0,
        1.0,
    ),
    ("Wolly Mammoth", "For Pete's Sake", 0.0, 1.0),
    ("Nosferatu the Vampyre", "Nosferatu the Vampyre", 1.0, 1.0),
    (
        ["anytime fitness", "point pleasant wellness center"],
        "The Root Sports & Fitness Center\nMuscle Headz Gym",
        0.16666666666666666,
        1.0,
    ),
    (250.0, "395", 0.5425751529611245, 1.0),
    ("", "McDonald's", 0.0, 0.0),
    (16.67, "31.67", 0.3582408362121543, 1.0),
    ("wall street boxing & fitness", "Renzo Gracie Jiu-Jitsu Wall Street", 0.4, 1.0),
    (40.0, "30", 0.7123179275482192, 1.0),
    ("lower yosemite fall trail", "Yosemite Falls\nBridalveil Fall", 0.16666666666666666, 1.0),
    (2140000.0, "3080000", 0.635876232048277, 1.0),
    (["trader joe's", "whole foods market", "aldi"], "Potash Markets - Clark Street", 0.0, 1.0),
    (95.0, "$55", 0.4534562936319301, 1.0),
    ("monica c. lozano", "Wanda Austin\nRonald D. Sugar\nSue Wagner", 0.0, 1.0),
    (
        "fidelity emerging asia fund (fseax)",
        "Fidelity\u00ae Emerging Markets Index Fund (FPADX)",
        0.3636363636363636,
        1.0,
    ),
    (
        "crunch fitness - east village",
        "CrossFit East River\nAvea Pilates",
        0.14285714285714288,
        1.0,
    ),
    (
        ["uncle tom's trail", "mount washburn", "fairy falls"],
        "Trout lake trail\nArtist Point\nFountain Paint Pot\nLone Star Geyser\nStorm Point Trail",
        0.06666666666666667,
        1.0,
    ),
    (["red bamboo", "quantum leap"], "Shanghai villa", 0.0, 1.0),
]


@pytest.mark.parametrize(("answer", "gold", "score", "has_ans"), UPSTREAM_VECTORS)
def test_matches_upstream_regression_data(
    answer: Any, gold: str, score: float, has_ans: float
) -> None:
    result = evaluate(_as_text(answer), gold)
    assert result.score == score  # exact, not approximate: same arithmetic as upstream
    assert result.answered is bool(has_ans)
    assert result.error is None
    assert result.exact_match is (score == 1.0)


def test_result_type() -> None:
    result = evaluate("vgt", "VGT")
    assert result == AssistantBenchScore(
        score=1.0, exact_match=True, answered=True, gold_type="string", error=None
    )


# --------------------------------------------------------------------------- gold type


@pytest.mark.parametrize(
    ("gold", "gold_type"),
    [
        ("45", "number"),
        ("$55", "number"),  # "$" removed
        ("12%", "number"),
        ("1148 sqft", "number"),  # "sqft" removed
        ("10 square kilometers", "number"),
        ("1,000", "number"),  # "," becomes "." -> 1.0
        ("VGT", "string"),
        ("Glass Onion: A Knives Out Mystery", "string"),
        ("Shiran Nawi, Yoni Osherov", "string"),  # commas do not make a list; lines do
        ("Yosemite Falls\nBridalveil Fall", "string list"),
        ("Yosemite Falls\n\n  \nBridalveil Fall", "string list"),  # blank lines dropped
        ('{"sender": "USPS", "price (usd)": "41.75"}', "json"),
        ("{'name': 'Bob', 'age': 5}", "json"),  # single quotes repaired by fix_ans
        ('{"a": 1}\n{"a": 2}', "json"),
        ("1\n2", "json"),  # every line parses as JSON
        ("true", "json"),
        ("", "json"),  # no lines: the multi-line JSON branch with zero lines
    ],
)
def test_gold_type(gold: str, gold_type: str) -> None:
    assert evaluate("x", gold).gold_type == gold_type


# --------------------------------------------------------------------------- numbers


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("30", "30", 1.0),
        ("30.0", "30", 1.0),
        ("40", "30", 1 - math.log(40 / 30)),  # 0.7123...
        ("20", "30", 1 - math.log(30 / 20)),  # symmetric ratio: larger / smaller
        ("10", "5", 1 - math.log(2)),  # 0.3068...
        ("14", "5", 0.0),  # ln(2.8) > 1 -> clipped at 0
        ("$5", "5", 1.0),  # "$" stripped
        ("5%", "5", 1.0),
        ("1148 sqft", "1148", 1.0),
        ("1,5", "1.5", 1.0),  # official comma handling: "," -> "."
        ("1,000", "1000", 0.0),  # quirk: "1,000" is read as 1.0, ratio 1000
        ("1", "1,000", 1.0),  # quirk: gold "1,000" is 1.0 too
        ("1e3", "1000", 1.0),  # json.loads("1e3") -> 1000.0
        ("01", "1", 1.0),  # not JSON, but float("01") works
        ('"5"', "5", 1.0),  # JSON string "5" -> fix_number -> 5.0
        ("0", "0", 1.0),  # both zero -> 1
        ("0", "5", 0.0),  # zero replaced by 1e-4
        ("1e-4", "0", 1.0),  # quirk: zero gold becomes 1e-4, which this equals
        ("-5", "5", 0.0),  # log of a negative ratio is nan; max(0, nan) == 0
        ("-5", "-5", 1.0),
        ("5 km", "5", 0.0),  # not convertible -> evaluate_numbers gives 0
        ("about 5", "5", 0.0),
        ("[5, 6]", "5", 0.0),  # list of >1 items against a number: not evaluated
    ],
)
def test_numbers(prediction: str, gold: str, expected: float) -> None:
    result = evaluate(prediction, gold)
    assert result.gold_type == "number"
    assert result.score == pytest.approx(expected, abs=1e-12)
    assert result.error is None
    assert result.answered is True
    assert result.exact_match is (expected == 1.0)


def test_number_scores_use_natural_log_exactly() -> None:
    assert evaluate("800000", "1010000").score == 0.7669061178326222
    assert evaluate("25", "41.75").score == pytest.approx(0.48717637357133625, abs=1e-15)


def test_nan_prediction_counts_as_unanswered() -> None:
    # json.loads("NaN") -> nan; find_isnan -> has_ans 0; distance(nan, 5) -> max(0, nan) = 0.
    result = evaluate("NaN", "5")
    assert (result.score, result.answered, result.error) == (0.0, False, None)


def test_whitespace_prediction_counts_as_answered() -> None:
    # "  " has length 2, so the official has_ans is 1, and it scores 0.
    result = evaluate("  ", "5")
    assert (result.score, result.answered, result.error) == (0.0, True, None)


def test_two_negative_numbers_leave_unit_interval() -> None:
    # Official: pred > gold -> 1 - ln(-5 / -10) = 1 + ln 2 = 1.693..., outside [0, 1].
    result = evaluate("-5", "-10")
    assert result.score == 0.0
    assert result.exact_match is False
    assert result.answered is True
    assert result.error is not None and "1.69" in result.error


def test_negative_infinity_leaves_unit_interval() -> None:
    # Official: gold / pred = 5 / -inf = -0.0, ln -> -inf, 1 - (-inf) = inf.
    result = evaluate("-Infinity", "5")
    assert result.score == 0.0
    assert result.error is not None and "inf" in result.error


# --------------------------------------------------------------------------- strings


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("Knives Out", "Glass Onion: A Knives Out Mystery", 2 * 1 * 0.4 / 1.4),  # p=1, r=2/5
        ("the VGT", "VGT", 1.0),  # articles removed (unlike GAIA)
        ("VGT!", "vgt", 1.0),  # punctuation removed
        ("Jiu-Jitsu", "jiu jitsu", 1.0),  # "-" splits tokens
        ("jitsu jiu", "Jiu-Jitsu", 1.0),  # bag of words: order ignored
        ("wall street boxing & fitness", "Renzo Gracie Jiu-Jitsu Wall Street", 0.4),
        ("red", "red blue", 2 * 1 * 0.5 / 1.5),  # p=1, r=1/2
        ("red blue green", "red blue", 2 * (2 / 3) * 1 / (2 / 3 + 1)),  # p=2/3, r=1 -> 0.8
        ("3 little pigs", "the 3 little pigs", 1.0),
        ("three little pigs", "the 3 little pigs", 0.0),  # number gate: gold has 3, pred none
        ("4 little pigs", "3 little pigs", 0.0),  # number gate: no shared number
        ("3.0 little pigs", "3 little pigs", 1.0),  # numbers canonicalised via str(float())
        ("1,000 people", "1000 people", 1.0),  # "1,000" -> "1000" -> "1000.0"
        ("1 red", "red", 2 * 0.5 * 1 / 1.5),  # gate only applies to numbers in the gold
        ("5", "5 stars", 2 * 1 * 0.5 / 1.5),  # 5 -> 5.0 -> "5.0" matches gold "5" -> "5.0"
        ("!!!", "red", 0.0),  # empty bag: precision 1, recall 0
        ("Fidelity\u00ae Fund", "Fidelity Fund", 2 * 0.5 * 0.5 / 1.0),  # "\u00ae" is kept
    ],
)
def test_strings(prediction: str, gold: str, expected: float) -> None:
    result = evaluate(prediction, gold)
    assert result.gold_type == "string"
    assert result.score == pytest.approx(expected, abs=1e-12)
    assert result.error is None
    assert result.exact_match is (result.score == 1.0)


def test_single_item_numeric_list_quirk_against_string_gold() -> None:
    # Official fix_prediction turns [5] into the tuple (5.0, True); evaluate_strings then
    # scores str((5.0, True)) == "(5.0, True)" -> bag {"50.0", "true"}; the number gate fails.
    assert evaluate("[5]", "5 stars").score == 0.0
    assert evaluate("5", "5 stars").score == pytest.approx(2 / 3)


def test_list_prediction_against_single_string_gold() -> None:
    # One gold bag, two predicted bags: the best match is averaged over max(1, 2) = 2.
    result = evaluate('["VGT", "other"]', "VGT")
    assert result.score == 0.5
    # A list holding non-strings makes evaluate_strings fail internally -> 0.0, no raise.
    assert evaluate('[{"a": 1}]', "VGT").score == 0.0


# --------------------------------------------------------------------------- string lists


GOLD_FALLS = "Yosemite Falls\nBridalveil Fall"


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ('["Yosemite Falls", "Bridalveil Fall"]', 1.0),
        ('["bridalveil fall", "yosemite falls"]', 1.0),  # Hungarian alignment, any order
        ('["Yosemite Falls"]', 0.5),  # missing item scores 0 in the average
        ('["Yosemite Falls", "Bridalveil Fall", "Half Dome"]', 2 / 3),  # extra item too
        ("lower yosemite fall trail", 1 / 6),  # one span, best pair F1 1/3, over 2
        # A newline-separated string is NOT split: it is one span/bag of 4 words; each gold
        # pair has F1 2/3, only one can be assigned -> (2/3) / 2.
        ("Yosemite Falls\nBridalveil Fall", 1 / 3),
        ("[]", 0.0),
    ],
)
def test_string_lists(prediction: str, expected: float) -> None:
    result = evaluate(prediction, GOLD_FALLS)
    assert result.gold_type == "string list"
    assert result.score == pytest.approx(expected, abs=1e-12)
    assert result.error is None


def test_string_list_uses_optimal_not_greedy_alignment() -> None:
    # gold bags {red, blue}, {red}; predicted {red}, {red, blue, green}.
    # F1 matrix: [[2/3, 0.8], [1, 0.5]]; optimum 0.8 + 1 = 1.8 -> 1.8 / 2 = 0.9.
    result = evaluate('["red", "red blue green"]', "red blue\nred")
    assert result.score == pytest.approx(0.9, abs=1e-12)


# --------------------------------------------------------------------------- json / dicts

GOLD_ONE = '{"sender": "DHL", "price (usd)": "55-70"}'
GOLD_TWO = (
    '{"sender": "DHL", "price (usd)": "55-70"}\n{"sender": "USPS", "price (usd)": "73.4-78.15"}'
)


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        (GOLD_ONE, GOLD_ONE, 1.0),
        ('{"sender": "dhl", "price (usd)": "55-70"}', GOLD_ONE, 1.0),  # values via string F1
        # missing key: recall (1 + 0) / 2, precision 1/1 -> F1 2/3
        ('{"sender": "DHL"}', GOLD_ONE, 2 / 3),
        # extra key: recall 1, precision 2/3 -> F1 0.8
        ('{"sender": "DHL", "price (usd)": "55-70", "note": "x"}', GOLD_ONE, 0.8),
        # "60" -> 60.0 (float) vs gold "55-70" (str): type mismatch scores 0 for that key
        ('{"sender": "DHL", "price (usd)": "60"}', GOLD_ONE, 0.5),
        ('{"Sender": "DHL", "Price (USD)": "55-70"}', GOLD_ONE, 0.0),  # keys are exact
        # one object per line, aligned with the Hungarian algorithm; each pair F1 2/3
        ('{"sender": "DHL"}\n{"sender": "USPS"}', GOLD_TWO, 2 / 3),
        # a JSON list of objects works too, in any order
        (
            '[{"sender": "USPS", "price (usd)": "73.4-78.15"}, '
            '{"sender": "DHL", "price (usd)": "55-70"}]',
            GOLD_TWO,
            1.0,
        ),
        # a blank line between objects breaks the per-line json.loads -> [string] -> 0
        ('{"sender": "DHL"}\n\n{"sender": "USPS"}', GOLD_TWO, 0.0),
        ("DHL", GOLD_ONE, 0.0),  # plain text against a JSON gold -> 0
        ('["DHL", "USPS"]', GOLD_TWO, 0.0),  # list of strings: first item is not a dict
        ("5", GOLD_ONE, 0.0),
        # numeric values: gold "41.75" is converted to 41.75; 25 vs 41.75 by log distance,
        # sender 1 -> recall = precision = (1 + (1 - ln(41.75/25))) / 2
        (
            '{"sender": "usps", "price (usd)": 25}',
            '{"sender": "USPS", "price (usd)": "41.75"}',
            (1 + 1 - math.log(41.75 / 25)) / 2,
        ),
        # fix_ans repairs single quotes in the gold only, not in the prediction
        ('{"name": "bob", "age": 5.0}', "{'name': 'Bob', 'age': 5}", 1.0),
        ("{'name': 'Bob', 'age': 5}", "{'name': 'Bob', 'age': 5}", 0.0),
    ],
)
def test_json(prediction: str, gold: str, expected: float) -> None:
    result = evaluate(prediction, gold)
    assert result.gold_type == "json"
    assert result.score == pytest.approx(expected, abs=1e-12)
    assert result.error is None
    assert result.answered is True


# --------------------------------------------------------------------------- no answer


@pytest.mark.parametrize(
    "gold", ["45", "VGT", GOLD_FALLS, GOLD_ONE], ids=["number", "string", "list", "json"]
)
@pytest.mark.parametrize("prediction", ["", "[]", '[""]', '["", ""]'])
def test_empty_predictions_are_unanswered(prediction: str, gold: str) -> None:
    result = evaluate(prediction, gold)
    assert result.score == 0.0
    assert result.answered is False
    assert result.exact_match is False
    if prediction == '[""]' and gold == "45":
        # Official: has_ans is 0, but the one-item list is still evaluated and
        # evaluate_numbers calls float([""]) -> TypeError.
        assert result.error is not None and "TypeError" in result.error
    else:
        assert result.error is None


def test_empty_object_is_unanswered_for_non_json_gold() -> None:
    # {} has length 0: fix_prediction returns run_eval False, has_ans 0.
    result = evaluate("{}", "VGT")
    assert (result.score, result.answered, result.error) == (0.0, False, None)


# --------------------------------------------------------------------------- official raises


@pytest.mark.parametrize(
    ("prediction", "gold", "answered"),
    [
        (None, "45", False),  # len(None) in has_ans
        (None, "VGT", False),
        (None, GOLD_ONE, False),  # wrapped to [None], then len(None)
        ("null", "VGT", False),  # json.loads -> None
        ("[null]", "VGT", False),
        ("true", "VGT", True),  # len(True)
        ("[true]", "45", True),
        ("[5]", "45", True),  # [5] -> tuple (5.0, True); float(tuple) is a TypeError
        ('["5"]', "45", True),  # "5".isnumeric() -> same tuple path
        ('["5.5"]', "45", True),  # one-item list stays a list; float(list) TypeError
        ('["\u00bd"]', "45", True),  # "\u00bd".isnumeric() but float() fails -> tuple
        ('{"a": 1}', "45", True),  # float(dict)
        ("{}", GOLD_ONE, False),  # empty object: empty per-key average is nan
        ('[{"sender": "DHL"}, "x"]', GOLD_ONE, True),  # "x".get(...)
        ('{"a": null}', '{"a": null}', True),  # no metric for a null gold value
        ('{"a": 1}', '{"a": null}', True),
        ('{"a": 1}', "1\n2", True),  # JSON gold lines that are not objects
    ],
)
def test_official_raise_scores_zero_with_reason(
    prediction: str | None, gold: str, answered: bool
) -> None:
    result = evaluate(prediction, gold)
    assert result.score == 0.0
    assert result.exact_match is False
    assert result.answered is answered
    assert isinstance(result.error, str) and result.error


def test_errors_do_not_leak_between_rows() -> None:
    rows = [("[5]", "45"), ("45", "45"), (None, "VGT"), ("vgt", "VGT")]
    results = [evaluate(p, g) for p, g in rows]
    assert [r.score for r in results] == [0.0, 1.0, 0.0, 1.0]
    assert [r.error is None for r in results] == [False, True, False, True]


def test_no_output(capsys: pytest.CaptureFixture[str]) -> None:
    evaluate("-5", "5")  # log of a negative ratio: upstream emits a numpy RuntimeWarning
    evaluate("{}", GOLD_ONE)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
