"""The report of an engine benchmark run, made from its ``raw.jsonl`` and nothing else: a
JSON summary, a Markdown report and SVG figures, byte for byte the same each time they are
made from the same file (``agent-benchmarks engine report RUN``).

Per task, mode and configuration: the executions measured (warm-up rotations left out),
those discarded (their contract failed, or they broke) and the validity gate; over the valid
measured ones, the median time with its quartiles and IQR (quartiles as upstream's
``report.py`` takes them), min and max, the ratio to the fastest configuration, the median
engine launch (cold CDP), CPU seconds, peak PSS and the cgroup's peak.

A configuration passes its validity gate on a task and mode when it was not given up on,
and at least ``min_valid_share`` of its measured executions (and at least one) did the task.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent_benchmarks.enginebench.figures import draw_all, figure_name, memory_key
from agent_benchmarks.enginebench.raw import MODES, Raw, load

REPORT_SCHEMA = "agent-benchmarks/engine-report/1"
FIGURES = "figures"


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    """(p25, median, p75) as upstream's report.py takes them."""
    ordered = sorted(values)
    if len(ordered) >= 4:
        q = statistics.quantiles(ordered, n=4)
        return q[0], statistics.median(ordered), q[2]
    return ordered[0], statistics.median(ordered), ordered[-1]


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def summarise(raw: Raw) -> list[dict[str, Any]]:
    """One row per task, mode and configuration, in the run's order."""
    share = raw.meta["settings"]["min_valid_share"]
    given_up = {(g["task"], g["config"], g["mode"]) for g in raw.given_up}
    order = [c["name"] for c in raw.meta["configurations"]]
    rows = []
    for task in [t["name"] for t in raw.meta["tasks"]]:
        for mode in MODES:
            for config in order:
                measured = [
                    e
                    for e in raw.executions
                    if (e["task"], e["mode"], e["config"]) == (task, mode, config)
                    and not e["warmup"]
                ]
                if not measured and (task, config, mode) not in given_up:
                    continue
                rows.append(
                    _row(task, mode, config, measured, (task, config, mode) in given_up, share)
                )
    _ratios(rows)
    return rows


def _row(
    task: str,
    mode: str,
    config: str,
    measured: list[dict[str, Any]],
    given_up: bool,
    share: float,
) -> dict[str, Any]:
    valid = [e for e in measured if e["ok"]]
    row: dict[str, Any] = {
        "task": task,
        "mode": mode,
        "config": config,
        "n_measured": len(measured),
        "n_valid": len(valid),
        "n_discarded": len(measured) - len(valid),
        "given_up": given_up,
        "gate": (
            not given_up
            and len(valid) >= 1
            and len(valid) >= math.ceil(share * len(measured) - 1e-9)
        ),
    }
    if valid:
        p25, median, p75 = _quartiles([e["ms"] for e in valid])
        row |= {
            "median_ms": _round(median),
            "p25_ms": _round(p25),
            "p75_ms": _round(p75),
            "iqr_ms": _round(p75 - p25),
            "min_ms": _round(min(e["ms"] for e in valid)),
            "max_ms": _round(max(e["ms"] for e in valid)),
            "launch_ms": _round(_median(e.get("launch_ms") for e in valid)),
            "cpu_s": _round(_median(e.get("cpu_s") for e in valid), 3),
            "peak_pss_mb": _round(_median(e.get("peak_pss_mb") for e in valid)),
            "cgroup_peak_mb": _round(_median(e.get("cgroup_peak_mb") for e in valid)),
            "requests": _median(e.get("requests") for e in valid),
            "tool_calls": _median(e.get("tool_calls") for e in valid),
        }
        if row["tool_calls"]:
            row["ms_per_call"] = _round(median / row["tool_calls"])
    return row


def _ratios(rows: list[dict[str, Any]]) -> None:
    """Each timed row's median over the fastest median of its task and mode."""
    fastest: dict[tuple[str, str], float] = {}
    for row in rows:
        if row.get("median_ms") is not None:
            key = (row["task"], row["mode"])
            fastest[key] = min(fastest.get(key, math.inf), row["median_ms"])
    for row in rows:
        if row.get("median_ms") is not None:
            best = fastest[(row["task"], row["mode"])]
            row["x_fastest"] = round(row["median_ms"] / best, 2) if best > 0 else None


def discarded(raw: Raw) -> list[dict[str, Any]]:
    return [
        {
            "task": e["task"],
            "config": e["config"],
            "mode": e["mode"],
            "rotation": e["rotation"],
            "warmup": e["warmup"],
            "error": e.get("error"),
            "failed_clauses": e.get("failed_clauses", []),
        }
        for e in raw.executions
        if not e["ok"]
    ]


def report_json(raw: Raw, rows: list[dict[str, Any]]) -> dict[str, Any]:
    meta = raw.meta
    return {
        "schema": REPORT_SCHEMA,
        "run": {
            "started_utc": meta["started_utc"],
            "harness": meta["harness"],
            "settings": meta["settings"],
            "machine": meta["machine"],
            "measuring": meta["measuring"],
            "binaries": meta["binaries"],
            "packages": meta["packages"],
            "mcp_servers": meta["mcp_servers"],
        },
        "tasks": meta["tasks"],
        "summary": rows,
        "discarded": discarded(raw),
        "given_up": raw.given_up,
    }


# --- Markdown ---------------------------------------------------------------------------


def _cell(value: Any, digits: int = 0) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _machine_line(meta: dict[str, Any]) -> str:
    m = meta["machine"]
    governor = m["cpu_governor"] or "not exposed"
    return (
        f"{m['cpu_model']} × {m['cpus']} CPUs, {m['memory_gb']} GB, kernel {m['kernel']}, "
        f"CPU governor {governor}"
    )


def _programs_lines(meta: dict[str, Any]) -> list[str]:
    lines = []
    for name, found in meta["binaries"].items():
        lines.append(f"- {name}: {found['version']} (sha256 `{found['sha256'][:16]}…`)")
    drivers = meta["packages"]
    for group, versions in (("npm", drivers["npm"]), ("PyPI", drivers["pypi"])):
        if versions:
            listed = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
            lines.append(f"- {group}: {listed}")
    for server, versions in meta["mcp_servers"].items():
        listed = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if "sha256" not in k)
        lines.append(f"- MCP server {server}: {listed or 'the lightpanda binary above'}")
    return lines


_COLUMNS = (
    ("configuration", "config", 0),
    ("n", "n_valid", 0),
    ("median ms", "median_ms", 0),
    ("p25", "p25_ms", 0),
    ("p75", "p75_ms", 0),
    ("IQR", "iqr_ms", 0),
    ("min", "min_ms", 0),
    ("max", "max_ms", 0),
    ("× fastest", "x_fastest", 2),
    ("launch ms", "launch_ms", 0),
    ("calls", "tool_calls", 0),
    ("ms/call", "ms_per_call", 0),
    ("CPU s", "cpu_s", 2),
    ("peak MB", "cgroup_peak_mb", 0),
    ("peak PSS MB", "peak_pss_mb", 0),
)


def _table(rows: list[dict[str, Any]]) -> list[str]:
    head = "| " + " | ".join(c[0] for c in _COLUMNS) + " |"
    rule = "|" + "|".join("---" if i == 0 else "---:" for i in range(len(_COLUMNS))) + "|"
    lines = [head, rule]
    for row in rows:
        cells = []
        for _, key, digits in _COLUMNS:
            value = row.get(key)
            if key == "config":
                value = f"`{value}`" + ("" if row["gate"] else " (gate failed)")
            elif key == "n_valid":
                value = f"{row['n_valid']}/{row['n_measured']}"
            cells.append(_cell(value, digits))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _validity(rows: list[dict[str, Any]], configs: list[str], tasks: list[str]) -> list[str]:
    lines = [
        "| configuration | " + " | ".join(f"`{t}`" for t in tasks) + " | tasks passed |",
        "|---|" + "---|" * len(tasks) + "---:|",
    ]
    for config in configs:
        cells, passed = [], 0
        for task in tasks:
            mine = [r for r in rows if r["config"] == config and r["task"] == task]
            if not mine:
                cells.append("–")
                continue
            ok = all(r["gate"] for r in mine)
            passed += ok
            counts = ", ".join(
                f"{r['mode']} {r['n_valid']}/{r['n_measured']}"
                + (" given up" if r["given_up"] else "")
                for r in mine
            )
            cells.append(("pass" if ok else "FAIL") + f" ({counts})")
        lines.append(f"| `{config}` | " + " | ".join(cells) + f" | {passed} |")
    return lines


