"""The scoreboard: one row per compared run (a stack), its evidence, and the composite.

Runs are grouped by suite (rows of different suites are never ranked together), and read
in one score view (official or upstream-comparable, see ``load.in_view``): a report never
mixes them. Per row:

- success rate over every selected attempt: timeouts, errors and missing rows count as
  failures and are reported by class, never dropped from the denominator;
- tokens per success: all tokens of all attempts (retried ones included: they were spent)
  divided by the successes, exact and estimated counts kept apart (schema.TokenSummary);
- cost per success, and the expected cost of one attempt with failures included;
- median and p90 duration, median tool calls, contaminated rows, calls outside the browser
  that Claude Code refused (rows with any, and calls: nothing ran, so they taint nothing),
  leak-audit hits;
- the success mean with its bootstrap interval over tasks, pass@k and pass^k;
- headline eligibility (eligibility.py).

The composite (:func:`composite_scores`) weighs four components, each min-max normalised
across the compared rows of a suite so the best row gets 1 and the worst 0: success
(higher is better), tokens per success, median duration and median tool calls (lower is
better). A row without a value for a component (no success, so no tokens per success)
gets 0 for it. Tokens per success is left out of the composite, its weight spread over the
rest, when rows count tokens differently (exact against estimated, mixed or missing):
ranking an estimate against an exact count would be mixing them silently.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from agent_benchmarks import __version__
from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import TaskScore
from agent_benchmarks.report import stats
from agent_benchmarks.report.audit import audit_run
from agent_benchmarks.report.eligibility import (
    HEADLINE_RULE,
    Candidate,
    assess,
    budgets_of,
    web_of,
)
from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.recovery import RECOVERY_RULE, fault_of, recovery_view
from agent_benchmarks.report.resources import peak_sources, resource_summary
from agent_benchmarks.report.rows import RowSummary
from agent_benchmarks.report.schema import (
    Breakdown,
    ComparisonReport,
    CompositeInfo,
    CostSummary,
    Eligibility,
    GroupCell,
    LeakAudit,
    PairedDiff,
    ScoreView,
    StackDiagnostics,
    StackRow,
    SuiteComparison,
    TaskCell,
    TaskLine,
    TokenBasis,
    TokenSummary,
    ToolStats,
    Winner,
)
from agent_benchmarks.report.stacks import stack_of
from agent_benchmarks.spec.provenance import utc_now

COMPONENTS = ("success", "tokens", "duration", "tool_calls")
DEFAULT_WEIGHTS = {"success": 0.50, "tokens": 0.25, "duration": 0.15, "tool_calls": 0.10}
BREAKDOWN_FIELDS = ("level", "difficulty", "web_name", "category")
_HIGHER_IS_BETTER = {"success": True, "tokens": False, "duration": False, "tool_calls": False}
_TIE = 1e-9


def parse_weights(text: str) -> dict[str, float]:
    """``success=50,tokens=25,...``: the weights listed (the others are 0), scaled to sum 1."""
    weights = dict.fromkeys(COMPONENTS, 0.0)
    seen: set[str] = set()
    for part in text.split(","):
        name, sep, value = (p.strip() for p in part.partition("="))
        if not sep or name not in COMPONENTS:
            raise InputError(
                f"--weights {text!r}: expected NAME=NUMBER,... with names from "
                f"{', '.join(COMPONENTS)}; got {part.strip()!r}"
            )
        if name in seen:
            raise InputError(f"--weights {text!r}: {name} given twice")
        seen.add(name)
        try:
            number = float(value)
        except ValueError:
            raise InputError(f"--weights {text!r}: {name}={value!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise InputError(f"--weights {text!r}: {name} must be 0 or more, got {value}")
        weights[name] = number
    total = sum(weights.values())
    if total <= 0:
        raise InputError(f"--weights {text!r}: at least one weight must be above 0")
    return {name: w / total for name, w in weights.items()}


# --- the composite ----------------------------------------------------------------------------


@dataclass
class CompositeInput:
    key: str
    success: float
    tokens_per_success: float | None
    tokens_basis: TokenBasis
    duration_median_s: float | None
    tool_calls_median: float | None

    def value(self, component: str) -> float | None:
        return {
            "success": self.success,
            "tokens": self.tokens_per_success,
            "duration": self.duration_median_s,
            "tool_calls": self.tool_calls_median,
        }[component]


def _normalise(values: list[float | None], higher_is_better: bool) -> list[float]:
    known = [v for v in values if v is not None]
    if not known:
        return [0.0] * len(values)
    lo, hi = min(known), max(known)
    out = []
    for v in values:
        if v is None:
            out.append(0.0)
        elif hi == lo:
            out.append(1.0)  # nothing to tell the rows apart: all equally good
        else:
            out.append((v - lo) / (hi - lo) if higher_is_better else (hi - v) / (hi - lo))
    return out


def composite_scores(
    inputs: Sequence[CompositeInput], weights: dict[str, float]
) -> tuple[dict[str, tuple[float | None, dict[str, float]]], CompositeInfo]:
    """Composite per row (and its normalised parts), with the weights really applied."""
    left_out: dict[str, str] = {}
    bases = sorted({i.tokens_basis for i in inputs})
    comparable = len(bases) == 1 and bases[0] in ("exact", "estimated")
    if weights.get("tokens", 0) > 0 and inputs and not comparable:
        left_out["tokens"] = (
            f"rows count tokens differently ({', '.join(bases)}); exact and estimated "
            "counts are not ranked against each other"
        )
    used = {c: w for c, w in weights.items() if c not in left_out and w > 0}
    total = sum(used.values())
    info = CompositeInfo(
        requested_weights=dict(weights),
        weights={c: (used[c] / total if c in used else 0.0) for c in COMPONENTS},
        left_out=left_out,
    )
    parts_by_component = {
        c: _normalise([i.value(c) for i in inputs], _HIGHER_IS_BETTER[c]) for c in used
    }
    results: dict[str, tuple[float | None, dict[str, float]]] = {}
    for index, item in enumerate(inputs):
        parts = {c: parts_by_component[c][index] for c in used}
        score = sum(info.weights[c] * parts[c] for c in used) if total > 0 else None
        results[item.key] = (score, parts)
    return results, info


# --- one row ------------------------------------------------------------------------------------


def _is_usage_missing(row: RowSummary) -> bool:
    return row.usage.turns == 0 and row.usage.total_tokens == 0


def token_summary(rows: Iterable[RowSummary], successes: int) -> TokenSummary:
    rows = list(rows)
    counted = [r for r in rows if not _is_usage_missing(r)]
    exact_rows = [r for r in counted if not r.usage.estimated]
    estimated_rows = [r for r in counted if r.usage.estimated]
    exact = sum(r.usage.total_tokens for r in exact_rows)
    estimated = sum(r.usage.total_tokens for r in estimated_rows)
    basis: TokenBasis
    if not counted:
        basis = "missing"
    elif exact_rows and estimated_rows:
        basis = "mixed"
    else:
        basis = "estimated" if estimated_rows else "exact"

    def per_success(tokens: int, present: bool) -> float | None:
        return tokens / successes if present and successes else None

    return TokenSummary(
        total=exact + estimated,
        exact=exact,
        estimated=estimated,
        basis=basis,
        n_rows=len(rows),
        n_exact_rows=len(exact_rows),
        n_estimated_rows=len(estimated_rows),
        n_usage_missing_rows=len(rows) - len(counted),
        per_success=per_success(exact + estimated, bool(counted)),
        per_success_exact=per_success(exact, bool(exact_rows)),
        per_success_estimated=per_success(estimated, bool(estimated_rows)),
    )


def cost_summary(rows: Sequence[RowSummary], successes: int, attempts: int) -> CostSummary:
    known = [r.usage.cost_usd for r in rows if r.usage.cost_usd is not None]
    without = sum(1 for r in rows if r.usage.total_tokens > 0 and r.usage.cost_usd is None)
    total = sum(known) if known else None
    logged = [r.search_credits for r in rows if r.search_credits is not None]
    credits = sum(logged) if logged else None
    return CostSummary(
        total_usd=total,
        per_success_usd=total / successes if total is not None and successes else None,
        per_attempt_usd=total / attempts if total is not None and attempts else None,
        n_rows_without_cost=without,
        complete=total is not None and without == 0,
        search_credits=credits,
        search_credits_per_success=credits / successes
        if credits is not None and successes
        else None,
        search_credits_per_attempt=credits / attempts if credits is not None and attempts else None,
    )


def diagnostics(key: str, rows: Sequence[RowSummary]) -> StackDiagnostics:
    # Latencies as arrays of doubles: a run's calls number in the millions.
    by_tool: dict[str, array] = defaultdict(lambda: array("d"))
    replies: dict[str, array] = defaultdict(lambda: array("d"))
    counts: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    estimated: Counter[str] = Counter()
    for row in rows:
        for name, tally in row.tools.items():
            counts[name] += tally.n_calls
            errors[name] += tally.n_errors
            if tally.latencies_ms:
                by_tool[name].extend(tally.latencies_ms)
            if tally.reply_tokens:
                replies[name].extend(tally.reply_tokens)
                estimated[name] += tally.n_reply_tokens_estimated
    tools = []
    for name, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        latencies = by_tool.get(name, array("d"))
        mean_ms = sum(latencies) / len(latencies) if latencies else None
        sized = replies.get(name, array("d"))
        tools.append(
            ToolStats(
                tool=name,
                n_calls=n,
                n_errors=errors[name],
                latency_median_ms=stats.median(latencies),
                latency_p90_ms=stats.quantile(latencies, 0.9),
                calls_per_minute=60_000 / mean_ms if mean_ms else None,
                reply_tokens_median=stats.median(sized),
                reply_tokens_p90=stats.quantile(sized, 0.9),
                n_replies_sized=len(sized),
                n_replies_estimated=estimated[name],
            )
        )
    n_calls = sum(counts.values())
    minutes = sum(r.duration_s for r in rows) / 60
    every = array("d")
    for latencies in by_tool.values():
        every.extend(latencies)
    return StackDiagnostics(
        key=key,
        n_calls=n_calls,
        latency_median_ms=stats.median(every),
        latency_p90_ms=stats.quantile(every, 0.9),
        calls_per_minute=n_calls / minutes if minutes > 0 else None,
        tools=tools,
    )


def _per_task(run: LoadedRun) -> dict[str, tuple[int, int]]:
    """(attempts, successes) per task, every selected attempt included."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for entry in run.entries:
        counts[entry.id][0] += 1
        counts[entry.id][1] += int(entry.correct)
    return {task: (n, c) for task, (n, c) in counts.items()}


