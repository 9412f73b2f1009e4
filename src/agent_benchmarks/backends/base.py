"""The one small interface every backend (agent stack) implements.

A backend turns a prepared task into a command (:meth:`Backend.command`) and turns what
that process left behind into an :class:`AgentOutcome` (:meth:`Backend.outcome`). It
never sees the gold answer: it receives a :class:`PreparedTask` built from a
:class:`~agent_benchmarks.records.TaskInput`. The run engine owns everything else:
process groups, timeouts, rows, resume, progress.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_benchmarks.records import Status, TaskInput, ToolCall, Usage

if TYPE_CHECKING:  # the engine's process types; importing them here would be circular
    from agent_benchmarks.runner.process import ProcessResult, ProcessSpec


@dataclass(frozen=True)
class PreparedTask:
    """What an agent is asked to do for one attempt, in the words it will receive."""

    task: TaskInput
    attempt: int
    text: str  # the user turn
    system_prompt: str | None
    attachments: tuple[Path, ...] = ()
    # Extra environment for this attempt only (e.g. the scripted model's per-task URL).
    env: dict[str, str] = field(default_factory=dict)
    # Overrides the backend's model base URL for this attempt (the scripted model).
    base_url: str | None = None
    block_urls: tuple[str, ...] = ()
    workdir: Path = Path(".")
    # The attempt's private temp folder (its programs' TMPDIR, sockets), removed when the
    # attempt ends; the engine sets it (runner/scratch.py).
    tmpdir: Path = Path("/nonexistent-tmpdir")
    # What the suite did to get here (attachments handling, the episode's site prefix).
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentOutcome:
    """A backend's reading of one finished process, before the engine adds bookkeeping."""

    status: Status
    output: str  # the agent's final text as printed (before answer extraction)
    error_class: str | None = None
    error: str | None = None
    trace: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    details: dict[str, Any] = field(default_factory=dict)


class Backend(Protocol):
    """An agent stack the engine can drive, one process per attempt.

    Optional, looked up by name: ``learned_settings() -> dict`` (what only running showed,
    such as the model id an alias resolved to), merged into the manifest's backend settings
    at the end of each session (a list joins the earlier sessions' list);
    ``prices_own_rows = True`` on a backend that settles each row's cost itself (a cost of
    None then stays None: Claude Code's scripted runs, whose model id is a stand-in), where
    the engine otherwise prices rows from the run's model."""

    name: str
    # The wire protocol of the model it calls ("openai" or "anthropic"): a suite that plays
    # the model itself (localweb's scripted oracle) serves it on that protocol.
    model_protocol: str

    def programs(self) -> dict[str, str]:
        """Versions (and hashes) of the programs this backend drives, for the manifest."""
        ...

    def settings(self) -> dict[str, Any]:
        """Everything that defines this backend's runs, for the manifest (no secrets)."""
        ...

    def command(self, prepared: PreparedTask) -> ProcessSpec:
        """The process that runs one attempt (the engine sets its timeout and memory cap)."""
        ...

    def outcome(self, prepared: PreparedTask, result: ProcessResult) -> AgentOutcome:
        """Read the attempt's result: answer, status, trace and usage."""
        ...


def process_failure(result: ProcessResult, program: str) -> tuple[Status, str, str] | None:
    """(status, error_class, error) when the process itself failed, whatever the backend:
    it never started, hit the deadline, was interrupted, ran out of memory or died of a
    signal. None when it exited on its own; the backend reads the rest."""
    if result.start_error is not None:
        return "error", "crash", f"could not start {program}: {result.start_error}"
    if result.timed_out:
        return "timeout", "timeout", "killed at the deadline"
    if result.interrupted:
        return "error", "interrupted", "killed by the user (Ctrl-C) before it finished"
    if result.oom:
        return "error", "oom", f"killed for exceeding the memory cap ({result.memory_method})"
    if result.signal is not None:
        return "error", "crash", f"{program} died of signal {result.signal}"
    return None


def json_records(lines: list[str], problems: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """The JSON objects of an agent's JSONL output (a trace, a stream) with their line
    numbers. Other lines become problems, never exceptions: a process killed mid-write
    leaves a torn last line, which says so."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            torn = " (torn last line?)" if number == len(lines) else ""
            problems.append(f"line {number}: not JSON{torn}")
            continue
        if not isinstance(record, dict):
            problems.append(f"line {number}: not a JSON object")
            continue
        yield number, record
