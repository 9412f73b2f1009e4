"""Deterministic token counts, and the per-task ledger the server keeps of them.

The scripted server has no tokenizer, and needs none: what tests need is a count that is
the same every run and that the server reports in the very fields each client parses, so a
test can check the harness's parsed usage against the server's own ledger. The rule:

* ``prompt = ceil(chars(prompt fields) / chars_per_token)``, where the prompt fields are the
  request's system text, messages and tools exactly as sent (``system``/``messages``/``tools``
  for Anthropic, ``messages``/``tools`` for chat completions, ``instructions``/``input``/
  ``tools`` for Responses), serialised as compact JSON with sorted keys and no ASCII escaping;
* ``cache_read = floor(prompt * cache_read_share)``,
  ``cache_write = floor(prompt * cache_write_share)`` (Anthropic only: the OpenAI formats have
  no cache-write field, so it is 0 there), and ``input = prompt - cache_read - cache_write``;
* ``output = ceil(chars(reply text + each call's arguments JSON) / chars_per_token)``, the
  arguments JSON being the exact string sent (compact, keys in the policy's order).

The ledger uses the neutral convention of :class:`agent_benchmarks.records.schema.Usage`: ``input``
excludes cache reads and writes. On the wire, Anthropic's ``input_tokens`` is that number;
OpenAI's ``prompt_tokens`` (and Responses' ``input_tokens``) is the whole prompt, cached
tokens included, with the cached part in ``*_tokens_details.cached_tokens``.
"""

from __future__ import annotations

import json
import math
import threading
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_benchmarks.records.schema import Usage


def canonical_json(value: Any) -> str:
    """The serialisation prompt sizes are measured on."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def args_json(args: dict[str, Any]) -> str:
    """A tool call's arguments as sent on the wire (and measured for output tokens)."""
    return json.dumps(args, separators=(",", ":"), ensure_ascii=False)


class TokenRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    chars_per_token: int = Field(default=4, ge=1)
    cache_read_share: float = Field(default=0.5, ge=0.0, le=1.0)
    cache_write_share: float = Field(default=0.0, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _shares_fit(self) -> TokenRules:
        if self.cache_read_share + self.cache_write_share > 1.0:
            raise ValueError("cache_read_share + cache_write_share must not exceed 1")
        return self

    def tokens(self, chars: int) -> int:
        return math.ceil(chars / self.chars_per_token)

    def count(self, prompt_chars: int, output_chars: int, *, cache_write: bool) -> TokenCount:
        prompt = self.tokens(prompt_chars)
        cache_read = math.floor(prompt * self.cache_read_share)
        written = math.floor(prompt * self.cache_write_share) if cache_write else 0
        written = min(written, prompt - cache_read)
        return TokenCount(
            input_tokens=prompt - cache_read - written,
            cache_read_tokens=cache_read,
            cache_write_tokens=written,
            output_tokens=self.tokens(output_chars),
        )


class TokenCount(BaseModel):
    """Usage of one reply, neutral convention (``input_tokens`` excludes cache traffic)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """The whole prompt, as OpenAI's ``prompt_tokens`` reports it."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


class LedgerEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    request_number: int
    protocol: str
    model: str
    tokens: TokenCount


class UsageLedger:
    """Thread-safe record of every reply's counted usage, per task.

    Only replies a client could parse are entered (normal answers, including slow and empty
    ones); rate limits, server errors, hangs, disconnects and malformed bodies are not, just
    as a real provider does not bill them.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, list[LedgerEntry]] = {}

    def add(self, task_id: str, entry: LedgerEntry) -> None:
        with self._lock:
            self._entries.setdefault(task_id, []).append(entry)

    def entries(self, task_id: str) -> list[LedgerEntry]:
        with self._lock:
            return list(self._entries.get(task_id, []))

    def usage(self, task_id: str) -> Usage:
        """Totals for the task as a :class:`~agent_benchmarks.records.schema.Usage` record."""
        entries = self.entries(task_id)
        return Usage(
            input_tokens=sum(e.tokens.input_tokens for e in entries),
            cache_read_tokens=sum(e.tokens.cache_read_tokens for e in entries),
            cache_write_tokens=sum(e.tokens.cache_write_tokens for e in entries),
            output_tokens=sum(e.tokens.output_tokens for e in entries),
            turns=len(entries),
            estimated=False,
        )
