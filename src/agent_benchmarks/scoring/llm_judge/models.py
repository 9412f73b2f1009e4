"""The judge's configuration and result records, and its one configuration error."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ProviderName = Literal["anthropic", "google", "openai"]
# upstream: lightpanda-io/agent-benchmarks' judge, its protocol in our words (the default).
# strict: this project's own, stricter text-only judge. See ``protocol.py``.
ProtocolName = Literal["upstream", "strict"]
PROTOCOL_NAMES: tuple[ProtocolName, ...] = ("upstream", "strict")
Verdict = Literal["YES", "NO", "INVALID", "judge_error"]


class JudgeConfigError(Exception):
    """The judge cannot be set up: no API key, an unknown provider. Raised before any call."""


class JudgeConfig(BaseModel):
    """How to judge. Holds no secret: API keys are read from the environment when needed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    protocol: ProtocolName = "upstream"
    # None: inferred from the model (claude-* -> anthropic, gemini-* or models/gemini-* ->
    # google, gpt-*/o1..o9 -> openai) or, for any other model, openai when a base_url is given.
    provider: ProviderName | None = None
    # Passed to the SDK as is. Anthropic: the host ("http://host:port"); Google: the host;
    # OpenAI-compatible: up to and including the version ("http://host:port/v1").
    base_url: str | None = None
    # 0 or 1: one row after another in the calling thread (upstream's reading of 0).
    workers: int = Field(default=4, ge=0)
    # None: the protocol's own (see ``protocol.py``).
    timeout_s: float | None = Field(default=None, gt=0)
    # Calls per row. None: the protocol's own; only the strict protocol retries, so only it
    # takes another value.
    max_attempts: int | None = Field(default=None, ge=1)
    backoff_base_s: float = Field(default=1.0, ge=0)  # waits base, 2*base, 4*base, ...
    max_backoff_s: float = Field(default=60.0, ge=0)  # cap on any wait, retry-after included
    no_cache: bool = False

    @model_validator(mode="after")
    def _one_call_under_upstream(self) -> JudgeConfig:
        if self.protocol == "upstream" and self.max_attempts not in (None, 1):
            raise ValueError(
                "the upstream judge protocol makes one call per row (a failed call is "
                "INVALID); retries belong to the strict protocol"
            )
        return self


class JudgeResult(BaseModel):
    """The judgement of one prediction row."""

    model_config = ConfigDict(extra="forbid")

    id: str
    attempt: int = 1
    # YES / NO: the judge's answer. INVALID: the judge answered outside the protocol's format
    # (``raw`` holds the reply, ``error`` says what is wrong with it) or, under the upstream
    # protocol, the call failed (``call_failed``). judge_error: the strict protocol got no
    # answer at all after its retries (``error`` says why); it is never a NO.
    verdict: Verdict
    call_failed: bool = False  # no reply came back; never cached
    reasoning: str = ""
    raw: str = ""
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    # True when the judgement came from the cache: no call was made, and the tokens and
    # cost are those of the call that produced it.
    cached: bool = False
    # Requests sent for this row in this run (0 when cached; more than 1 after retries).
    calls: int = 0
