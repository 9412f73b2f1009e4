"""The one small interface every backend (agent stack) implements.

A backend turns a prepared task into a command (:meth:`Backend.command`) and turns what
that process left behind into an :class:`AgentOutcome` (:meth:`Backend.outcome`). It
never sees the gold answer: it receives a :class:`PreparedTask` built from a
:class:`~agent_benchmarks.records.schema.TaskInput`. The run engine owns everything else:
process groups, timeouts, rows, resume, progress.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agent_benchmarks.backends.attachments import message_attachments
from agent_benchmarks.records.schema import Status, TaskInput, ToolCall, Usage
from agent_benchmarks.spec.run_spec import Options, RunSpec
from agent_benchmarks.web.service import AttemptWeb

if TYPE_CHECKING:  # annotations only: a backend's module imports what it runs with
    from agent_benchmarks.episode.faults import EpisodeFault
    from agent_benchmarks.isolation.process import ProcessResult, ProcessSpec
    from agent_benchmarks.spec.prompts import SuitePrompt
    from agent_benchmarks.spec.suites import SuiteDef


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
    # attempt ends; the engine sets it (isolation/scratch.py).
    tmpdir: Path = Path("/nonexistent-tmpdir")
    # What the suite did to get here (attachments handling, the episode's site prefix).
    details: dict[str, Any] = field(default_factory=dict)
    # --web record|replay: the recording or replaying proxy the stack must send all its
    # page traffic through, and the CA it must trust for this attempt only; the engine sets
    # it. None: the live web, directly.
    web: AttemptWeb | None = None
    # The fault this episode injects (localweb's --fault), which the suite plans: a backend
    # whose browser is an MCP server routes it through the project's relay. None: no fault.
    fault: EpisodeFault | None = None


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
    # The requests the web proxy answered for this attempt (--web record|replay), set by
    # the engine before the suite reads the outcome; never written to the row whole.
    web_requests: list[dict[str, Any]] = field(default_factory=list)


class Backend(Protocol):
    """An agent stack the engine can drive, one process per attempt.

    Optional, looked up by name: ``learned_settings() -> dict`` (what only running showed,
    such as the model id an alias resolved to), merged into the manifest's backend settings
    at the end of each session (a list joins the earlier sessions' list);
    ``prices_own_rows = True`` on a backend that settles each row's cost itself (a cost of
    None then stays None: Claude Code's scripted runs, whose model id is a stand-in), where
    the engine otherwise prices rows from the run's model; ``program_probe() -> Callable[[],
    dict]``, a picklable function that finds :meth:`programs` again on another machine (a
    cluster executor runs it on each node and refuses a node whose versions differ);
    ``model_endpoint(prepared) -> str | None``, the base URL the attempt's agent calls its
    model at, when the harness's model meter can stand in front of it (it speaks Anthropic
    Messages, OpenAI Responses or chat completions; the engine then hands the agent the
    meter's URL as ``prepared.base_url``), with ``meter_problem() -> str | None`` saying
    before a run why it cannot (budgets and faults need the meter)."""

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


# Characters per token where no provider count is at hand: the estimate rows of a backend
# without usage already use (Usage.estimated).
CHARS_PER_TOKEN = 4
REPLY_TOKENS_HOW = (
    "each tool reply's characters as the model got them (before the row's truncation), and "
    "its tokens: by the provider's count where the agent's trace gives each model call's "
    "usage (the native runner: the prompt's growth from the call before the reply to the "
    "call after it, less the model's own output; replies of one turn share it by their "
    "characters), else characters / 4 flagged output_tokens_estimated (Claude Code's "
    "stream gives no per-call output count, Codex's usage is per turn, and agent-browser "
    "chat's gateway meter does not tie its per-request usage to the commands of its log)"
)


def with_reply_sizes(calls: list[ToolCall]) -> list[ToolCall]:
    """``calls`` with each reply's tokens where the backend gave no count of the
    provider's: its characters / :data:`CHARS_PER_TOKEN`, flagged as an estimate."""
    return [
        call.model_copy(
            update={
                "output_tokens": math.ceil(call.output_chars / CHARS_PER_TOKEN),
                "output_tokens_estimated": True,
            }
        )
        if call.output_tokens is None and call.output_chars is not None
        else call
        for call in calls
    ]


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