def _contaminated(run: LoadedRun) -> int:
    return sum(1 for r in run.final if r.contaminated)


def _refused(run: LoadedRun) -> list[int]:
    """Per final row with any, its count of refused calls (the MCP audit's)."""
    return [r.n_refused_calls for r in run.final if r.n_refused_calls]


def _candidate(key: str, run: LoadedRun, leak: LeakAudit) -> Candidate:
    per_task = _per_task(run)
    return Candidate(
        key=key,
        run=run,
        stack=stack_of(run),
        n_tasks=len(per_task),
        min_attempts=min((n for n, _ in per_task.values()), default=0),
        n_contaminated=_contaminated(run),
        leak=leak,
    )


def _mode(run: LoadedRun) -> str:
    """The manifest's mode; ``imported`` for a run upstream's harness wrote (its manifest
    records none), ``unknown`` for a run without a manifest."""
    if run.manifest is not None:
        return run.manifest.mode
    return "imported" if run.imported_from else "unknown"


def build_row(
    candidate: Candidate,
    eligibility: Eligibility,
    *,
    seed: int,
    resamples: int,
    confidence: float,
    pss_peaks: bool = False,
) -> StackRow:
    run = candidate.run
    entries = run.entries
    per_task = _per_task(run)
    successes = sum(c for _, c in per_task.values())
    n_attempts = len(entries)
    rates = [c / n for _, (n, c) in sorted(per_task.items())]
    at_k, hat_k = stats.pass_curves(list(per_task.values()))
    durations = [r.duration_s for r in run.final]
    errors = Counter(e.error_class or "unknown" for e in entries if e.status == "error")
    refused = _refused(run)
    return StackRow(
        key=candidate.key,
        stack=candidate.stack,
        run_dir=str(run.run_dir),
        suite=run.suite,
        mode=_mode(run),
        graded_on_the_fly=run.graded_on_the_fly,
        n_tasks=candidate.n_tasks,
        attempts_per_task_min=candidate.min_attempts,
        attempts_per_task_max=max((n for n, _ in per_task.values()), default=0),
        n_attempts=n_attempts,
        n_successes=successes,
        success_rate=successes / n_attempts if n_attempts else 0.0,
        success=stats.bootstrap_mean(rates, seed=seed, resamples=resamples, level=confidence),
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        tokens=token_summary(run.rows, successes),
        cost=cost_summary(run.rows, successes, n_attempts),
        duration_median_s=stats.median(durations),
        duration_p90_s=stats.quantile(durations, 0.9),
        durations_s=durations,
        tool_calls_median=stats.median([r.n_calls for r in run.final]),
        n_timeouts=sum(1 for e in entries if e.status == "timeout"),
        errors_by_class=dict(sorted(errors.items())),
        n_contaminated=candidate.n_contaminated,
        n_rows_with_refused_calls=len(refused),
        n_refused_calls=sum(refused),
        n_budget=sum(1 for e in entries if e.status == "budget"),
        n_no_progress=sum(1 for r in run.final if r.no_progress),
        fault=(fault_of(run) or {}).get("kind"),
        leak=candidate.leak,
        web=web_of(run),
        budgets=budgets_of(run),
        eligibility=eligibility,
        resources=resource_summary(run, successes, pss_only=pss_peaks),
        warnings=list(run.warnings),
    )


