"""Fixtures shared by unit and end-to-end tests; the session-wide temp folder check is the
plugin ``tests.temp_check``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import (
    ASSISTANTBENCH_ROWS,
    GAIA_ROWS,
    RunningTest,
    chromium_binary,
    write_gaia_attachments,
    write_gaia_parquet,
    write_jsonl,
)

pytest_plugins = ["tests.temp_check", "pytester"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Which test runs: the commands it starts, its fixtures' included (a module's fixture
    is set up for its first test, and pytest-timeout counts it there), check their
    timeouts against its time limit (tests.support.check_time_limit)."""
    RunningTest.item = item
    RunningTest.commands_s = 0.0


@pytest.fixture
def gaia_file(tmp_path: Path) -> Path:
    """A local GAIA copy as the Hub lays it out: parquet + attachments beside it."""
    folder = tmp_path / "gaia"
    write_gaia_attachments(folder)
    return write_gaia_parquet(folder / "metadata.parquet", GAIA_ROWS)


@pytest.fixture
def assistantbench_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "assistant_bench_v1.0_dev.jsonl", ASSISTANTBENCH_ROWS)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium, headless, driven by Playwright: one per test module."""
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_binary(), args=["--no-sandbox"])
        yield browser
        browser.close()