@dataclass(frozen=True)
class BuildRequest:
    """What a backend is built from: the run's spec, the backend's own options (validated
    from ``spec.backend``; building may fill in defaults it resolves, which the run then
    stores), the suite, and the scripted model's name when the suite plays the model itself
    (localweb without ``--provider``)."""

    spec: RunSpec
    options: Options
    suite: SuiteDef
    scripted_model: str | None = None
    # The backend settings the manifest of the run being resumed recorded (None for a new
    # run): a backend whose defaults changed over time reads what an old run used.
    resumed_settings: dict[str, Any] | None = None


@dataclass(frozen=True)
class BackendDef:
    """A backend family as the runner and the command layer know it: its options, how to
    build it, and its defaults. Each backend module defines one (``DEFINITION``) and
    registers it under ``[project.entry-points."agent_benchmarks.backends"]``."""

    # The runner's name in a spec and a sweep ("native", "mcp", "chat").
    kind: str
    # How it is named in messages and the run command's description.
    title: str
    options: type[Options]
    # The backend, ready (binaries found, keys checked): an InputError names what is wrong.
    build: Callable[[BuildRequest], Backend]
    # Where a new run's folder goes by default: results/<suite>/<stamp> for the native
    # runner, results/<suite>-mcp/<server>/<stamp>, ...
    run_dir: Callable[[SuiteDef, Options], Path]
    prog_suffix: str = "-run"  # the console script is <suite><suffix>
    # The option that picks this runner's variant, as a sweep's stack names it
    # ("mcp:playwright" is --backend playwright; "chat:lightpanda" is --engine lightpanda).
    variant: str | None = None
    # How a sweep's "provider/model" becomes flags: "split" (--provider P --model M) or
    # "joined" (--model provider/model, agent-browser chat's own form).
    model_form: Literal["split", "joined"] = "split"
    # This runner's default --timeout; a suite whose own default is shorter keeps it
    # (localweb: local pages). None: the suite's default.
    default_timeout_s: float | None = None
    # This runner's default --memory-max-mb (None: no cap unless asked).
    default_memory_max_mb: int | None = None
    # Whether the runner can set the browser's User-Agent (--user-agent).
    user_agent: bool = False
    # What each attempt gets to itself, written to the manifest (settings.isolation).
    isolation: str | None = None
    # Answers an informational option before any task is loaded (claude-mcp:
    # --list-tools): an exit status, or None to run as usual.
    inform: Callable[[BuildRequest], int | None] | None = None
    # Whether a suite's retry_empty_once applies to this runner (upstream did it natively).
    empty_retry: bool = False
    # The prompt the dataset suites run with on this runner under --prompt standard
    # (agent-browser chat: the answer alone); None: the suite's own. A named variant is
    # always the suite's.
    dataset_prompt: Callable[[SuiteDef], SuitePrompt] | None = None

    def timeout_for(self, suite: SuiteDef) -> float:
        if self.default_timeout_s is None:
            return suite.default_timeout_s
        return min(self.default_timeout_s, suite.default_timeout_s)


def message_with_attachments(prepared: PreparedTask) -> str:
    """The task's message for an agent CLI that takes no files (Claude Code, Codex): each
    attachment's text goes into it, or a line naming it; the row's attachment records say
    which (``given_to_agent``)."""
    if not prepared.details.get("attachments"):
        return prepared.text
    block, records = message_attachments(prepared.details["attachments"])
    prepared.details["attachments"] = records
    return f"{prepared.text}\n\n{block}"
