"""Judge model providers through their official SDKs, error classification and prices.

- ``anthropic``: ``claude-*`` models, the Messages API (``anthropic`` SDK).
- ``google``: ``gemini-*`` models (also named ``models/gemini-*``, passed on as given),
  ``generateContent`` on the Gemini API v1beta (``google-genai`` SDK).
- ``openai``: ``gpt-*``/``o1``..``o9`` models, or any model when a base URL is given: chat
  completions on an OpenAI-compatible endpoint (``openai`` SDK).

Every client is built with the protocol's call settings (``protocol.py``: token limits,
temperature, the Anthropic SDK's own retries, which only the upstream protocol keeps; every
other SDK retry is off, ``judge.py`` retries), the configured timeout and base URL, and the
API key read from the environment (:data:`KEY_ENV_VARS`), passed explicitly so nothing else
(profiles, other variables) is consulted.
"""

from __future__ import annotations

import email.utils
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from agent_benchmarks.common.redact import REDACTED, redact_text
from agent_benchmarks.scoring.llm_judge.models import JudgeConfig, JudgeConfigError, ProviderName
from agent_benchmarks.scoring.llm_judge.protocol import CallSettings

# Environment variables holding each provider's key, first found wins.
KEY_ENV_VARS: dict[ProviderName, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openai": ("OPENAI_API_KEY",),
}
GEMINI_API_VERSION = "v1beta"
# Gemini model names may carry the API's resource prefix ("models/gemini-2.5-pro").
GEMINI_MODEL_PREFIX = "models/"
# HTTP statuses worth retrying: request timeout, rate limit, and every 5xx.
RETRYABLE_STATUSES = frozenset({408, 429})
_MAX_ERROR_CHARS = 600

# $ per million tokens (input, output), by model family. A model matches a family when its
# name is the family name or the family name followed by "-" or "@" (a dated snapshot);
# the longest matching family wins.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
}


def price_for(model: str) -> tuple[float, float] | None:
    name = model.strip().lower().removeprefix(GEMINI_MODEL_PREFIX)
    best: str | None = None
    for family in PRICES_PER_MTOK:
        matches = name == family or name.startswith((family + "-", family + "@"))
        if matches and (best is None or len(family) > len(best)):
            best = family
    return PRICES_PER_MTOK[best] if best else None


