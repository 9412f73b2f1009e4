"""Typed, versioned records: everything the harness persists.

A run directory holds ``manifest.json`` (one :class:`Manifest`), ``predictions.jsonl``
(one :class:`PredictionRow` per attempt) and, once graded, ``scores.json`` (one
:class:`Scores`). Every record carries ``schema_version`` so a reader can tell which shape
it holds; bump it whenever a field changes meaning or is removed.

Tasks come in two shapes on purpose: :class:`Task` (what a dataset loader produces, gold
included) and :class:`TaskInput` (what a backend receives). ``TaskInput`` has no field that
could hold the gold and forbids extra fields, so leaking the answer to an agent is a type
error rather than a code-review catch.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
)

SCHEMA_VERSION = 1

# A suite's registered name (agent_benchmarks.spec.suites): any lowercase identifier, so that a
# suite added later is one package and its entry point, not an edit here.
Suite = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]
# budget: the harness ended the attempt when it went past the run's budget (steps, tokens
# or dollars): a wrong answer, like empty, never an infrastructure failure.
Status = Literal["ok", "empty", "budget", "timeout", "error"]
Mode = Literal["live", "recorded", "scaffold"]

# Statuses that say the infrastructure failed rather than the agent answering wrongly.
INFRA_STATUSES: frozenset[str] = frozenset({"timeout", "error"})


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class SuiteFields(_Record):
    """Per-suite descriptive fields, shared flat by tasks and prediction rows."""

    level: int | None = None  # GAIA
    file_name: str | None = None  # GAIA attachment name ("" in the dataset means none)
    difficulty: str | None = None  # AssistantBench, WebBench (HITL subset)
    start_url: str | None = None  # WebBench, localweb
    web_name: str | None = None  # WebBench: the site (host, lowercased, no "www.")
    category: str | None = None  # WebBench (READ), localweb group

    def suite_fields(self) -> dict[str, Any]:
        values = self.__dict__  # read directly: this runs once per row graded
        return {name: values[name] for name in SUITE_FIELD_NAMES}


SUITE_FIELD_NAMES: tuple[str, ...] = tuple(SuiteFields.model_fields)


class TaskInput(SuiteFields):
    """What a backend is given. Deliberately has no gold field: see the module docstring."""

    schema_version: int = SCHEMA_VERSION
    suite: Suite
    id: str
    question: str
    attachment_path: Path | None = None


class Task(SuiteFields):
    """One benchmark task as loaded from its dataset, gold answer included."""

    schema_version: int = SCHEMA_VERSION
    suite: Suite
    id: str
    question: str
    gold: str | None = None  # None where the suite has no reference answer (WebBench)
    attachment_path: Path | None = None

    def to_input(self) -> TaskInput:
        return TaskInput(
            suite=self.suite,
            id=self.id,
            question=self.question,
            attachment_path=self.attachment_path,
            **self.suite_fields(),
        )


class ToolCall(_Record):
    """One tool call an agent made, in order."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    latency_ms: float | None = None
    page_url: str | None = None
    http_status: int | None = None
    error: str | None = None
    result_bytes: int | None = None
    # The text the tool returned (truncated by the backend); the WebBench judge reads it.
    output: str | None = None
    # The reply's size as the model got it, before any truncation above: characters, and
    # tokens (the provider's count where its per-call usage isolates the reply, else
    # characters / 4 with ``output_tokens_estimated`` true). None in rows from before.
    output_chars: int | None = None
    output_tokens: int | None = None
    output_tokens_estimated: bool | None = None


class Usage(_Record):
    """Model usage of one attempt. ``estimated`` is True when counts come from characters / 4."""

    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    cost_usd: float | None = None
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
            + self.output_tokens
        )


class RoleUse(_Record):
    """What one role's processes (the engine, the agent, the MCP server) used in one
    attempt: sampled (isolation/resources.py)."""

    peak_pss_bytes: int = 0  # the largest sum of the role's PSS in one sample
    cpu_user_s: float = 0.0
    cpu_system_s: float = 0.0
    processes: int = 0  # distinct processes seen
    programs: list[str] = Field(default_factory=list)  # their executables' names
    note: str | None = None  # what a shared role holds (engine+agent: one process)

    @property
    def cpu_s(self) -> float:
        return self.cpu_user_s + self.cpu_system_s


