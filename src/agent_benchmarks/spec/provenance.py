"""Facts about the harness and the machine that go into every manifest."""

from __future__ import annotations

import platform
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import agent_benchmarks
from agent_benchmarks.common.redact import redact_argv
from agent_benchmarks.records.schema import Manifest, Mode
from agent_benchmarks.spec.datasets import LoadedDataset

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # agent_benchmarks/


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def utc_stamp() -> str:
    """The run folder name: UTC ``%Y%m%dT%H%M%SZ``."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


def git_state(path: Path = _PACKAGE_DIR) -> tuple[str | None, bool | None]:
    """The harness checkout's commit and whether it has uncommitted changes.

    ``(None, None)`` when the harness is not running from a git checkout (an installed wheel).
    """

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", "-C", str(path), *args],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout

    sha = git("rev-parse", "HEAD")
    if sha is None:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return sha.strip(), (None if status is None else bool(status.strip()))


def base_programs() -> dict[str, str]:
    """Versions every run records; backends add the programs they drive."""
    return {
        "agent-benchmarks": agent_benchmarks.__version__,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "python_implementation": f"{platform.python_implementation()} {sys.version.split()[0]}",
    }


def default_run_dir(
    suite: str, mcp_backend: str | None = None, results_root: Path = Path("results")
) -> Path:
    """``results/<suite>/<stamp>/``, or ``results/<suite>-mcp/<backend>/<stamp>/``."""
    if mcp_backend is not None:
        return results_root / f"{suite}-mcp" / mcp_backend / utc_stamp()
    return results_root / suite / utc_stamp()


def build_manifest(
    *,
    suite: str,
    loaded: LoadedDataset,
    task_ids: list[str],
    selection: dict[str, Any],
    backend: str,
    mode: Mode,
    argv: list[str],
    provider: str | None = None,
    model: str | None = None,
    programs: dict[str, str] | None = None,
    workers: int = 1,
    timeout_s: float | None = None,
    repeat: int = 1,
    settings: dict[str, Any] | None = None,
    spec: dict[str, Any] | None = None,
) -> Manifest:
    """A run's manifest at its start: provenance complete, secrets redacted."""
    sha, dirty = git_state()
    return Manifest(
        suite=suite,  # type: ignore[arg-type]
        split=loaded.split,
        dataset=loaded.source,
        selection=selection,
        task_ids=task_ids,
        backend=backend,
        provider=provider,
        model=model,
        argv=redact_argv(argv),
        started_at=utc_now(),
        harness_version=agent_benchmarks.__version__,
        git_sha=sha,
        git_dirty=dirty,
        programs={**base_programs(), **(programs or {})},
        workers=workers,
        timeout_s=timeout_s,
        repeat=repeat,
        mode=mode,
        settings=settings or {},
        spec=spec,
    )
