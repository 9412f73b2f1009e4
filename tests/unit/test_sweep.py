"""The sweep file: its grid expands into ordinary run command lines, one folder per cell,
and bad files are refused with one message naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_benchmarks.common.errors import InputError
from agent_benchmarks.records.schema import Manifest, PredictionRow
from agent_benchmarks.records.storage import PredictionsWriter
from agent_benchmarks.runner.command import parse_run
from agent_benchmarks.runner.sweep import load_sweep

GRID = """
name = "grid"
out_dir = "{out}"
workers = 3

[grid]
suite = "localweb"
stack = ["native", "mcp:agent-browser", "chat:lightpanda"]
model = ["scripted", "scripted:oracle-b"]
repeat = 2

[settings]
limit = 2
timeout = 90
no_grade = true

[stacks."mcp:agent-browser"]
surface = "strict"
"""


def _write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(text.replace("{out}", str(tmp_path / "out")))
    return path


def test_the_grid_expands_into_one_run_command_line_per_cell(tmp_path):
    sweep = load_sweep(_write(tmp_path, GRID))
    cells = sweep.cells()
    assert [c.label for c in cells] == [
        "localweb · native · scripted",
        "localweb · native · scripted:oracle-b",
        "localweb · mcp:agent-browser · scripted",
        "localweb · mcp:agent-browser · scripted:oracle-b",
        "localweb · chat:lightpanda · scripted",
        "localweb · chat:lightpanda · scripted:oracle-b",
    ]
    assert len({c.out_dir for c in cells}) == 6
    mcp = cells[3]
    assert mcp.runner == "mcp"
    assert mcp.out_dir == tmp_path / "out" / "localweb" / "mcp-agent-browser" / "scripted-oracle-b"
    assert mcp.run_argv() == [
        "--limit", "2", "--timeout", "90", "--no-grade", "--surface", "strict",
        "--backend", "agent-browser", "--scripted-model", "oracle-b", "--repeat", "2",
        "--out-dir", str(mcp.out_dir),
    ]  # fmt: skip
    # Each cell's command line is a real run command line: it parses into the run spec.
    spec, prog = parse_run(mcp.suite, mcp.runner, mcp.run_argv(), strict=True)
    assert prog == "localweb-mcp-run"
    assert (spec.backend["backend"], spec.backend["surface"]) == ("agent-browser", "strict")
    assert (spec.scripted_model, spec.repeat, spec.timeout, spec.grade) == (
        "oracle-b",
        2,
        90,
        False,
    )
    chat = cells[4]
    assert "--engine" in chat.run_argv() and "lightpanda" in chat.run_argv()
    assert "--surface" not in chat.run_argv()  # a stack's table is its own
    assert sweep.workers == 3 and sweep.executor == "local"


def test_models_become_each_runners_own_flags(tmp_path):
    text = """
