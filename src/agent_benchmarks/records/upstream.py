"""Reading run folders written by the harness this project replaces (upstream's).

Upstream (lightpanda-io/agent-benchmarks) writes one JSON object per attempt to
``predictions.jsonl``, with no schema version and no suite: ``id``, ``task``, ``gold``,
``prediction``, ``duration_s``, ``timed_out``, ``returncode``; then per suite ``level`` and
``file_name`` (GAIA), ``difficulty`` (AssistantBench), or ``web_name``, ``category``,
``start_url`` and ``reference`` (WebBench); and, depending on its version and runner,
``retried``, ``trace`` (a list of ``{tool, args}``, with ``output`` where the native runner
kept a preview), ``usage`` (token counters) and ``stderr_tail``. Beside it sits a
``manifest.json`` of four keys (``agent_provider``, ``agent_model``, ``argv``,
``started_at``) and, when the run graded itself, upstream's own ``scores.json``.

Such a row is recognised by its shape and converted, when read, into a
:class:`~agent_benchmarks.records.schema.PredictionRow`; the file is never rewritten. Every
converted row says where it came from (``details["imported_from"] == "upstream"``), and
:data:`NOT_RECORDED` says plainly what upstream did not record, so nothing here is guessed.

This module depends on :mod:`agent_benchmarks.records.schema` only; the reader
(:func:`agent_benchmarks.records.storage.read_predictions`) calls it, and everything that reads
predictions goes through that reader.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent_benchmarks.records.schema import PredictionRow, Suite, ToolCall, Usage

UPSTREAM = "upstream"
UPSTREAM_REPO = "lightpanda-io/agent-benchmarks"

DENOMINATOR_NOTE = "rows in file (imported, no task list)"

# What an imported row cannot tell, said once for every imported run (scores.json and the
# report carry it). Each line is a fact about upstream's files, not a guess about the run.
NOT_RECORDED: tuple[str, ...] = (
    "status classes: only timed out, non-zero exit, empty answer or answered are known "
    "(no model_api, backend, harness or oom distinction)",
    "no task list: the denominator is the rows in the file, so tasks an interrupted run "
    "never reached are not counted",
    "no dataset revision or file hash, no program versions, no budgets, no prompt hash, no "
    "mode (live or scripted)",
    "trace: tool name and arguments only; no per-call latency, page URL, HTTP status or "
    "result size, and an output only where upstream's native runner kept its "
    "500-character preview",
    "usage: only the token counters upstream recorded; no cost unless Claude Code's own "
    "total_cost_usd was recorded (none is computed from a price table)",
    "every row is attempt 1; upstream's native GAIA runner retried an empty answer once "
    "and summed both durations (details.retried)",
)

UPSTREAM_SUITES: tuple[Suite, ...] = ("gaia", "assistantbench", "webbench")

_WEBBENCH_ID = re.compile(r"^webbench-(\d+)$")

# Keys upstream's runners write; any other key of an upstream row is kept in details.
_MAPPED_KEYS = frozenset(
    {
        "id",
        "task",
        "gold",
        "reference",
        "prediction",
        "duration_s",
        "timed_out",
        "returncode",
        "level",
        "file_name",
        "difficulty",
        "web_name",
        "start_url",
        "category",
        "retried",
        "trace",
        "usage",
        "stderr_tail",
    }
)
_MANIFEST_KEYS = frozenset({"agent_provider", "agent_model", "argv", "started_at"})
# Upstream's console scripts, by the suite they run (argv[0] of its manifest).
_SCRIPT_SUITES: tuple[tuple[str, Suite], ...] = (
    ("assistantbench-", "assistantbench"),
    ("gaia-", "gaia"),
    ("webbench-", "webbench"),
)


class UpstreamRowError(ValueError):
    """An upstream-shaped row that cannot be converted; the message names the field."""


# --- recognising shapes -----------------------------------------------------------------------


def is_ours(obj: dict[str, Any]) -> bool:
    """A row, manifest or scores document of this harness: every one carries these."""
    return "schema_version" in obj or "suite" in obj


def is_upstream_row(obj: dict[str, Any]) -> bool:
    """Upstream's row shape: id, task and prediction, an outcome field, and none of ours."""
    if is_ours(obj):
        return False
    has_core = all(key in obj for key in ("id", "task", "prediction"))
    return has_core and any(key in obj for key in ("timed_out", "returncode", "duration_s"))


