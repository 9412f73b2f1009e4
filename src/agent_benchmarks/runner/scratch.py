"""Each attempt's private temp folder, in the system temp folder, named after its run.

An attempt's programs write to temp: browser profiles, agent-browser's sockets,
browser-use's downloads, Chromium's crash-handler files. They all get this folder as their
``TMPDIR`` (and their socket folder inside it), and the engine removes it when the attempt
ends, whatever the runner. It lives in the system temp folder rather than the run folder
because socket paths must stay under 104 bytes however deep the run folder is.

The name carries a digest of the run folder, so a harness that was killed outright (its
attempts' folders never removed) is cleaned up by the next ``--resume`` of that run, and
by nothing else: another run's live folders are never touched.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

PREFIX = "agent-benchmarks-"


def run_key(run_dir: Path) -> str:
    return hashlib.sha256(str(run_dir.absolute()).encode()).hexdigest()[:8]


def new_attempt_tmpdir(run_dir: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{run_key(run_dir)}-"))


def sweep_attempt_tmpdirs(run_dir: Path) -> list[Path]:
    """Remove the temp folders earlier sessions of this run left behind; the removed ones."""
    pattern = f"{PREFIX}{run_key(run_dir)}-*"
    removed = []
    for folder in sorted(Path(tempfile.gettempdir()).glob(pattern)):
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed
