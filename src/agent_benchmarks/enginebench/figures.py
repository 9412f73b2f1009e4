"""The report's figures (matplotlib, SVG): per task, every valid measured execution's time
by configuration, cold beside warm, with the median marked (upstream's strip plots); and
the median peak memory of each configuration on each task, cold (the kernel's peak of the
execution's cgroup where it had one, else the sampled PSS).

The SVG is the same bytes each time it is drawn from the same rows: text stays text (no
glyph outlines), the element ids come from a fixed salt, and no date is written.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, before pyplot is imported
import matplotlib.pyplot as plt

from agent_benchmarks.enginebench.raw import MODES, Raw

_STYLE = {
    "svg.fonttype": "none",
    "svg.hashsalt": "agent-benchmarks-engine",
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.edgecolor": "#c8c8c8",
    "axes.titlesize": 9.5,
}
_LIGHTPANDA, _CHROMIUM = "#2a78d6", "#8a897f"
_SAVE = {"format": "svg", "metadata": {"Date": None, "Creator": None}, "bbox_inches": "tight"}


def memory_key(rows: list[dict[str, Any]]) -> tuple[str, str]:
    """The memory figure to show, and its label: the kernel's peak where the run had
    cgroups, else the sampled PSS."""
    if any(r.get("cgroup_peak_mb") is not None for r in rows):
        return "cgroup_peak_mb", "peak memory (cgroup), MB"
    return "peak_pss_mb", "peak PSS (sampled), MB"


def figure_name(task: str) -> str:
    return task.replace(":", "-") + ".svg"


def _colour(config: str) -> str:
    return _LIGHTPANDA if "/lightpanda" in config else _CHROMIUM


def draw_all(raw: Raw, rows: list[dict[str, Any]], folder: Path) -> list[str]:
    """Draw every figure into ``folder``; their file names."""
    names = []
    with plt.rc_context(_STYLE):
        for task in raw.meta["tasks"]:
            if _draw_task(raw, task["name"], task["title"], folder):
                names.append(figure_name(task["name"]))
        if _draw_memory(raw, rows, folder):
            names.append("memory.svg")
    return names


def _times(raw: Raw, task: str, mode: str) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for e in raw.executions:
        if e["task"] == task and e["mode"] == mode and e["ok"] and not e["warmup"]:
            found.setdefault(e["config"], []).append(e["ms"] / 1000)
    return found


def _draw_task(raw: Raw, task: str, title: str, folder: Path) -> bool:
    order = [c["name"] for c in raw.meta["configurations"]]
    by_mode = {mode: _times(raw, task, mode) for mode in MODES}
    configs = [c for c in order if any(c in times for times in by_mode.values())]
    if not configs:
        return False
    modes = [m for m in MODES if by_mode[m]]
    height = 1.2 + 0.32 * len(configs)
    fig, axes = plt.subplots(1, len(modes), figsize=(4.6 * len(modes), height), sharey=True)
    axes = [axes] if len(modes) == 1 else list(axes)
    for ax, mode in zip(axes, modes, strict=True):
        for y, config in enumerate(reversed(configs)):
            values = by_mode[mode].get(config, [])
            if not values:
                continue
            jitter = [((i % 5) - 2) * 0.07 for i in range(len(values))]
            ax.scatter(values, [y + j for j in jitter], s=14, alpha=0.6, color=_colour(config))
            median = statistics.median(values)
            ax.plot([median, median], [y - 0.3, y + 0.3], color=_colour(config), linewidth=2)
        ax.set_title(f"{mode} (seconds per execution)", loc="left")
        ax.set_xlim(left=0)
        ax.grid(axis="x", color="#e4e3df", linewidth=0.6)
    axes[0].set_yticks(range(len(configs)))
    axes[0].set_yticklabels(list(reversed(configs)))
    fig.suptitle(f"{task}: {title}", x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    fig.savefig(folder / figure_name(task), **_SAVE)
    plt.close(fig)
    return True


def _draw_memory(raw: Raw, rows: list[dict[str, Any]], folder: Path) -> bool:
    key, label = memory_key(rows)
    cold = [r for r in rows if r["mode"] == "cold" and r.get(key) is not None]
    if not cold:
        return False
    tasks = [t["name"] for t in raw.meta["tasks"] if any(r["task"] == t["name"] for r in cold)]
    configs = [
        c["name"] for c in raw.meta["configurations"] if any(r["config"] == c["name"] for r in cold)
    ]
    fig, axes = plt.subplots(
        1, len(tasks), figsize=(3.2 * len(tasks) + 1.5, 1.2 + 0.3 * len(configs)), sharey=True
    )
    axes = [axes] if len(tasks) == 1 else list(axes)
    for ax, task in zip(axes, tasks, strict=True):
        for y, config in enumerate(reversed(configs)):
            found = [r for r in cold if r["task"] == task and r["config"] == config]
            if found:
                value = found[0][key]
                ax.barh(y, value, height=0.6, color=_colour(config))
                ax.annotate(
                    f"{value:,.0f}",
                    (value, y),
                    xytext=(3, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=7.5,
                )
        ax.set_title(task, loc="left")
        ax.set_xlabel(label)
        ax.margins(x=0.25)
    axes[0].set_yticks(range(len(configs)))
    axes[0].set_yticklabels(list(reversed(configs)))
    fig.suptitle(
        "Peak memory over the whole process tree (median, cold)", x=0.01, ha="left", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(folder / "memory.svg", **_SAVE)
    plt.close(fig)
    return True
