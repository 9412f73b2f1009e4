"""The lockdown of the matrix's newer stacks, through the real Claude Code: a model that
reaches outside the surface (a shell command for an MCP stack, an excluded tool, another
program for the cli stack) is refused and the row's audit lists each refusal; nothing of
the attempt survives it."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_benchmarks.localweb.models import (
    Conversation,
    FinalAnswer,
    ScriptedModelServer,
    StepPolicy,
    call,
)
from agent_benchmarks.records.schema import PredictionRow
from tests.support import gaia_mcp_run, left_running

pytestmark = pytest.mark.e2e

# Per stack: its flags, the calls the model makes (tool, arguments), and the names of the
# calls the audit must list as refused, in order.
CASES: dict[str, tuple[list[str], list[tuple[str, dict]], list[str]]] = {
    "cli": (
        ["--backend", "cli", "--cli", "agent-browser"],
        [
            ("mcp__browser__shell", {"command": "agent-browser --version"}),
            ("mcp__browser__shell", {"command": "curl http://127.0.0.1:9/"}),
            ("mcp__browser__shell", {"command": "agent-browser --version; cat /etc/passwd"}),
            ("Bash", {"command": "agent-browser --version"}),
        ],
        ["mcp__browser__shell", "mcp__browser__shell", "Bash"],
    ),
    "playwright": (
        ["--backend", "playwright"],
        [
            ("Bash", {"command": "cat /etc/passwd"}),
            ("mcp__browser__browser_run_code_unsafe", {"code": "process.exit(0)"}),
            ("mcp__browser__browser_take_screenshot", {"type": "png"}),
        ],
        ["Bash", "mcp__browser__browser_run_code_unsafe", "mcp__browser__browser_take_screenshot"],
    ),
    "chrome-devtools": (
        ["--backend", "chrome-devtools"],
        [
            ("Bash", {"command": "cat /etc/passwd"}),
            ("mcp__browser__take_screenshot", {"pageId": 1}),
            ("mcp__browser__lighthouse_audit", {"pageId": 1}),
        ],
        ["Bash", "mcp__browser__take_screenshot", "mcp__browser__lighthouse_audit"],
    ),
}


class Outside(StepPolicy):
    """Makes the given calls, one a turn, then answers."""

    def __init__(self, calls: list[tuple[str, dict]]):
        self.calls = calls

    def step(self, conv: Conversation) -> object:
        if conv.turn < len(self.calls):
            name, args = self.calls[conv.turn]
            return call(name, **args)
        return FinalAnswer("<ANSWER>3</ANSWER>")


@pytest.mark.parametrize("stack", sorted(CASES))
def test_calls_outside_the_stack_are_refused_and_audited(
    stack: str, gaia_file: Path, tmp_path: Path
) -> None:
    flags, calls, refused = CASES[stack]
    run_dir = tmp_path / stack
    with ScriptedModelServer(lambda task_id: Outside(calls)) as server:
        proc = gaia_mcp_run(gaia_file, server.root_url, run_dir, *flags)
        offered = server.model_requests("g1-plain")[0].conversation
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = [
        PredictionRow.model_validate_json(line)
        for line in (run_dir / "predictions.jsonl").read_text().splitlines()
    ]
    assert row.status == "ok"
    assert [c["name"] for c in row.details["refused_calls"]] == refused
    assert row.details["n_refused_calls"] == len(refused)
    assert row.details["contaminated"] is False and row.details["foreign_calls"] == []
    # every call is in the trace, with its arguments
    assert [(c.name, c.args) for c in row.trace] == calls
    assert offered is not None and "Bash" not in offered.tool_names
    if stack == "cli":
        assert offered.tool_names.count("mcp__browser__shell") == 1
        why = [c["why"] for c in row.details["refused_calls"][:2]]
        assert why == [
            "only agent-browser runs here, not curl",
            "shell syntax is not run here (;): no shell runs, one agent-browser command per call",
        ]
        # the one agent-browser command ran; neither refused line did
        ran = row.trace[0]
        assert ran.error is None and "agent-browser" in str(ran.output)
        assert all(c.error for c in row.trace[1:])
    else:
        assert not {name.removeprefix("mcp__browser__") for name in refused} & {
            name.removeprefix("mcp__browser__") for name in offered.tool_names
        }
    assert not left_running(run_dir)
