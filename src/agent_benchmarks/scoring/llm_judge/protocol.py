"""The two judge protocols: what the judge is sent, how it is called, how it is read.

``upstream`` (the default) is lightpanda-io/agent-benchmarks' judge, reproduced from its
code (``src/agent_benchmarks/llm_judge.py``), the prompt in our words
(``upstream_prompt.py``):

- judge model ``claude-sonnet-4-5``; a system prompt; the user message names the site;
- Anthropic: ``max_tokens`` 256, the model's temperature, and the Anthropic SDK's own two
  retries (upstream builds ``Anthropic()`` with its defaults); Gemini: a thinking budget of
  512 tokens and at most 1,024 output tokens, the model's temperature, no retry (the
  google-genai SDK makes one attempt unless told otherwise); OpenAI-compatible endpoints
  (which upstream does not support) get the system prompt and no retry;
- one call per row from the harness: a call that fails is INVALID, counted against;
- rows with an empty answer are judged, and count as NO unless the judge says YES.

``strict`` is this project's own judge (``prompt.py``): no system prompt, the answer must
agree with the reference, more tools count as page reading, exactly two lines or INVALID,
``max_tokens`` 1,024 and temperature 0, up to five calls with backoff (a row whose calls all
fail is a ``judge_error``, counted apart from NO), and rows without an answer are not judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from agent_benchmarks.records.schema import PredictionRow
from agent_benchmarks.scoring.llm_judge import prompt as strict_prompt
from agent_benchmarks.scoring.llm_judge import upstream_prompt
from agent_benchmarks.scoring.llm_judge.models import (
    PROTOCOL_NAMES,
    JudgeConfig,
    JudgeConfigError,
    ProtocolName,
    Verdict,
)
from agent_benchmarks.scoring.llm_judge.prompt import ParsedVerdict

DEFAULT_PROTOCOL: ProtocolName = "upstream"


@dataclass(frozen=True)
class CallSettings:
    """How each provider is called, and how many calls a row may take."""

    anthropic_max_tokens: int
    # Retries the Anthropic SDK makes by itself inside one of our calls.
    anthropic_sdk_retries: int
    gemini_max_output_tokens: int | None  # None: the model's limit
    gemini_thinking_budget: int | None  # None: the model's default thinking
    openai_max_tokens: int | None  # None: the endpoint's limit
    temperature: float | None  # None: the model's default (sent as nothing)
    timeout_s: float  # per HTTP request
    max_attempts: int  # calls per row, ours

    def record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class JudgeProtocol:
    name: ProtocolName
    default_model: str
    system_prompt: str | None
    build_prompt: Callable[[PredictionRow, str | None], str]
    parse_verdict: Callable[[str | None], ParsedVerdict]
    # sha256 of everything besides the row that shapes what the judge is sent.
    prompt_hash: Callable[[], str]
    call: CallSettings
    # Whether a row with no answer is sent to the judge (else it is left unjudged).
    judges_empty_answers: bool
    # What a row becomes when no call got a reply.
    failed_call_verdict: Verdict


UPSTREAM = JudgeProtocol(
    name="upstream",
    default_model="claude-sonnet-4-5",
    system_prompt=upstream_prompt.SYSTEM_PROMPT,
    build_prompt=upstream_prompt.build_prompt,
    parse_verdict=upstream_prompt.parse_verdict,
    prompt_hash=upstream_prompt.prompt_hash,
    call=CallSettings(
        anthropic_max_tokens=256,
        anthropic_sdk_retries=2,
        gemini_max_output_tokens=1024,
        gemini_thinking_budget=512,
        openai_max_tokens=None,
        temperature=None,
        # The Anthropic SDK's default read timeout, which upstream's client keeps; the
        # google-genai client upstream builds has none, and a judge must not wait forever.
        timeout_s=600.0,
        max_attempts=1,
    ),
    judges_empty_answers=True,
    failed_call_verdict="INVALID",
)

STRICT = JudgeProtocol(
    name="strict",
    default_model="claude-sonnet-4-6",
    system_prompt=None,
    build_prompt=strict_prompt.build_prompt,
    parse_verdict=strict_prompt.parse_verdict,
    prompt_hash=strict_prompt.prompt_hash,
    call=CallSettings(
        anthropic_max_tokens=1024,
        anthropic_sdk_retries=0,
        gemini_max_output_tokens=None,
        gemini_thinking_budget=None,
        openai_max_tokens=None,
        temperature=0.0,
        timeout_s=60.0,
        max_attempts=5,
    ),
    judges_empty_answers=False,
    failed_call_verdict="judge_error",
)

PROTOCOLS: dict[ProtocolName, JudgeProtocol] = {"upstream": UPSTREAM, "strict": STRICT}


def get_protocol(name: str) -> JudgeProtocol:
    try:
        return PROTOCOLS[name]  # type: ignore[index]
    except KeyError:
        raise JudgeConfigError(
            f"unknown judge protocol {name!r}: choose {' or '.join(PROTOCOL_NAMES)}"
        ) from None


def call_settings(config: JudgeConfig) -> CallSettings:
    """The protocol's call settings with the configuration's overrides applied."""
    call = get_protocol(config.protocol).call
    if config.timeout_s is not None:
        call = replace(call, timeout_s=config.timeout_s)
    if config.max_attempts is not None:
        call = replace(call, max_attempts=config.max_attempts)
    return call
