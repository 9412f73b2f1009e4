"""Tests for the GAIA scorer re-implementation.

Expected values are derived by reading the official ``question_scorer`` (GAIA leaderboard
``scorer.py``): number branch when the gold parses with ``float()``, list branch when the
gold contains ``,``/``;``, string branch otherwise.
"""

from __future__ import annotations

import pytest

from agent_benchmarks.gaia.official_scorer import question_scorer

# --- number branch: gold parses as float; only "$", "%" and "," are removed from the answer


@pytest.mark.parametrize(
    ("answer", "gold", "expected"),
    [
        ("17", "17", True),
        ("17.0", "17", True),
        ("  17 ", "17", True),  # float() tolerates surrounding whitespace
        ("$1,000", "1000", True),  # "$" and "," removed
        ("1,000", "1000", True),
        ("10%", "10", True),
        ("1e3", "1000", True),  # float() syntax on both sides
        ("1_000", "1000", True),  # Python float() accepts digit underscores
        ("-$5", "-5", True),
        ("0.1", "0.10", True),
        ("17 years", "17", False),  # units other than $/% make it unparseable -> inf
        ("seventeen", "17", False),
        ("17.01", "17", False),
        ("1.000", "1000", False),  # the dot is a decimal point, not a separator
        ("€5", "5", False),  # only "$" is stripped
        ("", "0", False),
        (None, "0", False),  # None becomes "None" -> unparseable
    ],
)
def test_number_branch(answer: str | None, gold: str, expected: bool) -> None:
    assert question_scorer(answer, gold) is expected


def test_number_branch_unparseable_answer_becomes_infinity() -> None:
    # Official normalize_number_str returns float("inf") on failure, so a gold of "inf"
    # is matched by any unparseable answer.
    assert question_scorer("no idea", "inf") is True
    assert question_scorer("no idea", "17") is False


def test_number_branch_nan_gold_never_matches() -> None:
    # float("nan") != float("nan")
    assert question_scorer("nan", "nan") is False


def test_number_gold_with_comma_is_not_a_number() -> None:
    # "1,000" does not parse with float(), so the gold goes to the list branch:
    # ["1", "000"] vs the answer split on ","; "1000" has one element -> length mismatch.
    assert question_scorer("1000", "1,000") is False
    # Element-wise: "1"=="1" as numbers, "000" -> 0.0 == 0.0.
    assert question_scorer("1,000", "1,000") is True
    assert question_scorer("1, 0", "1,000") is True


# --- list branch: gold contains "," or ";"


@pytest.mark.parametrize(
    ("answer", "gold", "expected"),
    [
        ("apple, banana, cherry", "apple, banana, cherry", True),
        ("Apple,Banana,Cherry", "apple, banana, cherry", True),  # whitespace + case ignored
        ("apple; banana; cherry", "apple, banana, cherry", True),  # "," and ";" interchangeable
        ("banana, apple, cherry", "apple, banana, cherry", False),  # order matters
        ("apple, banana", "apple, banana, cherry", False),  # length mismatch -> False
        ("apple, banana, cherry, date", "apple, banana, cherry", False),
        ("apple, banana, cherry,", "apple, banana, cherry", False),  # trailing comma = 4 parts
        ("sea gull, crab", "seagull, crab", True),  # whitespace removed inside elements
        ("apple., banana", "apple, banana", False),  # punctuation is kept in list elements
        ("St. Louis, Paris", "St. Louis, Paris", True),
        ("St Louis, Paris", "St. Louis, Paris", False),
        ("1, 2, 3", "1, 2, 3", True),
        ("1.0, $2, 3%", "1, 2, 3", True),  # numeric gold elements compared as numbers
        ("1, two, 3", "1, 2, 3", False),
        ("1, b, 3.5", "1, b, 3.5", True),  # mixed numeric and text elements
        ("1,b,3.50", "1, B, 3.5", True),
        ("1, b", "1; b", True),
        ("", "a, b", False),
    ],
)
def test_list_branch(answer: str, gold: str, expected: bool) -> None:
    assert question_scorer(answer, gold) is expected


def test_list_branch_numeric_element_with_whitespace() -> None:
    # The gold element " 2" still parses as a float (float() strips whitespace).
    assert question_scorer("1,2", "1, 2") is True
    assert question_scorer("1, 2.0", "1, 2") is True


def test_list_branch_none_answer() -> None:
    # None -> "None" -> one element vs two.
    assert question_scorer(None, "a, b") is False
    assert question_scorer(None, "None, x") is False


# --- string branch


@pytest.mark.parametrize(
    ("answer", "gold", "expected"),
    [
        ("Paris", "Paris", True),
        ("paris", "Paris", True),
        ("  PARIS  ", "Paris", True),
        ("sea gull", "seagull", True),  # all whitespace removed
        ("seagull", "sea gull", True),
        ("Paris.", "Paris", True),  # ASCII punctuation removed
        ("St. Louis", "St Louis", True),
        ("O'Brien", "OBrien", True),
        ("right-handed", "right handed", True),  # hyphen dropped, space dropped
        ("The answer", "answer", False),  # no article stripping
        ("a cat", "cat", False),
        ("Paris, France", "Paris France", True),  # gold has no comma -> string branch
        ("Pariss", "Paris", False),
        ("café", "cafe", False),  # no accent folding
        ("Paris\u2019", "Paris", False),  # curly quote is not ASCII punctuation
        ("None", "none", True),
        (None, "None", True),  # a missing answer is the string "None"
        (None, "Paris", False),
        ("", "Paris", False),
        ("", "...", True),  # both normalize to ""
    ],
)
def test_string_branch(answer: str | None, gold: str, expected: bool) -> None:
    assert question_scorer(answer, gold) is expected


def test_string_branch_unicode_whitespace_removed() -> None:
    # re.sub(r"\s", ...) on str removes non-breaking and other Unicode spaces too.
    assert question_scorer("sea\u00a0gull", "seagull") is True
    assert question_scorer("sea\tgull\n", "seagull") is True


def test_numeric_looking_answer_against_string_gold() -> None:
    # Gold "four" is a string: "4" does not match it.
    assert question_scorer("4", "four") is False


def test_non_string_answer_is_stringified() -> None:
    assert question_scorer(17, "17") is True  # type: ignore[arg-type]
    assert question_scorer(17.5, "17.5") is True  # type: ignore[arg-type]
