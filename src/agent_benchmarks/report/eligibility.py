"""Headline eligibility: may a row's numbers be quoted, and if not, every reason why.

A row is headline eligible only when all of these hold (the reason code in brackets):

- [mode] its run is ``live`` or ``recorded``; scaffold runs (scripted models) and runs
  without a manifest never are;
- [task_set] it ran the same tasks as every row it is compared with;
- [contracts] under the same contracts: suite, split, dataset identity (hub id, config and
  revision, or file hash), grader identity (scorer, localweb contracts hash, judge model and
  prompt hash), system prompt hash and answer format, and localweb's fault knobs and the
  episode fault it injects (``--fault``; report/recovery.py sets faulted runs beside clean);
- [surface] with the same tool surface (``upstream`` or ``strict``) as every compared row
  that records one (Claude Code over MCP): a model offered more tools is not answering the
  same question;
- [search] with the same search (``--search``: native, tavily or none) as every compared
  row: a stack searching through another engine, or not at all, is not answering with the
  same tools either;
- [programs_unpinned] the manifest pins a version of every program the stack drives
  (:func:`stacks.driven_programs`: Claude Code, agent-browser, browser-use, the engine);
- [model_unpinned] an LLM row names its model, and not by a moving alias (``*latest*``,
  ``default``, ``auto``);
- [too_few_tasks] at least :data:`MIN_TASKS` tasks, for an aggregate claim;
- [budgets_unrecorded] an LLM row records its step, token and cost budgets (see
  :data:`BUDGET_KEYS`) and its wall-clock timeout;
- [budgets_differ] with the same budgets as every row it is compared with: a stack given
  more turns or time is not answering the same question;
- [contaminated] none of its rows called a tool outside its browser (the MCP audit);
- [leak] the leak audit found nothing;
- [web] on the same web as every compared row: all on the live web (recording through the
  proxy is the live web), or all replaying one web archive (the same sha256); a replayed
  row beside a live one, or two archives, are two different webs;
- [web_misses] a replayed run's misses (requests the archive could not answer, over every
  request the stack made) are at most :data:`MAX_MISS_RATE`: above it, the stack browsed a
  web the archive does not hold;
- [machine] its resource figures (memory, CPU, and the times with them) come from machines
  of one kind (CPU model, cores, memory, kernel: ``Manifest.machine``, each row's
  ``resources.machine``), the same as every compared row that records one: figures from
  different machines are not comparable;
- [imported] its rows were written by this harness, not converted on read from upstream's
  harness (lightpanda-io/agent-benchmarks), which records no task list, dataset revision,
  program versions, budgets or mode: such a run is shown for reference only.

A per-task chart additionally needs [too_few_attempts] at least
:data:`MIN_ATTEMPTS_PER_TASK` attempts per task (``--repeat``), so one task's rate means
something. The comparison rules are strict on purpose: when two rows differ, both lose
eligibility, since neither is "the" right one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_benchmarks.report.load import LoadedRun
from agent_benchmarks.report.resources import machine_kinds
from agent_benchmarks.report.schema import Eligibility, LeakAudit, Reason, Stack, WebSummary
from agent_benchmarks.report.stacks import driven_programs

MIN_TASKS = 10
# The share of a replayed run's requests the archive may fail to answer (each shown a 404):
# beyond it the replay is not the recorded web.
MAX_MISS_RATE = 0.02
MIN_ATTEMPTS_PER_TASK = 20
HEADLINE_MODES = ("live", "recorded")
# Where a manifest's settings may record a budget, first match wins: an explicit
# ``budgets`` block (the run's ``settings.budgets``, then ``settings.backend.budgets``, where
# the backends write theirs), then the backend's settings (and a ``limits`` block inside
# them, as agent-browser's chat loop records its hard-coded caps), then the run's flags.
# A budget the run declares it does not have (the program offers no such cap): recorded,
# so a reader knows, and compared like any value.
UNCAPPED = "uncapped"
BUDGET_KEYS: dict[str, tuple[str, ...]] = {
    "steps": ("max_turns", "max_steps", "max_model_requests"),
    "tokens": ("max_tokens", "max_total_tokens", "token_budget"),
    "cost_usd": ("max_cost_usd", "max_budget_usd", "cost_budget_usd"),
}
# Grader facts that describe one grading pass (verdict counts), not the grader itself.
_VOLATILE_GRADER_KEYS = frozenset({"judged"})
_MOVING_ALIASES = ("latest",)
_VAGUE_MODELS = frozenset({"default", "auto"})
_UNKNOWN_VERSIONS = frozenset({"", "unknown", "?", "none"})

HEADLINE_RULE = (
    "A row is headline eligible with: live or recorded mode; the same tasks, contracts, "
    "tool surface, search, budgets and web (live, or one replayed archive) as every compared "
    f"row; a replay's miss rate at most {MAX_MISS_RATE:.0%}; program versions and model id "
    "pinned; resource figures from one kind of machine; "
    "at least "
    f"{MIN_TASKS} tasks; step, token and cost budgets recorded (LLM rows); no contaminated "
    "rows; no leak-audit hits; not imported from another harness. "
    f"Per-task charts also need at least {MIN_ATTEMPTS_PER_TASK} attempts per task."
)


def web_of(run: LoadedRun) -> WebSummary:
    """The web a run browsed, from its manifest and its scores' totals."""
    settings = run.manifest.settings.get("web") if run.manifest is not None else None
    settings = settings if isinstance(settings, dict) else {}
    totals = (run.scores.web if run.scores is not None else None) or {}
    mode = str(settings.get("mode") or totals.get("mode") or "live")
    if mode != "replay":
        return WebSummary(mode=mode, n_requests=totals.get("n_requests"))
    archive = settings.get("archive") or totals.get("archive") or {}
    return WebSummary(
        mode=mode,
        archive_sha256=archive.get("sha256"),
        archive_path=archive.get("path"),
        n_requests=totals.get("n_requests"),
        n_misses=totals.get("n_misses"),
        miss_rate=totals.get("miss_rate"),
    )


