"""Upstream's GAIA and AssistantBench matching (gaia/upstream_match.py,
assistantbench/upstream_match.py) and its summary (scoring/upstream_view.py), case by case.

Every case is a (prediction, gold) pair with the score upstream's grader gives it and the
official scorer's result on the same pair, asserted together: the upstream-comparable view
adds a score, it never moves the official one. The cases are SEED-PARITY.md's examples
(``Beatles`` = ``The Beatles``, ``b, a`` = ``a, b``, ``€1.5`` = ``1.5``; ``1,000`` =
``1000``, ``3 miles`` = ``3``, ``50`` against ``100`` = 0.5) and the edge cases found by
reading upstream's ``gaia/grade.py`` and ``assistantbench/grade.py``.
"""

from __future__ import annotations

import pytest

from agent_benchmarks.assistantbench.grade import AssistantBenchGrader
from agent_benchmarks.assistantbench.official_scorer import evaluate
from agent_benchmarks.assistantbench.upstream_match import assistantbench_score
from agent_benchmarks.gaia.grade import GaiaGrader
from agent_benchmarks.gaia.official_scorer import question_scorer
from agent_benchmarks.gaia.upstream_match import gaia_score
from agent_benchmarks.localweb.grade import LocalwebGrader
from agent_benchmarks.records.schema import TaskScore, Usage
from agent_benchmarks.scoring.upstream_view import UPSTREAM_LABEL, UpstreamGrade, upstream_view
from agent_benchmarks.webbench.grade import WebBenchGrader

# prediction, gold, upstream score, upstream soft score, official question_scorer
GAIA_CASES = [
    # SEED-PARITY's examples: articles, list order, currency signs, quotes.
    ("The Beatles", "Beatles", 1.0, 1.0, False),
    ("Ada Lovelace", "The Ada Lovelace", 1.0, 1.0, False),
    ("a cat in the hat", "cat in hat", 1.0, 1.0, False),
    ("b, a", "a, b", 1.0, 1.0, False),
    ("€1.5", "1.5", 1.0, 1.0, False),
    ("£20", "20", 1.0, 1.0, False),
    ('"a", "b"', "a, b", 1.0, 1.0, False),
    # Curly quotes are not ASCII punctuation: the letters-and-digits fallback matches.
    ("\u201cParis\u201d", "Paris", 1.0, 1.0, False),
    # Agreements with the official scorer.
    ("$1,250", "1250", 1.0, 1.0, True),
    ("5%", "5", 1.0, 1.0, True),
    ("New-York", "new york", 1.0, 1.0, True),
    ("None", "None", 1.0, 1.0, True),
    # Within 1% of a numeric gold: wrong, but 0.5 in the soft score; 2% is not close.
    ("1.005", "1", 0.0, 0.5, False),
    ("1.02", "1", 0.0, 0.0, False),
    # No number is dug out of prose.
    ("about 42", "42", 0.0, 0.0, False),
    # Only a leading currency sign goes: a minus sign before it stops the parse (the
    # official scorer deletes every $ and accepts it).
    ("-$5", "-5", 0.0, 0.0, True),
    # Only commas split a gold list: "a; b" is a string, and ";" is punctuation.
    ("a b", "a; b", 1.0, 1.0, False),
    # "1,000" as a gold is a two-item list, so the number without its comma is wrong, and
    # its items may come in any order.
    ("1000", "1,000", 0.0, 0.0, False),
    ("000, 1", "1,000", 1.0, 1.0, False),
    # The prediction's list items may be split by newlines; the counts must agree.
    ("a\nb", "a, b", 1.0, 1.0, False),
    ("a, b, c", "a, b", 0.0, 0.0, False),
    # Empty answers: right only against an empty gold; None is empty (not "None").
    ("", "", 1.0, 1.0, True),
    ("x", "", 0.0, 0.0, False),
    (None, "42", 0.0, 0.0, False),
    ("  ", "None", 0.0, 0.0, False),
]


@pytest.mark.parametrize(("prediction", "gold", "score", "soft", "official"), GAIA_CASES)
def test_gaia_upstream_match_beside_the_official_scorer(
    prediction: str | None, gold: str, score: float, soft: float, official: bool
) -> None:
    assert gaia_score(prediction, gold) == UpstreamGrade(score, score == 1.0, soft)
    assert question_scorer(prediction, gold) is official


# prediction, gold, upstream score, official evaluator score
AB_CASES = [
    # SEED-PARITY's examples.
    ("1,000", "1000", 1.0, 0.0),
    ("3 miles", "3", 1.0, 0.0),
    ("50", "100", 0.5, 1 - 0.6931471805599453),
    # Relative error over max(|gold|, 1): small golds are forgiving.
    ("1", "0.5", 0.5, 1 - 0.6931471805599453),
    ("0.4", "0", 0.6, 0.0),
    # The number is read from the whole text, else the first number written in it.
    ("$5", "5", 1.0, 1.0),
    ("1e3", "1000", 1.0, 1.0),
    ("45%", "45", 1.0, 1.0),
    # A gold is a number only with at least as many digits as letters.
    ("5", "5 km", 2 / 3, 2 / 3),
    ("15", "15 km", 1.0, 2 / 3),
    ("3", "3 miles", 2 / 3, 2 / 3),
    # Strings: token F1 with punctuation removed and articles kept.
    ("The Crunch", "Crunch", 2 / 3, 1.0),
    ("Paris, France", "Paris", 2 / 3, 2 / 3),
    # Lists (a gold of several lines): aligned in any order, F1 over both lengths; a JSON
    # list prediction is read as a list.
    ("b\na", "a\nb", 1.0, 0.5),
    ("apple", "apple\nbanana", 2 / 3, 0.5),
    ('["b", "a"]', "a\nb", 1.0, 1.0),
    # Objects: the mean over the gold's keys; a prediction that is not JSON scores 0.
    ('{"name": "bob", "age": 31}', '{"name": "Bob", "age": 30}', (1 + (1 - 1 / 30)) / 2, None),
    ("Bob, 30", '{"name": "Bob", "age": 30}', 0.0, 0.0),
    # A key the prediction lacks scores 0, or 1 when the gold's value is blank too.
    ('{"a": "x"}', '{"a": "x", "b": "y"}', 0.5, 2 / 3),
    ('{"a": "x"}', '{"a": "x", "b": ""}', 1.0, 2 / 3),
    # Empty answers.
    ("", "5", 0.0, 0.0),
    ("", "", 1.0, 0.0),
]


