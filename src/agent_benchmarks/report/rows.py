"""What reports keep of a prediction row: :func:`summarise_row` is the one place a row
becomes its :class:`RowSummary`, and every report reads the summary.

A real row can carry hundreds of tool calls with their outputs (megabytes); a report shows
a handful of figures per row, per tool counts and latencies, and the leak audit's hits. So
a run is read one row at a time and only this is kept, whatever the size of its
predictions file. The HTML report's per-attempt traces show every call: they read the row
again from its place in the file (``LoadedRun.read_row``), one row at a time.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from agent_benchmarks.episode.progress import progress_signal
from agent_benchmarks.records.schema import ResourceUse, Status
from agent_benchmarks.records.storage import RowRead
from agent_benchmarks.report.leaks import mirror_patterns, row_hits
from agent_benchmarks.report.schema import LeakHit
from agent_benchmarks.scoring.scorecard import failed_with_answer


def _tool_name(name: str) -> str:
    """``mcp__browser__goto`` -> ``goto``: the same tool lines up across stacks."""
    return name.split("__", 2)[2] if name.startswith("mcp__") and name.count("__") >= 2 else name


@dataclass(slots=True)
class ToolTally:
    """One tool's calls in one row: how many, how many failed, their latencies in order,
    and their replies' sizes (tokens, and how many of those were estimated)."""

    n_calls: int = 0
    n_errors: int = 0
    latencies_ms: array = field(default_factory=lambda: array("d"))  # of float ("d")
    reply_tokens: array = field(default_factory=lambda: array("d"))
    n_reply_tokens_estimated: int = 0


@dataclass(slots=True, frozen=True)
class RowResources:
    """What reports read of a row's :class:`~agent_benchmarks.records.schema.ResourceUse`."""

    peak_bytes: int | None
    pss_peak_bytes: int | None
    peak_source: str | None
    cpu_s: float | None
    sampler_cpu_s: float | None
    machine: str | None
    roles: dict[str, tuple[int, float]]  # role -> (peak PSS bytes, CPU seconds)
    notes: dict[str, str]  # role -> what a shared role holds
    # (requests, bytes, pages) the browser fetched; None where not measured.
    fetched: tuple[int, int, int] | None


def row_resources(use: ResourceUse | None) -> RowResources | None:
    if use is None:
        return None
    fetched = use.fetched
    counts = None
    if fetched is not None and fetched.source is not None:
        counts = (fetched.requests or 0, fetched.bytes or 0, fetched.pages or 0)
    return RowResources(
        peak_bytes=use.peak_bytes,
        pss_peak_bytes=use.pss_peak_bytes,
        peak_source=use.peak_source,
        cpu_s=use.cpu_s,
        sampler_cpu_s=use.sampler_cpu_s,
        machine=use.machine,
        roles={name: (role.peak_pss_bytes, role.cpu_s) for name, role in use.roles.items()},
        notes={name: role.note for name, role in use.roles.items() if role.note},
        fetched=counts,
    )


@dataclass(slots=True, frozen=True)
class RowUsage:
    """What reports read of a row's :class:`~agent_benchmarks.records.schema.Usage`, by the same
    names (a pydantic Usage kept per row costs about ten times as much)."""

    total_tokens: int
    turns: int
    estimated: bool
    cost_usd: float | None


@dataclass(slots=True)
class RowSummary:
    """One prediction row as reports read it (see the module)."""

    id: str
    attempt: int
    suite: str
    backend: str
    status: Status
    duration_s: float
    usage: RowUsage
    # The breakdown fields (compare.BREAKDOWN_FIELDS), read by name.
    level: int | None
    difficulty: str | None
    web_name: str | None
    category: str | None
    # A timeout or error that printed an answer first (scorecard.failed_with_answer).
    failed_with_answer: bool
    # From details: the MCP audit's verdict and refused calls, the search log's credits
    # (None when the row has no search log).
    contaminated: bool
    n_refused_calls: int
    search_credits: int | None
    n_calls: int
    tools: dict[str, ToolTally]  # by _tool_name
    # The no-progress signal's patterns that crossed their threshold (details.progress;
    # read from the trace for rows written before it existed): empty when it moved on.
    no_progress: tuple[str, ...]
    # The episode's injected fault (details.fault): its kind and whether it fired; None for
    # a row of a run without --fault.
    fault_kind: str | None
    fault_fired: bool
    leak_hits: list[LeakHit]  # the leak audit of this row's calls (leaks.row_hits)
    # Where the row's line starts in predictions.jsonl, to read it again (the HTML traces).
    offset: int
    line_number: int
    resources: RowResources | None = None  # None: not measured (rows from before, or off)


def summarise_row(read: RowRead) -> RowSummary:
    row = read.row
    tools: dict[str, ToolTally] = {}
    for call in row.trace:
        name = _tool_name(call.name)
        tally = tools.get(name)
        if tally is None:
            tally = tools[name] = ToolTally()
        tally.n_calls += 1
        if call.error:
            tally.n_errors += 1
        if call.latency_ms is not None:
            tally.latencies_ms.append(call.latency_ms)
        if call.output_tokens is not None:
            tally.reply_tokens.append(call.output_tokens)
            tally.n_reply_tokens_estimated += bool(call.output_tokens_estimated)
    usage = row.usage
    refused = row.details.get("n_refused_calls")
    search = row.details.get("search")
    progress = row.details.get("progress")
    if not isinstance(progress, dict):
        progress = progress_signal(row.trace)
    fault = row.details.get("fault")
    fault = fault if isinstance(fault, dict) else {}
    return RowSummary(
        id=row.id,
        attempt=row.attempt,
        suite=row.suite,
        backend=row.backend,
        status=row.status,
        duration_s=row.duration_s,
        usage=RowUsage(
            total_tokens=usage.total_tokens,
            turns=usage.turns,
            estimated=usage.estimated,
            cost_usd=usage.cost_usd,
        ),
        level=row.level,
        difficulty=row.difficulty,
        web_name=row.web_name,
        category=row.category,
        failed_with_answer=failed_with_answer(row.status, row.prediction),
        contaminated=bool(row.details.get("contaminated")),
        # Only a positive count means calls were refused; anything else is none.
        n_refused_calls=refused if isinstance(refused, int) and refused > 0 else 0,
        search_credits=int(search.get("credits") or 0) if isinstance(search, dict) else None,
        n_calls=len(row.trace),
        tools=tools,
        no_progress=tuple(progress.get("signals") or ()),
        fault_kind=fault.get("kind"),
        fault_fired=fault.get("fired") is True,
        leak_hits=row_hits(row, mirror_patterns(row.suite)),
        offset=read.offset,
        line_number=read.line_number,
        resources=row_resources(row.resources),
    )