# --- across rows ------------------------------------------------------------------------------


def _keys(runs: Sequence[LoadedRun]) -> list[str]:
    """The stack label; the run folder's name (then path) is added where labels collide."""
    labels = [stack_of(r).label for r in runs]
    keys = []
    for run, label in zip(runs, labels, strict=True):
        if labels.count(label) == 1:
            keys.append(label)
            continue
        same_name = sum(
            1
            for other, other_label in zip(runs, labels, strict=True)
            if other_label == label and other.run_dir.name == run.run_dir.name
        )
        keys.append(
            f"{label} [{run.run_dir.name}]" if same_name == 1 else f"{label} [{run.run_dir}]"
        )
    return keys


def _task_fields(runs: Sequence[LoadedRun]) -> dict[str, dict[str, str]]:
    fields: dict[str, dict[str, str]] = defaultdict(dict)
    for run in runs:
        for row in run.rows:
            for name in BREAKDOWN_FIELDS:
                value = getattr(row, name)
                if value is not None:
                    fields[row.id].setdefault(name, str(value))
    return fields


@dataclass
class _TaskRecords:
    """One task's graded attempts, rows (retried ones included) and final rows in a run."""

    entries: list[TaskScore] = field(default_factory=list)
    rows: list[RowSummary] = field(default_factory=list)
    final: list[RowSummary] = field(default_factory=list)


