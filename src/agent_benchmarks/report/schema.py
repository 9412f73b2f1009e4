"""The typed, versioned records ``agent-benchmarks compare`` and ``leak-audit`` emit.

``--json-out`` writes one :class:`ComparisonReport`; ``leak-audit --json-out`` one
:class:`LeakAudit`. Both carry ``schema_version``: bump :data:`REPORT_SCHEMA_VERSION` when a
field changes meaning or is removed. The Markdown and HTML renderers read only these
records (plus the run folders, for the traces), so what a reader sees is what a machine gets.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REPORT_SCHEMA_VERSION = 1

TokenBasis = Literal["exact", "estimated", "mixed", "missing"]

# Whose verdicts a comparison counts as success: the benchmarks' official scorers, or the
# upstream-comparable view (scores.json's upstream_view). One report holds one view.
ScoreView = Literal["official", "upstream"]
SCORE_VIEWS: tuple[ScoreView, ...] = ("official", "upstream")
VIEW_TITLES: dict[str, str] = {
    "official": "official scorers",
    "upstream": "upstream's matching",
}
VIEW_NOTES: dict[str, str] = {
    "official": "Success is graded by each benchmark's official scorer (WebBench: the LLM "
    "judge); every selected task is in the denominator.",
    "upstream": "Success is graded as lightpanda-io/agent-benchmarks grades it (its lenient "
    "GAIA and AssistantBench matching, reimplemented; WebBench: the same judge's verdicts), "
    "not by the official scorers; the denominator is the rows in each run's file, so a "
    "selected task without a row is left out.",
}

# Why a row is not headline eligible; eligibility.py says what triggers each one.
ReasonCode = Literal[
    "mode",
    "task_set",
    "contracts",
    "surface",
    "search",
    "programs_unpinned",
    "model_unpinned",
    "too_few_tasks",
    "budgets_unrecorded",
    "budgets_differ",
    "contaminated",
    "leak",
    "imported",
    "web",
    "web_misses",
    "machine",
    "too_few_attempts",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Stack(_Model):
    """What is compared: the agent loop, the browser engine under it and the model."""

    backend: str  # as the manifest names it: lightpanda-native, claude-mcp/agent-browser, ...
    engine: str  # lightpanda, chromium, or unknown (see compare.engine_of)
    model: str | None
    agent: str  # what drives the loop: the backend's first part (claude-mcp, lightpanda-native)
    # The tool surface the model had (claude-mcp: upstream or strict); None where the
    # runner has no choice of surface.
    surface: str | None = None
    # The agent's web search (--search): native (the stack's own, as every run before the
    # choice existed), tavily (our web_search server), tavily via lightpanda (the native
    # runner's own search pinned to Tavily, with its own request) or none.
    search: str = "native"

    @property
    def label(self) -> str:
        surface = f" · {self.surface} surface" if self.surface else ""
        # Named when it is not the stack's own, which is what an unnamed search means.
        search = f" · search {self.search}" if self.search != "native" else ""
        return f"{self.backend}{surface}{search} · {self.engine} · {self.model or 'model unknown'}"


class Interval(_Model):
    """A point estimate with its percentile-bootstrap interval (None where undefined)."""

    estimate: float | None
    low: float | None
    high: float | None
    level: float = 0.95


class TokenSummary(_Model):
    """Tokens (input + cache read + cache write + output) over every row, retried ones too.

    Exact counts and counts estimated from characters / 4 are kept apart: ``basis`` says
    which kinds ``total`` adds up, and ``mixed`` means the figure holds both (the parts are
    in ``exact`` and ``estimated``). Rows with no usage at all are counted, not guessed.
    """

    total: int
    exact: int
    estimated: int
    basis: TokenBasis
    n_rows: int
    n_exact_rows: int
    n_estimated_rows: int
    n_usage_missing_rows: int  # zero turns and zero tokens: the backend reported nothing
    per_success: float | None  # None when nothing succeeded (infinitely many per success)
    per_success_exact: float | None
    per_success_estimated: float | None


class CostSummary(_Model):
    total_usd: float | None  # None: no row has a cost (model not in the price table)
    per_success_usd: float | None
    per_attempt_usd: float | None  # expected cost of one attempt, failures included
    n_rows_without_cost: int  # rows that used tokens but carry no cost
    complete: bool  # False: the figures are lower bounds (some rows have no cost)
    # Tavily credits the rows' web_search calls spent (details.search), a spend beside the
    # tokens' cost; None when no row records a search log.
    search_credits: int | None = None
    search_credits_per_success: float | None = None
    search_credits_per_attempt: float | None = None


class Reason(_Model):
    code: ReasonCode
    message: str


class Eligibility(_Model):
    """Whether a row may be quoted as a headline number, and every reason it may not.

    ``per_task_chart`` additionally needs enough attempts per task for a per-task claim;
    ``per_task_reasons`` holds only that extra reason (the headline reasons apply too).
    """

    headline: bool
    reasons: list[Reason] = Field(default_factory=list)
    per_task_chart: bool
    per_task_reasons: list[Reason] = Field(default_factory=list)


class LeakHit(_Model):
    task_id: str
    attempt: int
    call_index: int  # position of the tool call in the row's trace, from 0
    tool: str
    field: str  # page_url, or args.<path> for an argument
    value: str  # truncated
    kind: Literal["mirror", "local_cache", "task_id"]
    pattern: str


class LeakAudit(_Model):
    """Tool calls that reached a benchmark's answers, or named the task's id."""

    schema_version: int = REPORT_SCHEMA_VERSION
    run_dir: str
    suite: str
    n_rows: int
    n_calls: int
    patterns: list[str]
    # Task ids too generic to search for (short, or without both letters and digits).
    task_ids_not_checked: int
    hits: list[LeakHit] = Field(default_factory=list)
    flagged_tasks: list[str] = Field(default_factory=list)
    n_flagged_attempts: int = 0
    accuracy_strict: float | None = None  # None when the run is not graded
    accuracy_flagged_wrong: float | None = None


class ToolStats(_Model):
    tool: str  # MCP prefix (mcp__<server>__) removed so stacks line up
    n_calls: int
    n_errors: int
    latency_median_ms: float | None
    latency_p90_ms: float | None
    # Back-to-back calls of this tool that fit in a minute at its mean latency.
    calls_per_minute: float | None
    # Its replies' tokens per call (the "snapshot weight"), over the calls whose size the
    # rows record; how many of those counts are estimates (characters / 4).
    reply_tokens_median: float | None = None
    reply_tokens_p90: float | None = None
    n_replies_sized: int = 0
    n_replies_estimated: int = 0


class StackDiagnostics(_Model):
    key: str
    n_calls: int
    latency_median_ms: float | None
    latency_p90_ms: float | None
    # Tool calls per minute of attempt wall time: what decides how many fit in a budget.
    calls_per_minute: float | None
    tools: list[ToolStats] = Field(default_factory=list)


class WebSummary(_Model):
    mode: str = "live"
    archive_sha256: str | None = None
    archive_path: str | None = None
    n_requests: int | None = None
    n_misses: int | None = None
    miss_rate: float | None = None


class RoleSummary(_Model):
    """One role's share of a stack's attempts (the engine, the agent, the MCP server)."""

    role: str
    n_attempts: int  # measured attempts where the role had a process
    peak_median_bytes: float | None
    peak_p90_bytes: float | None
    cpu_s_median: float | None  # per attempt
    note: str | None = None  # what a shared role holds (engine+agent: one process)


class FetchedSummary(_Model):
    """What the stack's browser fetched, over the attempts where it was measured."""

    n_measured: int
    requests_median: float | None
    bytes_median: float | None
    pages_median: float | None
    bytes_per_success: float | None