def _machines_named(run: LoadedRun) -> str:
    machine = run.manifest.machine if run.manifest is not None else None
    return machine.kind if machine is not None else "machines its manifest does not name"


def _same_web(mine: WebSummary, theirs: WebSummary) -> bool:
    if "replay" not in (mine.mode, theirs.mode):
        return True  # live, and recording (the live web through the proxy)
    return mine.mode == theirs.mode and mine.archive_sha256 == theirs.archive_sha256


def _web_named(web: WebSummary) -> str:
    if web.mode != "replay":
        return "the live web"
    return f"archive {(web.archive_sha256 or 'unknown')[:12]}"


@dataclass
class Candidate:
    """What eligibility looks at for one compared row."""

    key: str
    run: LoadedRun
    stack: Stack
    n_tasks: int
    min_attempts: int
    n_contaminated: int
    leak: LeakAudit

    @property
    def is_llm(self) -> bool:
        m = self.run.manifest
        if m is not None and (m.model or m.provider):
            return True
        return any(r.usage.turns > 0 for r in self.run.rows)


def contract_of(run: LoadedRun) -> dict[str, Any]:
    """The conditions a row was graded under; rows compare only when these are equal."""
    grader = {
        k: v
        for k, v in (run.scores.grader if run.scores else {}).items()
        if k not in _VOLATILE_GRADER_KEYS
    }
    manifest = run.manifest
    if manifest is None:
        return {"suite": run.suite, "grader": grader, "manifest": None}
    dataset = manifest.dataset.model_dump()
    if dataset.get("sha256"):
        dataset.pop("path")  # where a file sits differs between machines; its hash does not
    session = manifest.settings.get("session")
    session = session if isinstance(session, dict) else {}
    return {
        "suite": manifest.suite,
        "split": manifest.split,
        "dataset": dataset,
        "grader": grader,
        "system_prompt_sha256": session.get("system_prompt_sha256"),
        "answer_format": session.get("answer_format"),
        "site": session.get("site"),
        # an episode's injected fault (localweb --fault): runs under different faults, or
        # one faulted and one not, answer different questions (the recovery view pairs them)
        "fault": session.get("fault"),
    }