def _by_task(run: LoadedRun) -> dict[str, _TaskRecords]:
    """A run's records grouped by task once, each in its run's order (not one scan of the
    whole run per task: runs have thousands of tasks)."""
    out: dict[str, _TaskRecords] = defaultdict(_TaskRecords)
    for entry in run.entries:
        out[entry.id].entries.append(entry)
    for row in run.rows:
        out[row.id].rows.append(row)
    for row in run.final:
        out[row.id].final.append(row)
    return out


def _task_cell(records: _TaskRecords | None) -> TaskCell | None:
    if records is None or not records.entries:
        return None
    entries = records.entries
    tokens = token_summary(records.rows, successes=0)
    durations = [r.duration_s for r in records.final]
    return TaskCell(
        attempts=len(entries),
        successes=sum(1 for e in entries if e.correct),
        duration_median_s=stats.median(durations),
        tokens_mean=tokens.total / len(entries) if tokens.basis != "missing" else None,
        tokens_basis=tokens.basis,
        statuses=dict(Counter(e.status for e in entries)),
    )


def _task_lines(keyed: list[tuple[str, LoadedRun]]) -> list[TaskLine]:
    order: dict[str, None] = {}
    for _, run in keyed:
        order.update(dict.fromkeys(run.task_ids))
        order.update(dict.fromkeys(e.id for e in run.entries))
    fields = _task_fields([run for _, run in keyed])
    by_task = [(key, _by_task(run)) for key, run in keyed]
    return [
        TaskLine(
            task_id=task_id,
            fields=fields.get(task_id, {}),
            cells={key: _task_cell(records.get(task_id)) for key, records in by_task},
        )
        for task_id in order
    ]