class ResourceSummary(_Model):
    """What a stack's attempts cost the machine, from the rows' resource figures (every
    row, retried ones too: their cost was spent). Figures are None where not measured."""

    n_rows: int
    n_measured: int  # rows with memory and CPU figures
    # Where the peaks come from: a cgroup's counter, "pss-sampled", or "pss-sampled" for
    # every stack of a comparison whose rows' counters differ (peak_note says so).
    peak_source: str | None
    peak_note: str | None = None
    peak_median_bytes: float | None
    peak_p90_bytes: float | None
    # The peaks of every attempt over the successes: the memory a success took, failed
    # attempts included (as tokens per success counts theirs).
    memory_per_success_bytes: float | None
    cpu_s_total: float | None
    cpu_s_median: float | None  # per attempt
    cpu_s_per_success: float | None
    sampler_cpu_share: float | None  # the sampler's own CPU over the attempts' CPU
    machine: str | None  # the kind of machine (Machine.kind) the figures come from
    machine_memory_bytes: int | None
    # Attempts of this stack that fit in that machine's memory at once, at the p90 peak.
    fit_at_once: int | None
    roles: list[RoleSummary] = Field(default_factory=list)
    fetched: FetchedSummary | None = None  # None: no row measured it
    fetched_not_measured: str | None = None  # why, when no row did


