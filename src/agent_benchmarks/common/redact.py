"""Keep secrets out of everything the harness writes (manifests, rows, logs, caches).

Three rules, applied together:
- a flag that carries a secret (``--api-key X``, ``--token=X``, ...) has its value replaced;
- a ``NAME=value`` pair whose NAME ends in KEY, TOKEN, SECRET or PASSWORD is masked;
- anything that looks like a credential in free text (``sk-...``, ``Bearer ...``,
  ``hf_...``, ``AIza...``) is masked, and so is the value of every secret-named variable in
  the current environment, wherever it appears, and every secret the harness read from a
  file (:func:`add_secret`: a Claude login's tokens), which no variable names.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from agent_benchmarks.common.environ import current as current_environment

REDACTED = "[REDACTED]"

_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)$", re.I)
_SECRET_FLAG = re.compile(
    r"^--?[\w-]*(api[-_]?key|token|secret|password|passwd|credentials?|auth[-_]?header)$",
    re.I,
)
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
_API_KEY_HEADER = re.compile(r"(?i)\b(x-api-key|x-goog-api-key|api-key)\s*:\s*\S+")
_SECRET_ASSIGNMENT = re.compile(
    r"\b([A-Za-z_][A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD))=([^\s\"']+)", re.I
)
# (pattern, replacement, what the text must contain for the pattern to match: one string of
# each group). Tool outputs run to megabytes a row, and a pattern whose words are absent
# (a C-speed substring test) need not be run: that made redacting a row of 600 tool calls
# of 8,000 characters several times faster. Groups of a case-insensitive pattern are looked
# for in the lowered text.
_TEXT_PATTERNS: list[tuple[re.Pattern[str], str, tuple[tuple[str, ...], ...]]] = [
    # Authorization headers: keep the scheme so a reader knows what was there.
    (_BEARER, rf"\1 {REDACTED}", (("bearer", "basic", "token"),)),
    (_API_KEY_HEADER, rf"\1: {REDACTED}", (("api-key",),)),
    # Provider key shapes: OpenAI/Anthropic sk-..., Hugging Face hf_..., Google AIza...
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED, (("sk-",),)),
    (re.compile(r"\bhf_[A-Za-z0-9]{8,}"), REDACTED, (("hf_",),)),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{20,}"), REDACTED, (("AIza",),)),
    # NAME=value assignments with a secret-looking NAME.
    (
        _SECRET_ASSIGNMENT,
        rf"\1={REDACTED}",
        (("=",), ("key", "token", "secret", "password")),
    ),
]
# Each with whether it ignores case, worked out once: a RegexFlag test is a Python-level
# call in every redaction.
_TEXT_PATTERNS_CASE = [
    (pattern, replacement, required, bool(pattern.flags & re.IGNORECASE))
    for pattern, replacement, required in _TEXT_PATTERNS
]
# Characters that match an ASCII letter under re.IGNORECASE but do not lower() to it
# (Python's re documentation names these four): a text holding one is matched in full.
_CASE_SPECIALS = re.compile("[\u0130\u0131\u017f\u212a]")
# A pattern can match only where each of its groups has a word in the text, so a text with
# no word of any pattern's most telling group (its longest shortest word: "key" rather
# than "=") in any case, and no character that folds specially, needs no pattern run: one
# C-speed search instead of a test per pattern.
_ANY_REQUIRED = re.compile(
    "|".join(
        sorted(
            {
                re.escape(word)
                for _, _, required in _TEXT_PATTERNS
                for word in max(required, key=lambda group: min(map(len, group)))
            }
        )
    )
    + "|"
    + _CASE_SPECIALS.pattern,
    re.IGNORECASE,
)
# Values shorter than this are not hunted for in free text: masking "1" everywhere would
# destroy the text and protect nothing.
_MIN_ENV_SECRET_LEN = 8

# Secrets read from files, masked like the environment's for the rest of the process.
# Replaced whole under the lock (never changed in place): worker threads redact while
# another may be adding one.
_added_secrets: frozenset[str] = frozenset()
_added_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def add_secret(value: str) -> None:
    """Mask ``value`` in everything redacted from now on (too short a value is ignored, as
    for environment variables)."""
    global _added_secrets
    if len(value) < _MIN_ENV_SECRET_LEN:
        return
    with _added_lock:
        _added_secrets = _added_secrets | {value}


def secrets_in_json(data: Any) -> list[str]:
    """The strings held under secret-named keys anywhere in parsed JSON (a credentials
    file's ``accessToken``, ``refreshToken``, ...)."""
    if isinstance(data, dict):
        found = []
        for key, value in data.items():
            if isinstance(value, str) and is_secret_name(str(key)):
                found.append(value)
            else:
                found += secrets_in_json(value)
        return found
    if isinstance(data, list):
        return [secret for item in data for secret in secrets_in_json(item)]
    return []


def _known_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    if environ is not None:
        return _longest_first(_secrets_of(environ) | _added_secrets)
    global _sorted_cache
    values, added = _environment_secrets(), _added_secrets
    cached = _sorted_cache
    if cached is not None and cached[0] is values and cached[1] is added:
        return cached[2]
    ordered = _longest_first(values | added)
    _sorted_cache = (values, added, ordered)
    return ordered


def _longest_first(values: frozenset[str]) -> list[str]:
    """Longest first so a secret containing another is masked whole."""
    return sorted(values, key=len, reverse=True)


def _secrets_of(environ: Mapping[str, str]) -> frozenset[str]:
    return frozenset(
        v for k, v in environ.items() if is_secret_name(k) and len(v) >= _MIN_ENV_SECRET_LEN
    )


# The process environment's secrets, read once per change of the environment (a row
# redacts a few texts, and reading them each time cost more than the rest of an attempt),
# and the ordered list redaction walks, made once per change of either set.
_environment_cache: tuple[Mapping[str, str], frozenset[str]] | None = None
_sorted_cache: tuple[frozenset[str], frozenset[str], list[str]] | None = None


def _environment_secrets() -> frozenset[str]:
    global _environment_cache
    env = current_environment()
    cached = _environment_cache
    if cached is not None and cached[0] is env:
        return cached[1]
    values = _secrets_of(env)
    _environment_cache = (env, values)
    return values


def redact_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    for value in _known_secrets(environ):
        text = text.replace(value, REDACTED)
    if _ANY_REQUIRED.search(text) is None:
        return text  # most texts (an answer, a stderr tail) hold none of the words
    lowered: str | None = None  # text.lower(), made once for the case-insensitive patterns
    folds_specially = False
    for pattern, replacement, required, ignores_case in _TEXT_PATTERNS_CASE:
        haystack = text
        if ignores_case:
            if lowered is None:
                lowered = text.lower()
                folds_specially = _CASE_SPECIALS.search(text) is not None
            haystack = lowered
        may_match = all(any(word in haystack for word in group) for group in required)
        if may_match or (folds_specially and haystack is lowered):
            redacted = pattern.sub(replacement, text)
            if redacted != text:
                text, lowered = redacted, None
    return text


def redact_argv(argv: Iterable[str], environ: Mapping[str, str] | None = None) -> list[str]:
    out: list[str] = []
    mask_next = False
    for arg in argv:
        if mask_next:
            out.append(REDACTED)
            mask_next = False
            continue
        flag, eq, _value = arg.partition("=")
        if _SECRET_FLAG.match(flag):
            if eq:
                out.append(f"{flag}={REDACTED}")
            else:
                out.append(arg)
                mask_next = True
            continue
        out.append(redact_text(arg, environ))
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` fit to record: secret-named values masked, others scrubbed."""
    return {k: (REDACTED if is_secret_name(k) else redact_text(v, env)) for k, v in env.items()}