def _breakdowns(keyed: list[tuple[str, LoadedRun]], tasks: list[TaskLine]) -> list[Breakdown]:
    out = []
    fields = {t.task_id: t.fields for t in tasks}
    for name in BREAKDOWN_FIELDS:
        if not any(name in f for f in fields.values()):
            continue
        groups: dict[str, dict[str, GroupCell]] = defaultdict(dict)
        for key, run in keyed:
            tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for entry in run.entries:
                value = fields.get(entry.id, {}).get(name)
                if value is not None:
                    tally[value][0] += 1
                    tally[value][1] += int(entry.correct)
            for value, (n, c) in tally.items():
                groups[value][key] = GroupCell(n=n, successes=c, rate=c / n)
        out.append(Breakdown(field=name, groups=dict(sorted(groups.items()))))
    return out


def paired_difference(
    a: tuple[str, LoadedRun],
    b: tuple[str, LoadedRun],
    seed: int,
    resamples: int,
    confidence: float,
) -> PairedDiff | None:
    rates_a = {t: c / n for t, (n, c) in _per_task(a[1]).items()}
    rates_b = {t: c / n for t, (n, c) in _per_task(b[1]).items()}
    common = sorted(rates_a.keys() & rates_b.keys())
    if not common:
        return None
    diff = stats.bootstrap_mean(
        [rates_a[t] - rates_b[t] for t in common], seed=seed, resamples=resamples, level=confidence
    )
    assert diff.low is not None and diff.high is not None
    if diff.low > 0:
        verdict = f"{a[0]} ahead"
    elif diff.high < 0:
        verdict = f"{b[0]} ahead"
    else:
        verdict = "within noise: the interval includes 0"
    return PairedDiff(
        a=a[0],
        b=b[0],
        n_common_tasks=len(common),
        diff=diff,
        distinguishable=diff.low > 0 or diff.high < 0,
        verdict=verdict,
    )


def _winners(rows: list[StackRow]) -> tuple[Winner | None, list[Winner]]:
    def best(candidates: list[StackRow], agent: str, model: str | None) -> Winner | None:
        scored = [r for r in candidates if r.composite is not None]
        if not scored:
            return None
        top = max(scored, key=lambda r: r.composite or 0.0)
        assert top.composite is not None
        tied = [
            r.key
            for r in scored
            if r is not top and abs((r.composite or 0.0) - top.composite) < _TIE
        ]
        return Winner(
            agent=agent,
            model=model,
            key=top.key,
            composite=top.composite,
            n_candidates=len(scored),
            tied_with=tied,
        )

    groups: dict[tuple[str, str | None], list[StackRow]] = defaultdict(list)
    for row in rows:
        groups[(row.stack.agent, row.stack.model)].append(row)
    per_group = [best(rs, agent, model) for (agent, model), rs in groups.items()]
    overall = best(rows, "any", None)
    return overall, [w for w in per_group if w is not None]