class Fetched(_Record):
    """What the browser fetched in one attempt, where something saw its requests (the
    recording proxy, the localweb site's request log); else ``not_measured`` says why and
    the counts are None, never zero."""

    source: str | None = None
    requests: int | None = None
    bytes: int | None = None  # response bodies
    pages: int | None = None  # HTML documents answered (2xx)
    not_measured: str | None = None


class ResourceUse(_Record):
    """What one attempt cost the machine (isolation/resources.py says how each figure is
    measured). A figure that is None was not measured."""

    # The attempt's processes together: its cgroup's own peak (peak_source names the
    # counter) where it has one, else the largest PSS sum of one sample.
    peak_bytes: int | None = None
    peak_source: str | None = None
    pss_peak_bytes: int | None = None  # the largest PSS sum of one sample, always sampled
    cpu_user_s: float | None = None
    cpu_system_s: float | None = None
    roles: dict[str, RoleUse] = Field(default_factory=dict)
    samples: int = 0
    interval_s: float | None = None
    sampler_cpu_s: float | None = None  # the sampler's own CPU time in this attempt
    machine: str | None = None  # the kind of machine it ran on (Machine.kind)
    fetched: Fetched | None = None

    @property
    def cpu_s(self) -> float | None:
        if self.cpu_user_s is None or self.cpu_system_s is None:
            return None
        return self.cpu_user_s + self.cpu_system_s


