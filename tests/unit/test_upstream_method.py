"""Upstream's method: prompt variants and their defaults, reading an answer-only reply, the
empty-answer retry in the engine, and which search engine Lightpanda is left to use."""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_benchmarks import gaia
from agent_benchmarks.assistantbench import SUITE as ASSISTANTBENCH
from agent_benchmarks.backends.base import AgentOutcome, PreparedTask
from agent_benchmarks.backends.lightpanda import (
    LightpandaBackend,
    LightpandaConfig,
    resolve_search_engine,
)
from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec
from agent_benchmarks.localweb import SUITE as LOCALWEB
from agent_benchmarks.records.pricing import load_price_table
from agent_benchmarks.records.schema import Task, TaskInput, Usage
from agent_benchmarks.runner.engine import AttemptRunner
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.runner.session import TaskSession
from agent_benchmarks.spec.answers import ExtractedAnswer, extract_plain_answer
from agent_benchmarks.spec.prompts import (
    ANSWER_ONLY,
    PERSISTENCE,
    RESEARCH_ASSISTANT,
    RESEARCH_BRIEF,
    RESEARCH_PERSISTENT,
    STANDARD,
    default_prompt_name,
    prompt_variant,
)
from agent_benchmarks.webbench import SUITE as WEBBENCH

GAIA = gaia.SUITE

# --- prompt variants -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runner", "model", "expected"),
    [
        ("claude-mcp/lightpanda", "sonnet", PERSISTENCE),
        ("claude-mcp/agent-browser", "claude-sonnet-4-6", PERSISTENCE),
        ("lightpanda-native", "claude-sonnet-4-6", PERSISTENCE),
        ("lightpanda-native", "gemini-3.8-flash", ANSWER_ONLY),  # Lightpanda's gemini default
        ("lightpanda-native", "gemini-3.5-Flash", ANSWER_ONLY),
        ("lightpanda-native", None, PERSISTENCE),
        ("agent-browser-chat/chrome", "anthropic/claude-sonnet-4.6", ANSWER_ONLY),
    ],
)
def test_the_default_is_the_prompt_upstream_published_with(
    runner: str, model: str | None, expected: str
) -> None:
    assert GAIA.prompt is not None and ASSISTANTBENCH.prompt is not None
    assert default_prompt_name(GAIA.prompt, runner, model) == expected
    assert default_prompt_name(ASSISTANTBENCH.prompt, runner, model) == expected


def test_suites_without_variants_keep_their_own_prompt() -> None:
    for suite in (WEBBENCH, LOCALWEB):
        assert suite.prompt is not None
        assert default_prompt_name(suite.prompt, "lightpanda-native", "gemini-flash") == STANDARD
        assert prompt_variant(suite.prompt, STANDARD) is suite.prompt
        with pytest.raises(ValueError, match="only its own prompt"):
            prompt_variant(suite.prompt, PERSISTENCE)


def test_the_variants_and_what_they_ask_for() -> None:
    assert GAIA.prompt is not None
    standard = prompt_variant(GAIA.prompt, STANDARD)
    assert (standard.system, standard.answer) == (RESEARCH_ASSISTANT, "envelope")
    persistent = prompt_variant(GAIA.prompt, PERSISTENCE)
    assert (persistent.system, persistent.answer) == (RESEARCH_PERSISTENT, "envelope")
    brief = prompt_variant(GAIA.prompt, ANSWER_ONLY)
    assert (brief.system, brief.answer) == (RESEARCH_BRIEF, "plain")
    task = TaskInput(suite="gaia", id="t", question="How many?")
    assert persistent.task_text(task).endswith("<ANSWER>...</ANSWER>.")
    assert "<ANSWER>" not in brief.task_text(task)
    assert "answer only" in brief.task_text(task)
    # The persistence rules upstream's numbers depend on are all there, in our words.
    for rule in ("20 to 50 tool calls", "at least 20", "at least 3", "search tool", "never open"):
        assert rule in RESEARCH_PERSISTENT, rule
    with pytest.raises(ValueError, match="no prompt named"):
        prompt_variant(GAIA.prompt, "bold")


def test_the_session_records_the_variant_and_its_hash() -> None:
    session = TaskSession(GAIA, "scaffold", prompt_name=ANSWER_ONLY)
    settings = session.settings()
    assert settings["prompt"] == ANSWER_ONLY
    assert settings["system_prompt"] == RESEARCH_BRIEF
    assert settings["system_prompt_sha256"] == hashlib.sha256(RESEARCH_BRIEF.encode()).hexdigest()
    assert (settings["answer_format"], settings["system_prompt_source"]) == ("plain", "variant")
    # --system-prompt-file replaces the text; the variant still says how the answer is read.
    own = TaskSession(GAIA, "scaffold", system_prompt="Mine.", prompt_name=ANSWER_ONLY)
    assert own.settings()["system_prompt"] == "Mine."
    assert own.settings()["system_prompt_source"] == "file"
    assert own.settings()["answer_format"] == "plain"