def is_upstream_manifest(obj: Any) -> bool:
    """Upstream's ``manifest.json``: not ours, and with at least one of its four keys."""
    return isinstance(obj, dict) and not is_ours(obj) and bool(set(obj) & _MANIFEST_KEYS)


def is_upstream_scores(obj: Any) -> bool:
    """Upstream's ``scores.json``: a JSON object without our schema version."""
    return isinstance(obj, dict) and not is_ours(obj)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def read_upstream_manifest(run_dir: Path) -> dict[str, Any] | None:
    """Upstream's manifest beside the predictions, or None (missing, or ours)."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        return None
    obj = _load_json(path)
    return obj if is_upstream_manifest(obj) else None


def upstream_scores_present(run_dir: Path) -> bool:
    """True when ``scores.json`` in the folder is upstream's, which is never overwritten."""
    path = Path(run_dir) / "scores.json"
    return path.is_file() and is_upstream_scores(_load_json(path))


# Where our scores go in a folder whose scores.json is upstream's own.
IMPORTED_SCORES_NAME = "scores.agent-benchmarks.json"


def scores_path(run_dir: Path) -> Path:
    """Where this harness keeps a run folder's scores: ``scores.json``, unless that file is
    upstream's own, which stays as it is; ours then goes to :data:`IMPORTED_SCORES_NAME`."""
    run_dir = Path(run_dir)
    if upstream_scores_present(run_dir):
        return run_dir / IMPORTED_SCORES_NAME
    return run_dir / "scores.json"


def suite_from_manifest(manifest: dict[str, Any] | None) -> Suite | None:
    """The suite named by the console script in upstream's recorded ``argv``."""
    argv = (manifest or {}).get("argv")
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
        return None
    script = Path(argv[0]).name
    for prefix, suite in _SCRIPT_SUITES:
        if script.startswith(prefix):
            return suite
    return None


def provenance(manifest: dict[str, Any] | None) -> dict[str, Any]:
    """What scores.json says about an imported run: where it came from, what upstream's
    manifest recorded (as it was), how the denominator was chosen, and what is missing."""
    return {
        "imported": UPSTREAM,
        "source": UPSTREAM_REPO,
        "upstream_manifest": manifest,
        "denominator": DENOMINATOR_NOTE,
        "not_recorded": list(NOT_RECORDED),
    }


# --- converting a row -------------------------------------------------------------------------


def suite_of_row(obj: dict[str, Any]) -> Suite | None:
    """The suite an upstream row belongs to, told by the fields only that suite writes."""
    if "level" in obj or "file_name" in obj:
        return "gaia"
    webbench_keys = ("web_name", "start_url", "reference", "category")
    if any(key in obj for key in webbench_keys) or _WEBBENCH_ID.match(str(obj.get("id", ""))):
        return "webbench"
    if "difficulty" in obj:
        return "assistantbench"
    return None