def _overview(rows: list[dict[str, Any]], configs: list[str], tasks: list[str], key: str,
              digits: int) -> list[str]:  # fmt: skip
    """One line per configuration, a cold and a warm column per task: ``key``'s value."""
    head = [f"`{t}` {m}" for t in tasks for m in MODES]
    lines = ["| configuration | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for config in configs:
        cells = []
        for task in tasks:
            for mode in MODES:
                found = [
                    r for r in rows if (r["config"], r["task"], r["mode"]) == (config, task, mode)
                ]
                cells.append(_cell(found[0].get(key), digits) if found else "–")
        lines.append(f"| `{config}` | " + " | ".join(cells) + " |")
    return lines


def report_markdown(raw: Raw, rows: list[dict[str, Any]], figures: list[str]) -> str:
    meta, settings = raw.meta, raw.meta["settings"]
    configs = [c["name"] for c in meta["configurations"]]
    tasks = [t["name"] for t in meta["tasks"]]
    measuring = meta["measuring"]
    lines = [
        f"# Engine benchmark, {meta['started_utc']}",
        "",
        f"Machine: {_machine_line(meta)}. Harness at `{meta['harness']['commit']}`"
        + (" (uncommitted changes)" if meta["harness"]["dirty"] else "")
        + ".",
        "",
        f"Method: {settings['warmup']} warm-up and {settings['runs']} measured rotations, "
        f"every configuration in each ({', '.join(settings['modes'])}), {settings['pace_s']} s "
        f"between executions; navigation wait `{settings['wait']}`; measured by "
        f"{measuring['method']}. Times are milliseconds of valid measured executions: a "
        "discarded execution (its contract failed) is counted, never timed. CPU s and peak "
        "MB are those of the execution's whole process tree (its cgroup: CPU time, and the "
        "kernel's peak of its memory, page cache it caused included); peak PSS MB is PSS "
        f"summed over the tree, sampled every {measuring['sample_ms']} ms (upstream's "
        "measure; an execution shorter than a few samples is under-read). calls: the tool "
        "calls an MCP stack's steps took; ms/call: its median over them (warm, what one "
        "agent step costs on that stack with the model taken out).",
        "",
        "Programs:",
        "",
        *_programs_lines(meta),
        "",
        "## Overview",
        "",
        "Median milliseconds of the valid measured executions (– where none):",
        "",
        *_overview(rows, configs, tasks, "median_ms", 0),
        "",
        "Median peak memory of the whole process tree, MB (the cgroup's; the sampled PSS "
        "where there was no cgroup):",
        "",
        *_overview(rows, configs, tasks, memory_key(rows)[0], 0),
        "",
        "## Validity",
        "",
        "A configuration passes on a task when at least "
        f"{settings['min_valid_share']:.0%} of its measured executions did the task "
        f"(and it was not given up on after {settings['give_up_after']} failures in a row).",
        "",
        *_validity(rows, configs, tasks),
    ]
    for task in meta["tasks"]:
        lines += ["", f"## `{task['name']}`: {task['title']}", ""]
        lines.append(
            f"{task['page_loads']} navigations over {task['workers']} worker(s); "
            f"contract: {'; '.join(task['contract'][:3])}"
            + (f" and {len(task['contract']) - 3} more" if len(task["contract"]) > 3 else "")
            + "."
        )
        for mode in MODES:
            mine = [r for r in rows if r["task"] == task["name"] and r["mode"] == mode]
            if mine:
                lines += ["", f"### {mode}", "", *_table(mine)]
        figure = figure_name(task["name"])
        if figure in figures:
            lines += ["", f"![{task['name']}]({FIGURES}/{figure})"]
    if "memory.svg" in figures:
        lines += ["", "## Memory", "", f"![peak memory]({FIGURES}/memory.svg)"]
    dropped = discarded(raw)
    if dropped:
        lines += ["", "## Discarded executions", ""]
        for d in dropped:
            why = d["error"] + (
                f": {'; '.join(d['failed_clauses'])}" if d["failed_clauses"] else ""
            )
            phase = "warm-up" if d["warmup"] else "measured"
            lines.append(
                f"- `{d['task']}` `{d['config']}` {d['mode']}, rotation {d['rotation']} "
                f"({phase}): {why[:300]}"
            )
    return "\n".join(lines) + "\n"


def write_report(raw_path: Path, out_dir: Path | None = None) -> Path:
    """Write report.json, report.md and figures/ for the run at ``raw_path`` (a raw.jsonl or
    its folder) into ``out_dir`` (default: beside the raw file); the Markdown's path."""
    raw = load(raw_path)
    folder = out_dir or (raw_path if raw_path.is_dir() else raw_path.parent)
    rows = summarise(raw)
    (folder / FIGURES).mkdir(parents=True, exist_ok=True)
    drawn = draw_all(raw, rows, folder / FIGURES)
    (folder / "report.json").write_text(
        json.dumps(report_json(raw, rows), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    markdown = folder / "report.md"
    markdown.write_text(report_markdown(raw, rows, drawn), encoding="utf-8")
    return markdown