# --- reading the answer-only reply -----------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("  1234\n", ExtractedAnswer(answer="1234", envelope="missing", n_envelopes=0)),
        ("Paris, Lima", ExtractedAnswer(answer="Paris, Lima", envelope="missing", n_envelopes=0)),
        (
            "Checked. <ANSWER>42</ANSWER>",
            ExtractedAnswer(answer="42", envelope="found", n_envelopes=1),
        ),
        (
            "<ANSWER></ANSWER>",
            ExtractedAnswer(answer="<ANSWER></ANSWER>", envelope="missing", n_envelopes=1),
        ),
        ("", ExtractedAnswer(answer="", envelope="missing", n_envelopes=0)),
    ],
)
def test_an_answer_only_reply_is_the_answer(output: str, expected: ExtractedAnswer) -> None:
    assert extract_plain_answer(output) == expected


def test_the_session_reads_the_answer_only_reply_whole() -> None:
    session = TaskSession(GAIA, "scaffold", prompt_name=ANSWER_ONLY)
    prepared = PreparedTask(
        task=TaskInput(suite="gaia", id="t", question="q"), attempt=1, text="q", system_prompt=None
    )
    outcome = AgentOutcome(status="ok", output=" 17 \n")
    assert session.finish(prepared, outcome) == (
        "17",
        {"answer_envelope": "missing", "n_envelopes": 0},
    )


# --- the empty-answer retry ------------------------------------------------------------------


@dataclass
class CountingBackend:
    """``python -c`` printing the n-th of ``outputs`` on its n-th run (counted in a file)."""

    counter: Path
    outputs: tuple[str, ...]
    stderr: str = ""
    sleep_s: float = 0.0
    exit_code: int = 0
    name: str = "counting-fake"

    def programs(self) -> dict[str, str]:
        return {}

    def settings(self) -> dict[str, Any]:
        return {}

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        code = (
            "import pathlib, sys, time\n"
            f"p = pathlib.Path({str(self.counter)!r})\n"
            "n = int(p.read_text()) if p.exists() else 0\n"
            "p.write_text(str(n + 1))\n"
            f"outs = {self.outputs!r}\n"
            f"time.sleep({self.sleep_s})\n"
            f"sys.stderr.write({self.stderr!r})\n"
            "print(outs[min(n, len(outs) - 1)])\n"
            f"sys.exit({self.exit_code})\n"
        )
        return ProcessSpec(
            argv=[sys.executable, "-c", code],
            env=dict(os.environ),
            cwd=prepared.workdir,
            timeout_s=None,
        )

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        output = result.stdout.strip()
        failed = result.returncode != 0
        return AgentOutcome(
            status="error" if failed else "ok" if output else "empty",
            output=output,
            error_class="agent_error" if failed else None,
            usage=Usage(input_tokens=10, output_tokens=1, turns=1),
            details={"safety_refusal": True} if "safety refusal" in result.stderr else {},
        )

    def runs(self) -> int:
        return int(self.counter.read_text()) if self.counter.exists() else 0


def _runner(
    tmp_path: Path, backend: CountingBackend, retry: bool = True, timeout_s: float = 30
) -> AttemptRunner:
    task = Task(suite="gaia", id="g1", question="How many?", gold="7", level=1)
    return AttemptRunner(
        run_dir=tmp_path / "run",
        tasks={"g1": task},
        session=TaskSession(GAIA, "scaffold", prompt_name=PERSISTENCE),
        backend=backend,
        timeout_s=timeout_s,
        memory_max_mb=None,
        prices=load_price_table(None),
        price_model=None,
        retry_empty=retry,
    )


def test_an_empty_answer_is_retried_and_the_answer_kept(tmp_path: Path) -> None:
    backend = CountingBackend(
        tmp_path / "n", ("<ANSWER></ANSWER>", "<ANSWER>7</ANSWER>"), sleep_s=0.2
    )
    row = _runner(tmp_path, backend)(AttemptKey("g1", 1, 1), threading.Event())
    assert backend.runs() == 2
    assert (row.status, row.prediction) == ("ok", "7")
    assert row.details["retried"] is True
    retry = row.details["empty_retry"]
    assert retry["kept"] == "retry"
    assert retry["dropped"]["status"] == "empty"
    assert retry["dropped"]["usage"]["input_tokens"] == 10
    assert row.duration_s >= 0.4 and row.duration_s >= retry["dropped"]["duration_s"] + 0.2
    attempts = tmp_path / "run" / "attempts"
    assert sorted(p.name for p in attempts.iterdir()) == ["g1.1.1", "g1.1.1-retry"]


