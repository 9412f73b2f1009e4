"""The meta record a run's ``raw.jsonl`` starts with: what ran, on what, and how.

Every binary's version and the sha256 of the file that really runs (a version string
cannot tell two builds apart: upstream hashes its Lightpanda for that reason), the npm and
PyPI drivers' versions, each MCP server's, the driver programs' and task scripts' hashes,
the harness's commit, the machine (CPU model and count, memory, the frequency governor
where the kernel exposes one, kernel), how executions were measured, and the settings.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
from pathlib import Path
from typing import Any

from agent_benchmarks.backends.programs import REPO, program_version
from agent_benchmarks.enginebench import programs
from agent_benchmarks.enginebench.configs import Configuration
from agent_benchmarks.enginebench.engines import chromium_path
from agent_benchmarks.enginebench.mcp_client import McpStack
from agent_benchmarks.enginebench.measure import measuring_method
from agent_benchmarks.enginebench.tasks import EngineTask
from agent_benchmarks.spec.datasets import sha256_file
from agent_benchmarks.spec.provenance import git_state, utc_now

SCHEMA = "agent-benchmarks/engine-raw/1"
NPM_DRIVERS = ("puppeteer-core", "playwright-core")
PYPI_PACKAGES = ("agent-benchmarks", "playwright", "lightpanda", "mcp")
# Where Debian's /usr/bin/chromium (a shell script) finds the browser itself.
CHROMIUM_BINARY = Path("/usr/lib/chromium/chromium")


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def machine() -> dict[str, Any]:
    cpu_model = None
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            cpu_model = line.split(":", 1)[1].strip()
            break
    memory_kb = None
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            memory_kb = int(line.split()[1])
    cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq/"
    return {
        "cpu_model": cpu_model,
        "cpus": os.cpu_count(),
        "memory_gb": None if memory_kb is None else round(memory_kb / 2**20, 1),
        # None where the kernel exposes no frequency scaling (a VM, most containers).
        "cpu_governor": _read(cpufreq + "scaling_governor"),
        "cpu_energy_performance_preference": _read(cpufreq + "energy_performance_preference"),
        "kernel": platform.release(),
        "os": f"{platform.system()} ({platform.machine()})",
        "python": platform.python_version(),
    }


def _binary(path: str | Path) -> dict[str, Any]:
    path = Path(path).resolve()
    return {"path": str(path), "sha256": sha256_file(path), "size": path.stat().st_size}


def binaries(lightpanda: str, node: str, configs: list[Configuration]) -> dict[str, Any]:
    """Each binary the configurations run: version and the file's hash."""
    found: dict[str, Any] = {
        "lightpanda": {"version": program_version([lightpanda, "version"]), **_binary(lightpanda)}
    }
    if any(c.kind == "cdp" for c in configs):
        found["node"] = {"version": program_version([node, "--version"]), **_binary(node)}
    if any(c.engine == "chromium" for c in configs):
        real = CHROMIUM_BINARY if CHROMIUM_BINARY.exists() else Path(chromium_path())
        found["chromium"] = {
            "version": program_version([chromium_path(), "--version"]),
            "launcher": chromium_path(),
            **_binary(real),
        }
    return found


def package_versions() -> dict[str, Any]:
    npm = {}
    for name in NPM_DRIVERS:
        manifest = REPO / "node_modules" / name / "package.json"
        if manifest.exists():
            npm[name] = json.loads(manifest.read_text())["version"]
    pypi = {}
    for name in PYPI_PACKAGES:
        try:
            pypi[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {"npm": npm, "pypi": pypi}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def task_records(tasks: list[EngineTask], wait: str) -> list[dict[str, Any]]:
    return [
        {
            "name": task.name,
            "title": task.title,
            "workers": len(task.workers),
            "page_loads": task.page_loads,
            "contract": task.contract.describe(),
            "program_sha256": _sha256(json.dumps(programs.program(task, wait))),
            "pandascript_sha256": _sha256(programs.pandascript(task, wait)),
        }
        for task in tasks
    ]


def meta_record(
    *,
    argv: list[str],
    settings: dict[str, Any],
    configs: list[Configuration],
    tasks: list[EngineTask],
    lightpanda: str,
    node: str,
    stacks: dict[str, McpStack],
    site: dict[str, Any],
) -> dict[str, Any]:
    commit, dirty = git_state()
    drivers = {
        name: _sha256(programs.driver_file(name).read_text())
        for name in ("program.mjs", "puppeteer.mjs", "playwright.mjs", "playwright_py.py")
    }
    return {
        "kind": "meta",
        "schema": SCHEMA,
        "started_utc": utc_now(),
        "argv": argv,
        "harness": {"commit": commit, "dirty": dirty},
        "settings": settings,
        "configurations": [
            {
                "name": c.name,
                "driver": c.driver,
                "engine": c.engine,
                "kind": c.kind,
                "slow_ms": c.slow_ms,
            }
            for c in configs
        ],
        "tasks": task_records(tasks, settings["wait"]),
        "binaries": binaries(lightpanda, node, configs),
        "packages": package_versions(),
        "mcp_servers": {name: stack.versions() for name, stack in sorted(stacks.items())},
        "driver_programs_sha256": drivers,
        "machine": machine(),
        "measuring": {"method": measuring_method(), "sample_ms": settings["sample_ms"]},
        "site": site,
    }
