"""Fixtures shared by unit and end-to-end tests, and the session-wide temp folder check."""

from __future__ import annotations

import getpass
import os
import tempfile
from pathlib import Path

import pytest

from tests.support import (
    ASSISTANTBENCH_ROWS,
    GAIA_ROWS,
    write_gaia_attachments,
    write_gaia_parquet,
    write_jsonl,
)


@pytest.fixture
def gaia_file(tmp_path: Path) -> Path:
    """A local GAIA copy as the Hub lays it out: parquet + attachments beside it."""
    folder = tmp_path / "gaia"
    write_gaia_attachments(folder)
    return write_gaia_parquet(folder / "metadata.parquet", GAIA_ROWS)


@pytest.fixture
def assistantbench_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "assistant_bench_v1.0_dev.jsonl", ASSISTANTBENCH_ROWS)


# --- nothing is left in the system temp folder -----------------------------------------------
# What the suite's programs leave in temp (browser profiles, agent-browser sockets,
# browser-use downloads, attempt folders) is a leak a user would have too. The whole session
# fails if the temp folder holds an entry at the end that it did not hold at the start.
# pytest's own folder (pytest-of-<user>: tmp_path, kept by pytest for the last three runs so
# failures can be inspected) is the one exception.
SYSTEM_TEMP = Path(tempfile.gettempdir())
_temp_before: set[str] = set()


def _temp_entries() -> set[str]:
    return set(os.listdir(SYSTEM_TEMP))


def pytest_sessionstart(session: pytest.Session) -> None:
    _temp_before.update(_temp_entries())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if session.config.option.collectonly:
        return
    left = sorted(_temp_entries() - _temp_before - {f"pytest-of-{getpass.getuser()}"})
    if not left:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = (
        f"the suite left {len(left)} new entr{'y' if len(left) == 1 else 'ies'} in the system "
        f"temp folder {SYSTEM_TEMP}: {', '.join(left[:20])}"
    )
    if reporter is not None:
        reporter.write_line(f"TEMP FOLDER CHECK FAILED: {message}", red=True, bold=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