def _text(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # a numeric gold answer written as a JSON number
    raise UpstreamRowError(f"field {key!r}: expected text, got {type(value).__name__}")


def _flag(obj: dict[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise UpstreamRowError(f"field {key!r}: expected true or false, got {value!r}")
    return value


def _number(obj: dict[str, Any], key: str) -> float:
    value = obj.get(key, 0.0)
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UpstreamRowError(f"field {key!r}: expected a number, got {value!r}")
    return float(value)


def _returncode(obj: dict[str, Any]) -> int | None:
    value = obj.get("returncode")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UpstreamRowError(f"field 'returncode': expected an integer, got {value!r}")
    return value


def _level(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise UpstreamRowError(f"field 'level': expected 1, 2 or 3, got {value!r}")


def _count(usage: dict[str, Any], key: str) -> int:
    value = usage.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UpstreamRowError(f"field 'usage.{key}': expected a count, got {value!r}")
    return int(value)


def _usage(raw: Any) -> Usage | None:
    """Upstream's counters (Claude Code's names; the native runner renames its own to
    them) mapped to ours; None when the row recorded no usage."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise UpstreamRowError(f"field 'usage': expected an object, got {type(raw).__name__}")
    cost = raw.get("total_cost_usd")
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        cost = None
    return Usage(
        input_tokens=_count(raw, "input_tokens"),
        output_tokens=_count(raw, "output_tokens"),
        cache_read_tokens=_count(raw, "cache_read_input_tokens"),
        cache_write_tokens=_count(raw, "cache_creation_input_tokens"),
        turns=_count(raw, "num_turns"),
        cost_usd=None if cost is None else float(cost),
    )


def _trace(raw: Any) -> list[ToolCall]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise UpstreamRowError(f"field 'trace': expected a list, got {type(raw).__name__}")
    calls = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or not isinstance(entry.get("tool"), str):
            raise UpstreamRowError(f"field 'trace.{index}': expected {{tool, args}}")
        args = entry.get("args")
        output = entry.get("output")
        calls.append(
            ToolCall(
                name=entry["tool"],
                # Upstream keeps whatever JSON the call carried; ours is an object.
                args=args if isinstance(args, dict) else ({} if args is None else {"": args}),
                output=output if isinstance(output, str) else None,
            )
        )
    return calls


def _status(
    timed_out: bool, returncode: int | None, prediction: str | None
) -> tuple[str, str | None]:
    if timed_out:
        return "timeout", "timeout"
    if returncode is not None and returncode != 0:
        # Negative: killed by a signal (upstream's memory cap kills with -9): a crash.
        # Positive: the agent program exited with an error of its own.
        return "error", "crash" if returncode < 0 else "agent_error"
    if not (prediction or "").strip():
        return "empty", None
    return "ok", None


def convert_row(obj: dict[str, Any], suite_hint: Suite | None = None) -> PredictionRow:
    """One upstream row as our :class:`PredictionRow`; raises :class:`UpstreamRowError`.

    The suite comes from the row's own fields, else from ``suite_hint`` (the grader in use,
    or the script named in upstream's manifest).
    """
    suite = suite_of_row(obj) or suite_hint
    if suite is None:
        raise UpstreamRowError(
            "an upstream row, but its suite cannot be told from its fields: grade it with "
            "gaia-grade, assistantbench-grade or webbench-grade"
        )
    if suite not in UPSTREAM_SUITES:
        raise UpstreamRowError(f"upstream's harness has no {suite} suite; this row is not one")
    raw_id = obj.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or str(raw_id) == "":
        raise UpstreamRowError(f"field 'id': expected a task id, got {raw_id!r}")
    raw_id = str(raw_id)
    task = _text(obj, "task")
    if task is None:
        raise UpstreamRowError("field 'task': missing (the question text)")
    prediction = _text(obj, "prediction")
    timed_out = _flag(obj, "timed_out")
    returncode = _returncode(obj)
    status, error_class = _status(timed_out, returncode, prediction)
    gold = _text(obj, "gold")
    if gold is None and suite == "webbench":
        reference = _text(obj, "reference")
        gold = reference if reference and reference.strip() else None
    usage = _usage(obj.get("usage"))
    # Ids are kept as upstream wrote them: GAIA's and AssistantBench's are the datasets'
    # own, and WebBench's ``webbench-N`` is this harness's id for the same task too (see
    # ``agent_benchmarks.webbench``), so imported and native runs line up task by task.
    row_id = raw_id

    details: dict[str, Any] = {"imported_from": UPSTREAM}
    if _flag(obj, "retried"):
        details["retried"] = True
    if usage is None:
        details["usage_recorded"] = False
    extra = {k: v for k, v in obj.items() if k not in _MAPPED_KEYS}
    if extra:
        details["upstream_fields"] = extra  # backend, attachment_status, ... as written

    web_name = _text(obj, "web_name")
    upstream_backend = extra.get("backend")
    return PredictionRow(
        id=row_id,
        suite=suite,
        task=task,
        gold=gold,
        prediction=prediction,
        status=status,  # type: ignore[arg-type]
        error_class=error_class,
        error=(f"exit status {returncode}" if status == "error" else None),
        duration_s=_number(obj, "duration_s"),
        timed_out=timed_out,
        returncode=returncode,
        # MCP rows name their browser; other runners do not say which stack ran.
        backend=(
            f"{UPSTREAM}/claude-mcp/{upstream_backend}"
            if isinstance(upstream_backend, str) and upstream_backend
            else UPSTREAM
        ),
        trace=_trace(obj.get("trace")),
        usage=usage or Usage(),
        stderr_tail=_text(obj, "stderr_tail") or "",
        details=details,
        level=_level(obj.get("level")) if suite == "gaia" else None,
        file_name=_text(obj, "file_name") if suite == "gaia" else None,
        difficulty=_text(obj, "difficulty"),
        start_url=_text(obj, "start_url"),
        web_name=web_name.lower().removeprefix("www.") if web_name else None,
        category=_text(obj, "category"),
    )


def is_imported(row: PredictionRow) -> bool:
    return row.details.get("imported_from") == UPSTREAM
