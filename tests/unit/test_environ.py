"""The environment mapping the harness reads: decoded once, and new after any change."""

from __future__ import annotations

import os

import pytest

from agent_benchmarks.common import environ


def test_the_mapping_is_kept_until_the_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = environ.current()
    assert environ.current() is first
    assert dict(first) == dict(os.environ)
    monkeypatch.setenv("AGENT_BENCHMARKS_ENVIRON_TEST", "one")
    second = environ.current()
    assert second is not first and second["AGENT_BENCHMARKS_ENVIRON_TEST"] == "one"
    monkeypatch.setenv("AGENT_BENCHMARKS_ENVIRON_TEST", "two")  # a changed value too
    assert environ.current()["AGENT_BENCHMARKS_ENVIRON_TEST"] == "two"
    monkeypatch.delenv("AGENT_BENCHMARKS_ENVIRON_TEST")
    assert "AGENT_BENCHMARKS_ENVIRON_TEST" not in environ.current()


def test_the_mapping_cannot_be_changed_by_a_reader() -> None:
    with pytest.raises(TypeError):
        environ.current()["PATH"] = "/nowhere"  # type: ignore[index]
