"""The manifest a run starts with: provenance complete, secrets redacted; run folders."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from agent_benchmarks.localweb import SUITE as LOCALWEB
from agent_benchmarks.records.schema import Manifest
from agent_benchmarks.spec.provenance import build_manifest, default_run_dir, git_state
from tests.support import REPO

STAMP = r"\d{8}T\d{6}Z"


def test_default_run_dirs() -> None:
    native = default_run_dir("gaia")
    assert re.fullmatch(rf"results/gaia/{STAMP}", native.as_posix())
    mcp = default_run_dir("webbench", mcp_backend="agent-browser")
    assert re.fullmatch(rf"results/webbench-mcp/agent-browser/{STAMP}", mcp.as_posix())


def test_git_state_reads_the_checkout(tmp_path: Path) -> None:
    sha, dirty = git_state(REPO)
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert sha == head and isinstance(dirty, bool)
    assert git_state(tmp_path) == (None, None)  # not a checkout: unknown, not "clean"


def test_manifest_redacts_argv_and_records_versions(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "opaque-secret-value-123")
    loaded = LOCALWEB.bundled()
    manifest = build_manifest(
        suite="localweb",
        loaded=loaded,
        task_ids=[t.id for t in loaded.tasks],
        selection={"limit": 3},
        backend="lightpanda",
        mode="scaffold",
        argv=[
            "localweb-run",
            "--api-key",
            "sk-ant-abcdefghijklmnop",
            "--base-url",
            "http://u:opaque-secret-value-123@127.0.0.1/v1",
        ],
        programs={"lightpanda": "1.0.2 (sha256 abc)"},
    )
    text = manifest.model_dump_json()
    assert "sk-ant-abcdefghijklmnop" not in text and "opaque-secret-value-123" not in text
    assert manifest.argv[2] == "[REDACTED]"
    assert manifest.dataset.kind == "bundled" and len(manifest.dataset.sha256) == 64
    assert {"python", "os", "agent-benchmarks", "lightpanda"} <= set(manifest.programs)
    assert manifest.git_sha is not None and manifest.git_dirty is not None
    assert manifest.mode == "scaffold" and manifest.started_at.endswith("Z")
    assert Manifest.model_validate_json(text) == manifest
