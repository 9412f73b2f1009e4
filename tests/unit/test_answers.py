"""The <ANSWER>...</ANSWER> envelope: last complete one wins, else the raw output is kept."""

from __future__ import annotations

from agent_benchmarks.spec.answers import ExtractedAnswer, extract_answer


def test_single_envelope() -> None:
    assert extract_answer("Looked it up.\n<ANSWER> Paris </ANSWER>\n") == ExtractedAnswer(
        answer="Paris", envelope="found", n_envelopes=1
    )


def test_last_of_several_envelopes_wins() -> None:
    output = "First guess <ANSWER>41</ANSWER>, then I checked again.\n<ANSWER>42</ANSWER>"
    assert extract_answer(output) == ExtractedAnswer(answer="42", envelope="found", n_envelopes=2)


def test_content_may_span_lines() -> None:
    result = extract_answer("<ANSWER>\n  apples,\n  pears\n</ANSWER>")
    assert result.answer == "apples,\n  pears"
    assert result.envelope == "found"


def test_tags_are_case_insensitive() -> None:
    result = extract_answer("done: <answer>7</Answer>")
    assert (result.answer, result.envelope) == ("7", "found")


def test_envelope_mentioned_in_prose_before_the_real_one() -> None:
    output = (
        "I will put my final answer inside <ANSWER></ANSWER> tags as asked.\n"
        "The census says 1,204.\n<ANSWER>1204</ANSWER>"
    )
    assert extract_answer(output) == ExtractedAnswer(answer="1204", envelope="found", n_envelopes=2)


def test_lone_opening_tag_in_prose_does_not_swallow_the_answer() -> None:
    result = extract_answer("Wrap it in an <ANSWER> tag, so: <ANSWER>blue</ANSWER>")
    assert result == ExtractedAnswer(answer="blue", envelope="found", n_envelopes=1)


def test_no_envelope_keeps_the_raw_output() -> None:
    assert extract_answer("  The answer is 42.\n") == ExtractedAnswer(
        answer="The answer is 42.", envelope="missing", n_envelopes=0
    )


def test_empty_output() -> None:
    assert extract_answer("") == ExtractedAnswer(answer="", envelope="missing", n_envelopes=0)


def test_empty_envelope() -> None:
    assert extract_answer("I could not find it. <ANSWER>  \n </ANSWER>") == ExtractedAnswer(
        answer="", envelope="empty", n_envelopes=1
    )


def test_unclosed_trailing_envelope_is_missing() -> None:
    output = "Counting done.\n<ANSWER>The three cities are Oslo, Bergen and"
    assert extract_answer(output) == ExtractedAnswer(
        answer=output.strip(), envelope="missing", n_envelopes=0
    )


def test_unclosed_envelope_after_a_complete_one_is_missing() -> None:
    # The agent was giving a later answer when the output stopped: the earlier one is not its
    # final word, and the later one may be partial.
    output = "<ANSWER>12</ANSWER> Wait, I miscounted.\n<ANSWER>1"
    assert extract_answer(output) == ExtractedAnswer(
        answer=output, envelope="missing", n_envelopes=1
    )
