"""The run spec, the flags made from Options fields, the registry, and lanes of one execution."""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path
from typing import Literal

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.isolation.scratch import AttemptTempFolders
from agent_benchmarks.records.schema import Manifest, PredictionRow
from agent_benchmarks.records.storage import PredictionsStream
from agent_benchmarks.runner.engine import Lane, execute_lanes
from agent_benchmarks.runner.executor import LocalPool
from agent_benchmarks.runner.plan import AttemptKey
from agent_benchmarks.spec.args import add_options_args, options_values
from agent_benchmarks.spec.run_spec import ExecutorSpec, Options, RunSpec, SelectionSpec, option
from agent_benchmarks.spec.suites import backend_kinds, get_backend, get_suite, suite_names


class ExampleOptions(Options):
    engine: Literal["chrome", "lightpanda"] | None = option(help="the browser")
    base_url: str | None = option(help="endpoint", flag="--gateway-url", metavar="URL")
    turns: int | None = option(help="turn cap", ge=1)
    budget: float | None = option(help="dollars", gt=0)
    binary: Path | None = option(help="a program")
    hang_path: list[str] = option([], help="repeatable", repeatable=True)
    list_tools: bool | None = option(help="print and exit", defines_run=False)
    server: str = option(..., help="required", choices=("a", "b"))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="example", exit_on_error=False)
    add_options_args(parser, ExampleOptions, "example")
    return parser


def test_options_fields_become_their_flags_and_back() -> None:
    args = _parser().parse_args(
        [
            "--server",
            "b",
            "--engine",
            "lightpanda",
            "--gateway-url",
            "http://x",
            "--turns",
            "3",
            "--budget",
            "0.5",
            "--binary",
            "/bin/true",
            "--hang-path",
            "/a",
            "--hang-path",
            "/b",
            "--list-tools",
        ]
    )
    values = options_values(ExampleOptions, args)
    assert values == {
        "engine": "lightpanda",
        "base_url": "http://x",
        "turns": 3,
        "budget": 0.5,
        "binary": "/bin/true",
        "hang_path": ["/a", "/b"],
        "list_tools": True,
        "server": "b",
    }
    parsed = ExampleOptions.parse(values)
    assert parsed.binary == Path("/bin/true") and parsed.hang_path == ["/a", "/b"]
    # Only what was typed reaches the spec: the model fills in its own defaults.
    assert options_values(ExampleOptions, _parser().parse_args(["--server", "a"])) == {
        "server": "a"
    }
    assert ExampleOptions.run_defining() == (
        "engine",
        "base_url",
        "turns",
        "budget",
        "binary",
        "hang_path",
        "server",
    )
    assert ExampleOptions.flag_of("base_url") == "--gateway-url"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ("--server a --turns 0", "expected 1 or more, got 0"),
        ("--server a --budget 0", "expected a number above 0, got 0.0"),
        ("--server a --turns x", "expected a whole number, got 'x'"),
        ("--server c", "invalid choice: 'c'"),
        ("--server a --engine firefox", "invalid choice: 'firefox'"),
    ],
)
def test_bad_flag_values_are_refused_by_the_parser(argv: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentError, match=message):
        _parser().parse_args(argv.split())


def test_stored_values_are_validated_naming_the_flag() -> None:
    with pytest.raises(InputError, match=r"^stored: --turns: Input should be greater"):
        ExampleOptions.parse({"server": "a", "turns": 0}, "stored")
    with pytest.raises(InputError, match=r"^stored: nope: Extra inputs"):
        ExampleOptions.parse({"server": "a", "nope": 1}, "stored")


def test_a_spec_is_one_json_record_that_reads_back_equal() -> None:
    spec = RunSpec(
        suite="localweb",
        runner="mcp",
        selection=SelectionSpec(task_ids=["a", "b"], sample_per_site="all"),
        model="claude-sonnet-4-6",
        timeout=60,
        backend={"backend": "lightpanda", "max_turns": 5},
        suite_options={"latency_ms": 10},
        executor=ExecutorSpec(kind="ray", address="127.0.0.1:6379"),
        out_dir=Path("/tmp/x"),
        typed=["model", "timeout"],
    )
    text = spec.model_dump_json()
    assert RunSpec.model_validate_json(text) == spec
    # Stored in the manifest as it is.
    assert json.loads(text)["executor"] == {
        "kind": "ray",
        "address": "127.0.0.1:6379",
        "service_host": "127.0.0.1",
    }
    assert "spec" in Manifest.model_fields
    with pytest.raises(ValueError, match="timeout"):
        RunSpec(suite="gaia", runner="native", timeout=0)


def test_suites_and_backends_are_found_by_their_entry_points() -> None:
    assert suite_names() == ("assistantbench", "gaia", "localweb", "webbench")
    assert backend_kinds() == ("chat", "mcp", "native")
    assert get_suite("gaia").name == "gaia"
    assert {get_backend(k).prog_suffix for k in backend_kinds()} == {
        "-run",
        "-mcp-run",
        "-ab-run",
    }
    with pytest.raises(KeyError):
        get_suite("nope")
    # A suite added later needs no edit of the records: any lowercase identifier.
    assert PredictionRow(id="x", suite="newsuite", task="q", status="ok", backend="b").suite
    with pytest.raises(ValueError):
        PredictionRow(id="x", suite="Not A Name", task="q", status="ok", backend="b")


class _FakeRunner:
    """Runs an attempt to a row naming the lane, as an AttemptRunner would."""

    def __init__(self, run_dir: Path, backend: str):
        self.run_dir = run_dir
        self.backend = backend
        self.agent_seconds = 0.0
        self.temp_folders = AttemptTempFolders(run_dir)

    def __call__(self, key: AttemptKey, cancel: threading.Event, launch: object) -> PredictionRow:
        return PredictionRow(
            id=key.task_id,
            suite="localweb",
            task="q",
            status="ok",
            attempt=key.attempt,
            backend=self.backend,
            prediction=self.backend,
            duration_s=0.5,
        )


def test_lanes_share_one_executor_and_each_row_reaches_its_own_folder(tmp_path: Path) -> None:
    keys = [AttemptKey(t, a, 1) for t in ("t1", "t2") for a in (1, 2)]
    lanes = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        runner = _FakeRunner(tmp_path / name, name)
        lanes.append(Lane(list(keys), runner, tmp_path / name / "predictions.jsonl"))  # type: ignore[arg-type]
    outcomes = execute_lanes(lanes, LocalPool(3), "sweep")
    for name, outcome in zip(("one", "two"), outcomes, strict=True):
        rows = list(PredictionsStream(tmp_path / name / "predictions.jsonl"))
        assert sorted((r.id, r.attempt) for r in rows) == sorted(
            (k.task_id, k.attempt) for k in keys
        )
        assert {r.prediction for r in rows} == {name}
        assert outcome.written == 4 and outcome.counts["ok"] == 4
        assert outcome.busy_seconds == pytest.approx(2.0)
