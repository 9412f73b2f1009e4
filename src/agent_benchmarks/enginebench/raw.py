"""A run's ``raw.jsonl`` read back: its meta record, its executions, and the configurations
given up on (what :mod:`.bench` wrote, and all the report is made from)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_benchmarks.common.errors import InputError

MODES = ("cold", "warm")


@dataclass(frozen=True)
class Raw:
    meta: dict[str, Any]
    executions: list[dict[str, Any]]
    given_up: list[dict[str, Any]]


def load(path: Path) -> Raw:
    """A run's raw.jsonl (or the folder holding it); one clear error for anything else. A
    torn last line (the run was killed mid-write) is left out."""
    if path.is_dir():
        path = path / "raw.jsonl"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror})") from None
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            records.append(json.loads(line))
        except ValueError:
            if number == len(lines):
                break
            raise InputError(f"{path}:{number}: not a JSON line") from None
    if not records or records[0].get("kind") != "meta":
        raise InputError(f"{path}: not an engine benchmark's raw.jsonl (no meta record first)")
    return Raw(
        meta=records[0],
        executions=[r for r in records if r.get("kind") == "execution"],
        given_up=[r for r in records if r.get("kind") == "given_up"],
    )
