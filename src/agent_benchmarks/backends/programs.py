"""The programs a backend drives: where they are, and which version runs (for manifests)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.spec.datasets import sha256_file

REPO = Path(__file__).resolve().parents[3]
NODE_BIN = REPO / "node_modules" / ".bin"


def node_binary(given: Path | None, name: str, flag: str) -> str:
    """``given``, else the pinned npm install (``npm ci``), else ``name`` on PATH."""
    if given is not None:
        path = given
    elif (NODE_BIN / name).exists():
        path = NODE_BIN / name
    elif shutil.which(name):
        path = Path(shutil.which(name) or name)
    else:
        raise InputError(f"{name} not found: run `npm ci` in {REPO} (or pass {flag} PATH)")
    if not path.is_file() or not os.access(path, os.X_OK):
        raise InputError(f"{flag} {path}: not an executable file")
    return str(path)


def program_version(argv: list[str]) -> str:
    """The first line a ``--version``-style command prints; one clear error otherwise."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except OSError as exc:
        raise InputError(f"{argv[0]}: cannot run it ({exc.strerror})") from None
    lines = (out.stdout or out.stderr).strip().splitlines()
    if out.returncode != 0 or not lines:
        raise InputError(f"`{' '.join(argv)}` failed (exit {out.returncode})")
    return lines[0].strip()


def short_id(path: Path) -> str:
    """A short stable name for an attempt folder (session names, socket dirs: agent-browser's
    socket path must stay under 103 bytes, however deep the folder is)."""
    return hashlib.sha256(str(path).encode()).hexdigest()[:10]


def agent_browser_programs(binary: str) -> dict[str, str]:
    """agent-browser's version, and the sha256 of the executable that really runs (npm
    installs a JavaScript shim in front of a native binary), as the manifest records
    lightpanda's."""
    programs = {"agent-browser": program_version([binary, "--version"])}
    native = _agent_browser_native(binary)
    if native is not None:
        programs["agent-browser_sha256"] = sha256_file(native)
    return programs


def _agent_browser_native(binary: str) -> Path | None:
    """The native executable behind npm's shim: the shim's sibling named for this platform
    (None when it is not there), or the binary itself when it is not the shim."""
    resolved = Path(binary).resolve()
    if resolved.suffix != ".js":
        return resolved
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
    native = resolved.parent / f"agent-browser-{sys.platform}-{arch}"
    return native if native.exists() else None