[grid]
suite = ["gaia"]
stack = ["native", "chat"]
model = ["gemini/gemini-2.5-flash", "sonnet"]
"""
    cells = load_sweep(_write(tmp_path, text)).cells()
    argv = {(c.stack.text, c.model): c.run_argv()[:-2] for c in cells}
    assert argv[("native", "gemini/gemini-2.5-flash")] == [
        "--provider", "gemini", "--model", "gemini-2.5-flash",
    ]  # fmt: skip
    # agent-browser chat takes the gateway's provider/model as one --model.
    assert argv[("chat", "gemini/gemini-2.5-flash")] == ["--model", "gemini/gemini-2.5-flash"]
    assert argv[("native", "sonnet")] == ["--model", "sonnet"]
    # The default folder is named after the file.
    assert cells[0].out_dir.parts[:3] == ("results", "sweeps", "grid")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[grid]\nsuite = 'localweb'\nstack = 'native'\n", "grid.model: Field required"),
        ("[grid]\nsuite='nope'\nstack='native'\nmodel='scripted'\n", "suite 'nope': no such suite"),
        ("[grid]\nsuite='localweb'\nstack='rocket'\nmodel='scripted'\n", "no runner 'rocket'"),
        ("[grid]\nsuite='localweb'\nstack='mcp'\nmodel='scripted'\n", "needs its backend"),
        ("[grid]\nsuite='localweb'\nstack='native:x'\nmodel='scripted'\n", "has no variant"),
        ("[grid]\nsuite='gaia'\nstack='native'\nmodel='scripted'\n", "cannot play a scripted"),
        ("[grid]\nsuite='localweb'\nstack='native'\nmodel='/x'\n", "expected provider/model"),
        (
            "[grid]\nsuite='localweb'\nstack='native'\nmodel='scripted'\n[settings]\nmodel='m'\n",
            "settings.model: set by the grid",
        ),
        (
            "[grid]\nsuite='localweb'\nstack='native'\nmodel='scripted'\n[stacks.chat]\nx=1\n",
            "not a stack of the grid",
        ),
        ("[grid]\nsuite='localweb'\nstack=['native','native']\nmodel='s'\n", "listed twice"),
        ("workers = 0\n[grid]\nsuite='localweb'\nstack='native'\nmodel='s'\n", "workers"),
        ("[grid\n", "not a TOML file"),
        ("speed = 3\n[grid]\nsuite='localweb'\nstack='native'\nmodel='s'\n", "speed: Extra"),
    ],
)
def test_a_bad_sweep_file_is_one_message_naming_the_file_and_the_field(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as refused:
        load_sweep(path)
    assert str(path) in str(refused.value)
    assert message in str(refused.value)


def _row(task_id: str, attempt: int, status: str) -> PredictionRow:
    return PredictionRow(
        id=task_id, suite="localweb", task="t", status=status, attempt=attempt, backend="b"
    )


def test_a_cell_is_new_started_or_done_from_its_folder(tmp_path):
    text = "out_dir = '{out}'\n[grid]\nsuite='localweb'\nstack='native'\nmodel='scripted'\n"
    (cell,) = load_sweep(_write(tmp_path, text + "repeat = 2\n")).cells()
    assert cell.state() == "new" and "--resume" not in cell.run_argv()
    cell.out_dir.mkdir(parents=True)
    manifest = {
        "suite": "localweb",
        "split": "bundled",
        "dataset": {"kind": "bundled"},
        "task_ids": ["a", "b"],
        "backend": "lightpanda-native",
        "started_at": "2026-11-24T00:00:00Z",
        "harness_version": "0",
        "repeat": 2,
        "mode": "scaffold",
    }
    (cell.out_dir / "manifest.json").write_text(Manifest.model_validate(manifest).model_dump_json())
    assert cell.state() == "started" and cell.run_argv()[-1] == "--resume"
    with PredictionsWriter(cell.out_dir / "predictions.jsonl") as writer:
        for task_id in ("a", "b"):
            writer.append(_row(task_id, 1, "ok"))
        writer.append(_row("a", 2, "ok"))
        writer.append(_row("b", 2, "error"))  # an infrastructure failure: retried
    (cell.out_dir / "scores.json").write_text(json.dumps({}))
    assert cell.state() == "started"
    with PredictionsWriter(cell.out_dir / "predictions.jsonl") as writer:
        writer.append(_row("b", 2, "empty"))
    assert cell.state() == "done"
    (cell.out_dir / "scores.json").unlink()
    assert cell.state() == "started"  # not graded yet: the resume grades it


def test_a_suites_or_stacks_table_overrides_the_shared_settings_once(tmp_path):
    text = """
[grid]
suite = ["localweb", "gaia"]
stack = ["native"]
model = ["gemini/gemini-2.5-flash"]
[settings]
timeout = 1800
[suites.localweb]
timeout = 60
"""
    cells = load_sweep(_write(tmp_path, text)).cells()
    timeouts = {c.suite: c.run_argv() for c in cells}
    assert timeouts["localweb"][:2] == ["--timeout", "60"]
    assert timeouts["gaia"][:2] == ["--timeout", "1800"]
    assert all(argv.count("--timeout") == 1 for argv in timeouts.values())


def test_a_stack_names_its_agent_and_its_own_models(tmp_path):
    """benchcmp's grid in one file: each agent on each stack, each agent with its own
    provider's models; the agent is part of the stack, so of the cell's folder."""
    text = """
[grid]
suite = "gaia"
stack = ["mcp:playwright", "mcp:playwright@codex"]
model = "anthropic/claude-sonnet-4-6"
repeat = 5

[stacks."mcp:playwright@codex"]
models = ["openai/gpt-5.2", "openai/gpt-5.2-mini"]
reasoning_effort = "high"
"""
    cells = load_sweep(_write(tmp_path, text)).cells()
    assert [c.label for c in cells] == [
        "gaia · mcp:playwright · anthropic/claude-sonnet-4-6",
        "gaia · mcp:playwright@codex · openai/gpt-5.2",
        "gaia · mcp:playwright@codex · openai/gpt-5.2-mini",
    ]
    claude, codex, _ = cells
    assert "--agent" not in claude.flags and "--reasoning-effort" not in claude.flags
    assert codex.flags == [
        "--reasoning-effort", "high", "--backend", "playwright", "--agent", "codex",
        "--provider", "openai", "--model", "gpt-5.2", "--repeat", "5",
    ]  # fmt: skip
    assert codex.out_dir.parts[-2:] == ("mcp-playwright-codex", "openai-gpt-5.2")
    # what the cell runs is a valid run command line
    spec, _ = parse_run("gaia", "mcp", [*codex.flags, "--out-dir", str(codex.out_dir)])
    assert spec.backend["agent"] == "codex" and spec.model == "gpt-5.2"
    with pytest.raises(InputError, match="the native runner has no choice of agent"):
        load_sweep(_write(tmp_path, text.replace('"mcp:playwright",', '"native@codex",')))
    with pytest.raises(InputError, match="agents: claude, codex"):
        load_sweep(_write(tmp_path, text.replace('"mcp:playwright",', '"mcp:playwright@x",')))
