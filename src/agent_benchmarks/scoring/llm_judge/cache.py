"""The judge cache: ``<run_dir>/judge_cache.jsonl``, append-only.

One JSON line per judgement that got a reply (YES, NO or INVALID; never a failed call),
keyed by the judge model, the judge protocol, the protocol's prompt hash and the sha256 of
everything the request carried (system prompt and rendered prompt), so a verdict given
under one protocol is never reused for another. Lines written before there were protocols
(schema 1) name no protocol and are skipped. Each line is written with one ``write``,
flushed and fsynced; a line that does not parse (a torn tail after a crash) is skipped on
reading. A later line for the same key wins. Lines hold no API key: only the key fields,
the row id and the judgement.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

CACHE_FILE_NAME = "judge_cache.jsonl"
CACHE_SCHEMA_VERSION = 2

CacheKey = tuple[str, str, str, str]  # (model, protocol, prompt_hash, prompt_sha256)
_CACHED_FIELDS = ("verdict", "reasoning", "raw", "error", "input_tokens", "output_tokens")


def cache_key(model: str, protocol: str, prompt_hash: str, prompt_sha256: str) -> CacheKey:
    return (model, protocol, prompt_hash, prompt_sha256)


class JudgeCache:
    """Reads every entry at open, appends new ones. Safe to share between threads."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._entries: dict[CacheKey, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._fh: IO[bytes] | None = None
        self.skipped_lines = 0
        self._load()

    def _load(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
                key = cache_key(
                    entry["model"], entry["protocol"], entry["prompt_hash"], entry["prompt_sha256"]
                )
                if entry["verdict"] not in ("YES", "NO", "INVALID"):
                    raise ValueError(entry["verdict"])
            except (ValueError, KeyError, TypeError):
                self.skipped_lines += 1
                continue
            self._entries[key] = entry

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: CacheKey) -> dict[str, Any] | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: CacheKey, row_id: str, judgement: dict[str, Any]) -> None:
        """Append one judgement (the :data:`_CACHED_FIELDS` of ``judgement``)."""
        if judgement.get("verdict") not in ("YES", "NO", "INVALID"):
            raise ValueError("only YES, NO and INVALID judgements are cached")
        model, protocol, prompt_hash, prompt_sha256 = key
        entry = {
            "schema_version": CACHE_SCHEMA_VERSION,
            "model": model,
            "protocol": protocol,
            "prompt_hash": prompt_hash,
            "prompt_sha256": prompt_sha256,
            "id": row_id,
            **{name: judgement.get(name) for name in _CACHED_FIELDS},
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        line = json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n"
        with self._lock:
            if self._fh is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                torn = _ends_without_newline(self.path)
                self._fh = open(self.path, "ab")  # noqa: SIM115 - kept open until close()
                if torn:  # a torn last line must not swallow the first new entry
                    self._fh.write(b"\n")
            self._fh.write(line)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._entries[key] = entry

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_without_newline(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"
    except FileNotFoundError:
        return False