class PredictionRow(SuiteFields):
    """One attempt at one task: a line of ``predictions.jsonl``."""

    schema_version: int = SCHEMA_VERSION
    id: str
    suite: Suite
    task: str
    gold: str | None = None
    prediction: str | None = None
    status: Status
    # Why an error row failed: timeout, crash, oom, model_api, backend, harness, ...
    error_class: str | None = None
    error: str | None = None
    duration_s: float = 0.0
    timed_out: bool = False
    returncode: int | None = None
    attempt: int = Field(default=1, ge=1)
    backend: str
    trace: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stderr_tail: str = ""
    # Backend-specific facts that do not fit above (answer extraction, attachments handling,
    # permission denials, ...). Kept as data so graders and reports can show them.
    details: dict[str, Any] = Field(default_factory=dict)
    # What the attempt cost the machine; None in rows from before it was measured.
    resources: ResourceUse | None = None

    @property
    def is_infra_failure(self) -> bool:
        return self.status in INFRA_STATUSES

    @model_serializer(mode="wrap")
    def _leave_out_unmeasured(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A row without resource figures is written as rows were before they existed.
        data = handler(self)
        if data.get("resources", 0) is None:
            del data["resources"]
        return data


class DatasetSource(_Record):
    """Where tasks came from: the Hub (id, config, revision), a local file (path, sha256), or
    bundled with the harness (localweb: sha256 of its tasks and contracts; WebBench: the
    shipped copy of the Hub table, with ``hf_id`` naming what it copies)."""

    kind: Literal["hub", "file", "bundled"]
    hf_id: str | None = None
    config: str | None = None
    revision: str | None = None
    path: str | None = None
    sha256: str | None = None
    note: str | None = None  # why this source was used, when it was not the one asked for


class RunSession(_Record):
    """One invocation that worked on a run: the first, then one per ``--resume``."""

    started_at: str
    finished_at: str | None = None
    argv: list[str] = Field(default_factory=list)  # secrets redacted
    planned: int = 0  # attempts this session set out to run
    completed: int = 0  # rows it wrote
    retried: int = 0  # infrastructure failures it retried
    interrupted: bool = False
    # Where the time went: wall clock, time workers spent in attempts, and time the agent
    # processes ran. wall * workers - agent_seconds is the harness's overhead.
    wall_seconds: float | None = None
    busy_seconds: float | None = None
    agent_seconds: float | None = None
    git_sha: str | None = None
    git_dirty: bool | None = None


class Machine(_Record):
    """The machine a run's attempts ran on. Resource figures (memory, CPU time, and wall
    time with them) compare only between machines of one kind: the same CPU model, cores,
    memory and kernel."""

    cpu_model: str
    cores: int
    memory_bytes: int
    kernel: str

    @property
    def kind(self) -> str:
        gib = self.memory_bytes / (1 << 30)
        return f"{self.cpu_model}, {self.cores} cores, {gib:.0f} GiB, Linux {self.kernel}"

    @property
    def kind_id(self) -> str:
        """A short name of :attr:`kind`, which each row's resources carry."""
        return hashlib.sha256(self.kind.encode()).hexdigest()[:12]


class Manifest(_Record):
    """``manifest.json``: the provenance of a run, written beside its predictions."""

    schema_version: int = SCHEMA_VERSION
    suite: Suite
    split: str
    dataset: DatasetSource
    selection: dict[str, Any] = Field(default_factory=dict)
    task_ids: list[str] = Field(default_factory=list)
    backend: str
    provider: str | None = None
    model: str | None = None
    argv: list[str] = Field(default_factory=list)  # secrets redacted
    started_at: str
    finished_at: str | None = None
    harness_version: str
    git_sha: str | None = None
    git_dirty: bool | None = None
    programs: dict[str, str] = Field(default_factory=dict)  # name -> version (and sha256)
    workers: int = 1
    timeout_s: float | None = None
    repeat: int = 1
    mode: Mode
    settings: dict[str, Any] = Field(default_factory=dict)  # budgets, fault knobs, blocks...
    sessions: list[RunSession] = Field(default_factory=list)
    # The run spec (agent_benchmarks.spec.run_spec.RunSpec) the run started from, as built from its
    # command line or sweep cell; None for runs from before it was stored.
    spec: dict[str, Any] | None = None
    # The machine its attempts ran on (the driver, on a cluster: its rows name each node's
    # kind); None for runs from before it was recorded.
    machine: Machine | None = None

    @model_serializer(mode="wrap")
    def _leave_out_no_spec(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A run from before the spec (or the machine) was stored writes what it wrote then
        # (its scores.json embeds this record byte for byte).
        data = handler(self)
        for name in ("spec", "machine"):
            if data.get(name, 0) is None:
                del data[name]
        return data


class TaskScore(SuiteFields):
    """One graded attempt in ``scores.json``."""

    id: str
    attempt: int = 1
    score: float
    correct: bool
    status: Status
    error_class: str | None = None
    prediction: str | None = None
    gold: str | None = None
    duration_s: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    # Grader-specific facts: why a score is 0, judge verdict and reasoning, failed clauses.
    details: dict[str, Any] = Field(default_factory=dict)


class UsageSummary(_Record):
    totals: Usage
    per_task_mean: Usage
    n_estimated_rows: int = 0


class FailedWithAnswer(_Record):
    """Attempts that timed out or failed after printing an answer, graded on that answer."""

    n: int = 0
    n_correct: int = 0
    ids: list[str] = Field(default_factory=list)  # one per attempt, in per_task order


class Scores(_Record):
    """``scores.json``: provenance first, then the numbers, then every graded attempt."""

    schema_version: int = SCHEMA_VERSION
    manifest: Manifest | None
    suite: Suite
    predictions_path: str
    predictions_sha256: str
    grader: dict[str, Any] = Field(default_factory=dict)
    n_tasks: int
    n_rows: int
    accuracy_strict: float
    metrics: dict[str, Any] = Field(default_factory=dict)
    by_group: dict[str, dict[str, Any]] = Field(default_factory=dict)
    n_answered: int
    n_timeouts: int
    n_errors: dict[str, int] = Field(default_factory=dict)
    accuracy_on_completed: float | None
    n_completed: int
    # None in a scores.json written before failed attempts' answers were graded.
    failed_with_answer: FailedWithAnswer | None = None
    # Upstream's matching, keys and denominator (the suites' upstream_match.py and
    # scoring/upstream_view.py), labelled; None
    # for localweb (upstream has no such suite) and in files written before it existed.
    upstream_view: dict[str, Any] | None = None
    attempts: dict[str, Any] = Field(default_factory=dict)
    usage: UsageSummary
    duration_s: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    # Set for runs another harness wrote (``{"imported": "upstream", ...}``): where they came
    # from, what their manifest said, and what they do not record (see upstream.py).
    provenance: dict[str, Any] | None = None
    # A run through the web archive's proxy (--web record|replay): its requests and, when
    # replayed, the archive's misses (scoring/scorecard.py WebTotals); None on the live web.
    web: dict[str, Any] | None = None
    per_task: list[TaskScore] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _leave_out_live_web(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A run on the live web writes scores.json as it did before recorded web existed.
        data = handler(self)
        if data.get("web", 0) is None:
            del data["web"]
        return data