def cost_usd(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """The cost of one call by :data:`PRICES_PER_MTOK`; None for a model not in the table."""
    price = price_for(model)
    if price is None:
        return None
    return round((input_tokens * price[0] + output_tokens * price[1]) / 1_000_000, 8)


def infer_provider(config: JudgeConfig) -> ProviderName:
    if config.provider is not None:
        return config.provider
    name = config.model.strip().lower()
    if name.startswith("claude"):
        return "anthropic"
    if name.removeprefix(GEMINI_MODEL_PREFIX).startswith("gemini"):
        return "google"
    if config.base_url:
        return "openai"
    if name.startswith(("gpt-", "chatgpt-")) or (
        len(name) >= 2 and name[0] == "o" and name[1].isdigit()
    ):
        return "openai"
    raise JudgeConfigError(
        f"cannot tell which provider serves judge model {config.model!r}: claude-* models use "
        "Anthropic, gemini-* (or models/gemini-*) Google, gpt-* OpenAI; for any other model "
        "give the base URL of "
        "an OpenAI-compatible endpoint, or set the provider"
    )


def _key_in(provider: ProviderName, environ: Mapping[str, str] | None) -> str | None:
    """The provider's API key from the first of its variables that is set, else None."""
    env = os.environ if environ is None else environ
    for name in KEY_ENV_VARS[provider]:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def api_key_for(provider: ProviderName, environ: Mapping[str, str] | None = None) -> str:
    key = _key_in(provider, environ)
    if key is not None:
        return key
    wanted = " or ".join(KEY_ENV_VARS[provider])
    hint = (
        " (an OpenAI-compatible endpoint that needs no key accepts any value)"
        if provider == "openai"
        else ""
    )
    raise JudgeConfigError(f"the {provider} judge needs an API key: set {wanted}{hint}")


def missing_judge_key(config: JudgeConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """The environment variable to set when the judge of ``config`` has no API key, else None.

    For a run that grades at the end to refuse before its first task rather than after the
    last. Several accepted variables are named together (``GEMINI_API_KEY or
    GOOGLE_API_KEY``). Raises :class:`JudgeConfigError` when the provider cannot be told.
    """
    provider = infer_provider(config)
    return None if _key_in(provider, environ) is not None else " or ".join(KEY_ENV_VARS[provider])


@dataclass(frozen=True)
class Completion:
    text: str
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class ErrorInfo:
    """What a failed call means for the retry loop."""

    retryable: bool
    message: str  # redacted, one line, bounded
    retry_after_s: float | None = None  # what the server asked us to wait, if it said


class JudgeClient(Protocol):
    provider: ProviderName

    def complete(self, system: str | None, prompt: str) -> Completion: ...

    def classify(self, exc: BaseException) -> ErrorInfo: ...

    def close(self) -> None: ...


# --- error classification -------------------------------------------------------------------


def parse_retry_after(headers: Mapping[str, str] | Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            value = float(millis) / 1000
            if math.isfinite(value) and value >= 0:
                return value
    except (TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
        return value if math.isfinite(value) and value >= 0 else None
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(raw))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def clean_error(text: str, secret: str | None) -> str:
    """One bounded line, with the key (and anything that looks like a credential) masked."""
    if secret:
        text = text.replace(secret, REDACTED)
    text = redact_text(" ".join(text.split()))
    if len(text) > _MAX_ERROR_CHARS:
        text = text[:_MAX_ERROR_CHARS] + "..."
    return text


def _is_transport_error(exc: BaseException) -> bool:
    """Timeouts and connection failures, from whichever HTTP stack the SDK uses."""
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    for module_name in ("httpx", "httpx2"):
        try:
            module = __import__(module_name)
        except ImportError:  # pragma: no cover - both are installed with the SDKs
            continue
        if isinstance(exc, module.TransportError):
            return True
    return False


def _status_error(status: int, headers: Any, detail: str, secret: str | None) -> ErrorInfo:
    retryable = status in RETRYABLE_STATUSES or status >= 500
    return ErrorInfo(
        retryable=retryable,
        message=clean_error(f"HTTP {status}: {detail}", secret),
        retry_after_s=parse_retry_after(headers) if retryable else None,
    )


def _generic_error(exc: BaseException, secret: str | None) -> ErrorInfo:
    retryable = _is_transport_error(exc)
    kind = "connection error" if retryable else type(exc).__name__
    return ErrorInfo(retryable=retryable, message=clean_error(f"{kind}: {exc}", secret))


# --- clients --------------------------------------------------------------------------------


def _sdk_client_kwargs(
    config: JudgeConfig, call: CallSettings, api_key: str, sdk_retries: int
) -> dict[str, Any]:
    """Anthropic's and OpenAI's SDK clients take the same settings."""
    kwargs: dict[str, Any] = {
        "api_key": api_key,
        "max_retries": sdk_retries,
        "timeout": call.timeout_s,
    }
    if config.base_url:
        kwargs["base_url"] = config.base_url
    return kwargs


class AnthropicJudge:
    provider: ProviderName = "anthropic"

    def __init__(self, config: JudgeConfig, call: CallSettings, api_key: str):
        import anthropic

        self._anthropic = anthropic
        self._model = config.model
        self._call = call
        self._key = api_key
        self._client = anthropic.Anthropic(
            **_sdk_client_kwargs(config, call, api_key, call.anthropic_sdk_retries)
        )

    def complete(self, system: str | None, prompt: str) -> Completion:
        # No temperature is sent: the 2.x SDK takes none, and upstream's call sets none.
        extra: dict[str, Any] = {"system": system} if system else {}
        message = self._client.messages.create(
            model=self._model,
            max_tokens=self._call.anthropic_max_tokens,
            messages=[{"role": "user", "content": prompt}],
            **extra,
        )
        text = "".join(
            getattr(block, "text", "") for block in message.content if block.type == "text"
        )
        usage = message.usage
        return Completion(text, usage.input_tokens or 0, usage.output_tokens or 0)

    def classify(self, exc: BaseException) -> ErrorInfo:
        if isinstance(exc, self._anthropic.APIStatusError):
            return _status_error(exc.status_code, exc.response.headers, exc.message, self._key)
        if isinstance(exc, self._anthropic.APIConnectionError):
            return ErrorInfo(True, clean_error(f"connection error: {exc}", self._key))
        return _generic_error(exc, self._key)

    def close(self) -> None:
        self._client.close()


class GoogleJudge:
    provider: ProviderName = "google"

    def __init__(self, config: JudgeConfig, call: CallSettings, api_key: str):
        from google import genai
        from google.genai import errors, types

        self._errors = errors
        self._types = types
        self._model = config.model
        self._call = call
        self._key = api_key
        http_options = types.HttpOptions(
            base_url=config.base_url or None,
            api_version=GEMINI_API_VERSION,
            timeout=max(1, math.ceil(call.timeout_s * 1000)),  # milliseconds
            retry_options=None,  # None: a single attempt, no SDK retries
        )
        self._client = genai.Client(api_key=api_key, vertexai=False, http_options=http_options)

    def complete(self, system: str | None, prompt: str) -> Completion:
        call = self._call
        thinking = (
            self._types.ThinkingConfig(thinking_budget=call.gemini_thinking_budget)
            if call.gemini_thinking_budget is not None
            else None
        )
        response = self._client.models.generate_content(
            model=self._model,  # a "models/" prefix is the SDK's to handle
            contents=prompt,
            config=self._types.GenerateContentConfig(
                system_instruction=system or None,
                temperature=call.temperature,
                max_output_tokens=call.gemini_max_output_tokens,
                thinking_config=thinking,
            ),
        )
        usage = response.usage_metadata
        input_tokens = (usage.prompt_token_count or 0) if usage else 0
        # Thinking tokens are billed as output.
        output_tokens = (
            (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0) if usage else 0
        )
        return Completion(response.text or "", input_tokens, output_tokens)

    def classify(self, exc: BaseException) -> ErrorInfo:
        if isinstance(exc, self._errors.APIError):
            headers = getattr(exc.response, "headers", None)
            detail = exc.message or exc.status or str(exc)
            return _status_error(int(exc.code or 0), headers, str(detail), self._key)
        return _generic_error(exc, self._key)

    def close(self) -> None:
        self._client.close()


def _openai_takes_temperature(model: str) -> bool:
    # Reasoning models (o1, o3, o4-mini, gpt-5...) reject any temperature but the default.
    name = model.strip().lower()
    is_o_series = len(name) >= 2 and name[0] == "o" and name[1].isdigit()
    return not (is_o_series or name.startswith("gpt-5"))


class OpenAIJudge:
    provider: ProviderName = "openai"

    def __init__(self, config: JudgeConfig, call: CallSettings, api_key: str):
        import openai

        self._openai = openai
        self._model = config.model
        self._call = call
        self._key = api_key
        self._client = openai.OpenAI(**_sdk_client_kwargs(config, call, api_key, 0))

    def complete(self, system: str | None, prompt: str) -> Completion:
        extra: dict[str, Any] = {}
        if self._call.temperature is not None and _openai_takes_temperature(self._model):
            extra["temperature"] = self._call.temperature
        if self._call.openai_max_tokens is not None:
            extra["max_completion_tokens"] = self._call.openai_max_tokens
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        response = self._client.chat.completions.create(
            model=self._model, messages=messages, **extra
        )
        text = response.choices[0].message.content if response.choices else None
        usage = response.usage
        return Completion(
            text or "",
            (usage.prompt_tokens or 0) if usage else 0,
            (usage.completion_tokens or 0) if usage else 0,
        )

    def classify(self, exc: BaseException) -> ErrorInfo:
        if isinstance(exc, self._openai.APIStatusError):
            return _status_error(exc.status_code, exc.response.headers, exc.message, self._key)
        if isinstance(exc, self._openai.APIConnectionError):
            return ErrorInfo(True, clean_error(f"connection error: {exc}", self._key))
        return _generic_error(exc, self._key)

    def close(self) -> None:
        self._client.close()


_CLIENTS: dict[ProviderName, type[AnthropicJudge | GoogleJudge | OpenAIJudge]] = {
    "anthropic": AnthropicJudge,
    "google": GoogleJudge,
    "openai": OpenAIJudge,
}


def make_client(
    config: JudgeConfig, call: CallSettings, environ: Mapping[str, str] | None = None
) -> JudgeClient:
    """Build the SDK client for ``config``; :class:`JudgeConfigError` if it cannot be."""
    provider = infer_provider(config)
    api_key = api_key_for(provider, environ)
    return _CLIENTS[provider](config, call, api_key)