def compare_suite(
    suite: str,
    keyed: list[tuple[str, LoadedRun]],
    *,
    view: ScoreView,
    weights: dict[str, float],
    seed: int,
    resamples: int,
    confidence: float,
) -> SuiteComparison:
    candidates = [_candidate(key, run, audit_run(run)) for key, run in keyed]
    # Eligibility judges each row against all the others, so it needs them all first.
    verdicts = assess(candidates)
    # Peaks counted two ways (a cgroup's, sampled PSS) are not ranked against each other.
    pss_peaks = len(peak_sources(run for _, run in keyed)) > 1
    rows = [
        build_row(
            c,
            verdicts[c.key],
            seed=seed,
            resamples=resamples,
            confidence=confidence,
            pss_peaks=pss_peaks,
        )
        for c in candidates
    ]
    by_key = {row.key: row for row in rows}
    results, info = composite_scores(
        [
            CompositeInput(
                key=row.key,
                success=row.success_rate,
                tokens_per_success=row.tokens.per_success,
                tokens_basis=row.tokens.basis,
                duration_median_s=row.duration_median_s,
                tool_calls_median=row.tool_calls_median,
            )
            for row in rows
        ],
        weights,
    )
    for key, (score, parts) in results.items():
        by_key[key].composite = score
        by_key[key].composite_parts = parts
    rows.sort(key=lambda r: (r.composite is None, -(r.composite or 0.0), r.key))
    # From here on, tables follow the ranking (#1 first), as the scoreboard does.
    runs = dict(keyed)
    keyed = [(row.key, runs[row.key]) for row in rows]
    overall, winners = _winners(rows)
    tasks = _task_lines(keyed)
    recovery = recovery_view(keyed)
    paired = [
        diff
        for a, b in combinations(keyed, 2)
        if (diff := paired_difference(a, b, seed, resamples, confidence)) is not None
    ]
    return SuiteComparison(
        suite=suite,
        view=view,
        rows=rows,
        composite=info,
        overall_winner=overall,
        winners=winners,
        paired=paired,
        tasks=tasks,
        breakdowns=_breakdowns(keyed, tasks),
        diagnostics=[diagnostics(key, run.rows) for key, run in keyed],
        headline_rule=HEADLINE_RULE,
        recovery=recovery,
        recovery_rule=RECOVERY_RULE if recovery else "",
    )


def compare_runs(
    runs: Sequence[LoadedRun],
    *,
    weights: dict[str, float] | None = None,
    seed: int = stats.DEFAULT_SEED,
    resamples: int = stats.DEFAULT_RESAMPLES,
    confidence: float = stats.CONFIDENCE,
) -> ComparisonReport:
    """Compare loaded runs, suite by suite, in the score view they were read in."""
    weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
    views = sorted({run.view for run in runs})
    if len(views) > 1:
        raise InputError(
            f"runs read in different score views ({', '.join(views)}): a comparison counts "
            "success one way only"
        )
    view: ScoreView = runs[0].view if runs else "official"
    keyed = list(zip(_keys(runs), runs, strict=True))
    by_suite: dict[str, list[tuple[str, LoadedRun]]] = defaultdict(list)
    for key, run in keyed:
        by_suite[run.suite].append((key, run))
    groups = [
        compare_suite(
            suite,
            members,
            view=view,
            weights=weights,
            seed=seed,
            resamples=resamples,
            confidence=confidence,
        )
        for suite, members in by_suite.items()
    ]
    warnings = [f"{run.run_dir}: {w}" for run in runs for w in run.warnings]
    if len(groups) > 1:
        warnings.append(
            f"runs of {len(groups)} suites: each suite is compared on its own "
            f"({', '.join(g.suite for g in groups)})"
        )
    return ComparisonReport(
        generated_at=utc_now(),
        harness_version=__version__,
        inputs=[str(run.run_dir) for run in runs],
        seed=seed,
        resamples=resamples,
        confidence=confidence,
        view=view,
        groups=groups,
        warnings=warnings,
    )
