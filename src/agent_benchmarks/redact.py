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

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

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
# Characters that match an ASCII letter under re.IGNORECASE but do not lower() to it
# (Python's re documentation names these four): a text holding one is matched in full.
_CASE_SPECIALS = re.compile("[\u0130\u0131\u017f\u212a]")
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
    values = _environment_secrets() if environ is None else _secrets_of(environ)
    # Longest first so a secret containing another is masked whole.
    return sorted(values | _added_secrets, key=len, reverse=True)


def _secrets_of(environ: Mapping[str, str]) -> frozenset[str]:
    return frozenset(
        v for k, v in environ.items() if is_secret_name(k) and len(v) >= _MIN_ENV_SECRET_LEN
    )


# The process environment's secrets, and the environment they were read from. Reading them
# means decoding every variable, which cost a run's worker threads more than everything
# else they do per attempt together (a row redacts a few texts, each read them again).
# CPython keeps os.environ's bytes in ``_data``, changed by every assignment or deletion:
# comparing it with the copy taken then is a C-speed equality test of unchanged objects.
_environment_cache: tuple[dict[bytes, bytes], frozenset[str]] | None = None


def _environment_secrets() -> frozenset[str]:
    global _environment_cache
    data = getattr(os.environ, "_data", None)
    cached = _environment_cache
    if data is not None and cached is not None and cached[0] == data:
        return cached[1]
    values = _secrets_of(os.environ)
    if data is not None:
        _environment_cache = (dict(data), values)
    return values


def redact_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    for value in _known_secrets(environ):
        text = text.replace(value, REDACTED)
    lowered: str | None = None  # text.lower(), made once for the case-insensitive patterns
    folds_specially = False
    for pattern, replacement, required in _TEXT_PATTERNS:
        haystack = text
        if pattern.flags & re.IGNORECASE:
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