def test_two_empty_answers_keep_the_first(tmp_path: Path) -> None:
    backend = CountingBackend(tmp_path / "n", ("", ""))
    row = _runner(tmp_path, backend)(AttemptKey("g1", 1, 1), threading.Event())
    assert backend.runs() == 2
    assert row.status == "empty" and row.details["retried"] is True
    assert row.details["empty_retry"]["kept"] == "first"


def test_an_answer_is_not_retried(tmp_path: Path) -> None:
    backend = CountingBackend(tmp_path / "n", ("<ANSWER>7</ANSWER>",))
    row = _runner(tmp_path, backend)(AttemptKey("g1", 1, 1), threading.Event())
    assert backend.runs() == 1
    assert row.details["retried"] is False and "empty_retry" not in row.details


def test_a_safety_refusal_is_not_retried(tmp_path: Path) -> None:
    backend = CountingBackend(tmp_path / "n", ("", "<ANSWER>7</ANSWER>"), stderr="safety refusal")
    row = _runner(tmp_path, backend)(AttemptKey("g1", 1, 1), threading.Event())
    assert backend.runs() == 1
    assert row.status == "empty" and row.details["retried"] is False


def test_a_timeout_is_not_retried(tmp_path: Path) -> None:
    backend = CountingBackend(tmp_path / "n", ("", "<ANSWER>7</ANSWER>"), sleep_s=5)
    row = _runner(tmp_path, backend, timeout_s=0.5)(AttemptKey("g1", 1, 1), threading.Event())
    assert backend.runs() == 1
    # The fake calls it empty; the engine still sees the process timed out.
    assert row.timed_out and row.details["retried"] is False


def test_without_the_retry_the_row_does_not_mention_it(tmp_path: Path) -> None:
    backend = CountingBackend(tmp_path / "n", ("", "<ANSWER>7</ANSWER>"))
    row = _runner(tmp_path, backend, retry=False)(AttemptKey("g1", 1, 1), threading.Event())
    assert backend.runs() == 1
    assert row.status == "empty" and "retried" not in row.details


def test_only_gaia_asks_for_the_retry() -> None:
    assert GAIA.retry_empty_once
    assert not (ASSISTANTBENCH.retry_empty_once or WEBBENCH.retry_empty_once)


# --- Lightpanda's search engine ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("pinned", "env", "engine"),
    [
        (None, {}, "keenable"),
        (None, {"TAVILY_API_KEY": "t" * 20}, "tavily"),
        (None, {"TAVILY_API_KEY": "t" * 20, "BRAVE_API_KEY": "b" * 20}, "brave"),
        (None, {"EXA_API_KEY": "e" * 20, "TAVILY_API_KEY": ""}, "exa"),
        ("auto", {"TAVILY_API_KEY": "t" * 20}, "tavily"),
        ("keenable", {"TAVILY_API_KEY": "t" * 20}, "keenable"),
    ],
)
def test_the_search_engine_lightpanda_picks(
    pinned: str | None, env: dict[str, str], engine: str
) -> None:
    resolved = resolve_search_engine(pinned, env)
    assert resolved["engine"] == engine
    assert not any(value and value in str(resolved) for value in env.values())


def test_a_pinned_engine_is_passed_and_recorded(tmp_path: Path) -> None:
    config = LightpandaConfig(binary="lightpanda", provider="gemini", search_engine="tavily")
    backend = LightpandaBackend(config, {}, environ={"TAVILY_API_KEY": "t" * 20})
    prepared = PreparedTask(
        task=TaskInput(suite="gaia", id="t", question="q"),
        attempt=1,
        text="q",
        system_prompt=None,
        workdir=tmp_path,
    )
    argv = backend.command(prepared).argv
    assert argv[argv.index("--search-engine") + 1] == "tavily"
    assert backend.settings()["search"] == {
        "engine": "tavily",
        "chosen_by": "--search-engine tavily",
    }
    unpinned = LightpandaBackend(LightpandaConfig(binary="lp", provider="gemini"), {}, environ={})
    assert "--search-engine" not in unpinned.command(prepared).argv
    assert unpinned.settings()["search"]["engine"] == "keenable"


def test_an_error_is_left_to_resume(tmp_path: Path) -> None:
    backend = CountingBackend(tmp_path / "n", ("", "<ANSWER>7</ANSWER>"), exit_code=1)
    row = _runner(tmp_path, backend)(AttemptKey("g1", 1, 1), threading.Event())
    assert backend.runs() == 1
    assert row.status == "error" and row.details["retried"] is False