@pytest.mark.parametrize(("prediction", "gold", "score", "official"), AB_CASES)
def test_assistantbench_upstream_match_beside_the_official_evaluator(
    prediction: str, gold: str, score: float, official: float | None
) -> None:
    grade = assistantbench_score(prediction, gold)
    assert grade.score == pytest.approx(score)
    assert grade.correct is (score >= 0.5)
    assert grade.score_soft is None
    if official is not None:
        assert evaluate(prediction, gold).score == pytest.approx(official)


def test_the_official_object_score_differs_only_in_its_number_rule() -> None:
    # Upstream: 1 - |31 - 30| / 30 for the age; official: 1 - ln(31/30).
    official = evaluate('{"name": "bob", "age": 31}', '{"name": "Bob", "age": 30}').score
    assert official == pytest.approx((1 + (1 - 0.03278982282299097)) / 2)


# --- the summary ----------------------------------------------------------------------------


def _entry(task_id: str, status: str = "ok", prediction: str | None = "x", **kw) -> TaskScore:
    fields = {"score": 0.0, "correct": False, "duration_s": 10.0}
    fields.update(kw)
    return TaskScore(id=task_id, status=status, prediction=prediction, **fields)


def test_upstream_summary_has_upstream_keys_and_counts_failed_answers_apart() -> None:
    usage = Usage(input_tokens=100, output_tokens=10, turns=2, cost_usd=0.5)
    graded = [
        (_entry("a", level=1, usage=usage), gaia_score("The Beatles", "Beatles")),
        (_entry("b", level=2, duration_s=30.0), gaia_score("1.005", "1")),
        (_entry("c", "timeout", "42", level=1), gaia_score("42", "42")),
        (_entry("d", "error", None, level=None), gaia_score(None, "42")),
    ]
    view = upstream_view(GaiaGrader.upstream, graded)
    assert view is not None
    assert view["label"] == UPSTREAM_LABEL
    assert "not the official scorer" in view["note"]
    assert (view["n_tasks"], view["n_answered"], view["timeouts"]) == (4, 3, 1)
    assert view["accuracy"] == pytest.approx(2 / 4)
    assert view["accuracy_soft"] == pytest.approx(2.5 / 4)
    assert view["by_level"] == {
        "1": {"n": 2, "accuracy": 1.0, "accuracy_soft": 1.0},
        "2": {"n": 1, "accuracy": 0.0, "accuracy_soft": 0.5},
        "?": {"n": 1, "accuracy": 0.0, "accuracy_soft": 0.0},
    }
    assert view["avg_duration_s"] == pytest.approx(15.0)
    assert view["n_with_usage"] == 1 and view["avg_input_tokens"] == 100
    assert view["total_cost_usd"] == 0.5
    assert view["failed_with_answer"] == {"n": 1, "n_correct": 1, "ids": ["c"]}
    per = {line["id"]: line for line in view["per_task"]}
    assert per["b"]["score"] == 0.0 and per["b"]["score_soft"] == 0.5
    assert per["c"]["timed_out"] is True and per["c"]["correct"] is True


def test_assistantbench_summary_keys() -> None:
    graded = [
        (_entry("a", difficulty="Easy"), assistantbench_score("50", "100")),
        (_entry("b", difficulty=None), assistantbench_score("7", "100")),
        (_entry("c", difficulty=""), assistantbench_score("100", "100")),
    ]
    view = upstream_view(AssistantBenchGrader.upstream, graded)
    assert view is not None
    assert view["accuracy_soft"] == pytest.approx((0.5 + 0.07 + 1) / 3)  # 7 for 100: 0.07
    assert view["accuracy_strict"] == pytest.approx(2 / 3)
    assert "accuracy" not in view  # upstream's AssistantBench summary has no such key
    # upstream files any empty difficulty (None or "") under "unknown"
    assert set(view["by_difficulty"]) == {"Easy", "unknown"}
    assert view["by_difficulty"]["unknown"]["n"] == 2
    assert view["n_with_usage"] == 0


def test_webbench_summary_takes_the_judges_verdicts() -> None:
    def judged(task_id: str, verdict: str | None, correct: bool) -> tuple[TaskScore, UpstreamGrade]:
        entry = _entry(task_id, web_name="shop.example", details={"verdict": verdict})
        return entry, UpstreamGrade(float(correct), correct)

    view = upstream_view(
        WebBenchGrader.upstream,
        [
            judged("1", "YES", True),
            judged("2", "NO", False),
            judged("3", "INVALID", False),
            judged("4", None, False),  # not judged (no answer): upstream's judge says no
        ],
    )
    assert view is not None
    assert (view["accuracy"], view["yes"], view["no"], view["invalid"]) == (0.25, 1, 2, 1)
    assert view["by_site"]["shop.example"]["n"] == 4
    assert "n_with_usage" not in view  # upstream's WebBench summary has no usage


def test_localweb_has_no_upstream_view() -> None:
    assert LocalwebGrader.upstream is None