class StackRow(_Model):
    key: str  # unique within the report: the stack label (plus the run folder if repeated)
    stack: Stack
    run_dir: str
    suite: str
    mode: str  # live, recorded, scaffold, or unknown (no manifest)
    graded_on_the_fly: bool
    n_tasks: int
    attempts_per_task_min: int
    attempts_per_task_max: int
    n_attempts: int
    n_successes: int
    success_rate: float  # successes / attempts; timeouts, errors and missing rows count
    success: Interval  # mean of per-task success, bootstrap over tasks
    pass_at_k: dict[int, float] = Field(default_factory=dict)
    pass_hat_k: dict[int, float] = Field(default_factory=dict)
    tokens: TokenSummary
    cost: CostSummary
    duration_median_s: float | None
    duration_p90_s: float | None
    durations_s: list[float] = Field(default_factory=list)  # per attempt, for distributions
    tool_calls_median: float | None
    n_timeouts: int
    errors_by_class: dict[str, int] = Field(default_factory=dict)
    n_contaminated: int
    # Calls outside the browser that Claude Code refused (nothing ran): rows with any, and
    # calls. Shown beside contamination; they never make a row ineligible.
    n_rows_with_refused_calls: int = 0
    n_refused_calls: int = 0
    leak: LeakAudit
    # The web it browsed (--web): mode live, record or replay, and for a replay the
    # archive's sha256 and the requests it could not answer (scores.json's web).
    web: WebSummary = Field(default_factory=lambda: WebSummary())
    budgets: dict[str, float | str | None] = Field(default_factory=dict)  # "uncapped" or None
    eligibility: Eligibility
    # What its attempts cost the machine; None when no row measured it (older runs).
    resources: ResourceSummary | None = None
    composite: float | None = None
    composite_parts: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)


class CompositeInfo(_Model):
    requested_weights: dict[str, float]
    weights: dict[str, float]  # after leaving out components that cannot be compared
    left_out: dict[str, str] = Field(default_factory=dict)  # component -> why


class Winner(_Model):
    agent: str
    model: str | None
    key: str
    composite: float
    n_candidates: int
    tied_with: list[str] = Field(default_factory=list)


class PairedDiff(_Model):
    """Per-task success of ``a`` minus ``b`` on the tasks both ran, bootstrap over tasks."""

    a: str
    b: str
    n_common_tasks: int
    diff: Interval
    distinguishable: bool  # the interval excludes 0
    verdict: str


class TaskCell(_Model):
    attempts: int
    successes: int
    duration_median_s: float | None
    tokens_mean: float | None  # per attempt, retried rows included
    tokens_basis: TokenBasis
    statuses: dict[str, int] = Field(default_factory=dict)


class TaskLine(_Model):
    task_id: str
    fields: dict[str, str] = Field(default_factory=dict)  # level, difficulty, site, group
    cells: dict[str, TaskCell | None] = Field(default_factory=dict)  # key -> cell


class GroupCell(_Model):
    n: int
    successes: int
    rate: float


class Breakdown(_Model):
    field: str
    groups: dict[str, dict[str, GroupCell]] = Field(default_factory=dict)  # value -> key -> cell


class SuiteComparison(_Model):
    suite: str
    view: ScoreView = "official"
    rows: list[StackRow]
    composite: CompositeInfo
    overall_winner: Winner | None = None
    winners: list[Winner] = Field(default_factory=list)  # per agent and model
    paired: list[PairedDiff] = Field(default_factory=list)
    tasks: list[TaskLine] = Field(default_factory=list)
    breakdowns: list[Breakdown] = Field(default_factory=list)
    diagnostics: list[StackDiagnostics] = Field(default_factory=list)
    # Budgets and thresholds the eligibility rules applied, for the reader.
    headline_rule: str = ""


class ComparisonReport(_Model):
    schema_version: int = REPORT_SCHEMA_VERSION
    generated_at: str
    harness_version: str
    inputs: list[str]
    seed: int
    resamples: int
    confidence: float
    view: ScoreView = "official"
    groups: list[SuiteComparison]
    warnings: list[str] = Field(default_factory=list)