def budgets_of(run: LoadedRun) -> dict[str, float | str | None]:
    """The wall-clock timeout and the step, token and cost budgets a manifest records:
    a number, :data:`UNCAPPED` where the manifest's ``budgets`` block declares that there is
    no such cap (the key present, null), or None where nothing says."""
    manifest = run.manifest
    if manifest is None:
        return {"timeout_s": None, **dict.fromkeys(BUDGET_KEYS)}
    budgets: dict[str, float | str | None] = {"timeout_s": manifest.timeout_s}
    declared = {k: v for block in _declared_blocks(manifest.settings) for k, v in block.items()}
    for budget, keys in BUDGET_KEYS.items():
        found = next(
            (block[k] for block in _budget_blocks(manifest.settings) for k in keys
             if block.get(k) is not None),
            None,
        )  # fmt: skip
        if found is not None:
            budgets[budget] = float(found)
        elif any(k in declared for k in keys):
            budgets[budget] = UNCAPPED
        else:
            budgets[budget] = None
    return budgets


def _declared_blocks(settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The explicit ``budgets`` blocks: the only ones where null declares a cap absent."""
    backend = settings.get("backend")
    backend_budgets = backend.get("budgets") if isinstance(backend, dict) else None
    return [b for b in (settings.get("budgets"), backend_budgets) if isinstance(b, dict)]


def _budget_blocks(settings: dict[str, Any]) -> list[dict[str, Any]]:
    blocks = _declared_blocks(settings)
    for source in ("backend", "flags"):
        block = settings.get(source)
        if isinstance(block, dict):
            blocks.append(block)
            if isinstance(block.get("limits"), dict):
                blocks.append(block["limits"])
    return blocks


def _model_problem(model: str | None, settings: dict[str, Any]) -> str | None:
    if not model:
        return "no model id in the manifest"
    backend = settings.get("backend")
    if (
        isinstance(backend, dict)
        and backend.get("model_is_alias")
        and backend.get("model") == model
    ):
        # An alias the agent resolves itself (Claude Code's ``sonnet``): pinned only by the
        # id the attempts recorded running as, and only if they all ran as one.
        resolved = backend.get("resolved_models") or []
        if len(resolved) == 1:
            return None
        if not resolved:
            return (
                f"model {model!r} is an alias the agent resolves itself, and the run recorded "
                "no model id it ran as"
            )
        return f"model {model!r} is an alias that ran as several ids: {', '.join(resolved)}"
    lowered = model.lower()
    if lowered in _VAGUE_MODELS or any(alias in lowered for alias in _MOVING_ALIASES):
        return f"model {model!r} is a moving alias, not a pinned model id"
    return None


def _unpinned_programs(candidate: Candidate) -> list[str]:
    programs = candidate.run.manifest.programs if candidate.run.manifest else {}
    wanted = driven_programs(candidate.stack)
    if not wanted:
        return [f"(cannot tell which programs {candidate.stack.backend} drives)"]
    return [p for p in wanted if str(programs.get(p, "")).strip().lower() in _UNKNOWN_VERSIONS]


def _set_difference(mine: set[str], theirs: set[str]) -> str:
    parts = []
    if mine - theirs:
        parts.append(f"{len(mine - theirs)} task(s) only here, e.g. {sorted(mine - theirs)[0]!r}")
    if theirs - mine:
        parts.append(f"{len(theirs - mine)} only there, e.g. {sorted(theirs - mine)[0]!r}")
    return "; ".join(parts)


@dataclass
class _Compared:
    """What one row is compared on against every other row, worked out once per row."""

    task_set: set[str]
    contract: dict[str, Any]
    budgets: dict[str, float | str | None]
    web: WebSummary
    machines: set[str]

    @classmethod
    def of(cls, run: LoadedRun) -> _Compared:
        return cls(
            task_set=set(run.task_ids),
            contract=contract_of(run),
            budgets=budgets_of(run),
            web=web_of(run),
            machines=machine_kinds(run),
        )


def assess(candidates: list[Candidate]) -> dict[str, Eligibility]:
    """Eligibility of every row against the others it is compared with."""
    compared = {c.key: _Compared.of(c.run) for c in candidates}
    result: dict[str, Eligibility] = {}
    for c in candidates:
        mine = compared[c.key]
        reasons = _provenance_reasons(c)
        for other in candidates:
            if other.key != c.key:
                reasons += _differences(c, mine, other, compared[other.key])
        reasons += _measurement_reasons(mine)
        reasons += _pinning_reasons(c, mine.budgets)
        reasons += _evidence_reasons(c)
        per_task = _per_task_reasons(c)
        result[c.key] = Eligibility(
            headline=not reasons,
            reasons=reasons,
            per_task_chart=not reasons and not per_task,
            per_task_reasons=per_task,
        )
    return result


def _provenance_reasons(c: Candidate) -> list[Reason]:
    """[imported] and [mode]: whether the run was made by this harness, for real."""
    reasons: list[Reason] = []
    mode = c.run.manifest.mode if c.run.manifest else None
    if c.run.imported_from:
        reasons.append(
            Reason(
                code="imported",
                message=f"imported from {c.run.imported_from}'s harness: no task list, "
                "dataset revision, program versions, budgets or mode recorded; shown for "
                "reference only",
            )
        )
    if mode is None and not c.run.imported_from:  # "imported" already says it
        reasons.append(Reason(code="mode", message="no manifest.json: mode unknown"))
    elif mode is not None and mode not in HEADLINE_MODES:
        reasons.append(
            Reason(code="mode", message=f"mode {mode}: only live or recorded runs count")
        )
    return reasons


def _differences(
    c: Candidate, mine: _Compared, other: Candidate, theirs: _Compared
) -> list[Reason]:
    """Every way row ``c`` is not answering the same question as ``other``."""
    found = (
        _task_set_difference(mine.task_set, theirs.task_set, other.key),
        _contract_difference(mine.contract, theirs.contract, other.key),
        _surface_difference(c.stack, other.stack, other.key),
        _search_difference(c.stack, other.stack, other.key),
        _web_difference(mine.web, theirs.web, other.key),
        _machine_difference(c, mine.machines, other, theirs.machines),
        _budget_difference(mine.budgets, theirs.budgets, other.key),
    )
    return [reason for reason in found if reason is not None]


def _task_set_difference(mine: set[str], theirs: set[str], other_key: str) -> Reason | None:
    if mine == theirs:
        return None
    diff = _set_difference(mine, theirs)
    return Reason(code="task_set", message=f"task set differs from {other_key}: {diff}")


def _contract_difference(
    mine: dict[str, Any], theirs: dict[str, Any], other_key: str
) -> Reason | None:
    if mine == theirs:
        return None
    keys = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
    return Reason(code="contracts", message=f"contracts differ from {other_key}: {', '.join(keys)}")


def _surface_difference(mine: Stack, theirs: Stack, other_key: str) -> Reason | None:
    # Only between rows that both record a surface (agent CLIs over MCP).
    if None in (mine.surface, theirs.surface) or mine.surface == theirs.surface:
        return None
    return Reason(
        code="surface",
        message=f"tool surface {mine.surface} vs {theirs.surface} for {other_key}",
    )


def _search_difference(mine: Stack, theirs: Stack, other_key: str) -> Reason | None:
    if mine.search == theirs.search:
        return None
    return Reason(code="search", message=f"search {mine.search} vs {theirs.search} for {other_key}")


def _web_difference(mine: WebSummary, theirs: WebSummary, other_key: str) -> Reason | None:
    if _same_web(mine, theirs):
        return None
    return Reason(
        code="web",
        message=f"web: {_web_named(mine)} vs {_web_named(theirs)} for {other_key}",
    )


def _machine_difference(
    c: Candidate, mine: set[str], other: Candidate, theirs: set[str]
) -> Reason | None:
    # Only between rows that both record their machine (the module says why: [machine]).
    if not mine or not theirs or mine == theirs:
        return None
    return Reason(
        code="machine",
        message=f"resource figures from another kind of machine than "
        f"{other.key}'s ({_machines_named(c.run)} vs "
        f"{_machines_named(other.run)}): not comparable",
    )


def _budget_difference(
    mine: dict[str, float | str | None], theirs: dict[str, float | str | None], other_key: str
) -> Reason | None:
    if mine == theirs:
        return None
    shown = ", ".join(f"{k} {mine[k]} vs {theirs[k]}" for k in mine if mine[k] != theirs[k])
    return Reason(code="budgets_differ", message=f"budgets differ from {other_key}: {shown}")


def _measurement_reasons(mine: _Compared) -> list[Reason]:
    """[machine] and [web_misses]: whether the row's own figures hold together."""
    reasons: list[Reason] = []
    if len(mine.machines) > 1:
        reasons.append(
            Reason(
                code="machine",
                message=f"its attempts ran on {len(mine.machines)} kinds of machine: "
                "their resource figures are not comparable",
            )
        )
    web = mine.web
    if web.mode == "replay" and (web.miss_rate is None or web.miss_rate > MAX_MISS_RATE):
        shown = "unknown" if web.miss_rate is None else f"{web.miss_rate:.1%}"
        reasons.append(
            Reason(
                code="web_misses",
                message=f"replay miss rate {shown} ({web.n_misses} of {web.n_requests} "
                f"requests); at most {MAX_MISS_RATE:.0%}",
            )
        )
    return reasons


def _pinning_reasons(c: Candidate, budgets: dict[str, float | str | None]) -> list[Reason]:
    """[programs_unpinned], [model_unpinned], [budgets_unrecorded]: whether the run can be
    made again as it was."""
    reasons: list[Reason] = []
    unpinned = _unpinned_programs(c)
    if unpinned:
        reasons.append(
            Reason(
                code="programs_unpinned",
                message=f"no version recorded for: {', '.join(unpinned)}",
            )
        )
    if not c.is_llm:
        return reasons
    problem = _model_problem(c.stack.model, c.run.manifest.settings if c.run.manifest else {})
    if problem:
        reasons.append(Reason(code="model_unpinned", message=problem))
    missing = [k for k, v in budgets.items() if v is None]
    if missing:
        reasons.append(
            Reason(
                code="budgets_unrecorded",
                message=f"budget(s) not recorded in the manifest: {', '.join(missing)}",
            )
        )
    return reasons


def _evidence_reasons(c: Candidate) -> list[Reason]:
    """[too_few_tasks], [contaminated], [leak]: whether the rows are evidence for a claim."""
    reasons: list[Reason] = []
    if c.n_tasks < MIN_TASKS:
        reasons.append(
            Reason(
                code="too_few_tasks",
                message=f"{c.n_tasks} task(s); an aggregate claim needs at least {MIN_TASKS}",
            )
        )
    if c.n_contaminated:
        reasons.append(
            Reason(
                code="contaminated",
                message=f"{c.n_contaminated} contaminated row(s): tools outside the browser",
            )
        )
    if c.leak.hits:
        reasons.append(
            Reason(
                code="leak",
                message=f"leak audit: {len(c.leak.hits)} hit(s) in "
                f"{len(c.leak.flagged_tasks)} task(s), e.g. {c.leak.hits[0].value!r}",
            )
        )
    return reasons


def _per_task_reasons(c: Candidate) -> list[Reason]:
    """[too_few_attempts]: what a per-task chart needs beyond a headline."""
    if c.min_attempts >= MIN_ATTEMPTS_PER_TASK:
        return []
    return [
        Reason(
            code="too_few_attempts",
            message=f"{c.min_attempts} attempt(s) per task; a per-task chart needs at "
            f"least {MIN_ATTEMPTS_PER_TASK} (--repeat)",
        )
    ]
